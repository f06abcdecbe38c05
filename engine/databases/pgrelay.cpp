#include "pgrelay.h"

#include <QDir>
#include <QFile>
#include <QLoggingCategory>
#include <QSocketNotifier>
#include <QtEndian>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcRelay, "sandboxd.databases.relay")

namespace Sandbox::Engine {

namespace {

constexpr qsizetype kChunk = 64 * 1024;

// A PostgreSQL ErrorResponse ('E'), which libpq shows as the connection's error.
QByteArray errorResponse(const QString &message)
{
    QByteArray fields;
    fields += 'S' + QByteArray("FATAL") + '\0';
    fields += 'V' + QByteArray("FATAL") + '\0';
    fields += 'C' + QByteArray("08006") + '\0'; // connection_failure
    fields += 'M' + message.toUtf8().replace('\0', ' ') + '\0';
    fields += '\0';
    QByteArray out(5, '\0');
    out[0] = 'E';
    qToBigEndian<qint32>(qint32(fields.size() + 4), out.data() + 1);
    return out + fields;
}

} // namespace

// One libpq connection joined to one connection to the server.
class PgRelay::Pipe final : public QObject
{
public:
    Pipe(int client, QObject *parent)
        : QObject(parent)
    {
        m_side[0].fd = client;
    }

    ~Pipe() override
    {
        for (Side &s : m_side) {
            delete s.read;
            delete s.write;
            if (s.fd >= 0)
                ::close(s.fd);
        }
    }

    std::function<void(Pipe *)> onClosed;

    void start(int server)
    {
        m_side[1].fd = server;
        for (int i = 0; i < 2; ++i) {
            Side &s = m_side[i];
            s.read = new QSocketNotifier(s.fd, QSocketNotifier::Read);
            s.write = new QSocketNotifier(s.fd, QSocketNotifier::Write);
            s.write->setEnabled(false);
            QObject::connect(s.read, &QSocketNotifier::activated, this, [this, i] { pump(i); });
            QObject::connect(s.write, &QSocketNotifier::activated, this, [this, i] { drain(i); });
        }
    }

