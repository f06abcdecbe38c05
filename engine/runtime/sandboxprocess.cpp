#include "sandboxprocess.h"

#include "childprocess.h"
#include "containerlayout.h"
#include "doctor/bubblewrap.h"
#include "offloop.h"
#include "seccompprofile.h"
#include "supervisorchannel.h"
#include "supervisorlog.h"
#include "workspacevolume.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPointer>
#include <QTimer>

#include <climits>
#include <optional>

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
// Where a start's time goes: one debug line per step, in ms since start() (--verbose).
Q_LOGGING_CATEGORY(lcStartup, "sandboxd.startup")

namespace Sandbox::Engine {

namespace {

constexpr int kStopGraceMs = 1500;

QString cgroupName(const QString &id)
{
    return id;
}

QString span(const QElapsedTimer &t)
{
    return QString::number(double(t.nsecsElapsed()) / 1e6, 'f', 2) + QStringLiteral(" ms");
}

} // namespace

SandboxProcess::SandboxProcess(SandboxSpec spec, FdPoller *poller, QObject *parent)
    : QObject(parent)
    , m_spec(std::move(spec))
    , m_poller(poller)
{}

SandboxProcess::~SandboxProcess()
{
    if (m_child && m_child->isRunning()) {
        m_child->disconnect(this);
        delete m_child; // kills and reaps it
        m_child = nullptr;
    }
    m_cgroup.killAll();
    m_cgroup.remove();
    if (!m_spec.bubblewrap && m_spec.dropPrivileges)
        ContainerLayout::killAllOf(m_spec.uid);
    delete m_volume;
}

bool SandboxProcess::isReady() const
{
    return m_readySeen && m_channel && m_channel->isReady() && !m_stopping
           && m_abortReason.isEmpty();
}

qint64 SandboxProcess::pid() const
{
    return m_child ? m_child->pid() : 0;
}

namespace {

// What of the host's /etc a sandbox sees, read-only, when the host has it: certificates, the
// dynamic linker's cache, alternatives (where /usr/bin links go), time zone, the name and
// service tables, shell start-up files, and the configuration the runtimes and database servers
// read. Nothing with the host's users, secrets, network or services in it.
constexpr const char *kHostEtc[] = {
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "protocols",
    "services",
    "gai.conf",
    "host.conf",
    "mime.types",
    "os-release",
    "debian_version",
    "profile",
    "bash.bashrc",
    "inputrc",
    "shells",
    "terminfo",
    "magic",
    "magic.mime",
    "locale.alias",
    "perl",
    "postgresql-common",
    "java-17-openjdk",
    "fonts",
    "xml",
    "sgml",
    "mailcap",
};

// The files the engine writes for each sandbox into its state directory's etc/.
constexpr const char *kGeneratedEtc[] = {"passwd",   "group",       "hosts",
                                         "hostname", "resolv.conf", "nsswitch.conf"};

} // namespace

QStringList SandboxProcess::bwrapArguments(const SandboxSpec &spec)
{
    const QString tmpBytes = QString::number(spec.limits.tmpMb * 1024 * 1024);
    QStringList a = Bubblewrap::isolationArguments();
    a << QStringList{
        // A curated /etc: the sandbox's own users, hosts and resolver, and a short list of the
        // host's harmless files.
        QStringLiteral("--tmpfs"),
        QStringLiteral("/etc"),
    };
    for (const char *name : kGeneratedEtc)
        a << QStringLiteral("--ro-bind")
          << spec.stateDir + QStringLiteral("/etc/") + QLatin1String(name)
          << QStringLiteral("/etc/") + QLatin1String(name);
    for (const char *name : kHostEtc)
        a << QStringLiteral("--ro-bind-try") << QStringLiteral("/etc/") + QLatin1String(name)
          << QStringLiteral("/etc/") + QLatin1String(name);
    a << QStringLiteral("--remount-ro") << QStringLiteral("/etc");
    a << QStringList{
        QStringLiteral("--bind"),     spec.workspaceDir,
        QStringLiteral("/workspace"), QStringLiteral("--ro-bind"),
        spec.supervisorPath,          QLatin1String(SupervisorInside),
        QStringLiteral("--proc"),     QStringLiteral("/proc"),
        QStringLiteral("--dev"),      QStringLiteral("/dev"),
        QStringLiteral("--size"),     tmpBytes,
        QStringLiteral("--tmpfs"),    QStringLiteral("/tmp"),
        QStringLiteral("--size"),     tmpBytes,
        QStringLiteral("--tmpfs"),    QStringLiteral("/dev/shm"),
        QStringLiteral("--hostname"), spec.id,
        QStringLiteral("--chdir"),    QStringLiteral("/workspace"),
    };
    for (const SandboxSpec::Mount &m : spec.extraMounts)
        a << (m.writable ? QStringLiteral("--bind") : QStringLiteral("--ro-bind")) << m.hostPath
          << m.sandboxPath;
    // bubblewrap's own root and /dev are tmpfs mounts of no set size: read-only once everything
    // is mounted, so that a sandbox writes only where its disk limit counts (docs/protocol.md, 6).
    a << QStringLiteral("--remount-ro") << QStringLiteral("/") << QStringLiteral("--remount-ro")
      << QStringLiteral("/dev");
    // Never --share-net: every sandbox keeps its own network namespace (only its loopback); the
    // way out is the engine's egress proxy, reached through the supervisor's listeners.
    // Installed by bubblewrap right before it starts the supervisor (see launch()).
    a << QStringLiteral("--seccomp") << QString::number(kSeccompFd);
    return a;
}

QMap<QString, QByteArray> SandboxProcess::curatedEtc(const SandboxSpec &spec, uid_t uid, gid_t gid)
{
    QByteArray passwd = "root:x:0:0:root:/root:/bin/sh\n"
                        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
    QByteArray group = "root:x:0:\nnogroup:x:65534:\n";
    if (uid != 0 && uid != 65534)
        passwd += "sandbox:x:" + QByteArray::number(uid) + ':' + QByteArray::number(gid)
                  + ":Sandbox:/workspace:/bin/sh\n";
    if (gid != 0 && gid != 65534)
        group += "sandbox:x:" + QByteArray::number(gid) + ":\n";
    const QByteArray name = spec.id.toUtf8();
    // No name server is reachable from inside: the egress proxy resolves names itself.
    const QByteArray resolv = "# names are resolved by the egress proxy (HTTP_PROXY)\n";
    return {
        {QStringLiteral("passwd"), passwd},
        {QStringLiteral("group"), group},
        {QStringLiteral("hosts"),
         "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + name
             + "\n"},
        {QStringLiteral("hostname"), name + '\n'},
        {QStringLiteral("resolv.conf"), resolv},
        {QStringLiteral("nsswitch.conf"),
         "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
         "protocols: files\nservices: files\nethers: files\nrpc: files\n"},
    };
}

Result<bool> SandboxProcess::prepareFiles() const
{
    if (!QDir().mkpath(m_spec.stateDir))
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot create %1").arg(m_spec.stateDir),
                     {}};
    // The sandbox's uid must pass through the state directory to reach its workspace and files.
    ::chmod(QFile::encodeName(m_spec.stateDir).constData(), 0711);
    const uid_t uid = m_spec.dropPrivileges ? m_spec.uid : ::getuid();
    const gid_t gid = m_spec.dropPrivileges ? m_spec.gid : ::getgid();
    const QString etcDir = m_spec.stateDir + QStringLiteral("/etc");
    QDir().mkpath(etcDir);
    ::chmod(QFile::encodeName(etcDir).constData(), 0755);
    const QMap<QString, QByteArray> files = curatedEtc(m_spec, uid, gid);
    for (auto it = files.cbegin(); it != files.cend(); ++it) {
        QFile out(etcDir + u'/' + it.key());
        if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate)
            || out.write(it.value()) != it.value().size()
            || !out.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup
                                   | QFile::ReadOther))
            return Error{ErrorCode::SandboxError,
                         QStringLiteral("cannot write the sandbox's /etc in %1").arg(etcDir),
                         {}};
    }
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
    m_sinceStart.start();
    if (const auto prepared = prepareFiles(); !prepared)
        return fail(prepared.error());
    qCDebug(lcStartup).noquote() << m_spec.id << "files" << span(m_sinceStart);

    // The cgroup and its limits, off the event loop: its files' writes wait on the kernel's cgroup
    // lock, which other sandboxes starting and stopping hold (tens of ms each on a busy host).
    m_preparing = true;
    if (!m_spec.useCgroups || !m_spec.cgroups || !m_spec.cgroups->isUsable())
        return prepareVolume(Cgroup());
    runOffLoop<Result<Cgroup>>(
        this,
        [host = m_spec.cgroups, name = cgroupName(m_spec.id), limits = m_spec.limits] {
            return Cgroup::create(*host, name, limits);
        },
        [this](Result<Cgroup> group) {
            if (!group) {
                m_preparing = false;
                if (m_stopping)
                    return Q_EMIT exited(QStringLiteral("stopped"));
                return Q_EMIT failed(group.error());
            }
            prepareVolume(std::move(group).value());
        });
}

