#pragma once

#include "cgroup.h"
#include "protocol/result.h"

#include <QElapsedTimer>
#include <QHash>
#include <QLoggingCategory>
#include <QMap>
#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>
#include <memory>

#include <sys/types.h>

class QTimer;

// The steps of a sandbox's start with their times (debug; sandboxd --verbose).
Q_DECLARE_LOGGING_CATEGORY(lcStartup)

namespace Sandbox::Engine {

class ChildProcess;
class FdPoller;
class SupervisorChannel;
class SupervisorLog;
class WorkspaceVolume;

// Everything the runtime needs to start one sandbox (docs/protocol.md, section 6).
struct SandboxSpec
{
    QString id;
    QString workspaceDir; // host directory bound at /workspace (persistent)
    QString volumeDir; // holds workspaceDir and the other trees the sandbox writes (WorkspaceVolume)
    QString stateDir;  // host directory for this sandbox's generated files (passwd, group)
    QString supervisorPath; // host path of the sandbox-supervisor binary
    QString bwrapPath = QStringLiteral("/usr/bin/bwrap");
    bool dropPrivileges = false; // when the engine runs as root: run as uid/gid below
    uid_t uid = 0;
    gid_t gid = 0;
    bool useCgroups = true;
    // Where the sandbox's cgroup goes and which limits hold (null: none); shared by every sandbox.
    std::shared_ptr<const CgroupHost> cgroups;
    // False inside a container that is itself the sandbox (the Worker's images): the supervisor
    // then runs without bubblewrap, still as `uid` and in the cgroup when those apply.
    bool bubblewrap = true;
    QMap<QString, QString> env;
    ResourceLimits limits;
    // An ext4 image mounted on volumeDir that bounds the sandbox's disk (made on first start);
    // empty: plain directories.
    QString diskImage;
    QString volumePool; // where formatted spare images wait (see WorkspaceVolume)

    struct Mount
    {
        QString hostPath;
        QString sandboxPath;
        bool writable = false;
    };
    // More host paths to show inside (an agent's CLI read-only, a database's socket directory).
    QList<Mount> extraMounts;
    // A spare (docs/protocol.md 6): started before its owner is known, it waits after HELLO,
    // unconfigured (its CPU limit set once it is up), until SandboxProcess::claim() gives it its
    // environment.
    bool spare = false;
};

// One running sandbox: bubblewrap around a sandbox-supervisor, in its own cgroup, speaking the
// frame protocol (engine/supervisor/PROTOCOL.md) over a socketpair at the supervisor's fd 3.
// bubblewrap gets a fixed environment and its arguments through a descriptor; the sandbox's own
// environment reaches the supervisor in `configure`, after HELLO, and only the processes it
// starts. The runtime's one owner of bubblewrap and cgroups.
class SandboxProcess final : public QObject
{
    Q_OBJECT

public:
    // `poller` watches the supervisor's channel and log (the engine's one for every sandbox; null:
    // their own).
    explicit SandboxProcess(SandboxSpec spec, FdPoller *poller = nullptr, QObject *parent = nullptr);
    ~SandboxProcess() override;

    // The supervisor's path inside the sandbox.
    static constexpr const char *SupervisorInside = "/run/sandbox/sandbox-supervisor";
    // bubblewrap's descriptors in the child: its arguments and the seccomp filter it installs.
    static constexpr int kArgsFd = 4;
    static constexpr int kSeccompFd = 5;
    // HELLO and `configure` must be done within this time of the launch.
    static constexpr int kStartTimeoutMs = 30000;

    // Starts bwrap; ready() (once `configure` answered) or failed() follows, asynchronously.
    // A spare's ready() waits for claim().
    void start();
    // A spare gets its owner's environment (SandboxSpec::env) and goes on to ready().
    void claim(const QMap<QString, QString> &env);
    bool isClaimed() const { return !m_spec.spare || m_claimed; }
    // An unclaimed spare whose supervisor said HELLO: a claim makes it ready in one round trip.
    bool isWaiting() const
    {
        return m_helloSeen && !isClaimed() && m_abortReason.isEmpty()
               && (m_cpuLimitSet || !m_cgroup.isValid());
    }
    // Asks the supervisor to exit, kills what is left after a grace period, removes the cgroup.
    // exited() follows.
    void stop();

