#include "sandboxprocess.h"

#include "supervisorchannel.h"
#include "workspacevolume.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QProcess>
#include <QTimer>

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>

Q_LOGGING_CATEGORY(lcRuntime, "sandboxd.runtime")

namespace Sandbox::Engine {

namespace {

constexpr int kStopGraceMs = 1500;
constexpr qsizetype kStderrTail = 4096;

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
    return m_channel && m_channel->isReady() && !m_stopping;
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
        QStringLiteral("/run/sandbox/sandbox-supervisor"),
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
    a << QStringLiteral("/run/sandbox/sandbox-supervisor");
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

void SandboxProcess::launch()
{
    auto fail = [this](const Error &e) {
        QTimer::singleShot(0, this, [this, e] { Q_EMIT failed(e); });
    };
    m_process = new QProcess(this);
    if (m_spec.bubblewrap) {
        m_process->setProgram(m_spec.bwrapPath);
        m_process->setArguments(bwrapArguments(m_spec));
    } else {
        // One sandbox per container: /workspace is a link to its workspace, so that commands
        // and paths read the same as under bubblewrap.
        const QString ws = QStringLiteral("/workspace");
        const QFileInfo current(ws);
        if (current.isSymLink() || !current.exists()) {
            QFile::remove(ws);
            if (!QFile::link(m_spec.workspaceDir, ws))
                return fail(
                    Error{ErrorCode::SandboxError,
                          QStringLiteral("cannot link /workspace to %1").arg(m_spec.workspaceDir),
                          {}});
        }
        m_process->setProgram(m_spec.supervisorPath);
        m_process->setArguments({QStringLiteral("--workspace"), ws});
        m_process->setWorkingDirectory(ws);
    }
    // The sandbox's environment goes through bwrap's own environment, not its argv, so that
    // secrets do not show in the host's process list.
    QProcessEnvironment env;
    env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin"));
    env.insert(QStringLiteral("HOME"), QStringLiteral("/workspace"));
    env.insert(QStringLiteral("USER"), QStringLiteral("sandbox"));
    env.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
    env.insert(QStringLiteral("TERM"), QStringLiteral("xterm-256color"));
    env.insert(QStringLiteral("SANDBOX_ID"), m_spec.id);
    for (auto it = m_spec.env.cbegin(); it != m_spec.env.cend(); ++it)
        env.insert(it.key(), it.value());
    m_process->setProcessEnvironment(env);

    // Runs in the child between fork and exec: join the cgroup while still root, drop to the
    // sandbox's uid, die with the engine, and let no engine file descriptor reach the sandbox.
    const QList<QByteArray> procsFiles = m_cgroup.procsFiles();
    const bool drop = m_spec.dropPrivileges;
    const uid_t uid = m_spec.uid;
    const gid_t gid = m_spec.gid;
    m_process->setChildProcessModifier([procsFiles, drop, uid, gid] {
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
        ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    });

    m_channel = new SupervisorChannel(m_process, m_process, this);
    connect(m_channel, &SupervisorChannel::ready, this, [this] {
        m_readySeen = true;
        if (m_cgroup.isValid() && !m_cgroup.setCpuLimit(m_spec.limits.cpus))
            qCWarning(lcRuntime) << m_spec.id << "cannot set the CPU limit";
        Q_EMIT ready();
    });
    connect(m_channel, &SupervisorChannel::protocolError, this, [this](const QString &why) {
        qCWarning(lcRuntime) << m_spec.id << why;
        m_process->kill();
    });
    connect(m_process, &QProcess::readyReadStandardError, this, [this] {
        const QByteArray err = m_process->readAllStandardError();
        for (const QByteArray &line : err.split('\n')) {
            if (!line.isEmpty())
                qCInfo(lcRuntime).noquote() << m_spec.id << QString::fromUtf8(line);
        }
        m_stderrTail = QByteArray(m_stderrTail + err).right(kStderrTail);
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
    m_process->start(QIODevice::ReadWrite | QIODevice::Unbuffered);
}

void SandboxProcess::stop()
{
    if (!m_process || m_process->state() == QProcess::NotRunning) {
        QTimer::singleShot(0, this, [this] { Q_EMIT exited(QStringLiteral("stopped")); });
        return;
    }
    m_stopping = true;
    // Closing stdin tells the supervisor to exit; its PID namespace takes every process along.
    m_process->closeWriteChannel();
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
    } else {
        reason
            = exitStatus == QProcess::CrashExit
                  ? QStringLiteral("the sandbox's supervisor was killed")
                  : QStringLiteral("the sandbox's supervisor exited with status %1").arg(exitCode);
        const QString tail = QString::fromUtf8(m_stderrTail).trimmed();
        if (!tail.isEmpty())
            reason += QStringLiteral(": ") + tail.section(u'\n', -1);
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
