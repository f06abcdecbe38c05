#include "containerlayout.h"

#include "sandboxprocess.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace Sandbox::Engine::ContainerLayout {

namespace {

Error layoutError(const QString &what)
{
    return Error{ErrorCode::SandboxError, what, {}};
}

QString errnoText()
{
    return QString::fromLocal8Bit(std::strerror(errno));
}

// A directory the sandbox's uid cannot change: owned by root or the engine, writable by no one else.
bool isTrustedDir(const struct stat &st)
{
    return S_ISDIR(st.st_mode) && (st.st_uid == 0 || st.st_uid == ::geteuid())
           && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace

Result<bool> link(const QString &target, const QString &linkPath)
{
    const QString path = QDir::cleanPath(linkPath);
    if (!path.startsWith(u'/') || path == QLatin1String("/"))
        return layoutError(QStringLiteral("cannot link %1: not an absolute path").arg(linkPath));
    // Every parent, from the root down: made if missing, refused if someone else could swap it.
    const QStringList parts = path.split(u'/', Qt::SkipEmptyParts);
    QString dir;
    for (qsizetype i = 0; i + 1 < parts.size(); ++i) {
        dir += u'/' + parts.at(i);
        const QByteArray d = QFile::encodeName(dir);
        struct stat st = {};
        if (::lstat(d.constData(), &st) != 0) {
            // chmod too: the engine's umask (077) would leave it 0700, and the sandbox's uid
            // could not pass through to what the links point at (/run/sandbox/pg-template).
            if (errno != ENOENT || ::mkdir(d.constData(), 0755) != 0
                || ::chmod(d.constData(), 0755) != 0 || ::lstat(d.constData(), &st) != 0)
                return layoutError(QStringLiteral("cannot create %1: %2").arg(dir, errnoText()));
        }
        if (!isTrustedDir(st))
            return layoutError(
                QStringLiteral("cannot link %1: %2 is not a directory that only root can change")
                    .arg(path, dir));
    }
    const QByteArray l = QFile::encodeName(path);
    const QByteArray t = QFile::encodeName(target);
    struct stat st = {};
    if (::lstat(l.constData(), &st) != 0) {
        if (errno != ENOENT)
            return layoutError(QStringLiteral("cannot link %1: %2").arg(path, errnoText()));
        if (::symlink(t.constData(), l.constData()) != 0)
            return layoutError(QStringLiteral("cannot link %1: %2").arg(path, errnoText()));
        return true;
    }
    if (!S_ISLNK(st.st_mode))
        return layoutError(
            QStringLiteral("cannot link %1 to %2: %1 exists in the container and is not a link")
                .arg(path, target));
    const QByteArray tmp = l + ".sandboxd-new";
    ::unlink(tmp.constData());
    if (::symlink(t.constData(), tmp.constData()) != 0
        || ::rename(tmp.constData(), l.constData()) != 0) {
        const QString why = errnoText();
        ::unlink(tmp.constData());
        return layoutError(QStringLiteral("cannot link %1: %2").arg(path, why));
    }
    return true;
}

Result<bool> replaceEntry(const QString &file, const QByteArray &name, uint id,
                          const QByteArray &entry)
{
    QFile in(file);
    QByteArray kept;
    if (in.open(QIODevice::ReadOnly)) {
        const QByteArray idText = QByteArray::number(id);
        for (const QByteArray &line : in.readAll().split('\n')) {
            const QList<QByteArray> fields = line.split(':');
            if (line.isEmpty() || fields.value(0) == name || fields.value(2) == idText)
                continue;
            kept += line + '\n';
        }
    }
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly))
        return layoutError(QStringLiteral("cannot write %1: %2").arg(file, out.errorString()));
    out.write(kept + entry);
    out.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther);
    if (!out.commit())
        return layoutError(QStringLiteral("cannot write %1: %2").arg(file, out.errorString()));
    return true;
}

Result<bool> apply(const SandboxSpec &spec)
{
    if (const auto r = link(spec.workspaceDir, QStringLiteral("/workspace")); !r)
        return r;
    for (const SandboxSpec::Mount &m : spec.extraMounts) {
        if (!m.writable) {
            // A read-only bind becomes a link: only permissions keep the sandbox from writing, so
            // the target must be a tree the sandbox's uid does not own.
            struct stat st = {};
            if (::stat(QFile::encodeName(m.hostPath).constData(), &st) != 0 || !isTrustedDir(st))
                return layoutError(
                    QStringLiteral("cannot show %1 read-only at %2: it must be a directory that "
                                   "only root can change")
                        .arg(m.hostPath, m.sandboxPath));
        }
        if (const auto r = link(m.hostPath, m.sandboxPath); !r)
            return r;
    }
    if (!spec.dropPrivileges)
        return true;
    // Tools look their user up (git, ssh, Node's os.userInfo()): the container's own /etc is the
    // sandbox's here, since nothing binds another one over it.
    const QByteArray uid = QByteArray::number(spec.uid);
    const QByteArray gid = QByteArray::number(spec.gid);
    if (const auto r = replaceEntry(QStringLiteral("/etc/passwd"), "sandbox", spec.uid,
                                    "sandbox:x:" + uid + ':' + gid
                                        + ":Sandbox:/workspace:/bin/sh\n");
        !r)
        return r;
    return replaceEntry(QStringLiteral("/etc/group"), "sandbox", spec.gid,
                        "sandbox:x:" + gid + ":\n");
}

void killAllOf(uid_t uid)
{
    if (uid == 0 || uid == ::geteuid() || ::geteuid() != 0)
        return;
    const pid_t pid = ::fork();
    if (pid == 0) {
        // kill(-1) reaches every process this uid may signal (its own), never the caller.
        if (::setresuid(uid, uid, uid) == 0)
            ::kill(-1, SIGKILL);
        ::_exit(0);
    }
    if (pid > 0) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

} // namespace Sandbox::Engine::ContainerLayout
