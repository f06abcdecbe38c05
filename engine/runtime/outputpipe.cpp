#include "outputpipe.h"

#include "egress/fdpoller.h"

#include <QTimer>

#include <cerrno>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

namespace Sandbox::Engine {

OutputPipe::OutputPipe(UniqueFd fd, FdPoller *poller, QByteArray *buffer,
                       std::function<qsizetype()> room, std::function<void(OutputBytes)> onData,
                       std::function<void()> onEnd)
    : m_fd(std::move(fd))
    , m_poller(poller)
    , m_buffer(buffer)
    , m_room(std::move(room))
    , m_onData(std::move(onData))
    , m_onEnd(std::move(onEnd))
{}

OutputPipe::~OutputPipe()
{
    close();
}

QString OutputPipe::check(int fd, quint64 inode)
{
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return QStringLiteral("the descriptor is not a pipe");
    if ((::fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
        return QStringLiteral("the descriptor is not a pipe's read end");
    if (quint64(st.st_ino) != inode)
        return QStringLiteral("the pipe is not the one the EVENT names");
    return {};
}

bool OutputPipe::readsWithoutWaiting()
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return false;
    char byte;
    iovec iov{&byte, 1};
    const bool supported = ::preadv2(fds[0], &iov, 1, -1, RWF_NOWAIT) < 0 && errno == EAGAIN;
    ::close(fds[0]);
    ::close(fds[1]);
    return supported;
}

void OutputPipe::discardRest()
{
    if (!m_fd.isValid() || m_null.isValid())
        return;
    m_null = UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (!m_null.isValid())
        return; // read and dropped by the owner, as before
    m_pause = std::make_unique<QTimer>();
    m_pause->setSingleShot(true);
    m_pause->setInterval(kDiscardPauseMs);
    QObject::connect(m_pause.get(), &QTimer::timeout, [this] { setReading(true); });
    setReading(true); // what is thrown away takes no window
}

void OutputPipe::setReading(bool on)
{
    if (on == m_reading || !m_fd.isValid() || !m_poller)
        return;
    m_reading = on;
    if (!on)
        return m_poller->remove(m_fd.get());
    m_poller->add(m_fd.get(), EPOLLIN, [this](uint32_t) { onReady(); });
}

void OutputPipe::close()
{
    setReading(false);
    m_pause.reset();
    m_fd.reset();
    m_null.reset();
}

void OutputPipe::onReady()
{
    if (m_null.isValid()) {
        // SPLICE_F_NONBLOCK: the pipe side never waits, whatever its O_NONBLOCK says.
        const ssize_t n = ::splice(m_fd.get(), nullptr, m_null.get(), nullptr, size_t(kMaxRead),
                                   SPLICE_F_NONBLOCK);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            close();
            const auto onEnd = m_onEnd; // may destroy this
            return onEnd();
        }
        setReading(false);
        return m_pause->start();
    }
    qsizetype want = qMin(m_room(), kMaxRead);
    if (want <= 0)
        return setReading(false); // the owner turns it on again when it has room
    // What the pipe holds, so that an array the owner takes holds no more than it needs (what
    // comes meanwhile waits for the next read).
    int queued = 0;
    if (::ioctl(m_fd.get(), FIONREAD, &queued) == 0)
        want = qMin<qsizetype>(want, qMax(queued, 4096));
    if (m_buffer->size() < OutputBytes::kRoom + want)
        *m_buffer = QByteArray(OutputBytes::kRoom + want, Qt::Uninitialized);
    iovec iov{m_buffer->data() + OutputBytes::kRoom, size_t(want)};
    // Never blocks, whatever O_NONBLOCK says: the sandbox may share this open file and clear it.
    const ssize_t n = ::preadv2(m_fd.get(), &iov, 1, -1, RWF_NOWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) { // every writer is gone (or the pipe failed): the end of this output
        close();
        const auto onEnd = m_onEnd; // may destroy this
        return onEnd();
    }
    const auto onData = m_onData; // may destroy this
    onData(OutputBytes(m_buffer, n));
}

} // namespace Sandbox::Engine