    // The server cannot be reached: libpq gets the reason as an error, then the connection ends.
    void refuse(const QString &why)
    {
        const QByteArray e = errorResponse(why);
        (void)!::send(m_side[0].fd, e.constData(), size_t(e.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
        finish();
    }

private:
    struct Side
    {
        int fd = -1;
        QSocketNotifier *read = nullptr;  // owned
        QSocketNotifier *write = nullptr; // owned
        QByteArray pending;               // read from the other side, not yet written here
        bool eof = false;                 // the other side will send no more
    };

    // Reads what side `from` has and writes it to the other side.
    void pump(int from)
    {
        Side &src = m_side[from];
        Side &dst = m_side[1 - from];
        char buf[kChunk];
        const ssize_t n = ::recv(src.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            return finish();
        }
        if (n == 0) {
            src.read->setEnabled(false);
            dst.eof = true;
            if (dst.pending.isEmpty())
                ::shutdown(dst.fd, SHUT_WR);
            return maybeFinish();
        }
        qsizetype written = 0;
        if (dst.pending.isEmpty()) {
            const ssize_t w = ::send(dst.fd, buf, size_t(n), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                return finish();
            written = qMax<ssize_t>(w, 0);
        }
        if (written < n) {
            // The other side is full: hold this side back until it drains.
            dst.pending.append(buf + written, n - written);
            src.read->setEnabled(false);
            dst.write->setEnabled(true);
        }
    }

    void drain(int to)
    {
        Side &dst = m_side[to];
        Side &src = m_side[1 - to];
        const ssize_t w = ::send(dst.fd, dst.pending.constData(), size_t(dst.pending.size()),
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            return finish();
        }
        dst.pending.remove(0, w);
        if (!dst.pending.isEmpty())
            return;
        dst.write->setEnabled(false);
        if (dst.eof) {
            ::shutdown(dst.fd, SHUT_WR);
            return maybeFinish();
        }
        src.read->setEnabled(true);
    }

    void maybeFinish()
    {
        if (m_side[0].eof && m_side[1].eof && m_side[0].pending.isEmpty()
            && m_side[1].pending.isEmpty())
            finish();
    }

    void finish()
    {
        for (Side &s : m_side) {
            if (s.read)
                s.read->setEnabled(false);
            if (s.write)
                s.write->setEnabled(false);
        }
        if (auto closed = std::exchange(onClosed, {}))
            closed(this);
    }

    Side m_side[2]; // 0: libpq's connection, 1: the server's
};

PgRelay::PgRelay(SandboxSocket::Target upstream, QObject *parent)
    : QObject(parent)
    , m_upstream(std::move(upstream))
{}

PgRelay::~PgRelay()
{
    delete m_accept;
    if (m_listener >= 0) {
        ::close(m_listener);
        // Unless a newer relay for the same database bound the name meanwhile.
        const QByteArray path = QFile::encodeName(m_dir + u'/' + QLatin1String(kSocketName));
        struct stat st;
        if (::lstat(path.constData(), &st) == 0 && st.st_ino == m_inode) {
            ::unlink(path.constData());
            ::rmdir(QFile::encodeName(m_dir).constData());
        }
    }
    qDeleteAll(m_pipes);
}

Result<bool> PgRelay::listen(const QString &dir)
{
    const QByteArray d = QFile::encodeName(dir);
    if (::mkdir(d.constData(), 0700) != 0 && errno != EEXIST)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot create %1: %2")
                         .arg(dir, QString::fromLocal8Bit(strerror(errno))),
                     {}};
    struct stat st;
    if (::lstat(d.constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()
        || (st.st_mode & 077) != 0)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("%1 is not a private directory of the engine").arg(dir),
                     {}};
    const QByteArray path = d + '/' + kSocketName;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (size_t(path.size()) >= sizeof addr.sun_path)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("the socket path %1 is too long").arg(QFile::decodeName(path)),
                     {}};
    memcpy(addr.sun_path, path.constData(), size_t(path.size()) + 1);
    ::unlink(path.constData());
    m_listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_listener < 0 || ::bind(m_listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0
        || ::listen(m_listener, kMaxConnections) != 0) {
        const int err = errno;
        if (m_listener >= 0)
            ::close(m_listener);
        m_listener = -1;
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot listen on %1: %2")
                         .arg(QFile::decodeName(path), QString::fromLocal8Bit(strerror(err))),
                     {}};
    }
    m_dir = dir;
    if (::lstat(path.constData(), &st) == 0)
        m_inode = st.st_ino;
    m_accept = new QSocketNotifier(m_listener, QSocketNotifier::Read);
    connect(m_accept, &QSocketNotifier::activated, this, [this] { accept(); });
    return true;
}

void PgRelay::accept()
{
    for (;;) {
        const int client = ::accept4(m_listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0)
            return;
        // Only the engine itself (its libpq connections and cancels) is served.
        ucred peer{};
        socklen_t len = sizeof peer;
        if (::getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0
            || peer.pid != ::getpid() || m_pipes.size() >= kMaxConnections) {
            ::close(client);
            continue;
        }
        auto *pipe = new Pipe(client, this);
        pipe->onClosed = [this](Pipe *p) { closed(p); };
        m_pipes.append(pipe);
        const Result<int> server = SandboxSocket::connect(m_upstream, kSocketName);
        if (!server) {
            qCInfo(lcRelay).noquote() << server.error().message;
            pipe->refuse(server.error().message);
            continue;
        }
        pipe->start(*server);
    }
}

void PgRelay::closed(Pipe *pipe)
{
    m_pipes.removeOne(pipe);
    pipe->deleteLater();
}

} // namespace Sandbox::Engine
