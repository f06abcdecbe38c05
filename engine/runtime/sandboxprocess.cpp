#include "sandboxprocess.h"

#include "supervisorchannel.h"
#include "supervisorlog.h"
#include "workspacevolume.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPointer>
#include <QProcess>
#include <QTimer>

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>

Q_LOGGING_CATEGORY(lcRuntime, "sandboxd.runtime")

namespace Sandbox::Engine {

namespace {

constexpr int kStopGraceMs = 1500;

QString cgroupName(const QString &id)
{
    return id;
}

} // namespace

SandboxProcess::SandboxProcess(SandboxSpec spec, QObject *parent)
    : QObject(parent)
    , m_spec(std::move(spec))
{}

SandboxProcess::~SandboxProcess()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(1000);
    }
    m_cgroup.killAll();
    m_cgroup.remove();
    delete m_volume;
}

bool SandboxProcess::isReady() const
{
    return m_readySeen && m_channel && m_channel->isReady() && !m_stopping
           && m_abortReason.isEmpty();
}

qint64 SandboxProcess::pid() const
{
    return m_process ? m_process->processId() : 0;
}

QStringList SandboxProcess::bwrapArguments(const SandboxSpec &spec)
{
    const QString tmpBytes = QString::number(spec.limits.tmpMb * 1024 * 1024);
    QStringList a{
        QStringLiteral("--unshare-all"),
        QStringLiteral("--unshare-user"),
        QStringLiteral("--disable-userns"),
        QStringLiteral("--die-with-parent"),
        QStringLiteral("--new-session"),
        QStringLiteral("--ro-bind"),
        QStringLiteral("/usr"),
        QStringLiteral("/usr"),
        QStringLiteral("--ro-bind"),
        QStringLiteral("/etc"),
        QStringLiteral("/etc"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/bin"),
        QStringLiteral("/bin"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/sbin"),
        QStringLiteral("/sbin"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/lib"),
        QStringLiteral("/lib"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/lib64"),
        QStringLiteral("/lib64"),
        QStringLiteral("--ro-bind"),
        spec.stateDir + QStringLiteral("/passwd"),
        QStringLiteral("/etc/passwd"),
        QStringLiteral("--ro-bind"),
        spec.stateDir + QStringLiteral("/group"),
        QStringLiteral("/etc/group"),
        QStringLiteral("--bind"),
        spec.workspaceDir,
        QStringLiteral("/workspace"),
        QStringLiteral("--ro-bind"),
        spec.supervisorPath,
        QLatin1String(SupervisorInside),
        QStringLiteral("--proc"),
        QStringLiteral("/proc"),
        QStringLiteral("--dev"),
        QStringLiteral("/dev"),
        QStringLiteral("--size"),
        tmpBytes,
        QStringLiteral("--tmpfs"),
        QStringLiteral("/tmp"),
        QStringLiteral("--size"),
        tmpBytes,
        QStringLiteral("--tmpfs"),
        QStringLiteral("/dev/shm"),
        QStringLiteral("--hostname"),
        spec.id,
        QStringLiteral("--chdir"),
        QStringLiteral("/workspace"),
    };
    for (const SandboxSpec::Mount &m : spec.extraMounts)
        a << (m.writable ? QStringLiteral("--bind") : QStringLiteral("--ro-bind")) << m.hostPath
          << m.sandboxPath;
    if (spec.network)
        a << QStringLiteral("--share-net");
    return a;
}

Result<bool> SandboxProcess::prepareFiles() const
{
    if (!QDir().mkpath(m_spec.workspaceDir) || !QDir().mkpath(m_spec.stateDir))
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot create %1").arg(m_spec.workspaceDir),
                     {}};
    // The sandbox's uid must pass through the state directory to reach its workspace and files.
    ::chmod(QFile::encodeName(m_spec.stateDir).constData(), 0711);
    // A passwd and group entry for the sandbox's uid, so that tools that look the user up work.
    auto writeWithEntry = [&](const QString &hostFile, const QString &target,
                              const QByteArray &entry) {
        QFile in(hostFile);
        QByteArray content = in.open(QIODevice::ReadOnly) ? in.readAll() : QByteArray();
        if (!content.isEmpty() && !content.endsWith('\n'))
            content.append('\n');
        content.append(entry);
        QFile out(target);
        if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate)
            || out.write(content) != content.size())
            return false;
        out.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup
                           | QFile::ReadOther);
        return true;
    };
    const uid_t uid = m_spec.dropPrivileges ? m_spec.uid : ::getuid();
    const gid_t gid = m_spec.dropPrivileges ? m_spec.gid : ::getgid();
    const QByteArray pw = "sandbox:x:" + QByteArray::number(uid) + ':' + QByteArray::number(gid)
                          + ":Sandbox:/workspace:/bin/sh\n";
    const QByteArray gr = "sandbox:x:" + QByteArray::number(gid) + ":\n";
    if (!writeWithEntry(QStringLiteral("/etc/passwd"), m_spec.stateDir + QStringLiteral("/passwd"),
                        pw)
        || !writeWithEntry(QStringLiteral("/etc/group"), m_spec.stateDir + QStringLiteral("/group"),
                           gr))
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot write the sandbox's passwd file in %1")
                         .arg(m_spec.stateDir),
                     {}};
    if (m_spec.dropPrivileges
        && ::chown(QFile::encodeName(m_spec.workspaceDir).constData(), uid, gid) != 0)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot hand %1 to uid %2").arg(m_spec.workspaceDir).arg(uid),
                     {}};
    return true;
}

