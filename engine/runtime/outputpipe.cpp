#include "outputpipe.h"

#include "egress/fdpoller.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/uio.h>

namespace Sandbox::Engine {

OutputPipe::OutputPipe(UniqueFd fd, FdPoller *poller, QByteArray *buffer,
                       std::function<qsizetype()> room, std::function<void(QByteArrayView)> onData,
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
    m_fd.reset();
}

void OutputPipe::onReady()
{
    const qsizetype want = qMin(m_room(), kMaxRead);
    if (want <= 0)
        return setReading(false); // the owner turns it on again when it has room
    if (m_buffer->size() < want)
        m_buffer->resize(want);
    iovec iov{m_buffer->data(), size_t(want)};
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
    onData(QByteArrayView(m_buffer->constData(), n));
}

} // namespace Sandbox::Engine
