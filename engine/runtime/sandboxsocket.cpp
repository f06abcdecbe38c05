#include "sandboxsocket.h"

#include "fsuidguard.h"
#include "hostfs.h"

#include <QDeadlineTimer>
#include <QJsonObject>
#include <QPointer>
#include <QTimer>

#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>

namespace Sandbox::Engine {

namespace {

QString errnoName(int err)
{
    switch (err) {
    case EAGAIN:
        return QStringLiteral("EAGAIN");
    case ENOENT:
        return QStringLiteral("ENOENT");
    case ECONNREFUSED:
        return QStringLiteral("ECONNREFUSED");
    case ELOOP:
        return QStringLiteral("ELOOP");
    case ENOTSOCK:
        return QStringLiteral("ENOTSOCK");
    case EPERM:
        return QStringLiteral("EPERM");
    default:
        return QStringLiteral("E%1").arg(err);
    }
}

Error socketError(const QByteArray &name, int err, const QString &why = {})
{
    return Error{ErrorCode::SandboxError,
                 QStringLiteral("cannot connect to /run/db/%1: %2")
                     .arg(QString::fromUtf8(name), why.isEmpty() ? HostFs::errorText(err) : why),
                 QJsonObject{{QStringLiteral("errno"), errnoName(err)}}};
}

bool retryable(const Error &e)
{
    const QString err = e.data.toObject().value(QStringLiteral("errno")).toString();
    return err == QLatin1String("ENOENT") || err == QLatin1String("ECONNREFUSED")
           || err == QLatin1String("EAGAIN");
}

} // namespace

Result<int> SandboxSocket::open(const Target &target, const QByteArray &name)
{
    if (name.isEmpty() || name.contains('/'))
        return socketError(name, EINVAL);
    // With the sandbox's own file permissions: whatever it planted, the engine can reach no more
    // than the sandbox could itself.
    FsUidGuard guard(target.uid);
    HostFs::Fd volume(HostFs::openOwnDir(target.volumeDir));
    if (!volume.isValid())
        return socketError(name, -volume.get());
    HostFs::Fd run(HostFs::openBeneath(volume.get(), "run", O_PATH | O_DIRECTORY));
    if (!run.isValid())
        return socketError(name, -run.get());
    HostFs::Fd inode(::openat(run.get(), name.constData(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!inode.isValid())
        return socketError(name, errno);
    struct stat st;
    if (::fstat(inode.get(), &st) != 0)
        return socketError(name, errno);
    if (S_ISLNK(st.st_mode))
        return socketError(name, ELOOP, QStringLiteral("a symbolic link is in its place"));
    if (!S_ISSOCK(st.st_mode))
        return socketError(name, ENOTSOCK, QStringLiteral("not a socket"));
    if (::geteuid() == 0 && st.st_uid != target.uid)
        return socketError(name, EPERM, QStringLiteral("the socket is not the sandbox's"));
    return inode.release();
}

QByteArray SandboxSocket::procPath(int inode)
{
    return "/proc/self/fd/" + QByteArray::number(inode);
}

Result<int> SandboxSocket::connect(const Target &target, const QByteArray &name)
{
    const Result<int> opened = open(target, name);
    if (!opened)
        return opened.error();
    HostFs::Fd inode(*opened);
    FsUidGuard guard(target.uid);
    HostFs::Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!sock.isValid())
        return socketError(name, errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const QByteArray path = procPath(inode.get());
    memcpy(addr.sun_path, path.constData(), size_t(path.size()) + 1);
    // A unix stream connect never waits when non-blocking: it is made, or EAGAIN (backlog full).
    if (::connect(sock.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
        return socketError(name, errno,
                           errno == EAGAIN ? QStringLiteral("its listen queue is full") : QString());
    return sock.release();
}

void SandboxSocket::connectWithin(const Target &target, const QByteArray &name, int timeoutMs,
                                  int retryMs, QObject *context,
                                  std::function<void(Result<int>)> done)
{
    struct Attempt
    {
        Target target;
        QByteArray name;
        QDeadlineTimer deadline;
        int retryMs;
        QPointer<QObject> context;
        std::function<void(Result<int>)> done;
        std::function<void()> next;
    };
    auto a = std::make_shared<Attempt>();
    *a = Attempt{target, name, QDeadlineTimer(timeoutMs), retryMs, context, std::move(done), {}};
    std::weak_ptr<Attempt> weak = a;
    a->next = [weak] {
        auto a = weak.lock();
        if (!a || !a->context)
            return;
        Result<int> r = connect(a->target, a->name);
        if (r || !retryable(r.error()) || a->deadline.hasExpired()) {
            auto done = std::move(a->done);
            a->next = {}; // breaks the cycle
            return done(std::move(r));
        }
        QTimer::singleShot(a->retryMs, a->context, [a] {
            if (a->next)
                a->next();
        });
    };
    QTimer::singleShot(0, context, [a] {
        if (a->next)
            a->next();
    });
}

} // namespace Sandbox::Engine