void SandboxProcess::start()
{
    auto fail = [this](const Error &e) {
        QTimer::singleShot(0, this, [this, e] { Q_EMIT failed(e); });
    };
    if (m_spec.bubblewrap && !QFile::exists(m_spec.bwrapPath))
        return fail(Error{ErrorCode::SandboxError,
                          QStringLiteral("bubblewrap not found at %1").arg(m_spec.bwrapPath),
                          {}});
    if (!QFile::exists(m_spec.supervisorPath))
        return fail(
            Error{ErrorCode::SandboxError,
                  QStringLiteral("sandbox-supervisor not found at %1").arg(m_spec.supervisorPath),
                  {}});
    if (const auto prepared = prepareFiles(); !prepared)
        return fail(prepared.error());

    if (m_spec.useCgroups && m_spec.cgroups && m_spec.cgroups->isUsable()) {
        auto group = Cgroup::create(*m_spec.cgroups, cgroupName(m_spec.id), m_spec.limits);
        if (!group)
            return fail(group.error());
        m_cgroup = std::move(group).value();
    }
    if (m_spec.diskImage.isEmpty())
        return launch();
    m_volume = new WorkspaceVolume(m_spec.diskImage, m_spec.workspaceDir, m_spec.limits.diskMb,
                                   m_spec.dropPrivileges ? m_spec.uid : ::getuid(),
                                   m_spec.dropPrivileges ? m_spec.gid : ::getgid(),
                                   m_spec.volumePool, this);
    m_volume->mount([this](Result<bool> mounted) {
        if (!mounted) {
            m_cgroup.remove();
            m_cgroup = Cgroup(); // see onFinished()
            return Q_EMIT failed(mounted.error());
        }
        launch();
    });
}

namespace {

// A sealed-size memory file holding `bytes`, read from its start (bwrap's --args).
UniqueFd memoryFile(const char *name, const QByteArray &bytes)
{
    UniqueFd fd(::memfd_create(name, MFD_CLOEXEC));
    if (!fd.isValid())
        return {};
    qsizetype done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd.get(), bytes.constData() + done, size_t(bytes.size() - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return {};
        done += n;
    }
    if (::lseek(fd.get(), 0, SEEK_SET) != 0)
        return {};
    return fd;
}

QByteArray nulSeparated(const QStringList &args)
{
    QByteArray out;
    for (const QString &a : args) {
        out.append(QFile::encodeName(a));
        out.append('\0');
    }
    return out;
}

} // namespace