    bool isReady() const;
    SupervisorChannel *channel() const { return m_channel; }
    const SandboxSpec &spec() const { return m_spec; }
    const Cgroup &cgroup() const { return m_cgroup; }
    qint64 pid() const;

    // The bwrap arguments for a spec, given to bwrap through `--args FD` (exposed for tests and
    // diagnostics); the command line itself is only `bwrap --args 4 SupervisorInside ...`.
    static QStringList bwrapArguments(const SandboxSpec &spec);
    // The files the engine writes for the sandbox's curated /etc (name -> content): passwd and
    // group with the sandbox's uid, hosts, hostname, resolv.conf, nsswitch.conf.
    static QMap<QString, QByteArray> curatedEtc(const SandboxSpec &spec, uid_t uid, gid_t gid);
    // The environment the supervisor gives every process it starts (`configure`'s env).
    static QMap<QString, QString> sandboxEnvironment(const SandboxSpec &spec);

    // Kills whatever is left of a sandbox that the engine lost track of (after a crash).
    static void cleanUpOrphan(const CgroupHost *cgroups, const QString &id,
                              const QString &volumeDir);

Q_SIGNALS:
    void ready();
    void failed(const Sandbox::Error &error);
    void exited(const QString &reason);

private:
    // The step of start() after the cgroup is made: the volume, then launch().
    void prepareVolume(Cgroup group);
    void launch();
    void configure();
    // Sets the cgroup's CPU limit off the event loop, then calls `then` (not if this is gone).
    void limitCpu(std::function<void()> then);
    // Ends the sandbox if it is not ready within kStartTimeoutMs (a spare: while it is unclaimed,
    // only HELLO must come in that time).
    void armStartDeadline();
    void onFinished(int exitCode, bool crashed);
    // Ends the sandbox now (a protocol violation, a missed deadline, a failed start).
    void abort(const QString &why);
    // Freezes the cgroup, kills exec `id`'s process tree (its reaper's descendants), thaws.
    void killExec(quint32 id);
    // Ends the execs whose timeout came (see execStarted), then waits for the next one.
    void onExecTimeouts();
    void armExecTimeouts();
    // Kills what is left in the cgroup, removes it and unmounts the disk, off the event loop.
    void cleanUp(std::function<void()> then);
    Result<bool> prepareFiles() const;

    SandboxSpec m_spec;
    Cgroup m_cgroup;
    ChildProcess *m_child = nullptr;        // owned (child): bubblewrap
    SupervisorChannel *m_channel = nullptr; // owned (child)
    SupervisorLog *m_log = nullptr;         // owned (child)
    WorkspaceVolume *m_volume = nullptr;    // owned (child)
    struct ExecTree
    {
        qint64 reaperPid = 0;  // in the sandbox's PID namespace
        QList<quint64> pipes;  // inodes of its stdout and stderr pipes
        qint64 deadline = 0;   // its timeout (QDeadlineTimer::deadline()); 0: none
        bool answered = false; // its RESPONSE came before the timeout
    };
    QHash<quint32, ExecTree> m_execs;
    // The execs' timeouts, earliest first, and one timer for the earliest.
    QMultiMap<qint64, quint32> m_execTimeouts;
    QTimer *m_execTimer = nullptr; // owned (child)
    FdPoller *m_poller = nullptr;  // not owned
    QString m_abortReason;
    // Since start(): the start-up's steps are logged against it (sandboxd.startup, debug).
    QElapsedTimer m_sinceStart;
    bool m_stopping = false;
    bool m_preparing = false; // from start() until launch() (or a failure before it)
    bool m_readySeen = false;
    bool m_helloSeen = false;
    bool m_claimed = false; // a spare's claim() came
    bool m_cpuLimitSet = false;
};

} // namespace Sandbox::Engine