void SandboxProcess::prepareVolume(Cgroup group)
{
    m_cgroup = std::move(group);
    qCDebug(lcStartup).noquote() << m_spec.id << "cgroup" << span(m_sinceStart);
    if (m_stopping) {
        // stop() came while the cgroup was being made: nothing was started.
        m_preparing = false;
        return cleanUp([this] { Q_EMIT exited(QStringLiteral("stopped")); });
    }
    // The trees the sandbox writes (its workspace, agent home, run directory), on its disk image
    // where there is one; made fd-relative and off the event loop.
    WorkspaceVolume::Layout layout;
    layout.stateDir = m_spec.stateDir;
    layout.volumeDir = m_spec.volumeDir;
    layout.image = m_spec.diskImage;
    layout.imageMb = WorkspaceVolume::imageMb(m_spec.limits);
    layout.uid = m_spec.dropPrivileges ? m_spec.uid : ::getuid();
    layout.gid = m_spec.dropPrivileges ? m_spec.gid : ::getgid();
    layout.poolDir = m_spec.volumePool;
    m_volume = new WorkspaceVolume(layout, this);
    m_volume->mount([this](Result<bool> mounted) {
        m_preparing = false;
        qCDebug(lcStartup).noquote() << m_spec.id << "volume" << span(m_sinceStart);
        if (m_stopping) {
            // stop() came while the volume was being prepared: nothing was started.
            return cleanUp([this] { Q_EMIT exited(QStringLiteral("stopped")); });
        }
        if (!mounted) {
            // The cgroup goes (off the event loop); see onFinished() for why it is forgotten.
            return cleanUp([this, e = mounted.error()] { Q_EMIT failed(e); });
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
    UniqueFd seccompFile;

    m_child = new ChildProcess(m_poller, this);
    ChildProcess::Spec child;
    const QStringList supervisorArgs{QStringLiteral("--channel-fd"),
                                     QString::number(SupervisorWire::ChannelFd)};
    if (m_spec.bubblewrap) {
        argsFile = memoryFile("bwrap-args", nulSeparated(bwrapArguments(m_spec)));
        if (!argsFile.isValid())
            return fail(QStringLiteral("cannot pass bubblewrap its arguments: %1")
                            .arg(QString::fromLocal8Bit(strerror(errno))));
        auto filter = SeccompProfile::compile();
        if (!filter)
            return fail(filter.error().message);
        seccompFile = std::move(filter).value();
        child.program = m_spec.bwrapPath;
        child.arguments = QStringList{QStringLiteral("--args"), QString::number(kArgsFd),
                                      QLatin1String(SupervisorInside)}
                          + supervisorArgs;
    } else {
        // One sandbox per container (--isolation container): /workspace and the extra mounts are
        // links to their directories, so that commands and paths read the same as under
        // bubblewrap. What an earlier run of this uid left behind goes first.
        if (m_spec.dropPrivileges)
            ContainerLayout::killAllOf(m_spec.uid);
        if (const auto laid = ContainerLayout::apply(m_spec); !laid)
            return fail(laid.error().message);
        const QString ws = QStringLiteral("/workspace");
        child.program = m_spec.supervisorPath;
        child.arguments = supervisorArgs + QStringList{QStringLiteral("--workspace"), ws};
        child.workingDirectory = ws;
    }
    // A fixed environment: nothing of the sandbox's own reaches bubblewrap or the supervisor
    // (it comes in `configure`, for the processes the supervisor starts).
    // stdin, stdout and stderr are /dev/null (stderr replaced by the log pipe below).
    child.environment = QStringList{QStringLiteral("PATH=/usr/local/bin:/usr/bin:/bin"),
                                    QStringLiteral("LANG=C.UTF-8")};

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
    const int seccompFd = seccompFile.get();
    child.modifier = [procsFiles, drop, uid, gid, channelFd, logFd, argsFd, seccompFd] {
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
        const int filter = seccompFd >= 0 ? ::fcntl(seccompFd, F_DUPFD_CLOEXEC, 10) : -1;
        if (channel < 0 || log < 0 || (argsFd >= 0 && args < 0) || (seccompFd >= 0 && filter < 0)
            || ::dup2(log, STDERR_FILENO) < 0 || ::dup2(channel, SupervisorWire::ChannelFd) < 0
            || (args >= 0 && ::dup2(args, kArgsFd) < 0)
            || (filter >= 0 && ::dup2(filter, kSeccompFd) < 0))
            die("set up the supervisor's descriptors");
        // bwrap reads (and closes) 4 and 5 before it starts the supervisor.
        ::syscall(SYS_close_range, args >= 0 ? unsigned(kSeccompFd) + 1 : 4U, ~0U,
                  CLOSE_RANGE_CLOEXEC);
    };

    m_channel = new SupervisorChannel(std::move(engineEnd), m_poller, this);
    connect(m_channel, &SupervisorChannel::hello, this, [this] {
        qCDebug(lcStartup).noquote() << m_spec.id << "hello" << span(m_sinceStart);
        m_helloSeen = true;
        if (isClaimed())
            configure();
        else if (m_cgroup.isValid())
            limitCpu([] {}); // a claim then needs only `configure`
    });
    connect(m_channel, &SupervisorChannel::failed, this, [this](const QString &why) {
        abort(QStringLiteral("the sandbox's supervisor broke the protocol: ") + why);
    });
    // Kills win: at an exec's timeout, or when it is cancelled, the engine itself freezes the
    // sandbox's cgroup, kills the exec's whole tree and thaws, whatever the supervisor does. An
    // exec that answered before its timeout keeps its background processes, except those still
    // holding its output pipes when the timeout comes (`f(){ f|f& }; f` answers at once).
    connect(m_channel, &SupervisorChannel::execStarted, this,
            [this](quint32 id, qint64 reaperPid, const QList<quint64> &pipes, qint64 timeoutMs) {
                ExecTree &tree = m_execs[id];
                tree.reaperPid = reaperPid;
                tree.pipes = pipes;
                if (timeoutMs <= 0)
                    return;
                // One queue, not a timer per exec (one stays for its whole timeout).
                tree.deadline = QDeadlineTimer(timeoutMs).deadline();
                m_execTimeouts.insert(tree.deadline, id);
                armExecTimeouts();
            });
    connect(m_channel, &SupervisorChannel::cancelRequested, this,
            [this](quint32 id) { killExec(id); });
    connect(m_channel, &SupervisorChannel::execEnded, this, [this](quint32 id, bool treeGone) {
        const auto it = m_execs.find(id);
        if (it == m_execs.end())
            return;
        if (it->deadline != 0 && !treeGone) {
            it->answered = true; // its timeout still ends what holds its pipes
            return;
        }
        // Nothing of it is left to kill at its timeout (the supervisor's word: were it false, only
        // the sandbox's own processes would be spared), and no freeze of the sandbox then.
        if (it->deadline != 0)
            m_execTimeouts.remove(it->deadline, id);
        m_execs.erase(it);
    });
    connect(m_child, &ChildProcess::finished, this,
            [this](int code, bool crashed) { onFinished(code, crashed); });
    qCDebug(lcRuntime) << "starting" << m_spec.id << child.arguments;
    if (const auto started = m_child->start(child); !started)
        return fail(QStringLiteral("cannot start bubblewrap (%1): %2")
                        .arg(child.program, started.error().message));
    // The child has its copies now (start() forks before it returns).
    supervisorEnd.reset();
    logWrite.reset();
    argsFile.reset();
    seccompFile.reset();
    m_log = new SupervisorLog(std::move(logRead), m_spec.id, m_poller, this);
    qCDebug(lcStartup).noquote() << m_spec.id << "forked" << span(m_sinceStart);
    armStartDeadline();
}

void SandboxProcess::armStartDeadline()
{
    QTimer::singleShot(kStartTimeoutMs, this, [this, claimed = isClaimed()] {
        const bool waiting = !claimed ? !m_helloSeen : (!m_readySeen && isClaimed());
        if (waiting && !m_stopping && m_child && m_child->isRunning())
            abort(
                QStringLiteral("the sandbox did not start within %1 s").arg(kStartTimeoutMs / 1000));
    });
}

void SandboxProcess::claim(const QMap<QString, QString> &env)
{
    if (isClaimed())
        return;
    m_claimed = true;
    m_spec.env = env;
    qCDebug(lcStartup).noquote() << m_spec.id << "claimed" << span(m_sinceStart);
    m_sinceStart.start();
    if (!m_child)
        return; // still preparing: launch() arms the deadline, HELLO configures
    armStartDeadline();
    if (m_helloSeen)
        configure();
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
        qCDebug(lcStartup).noquote() << self->m_spec.id << "configured" << span(self->m_sinceStart);
        // The sandbox is ready once its CPU limit holds (a spare's was set while it waited).
        if (!self->m_cgroup.isValid() || self->m_cpuLimitSet)
            return Q_EMIT self->ready();
        self->limitCpu([self] {
            if (self->m_child && self->m_child->isRunning())
                Q_EMIT self->ready(); // otherwise onFinished() says how it ended
        });
    });
}

void SandboxProcess::limitCpu(std::function<void()> then)
{
    // Off the event loop, like the cgroup's creation (see start()). Not before HELLO: bubblewrap
    // and the supervisor start far faster without it (a `lite` sandbox has 1/16 of a core).
    QPointer<SandboxProcess> self(this);
    runOffLoop<bool>(
        this, [group = m_cgroup, cpus = m_spec.limits.cpus] { return group.setCpuLimit(cpus); },
        [self, then = std::move(then)](bool set) {
            if (!self)
                return;
            if (!set)
                qCWarning(lcRuntime) << self->m_spec.id << "cannot set the CPU limit";
            self->m_cpuLimitSet = true;
            qCDebug(lcStartup).noquote()
                << self->m_spec.id << "cpu limit" << span(self->m_sinceStart);
            then();
        });
}

void SandboxProcess::armExecTimeouts()
{
    if (m_execTimeouts.isEmpty()) {
        if (m_execTimer)
            m_execTimer->stop();
        return;
    }
    if (!m_execTimer) {
        m_execTimer = new QTimer(this);
        m_execTimer->setSingleShot(true);
        m_execTimer->setTimerType(Qt::PreciseTimer);
        connect(m_execTimer, &QTimer::timeout, this, &SandboxProcess::onExecTimeouts);
    }
    const qint64 wait = m_execTimeouts.firstKey() - QDeadlineTimer::current().deadline();
    m_execTimer->start(int(qBound(qint64(0), wait, qint64(INT_MAX))));
}

void SandboxProcess::onExecTimeouts()
{
    const qint64 now = QDeadlineTimer::current().deadline();
    while (!m_execTimeouts.isEmpty() && m_execTimeouts.firstKey() <= now) {
        const quint32 id = m_execTimeouts.first();
        m_execTimeouts.erase(m_execTimeouts.begin());
        const auto it = m_execs.find(id);
        if (it == m_execs.end())
            continue;
        const ExecTree tree = std::move(it.value());
        m_execs.erase(it);
        if (!tree.answered && m_channel)
            m_channel->markTimedOut(id);
        if (m_cgroup.isValid() && (!tree.answered || !tree.pipes.isEmpty()))
            m_cgroup.killDescendants(tree.reaperPid, tree.answered ? tree.pipes : QList<quint64>());
    }
    armExecTimeouts();
}

void SandboxProcess::killExec(quint32 id)
{
    const auto it = m_execs.constFind(id);
    if (it == m_execs.constEnd() || !m_cgroup.isValid())
        return;
    const int killed = m_cgroup.killDescendants(it->reaperPid);
    qCDebug(lcRuntime) << m_spec.id << "exec" << id << "killed" << killed << "processes";
}

void SandboxProcess::abort(const QString &why)
{
    if (!m_abortReason.isEmpty() || !m_child || !m_child->isRunning())
        return;
    m_abortReason = why;
    qCWarning(lcRuntime).noquote() << m_spec.id << why;
    // bwrap's death takes its PID namespace, and so every process of the sandbox, along.
    m_child->kill();
    m_cgroup.killAll();
}

void SandboxProcess::stop()
{
    if (!m_child && m_preparing) {
        m_stopping = true; // exited() follows once the cgroup and volume are ready (see start())
        return;
    }
    if (!m_child || !m_child->isRunning()) {
        QTimer::singleShot(0, this, [this] { Q_EMIT exited(QStringLiteral("stopped")); });
        return;
    }
    m_stopping = true;
    // Closing the channel tells the supervisor to exit; its PID namespace takes every process
    // along.
    if (m_channel)
        m_channel->closeChannel();
    QTimer::singleShot(kStopGraceMs, m_child, [this, p = m_child] {
        if (p->isRunning()) {
            // Frozen, killed, thawed: nothing inside outruns it (a fork bomb included).
            m_cgroup.killAll();
            p->kill();
        }
    });
}

void SandboxProcess::onFinished(int exitCode, bool crashed)
{
    const bool outOfMemory = m_cgroup.isValid() && m_cgroup.oomKills() > 0;
    QString reason;
    if (m_stopping) {
        reason = QStringLiteral("stopped");
    } else if (!m_abortReason.isEmpty()) {
        reason = m_abortReason;
    } else {
        reason
            = crashed
                  ? QStringLiteral("the sandbox's supervisor was killed")
                  : QStringLiteral("the sandbox's supervisor exited with status %1").arg(exitCode);
        const QString tail = m_log ? m_log->lastLine() : QString();
        if (!tail.isEmpty())
            reason += QStringLiteral(": ") + tail;
        if (outOfMemory)
            reason += QStringLiteral(" (out of memory)");
    }
    // A request in flight when the sandbox was stopped is cut short (-32005); one whose
    // supervisor died or was killed under it failed (-32011).
    if (m_channel)
        m_channel->failAll(
            Error{m_stopping ? ErrorCode::SandboxNotRunning : ErrorCode::SandboxError,
                  m_stopping ? reason : QStringLiteral("the sandbox was stopped: ") + reason,
                  {}});
    // Whatever is left in the cgroup (nothing, normally) goes too, then the disk's mount: off the
    // event loop, as dying processes and the file system's final flush take their time. The
    // cgroup is forgotten here, so that the destructor does not kill a new start of this sandbox
    // (same cgroup name); exited() comes once all of it is done.
    cleanUp([this, reason] {
        if (!m_readySeen && !m_stopping)
            return Q_EMIT failed(Error{ErrorCode::SandboxError,
                                       QStringLiteral("the sandbox did not start: ") + reason,
                                       {}});
        Q_EMIT exited(reason);
    });
}

void SandboxProcess::cleanUp(std::function<void()> then)
{
    const Cgroup group = std::exchange(m_cgroup, Cgroup());
    const QString mountPoint = m_volume ? m_volume->release() : QString();
    // In a container there is no PID namespace to end with the supervisor: its uid's processes go.
    const std::optional<uid_t> containerUid = !m_spec.bubblewrap && m_spec.dropPrivileges
                                                  ? std::optional<uid_t>(m_spec.uid)
                                                  : std::nullopt;
    runOffLoop<bool>(
        this,
        [group, mountPoint, containerUid] {
            group.killAll();
            group.remove();
            if (containerUid)
                ContainerLayout::killAllOf(*containerUid);
            if (!mountPoint.isEmpty())
                WorkspaceVolume::forceUnmount(mountPoint);
            return true;
        },
        [then = std::move(then)](bool) { then(); });
}

void SandboxProcess::cleanUpOrphan(const CgroupHost *cgroups, const QString &id,
                                   const QString &volumeDir)
{
    if (cgroups && cgroups->isUsable()) {
        const Cgroup group = Cgroup::existing(*cgroups, cgroupName(id));
        group.killAll();
        group.remove();
    }
    WorkspaceVolume::forceUnmount(volumeDir);
}

} // namespace Sandbox::Engine