QMap<QString, QString> SandboxProcess::sandboxEnvironment(const SandboxSpec &spec)
{
    QMap<QString, QString> env{
        {QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin")},
        {QStringLiteral("HOME"), QStringLiteral("/workspace")},
        {QStringLiteral("USER"), QStringLiteral("sandbox")},
        {QStringLiteral("LANG"), QStringLiteral("C.UTF-8")},
        {QStringLiteral("TERM"), QStringLiteral("xterm-256color")},
        {QStringLiteral("SANDBOX_ID"), spec.id},
    };
    for (auto it = spec.env.cbegin(); it != spec.env.cend(); ++it)
        env.insert(it.key(), it.value());
    return env;
}

void SandboxProcess::launch()
{
    auto fail = [this](const QString &what) {
        const Error e{ErrorCode::SandboxError, what, {}};
        QTimer::singleShot(0, this, [this, e] { Q_EMIT failed(e); });
    };
    // The channel (engine end, supervisor end), the supervisor's log pipe, bwrap's arguments.
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(QStringLiteral("socketpair: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    UniqueFd engineEnd(sv[0]), supervisorEnd(sv[1]);
    int logPipe[2];
    if (::pipe2(logPipe, O_CLOEXEC) != 0)
        return fail(QStringLiteral("pipe: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    UniqueFd logRead(logPipe[0]), logWrite(logPipe[1]);
    UniqueFd argsFile;

    m_process = new QProcess(this);
    const QStringList supervisorArgs{QStringLiteral("--channel-fd"),
                                     QString::number(SupervisorWire::ChannelFd)};
    if (m_spec.bubblewrap) {
        argsFile = memoryFile("bwrap-args", nulSeparated(bwrapArguments(m_spec)));
        if (!argsFile.isValid())
            return fail(QStringLiteral("cannot pass bubblewrap its arguments: %1")
                            .arg(QString::fromLocal8Bit(strerror(errno))));
        m_process->setProgram(m_spec.bwrapPath);
        m_process->setArguments(QStringList{QStringLiteral("--args"), QStringLiteral("4"),
                                            QLatin1String(SupervisorInside)}
                                + supervisorArgs);
    } else {
        // One sandbox per container: /workspace is a link to its workspace, so that commands
        // and paths read the same as under bubblewrap.
        const QString ws = QStringLiteral("/workspace");
        const QFileInfo current(ws);
        if (current.isSymLink() || !current.exists()) {
            QFile::remove(ws);
            if (!QFile::link(m_spec.workspaceDir, ws))
                return fail(QStringLiteral("cannot link /workspace to %1").arg(m_spec.workspaceDir));
        }
        m_process->setProgram(m_spec.supervisorPath);
        m_process->setArguments(supervisorArgs + QStringList{QStringLiteral("--workspace"), ws});
        m_process->setWorkingDirectory(ws);
    }
    // A fixed environment: nothing of the sandbox's own reaches bubblewrap or the supervisor
    // (it comes in `configure`, for the processes the supervisor starts).
    QProcessEnvironment env;
    env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin"));
    env.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
    m_process->setProcessEnvironment(env);
    m_process->setStandardInputFile(QProcess::nullDevice());
    m_process->setStandardOutputFile(QProcess::nullDevice());
    m_process->setStandardErrorFile(QProcess::nullDevice()); // replaced by the log pipe below

    // Runs in the child between fork and exec: join the cgroup while still root, drop to the
    // sandbox's uid, die with the engine, put the log pipe at 2, the channel at 3 and bwrap's
    // arguments at 4, and let no other engine file descriptor reach the sandbox.
    const QList<QByteArray> procsFiles = m_cgroup.procsFiles();
    const bool drop = m_spec.dropPrivileges;
    const uid_t uid = m_spec.uid;
    const gid_t gid = m_spec.gid;
    const int channelFd = supervisorEnd.get();
    const int logFd = logWrite.get();
    const int argsFd = argsFile.get();
    m_process->setChildProcessModifier([procsFiles, drop, uid, gid, channelFd, logFd, argsFd] {
        auto die = [](const char *what) {
            const char prefix[] = "sandboxd: cannot ";
            (void)!::write(2, prefix, sizeof prefix - 1);
            (void)!::write(2, what, strlen(what));
            (void)!::write(2, "\n", 1);
            ::_exit(125);
        };
        for (const QByteArray &file : procsFiles) {
            const int fd = ::open(file.constData(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, "0", 1) != 1)
                die("join the sandbox's cgroup");
            ::close(fd);
        }
        if (drop) {
            if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0
                || ::setresuid(uid, uid, uid) != 0)
                die("drop privileges");
        }
        // After the uid change: a credential change clears the parent-death signal.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        // Copies above the targets first, so that no dup2() overwrites a source.
        const int channel = ::fcntl(channelFd, F_DUPFD_CLOEXEC, 10);
        const int log = ::fcntl(logFd, F_DUPFD_CLOEXEC, 10);
        const int args = argsFd >= 0 ? ::fcntl(argsFd, F_DUPFD_CLOEXEC, 10) : -1;
        if (channel < 0 || log < 0 || (argsFd >= 0 && args < 0) || ::dup2(log, STDERR_FILENO) < 0
            || ::dup2(channel, SupervisorWire::ChannelFd) < 0 || (args >= 0 && ::dup2(args, 4) < 0))
            die("set up the supervisor's descriptors");
        ::syscall(SYS_close_range, args >= 0 ? 5U : 4U, ~0U, CLOSE_RANGE_CLOEXEC);
    });

    m_channel = new SupervisorChannel(std::move(engineEnd), this);
    connect(m_channel, &SupervisorChannel::hello, this, [this] { configure(); });
    connect(m_channel, &SupervisorChannel::failed, this, [this](const QString &why) {
        abort(QStringLiteral("the sandbox's supervisor broke the protocol: ") + why);
    });
    connect(m_process, &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus status) { onFinished(code, int(status)); });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart) {
            Q_EMIT failed(Error{ErrorCode::SandboxError,
                                QStringLiteral("cannot start bubblewrap (%1): %2")
                                    .arg(m_spec.bwrapPath, m_process->errorString()),
                                {}});
        }
    });
    qCDebug(lcRuntime) << "starting" << m_spec.id << m_process->arguments();
    m_process->start(QIODevice::ReadOnly | QIODevice::Unbuffered);
    // The child has its copies now (start() forks before it returns).
    supervisorEnd.reset();
    logWrite.reset();
    argsFile.reset();
    m_log = new SupervisorLog(std::move(logRead), m_spec.id, this);
    QTimer::singleShot(kStartTimeoutMs, this, [this] {
        if (!m_readySeen && !m_stopping && m_process && m_process->state() != QProcess::NotRunning)
            abort(
                QStringLiteral("the sandbox did not start within %1 s").arg(kStartTimeoutMs / 1000));
    });
}

