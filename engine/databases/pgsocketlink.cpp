#include "pgsocketlink.h"

#include <QFile>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace Sandbox::Engine {

namespace {

Error linkError(const QString &what, const QString &path, int err)
{
    return Error{ErrorCode::SandboxError,
                 QStringLiteral("cannot %1 %2: %3")
                     .arg(what, path, QString::fromLocal8Bit(strerror(err))),
                 {}};
}

} // namespace

PgSocketLink::PgSocketLink(SandboxSocket::Target server)
    : m_server(std::move(server))
{}

PgSocketLink::~PgSocketLink()
{
    if (m_fd < 0)
        return;
    // Unless a newer link for the same database took the name meanwhile (its fd is another one).
    const QByteArray link = QFile::encodeName(m_dir + u'/' + QLatin1String(kSocketName));
    const QByteArray mine = SandboxSocket::procPath(m_fd);
    char target[64];
    const ssize_t n = ::readlink(link.constData(), target, sizeof target);
    if (n == mine.size() && memcmp(target, mine.constData(), size_t(n)) == 0) {
        ::unlink(link.constData());
        ::rmdir(QFile::encodeName(m_dir).constData());
    }
    // Closed only once the link is gone: its number then names nothing of this database.
    ::close(m_fd);
}

Result<bool> PgSocketLink::create(const QString &dir)
{
    const QByteArray d = QFile::encodeName(dir);
    if (::mkdir(d.constData(), 0700) != 0 && errno != EEXIST)
        return linkError(QStringLiteral("create"), dir, errno);
    struct stat st;
    if (::lstat(d.constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()
        || (st.st_mode & 077) != 0)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("%1 is not a private directory of the engine").arg(dir),
                     {}};
    const QByteArray link = d + '/' + kSocketName;
    if (size_t(link.size()) >= sizeof(sockaddr_un::sun_path))
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("the socket path %1 is too long").arg(QFile::decodeName(link)),
                     {}};
    // Until the first pin() the link names the directory itself: not a socket, so a connection
    // is refused.
    const int fd = ::open(d.constData(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return linkError(QStringLiteral("open"), dir, errno);
    // Made under a name of its own and renamed: a connection never finds the name missing.
    const QByteArray made = link + ".new";
    ::unlink(made.constData());
    if (::symlink(SandboxSocket::procPath(fd).constData(), made.constData()) != 0
        || ::rename(made.constData(), link.constData()) != 0) {
        const int err = errno;
        ::close(fd);
        return linkError(QStringLiteral("link"), QFile::decodeName(link), err);
    }
    m_dir = dir;
    m_fd = fd;
    return true;
}

Result<bool> PgSocketLink::pin()
{
    if (m_fd < 0)
        return Error{ErrorCode::SandboxError, QStringLiteral("the socket link was not created"), {}};
    const Result<int> server = SandboxSocket::open(m_server, kSocketName);
    const int fd = server ? *server
                          : ::open(QFile::encodeName(m_dir).constData(),
                                   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return linkError(QStringLiteral("open"), m_dir, errno);
    // In place, at once: a connection resolving the link meets the old inode or the new one.
    const int err = ::dup3(fd, m_fd, O_CLOEXEC) < 0 ? errno : 0;
    ::close(fd);
    if (!server)
        return server.error();
    if (err)
        return linkError(QStringLiteral("pin"), m_dir, err);
    return true;
}

} // namespace Sandbox::Engine