void SandboxProcess::configure()
{
    QJsonObject env;
    const QMap<QString, QString> vars = sandboxEnvironment(m_spec);
    for (auto it = vars.cbegin(); it != vars.cend(); ++it)
        env.insert(it.key(), it.value());
    // The host-backed trees besides /workspace that file ops may address.
    QJsonObject roots;
    for (const SandboxSpec::Mount &m : std::as_const(m_spec.extraMounts)) {
        if (m.writable)
            roots.insert(m.sandboxPath, QJsonObject());
    }
    const QJsonObject request{{QStringLiteral("op"), QStringLiteral("configure")},
                              {QStringLiteral("env"), env},
                              {QStringLiteral("roots"), roots}};
    QPointer<SandboxProcess> self(this);
    m_channel->request(request, {}, [self](Result<SupervisorChannel::Reply> r) {
        if (!self || self->m_stopping)
            return;
        if (!r)
            return self->abort(QStringLiteral("the sandbox's supervisor refused its "
                                              "configuration: ")
                               + r.error().message);
        self->m_readySeen = true;
        if (self->m_cgroup.isValid() && !self->m_cgroup.setCpuLimit(self->m_spec.limits.cpus))
            qCWarning(lcRuntime) << self->m_spec.id << "cannot set the CPU limit";
        Q_EMIT self->ready();
    });
}

void SandboxProcess::abort(const QString &why)
{
    if (!m_abortReason.isEmpty() || !m_process || m_process->state() == QProcess::NotRunning)
        return;
    m_abortReason = why;
    qCWarning(lcRuntime).noquote() << m_spec.id << why;
    // bwrap's death takes its PID namespace, and so every process of the sandbox, along.
    m_process->kill();
    m_cgroup.killAll();
}

void SandboxProcess::stop()
{
    if (!m_process || m_process->state() == QProcess::NotRunning) {
        QTimer::singleShot(0, this, [this] { Q_EMIT exited(QStringLiteral("stopped")); });
        return;
    }
    m_stopping = true;
    // Closing the channel tells the supervisor to exit; its PID namespace takes every process
    // along.
    if (m_channel)
        m_channel->closeChannel();
    QTimer::singleShot(kStopGraceMs, m_process, [p = m_process] {
        if (p->state() != QProcess::NotRunning)
            p->kill();
    });
}

void SandboxProcess::onFinished(int exitCode, int exitStatus)
{
    const bool outOfMemory = m_cgroup.isValid() && m_cgroup.oomKills() > 0;
    // Whatever is left in the cgroup (nothing, normally) goes too, then the workspace's mount.
    m_cgroup.killAll();
    m_cgroup.remove();
    if (m_volume)
        m_volume->unmount();
    // Forgotten, so that the destructor does not kill a new start of this sandbox, whose cgroup
    // has the same name.
    m_cgroup = Cgroup();
    QString reason;
    if (m_stopping) {
        reason = QStringLiteral("stopped");
    } else if (!m_abortReason.isEmpty()) {
        reason = m_abortReason;
    } else {
        reason
            = exitStatus == QProcess::CrashExit
                  ? QStringLiteral("the sandbox's supervisor was killed")
                  : QStringLiteral("the sandbox's supervisor exited with status %1").arg(exitCode);
        const QString tail = m_log ? m_log->lastLine() : QString();
        if (!tail.isEmpty())
            reason += QStringLiteral(": ") + tail;
        if (outOfMemory)
            reason += QStringLiteral(" (out of memory)");
    }
    if (m_channel)
        m_channel->failAll(Error{ErrorCode::SandboxNotRunning, reason, {}});
    if (!m_readySeen && !m_stopping) {
        Q_EMIT failed(Error{ErrorCode::SandboxError,
                            QStringLiteral("the sandbox did not start: ") + reason,
                            {}});
        return;
    }
    Q_EMIT exited(reason);
}

void SandboxProcess::cleanUpOrphan(const CgroupHost *cgroups, const QString &id,
                                   const QString &workspaceDir)
{
    if (cgroups && cgroups->isUsable()) {
        const Cgroup group = Cgroup::existing(*cgroups, cgroupName(id));
        group.killAll();
        group.remove();
    }
    WorkspaceVolume::forceUnmount(workspaceDir);
}

} // namespace Sandbox::Engine
