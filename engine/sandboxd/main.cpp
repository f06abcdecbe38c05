// sandboxd: the local engine. Serves docs/protocol.md on one port with real bubblewrap sandboxes.
#include "agents/agentservice.h"
#include "api/apiserver.h"
#include "api/keystore.h"
#include "api/methods.h"
#include "databases/databaseadapter.h"
#include "doctor/agentclis.h"
#include "doctor/hostfacts.h"
#include "doctorcommand.h"
#include "egress/egressservice.h"
#include "engineoptions.h"
#include "runtime/uniquefd.h"
#include "runtime/workspacevolume.h"
#include "service/sandboxmanager.h"
#include "service/sandboxnetwork.h"
#include "service/streamhub.h"
#include "service/workspacearchive.h"
#include "state/registry.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QSaveFile>
#include <QSocketNotifier>
#include <QStandardPaths>
#include <QSysInfo>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace Sandbox;
using namespace Sandbox::Engine;

namespace {

int g_signalPipe[2] = {-1, -1}; // the one global: a signal handler has nowhere else to write

void onSignal(int)
{
    const char c = 1;
    (void)!::write(g_signalPipe[1], &c, 1);
}

void die(const QString &message)
{
    std::fprintf(stderr, "sandboxd: %s\n", qPrintable(message));
    std::exit(1);
}

QString defaultDataDir()
{
    if (::geteuid() == 0)
        return QStringLiteral("/var/lib/sandboxd");
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation)
           + QStringLiteral("/sandboxd");
}

QString findSupervisor(const QString &given)
{
    if (!given.isEmpty())
        return given;
    const QString appDir = QCoreApplication::applicationDirPath();
    const QStringList candidates{appDir + QStringLiteral("/sandbox-supervisor"),
                                 appDir
                                     + QStringLiteral(
                                         "/../libexec/sandbox-desktop/sandbox-supervisor")};
    for (const QString &candidate : candidates) {
        if (QFile::exists(candidate))
            return QDir::cleanPath(candidate);
    }
    return appDir + QStringLiteral("/sandbox-supervisor");
}

// The first start makes a key and leaves it where the app and sandboxctl look (mode 0600).
void ensureKeyFile(KeyStore &keys, const QString &dataDir)
{
    const QString path = dataDir + QStringLiteral("/api-key");
    if (!keys.isEmpty() && QFile::exists(path))
        return;
    if (!keys.isEmpty() && !QFile::exists(path))
        return; // keys exist; the user chose where to keep them
    const auto key = keys.create(QStringLiteral("local"), true);
    if (!key)
        die(key.error().message);
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        die(QStringLiteral("cannot write %1: %2").arg(path, f.errorString()));
    f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    f.write(key->key.toLatin1() + '\n');
    if (!f.commit())
        die(QStringLiteral("cannot write %1: %2").arg(path, f.errorString()));
}

// One engine per data dir: an flock(2) on sandboxd.lock, which the kernel lets go of when its
// holder dies, however it dies. A pid in the file proves nothing: in a container restarted after
// a kill -9 the dead engine's pid is alive again (it is often the new engine's own). The file
// still says who holds it (pid, name, host: QLockFile's layout) for people and tools.
UniqueFd lockDataDir(const QString &dataDir)
{
    const QString path = dataDir + QStringLiteral("/sandboxd.lock");
    UniqueFd fd(::open(QFile::encodeName(path).constData(),
                       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.isValid())
        die(QStringLiteral("cannot open %1: %2")
                .arg(path, QString::fromLocal8Bit(std::strerror(errno))));
    int locked;
    do {
        locked = ::flock(fd.get(), LOCK_EX | LOCK_NB);
    } while (locked != 0 && errno == EINTR);
    if (locked != 0 && errno == EWOULDBLOCK)
        die(QStringLiteral("another sandboxd is using %1").arg(dataDir));
    if (locked != 0)
        die(QStringLiteral("cannot lock %1: %2")
                .arg(path, QString::fromLocal8Bit(std::strerror(errno))));
    const QByteArray holder = QByteArray::number(qint64(::getpid())) + "\nsandboxd\n"
                              + QSysInfo::machineHostName().toUtf8() + '\n';
    if (::ftruncate(fd.get(), 0) != 0
        || ::pwrite(fd.get(), holder.constData(), size_t(holder.size()), 0) != holder.size())
        die(QStringLiteral("cannot write %1: %2")
                .arg(path, QString::fromLocal8Bit(std::strerror(errno))));
    return fd;
}

// Connections and sandboxes both take file descriptors: the soft limit goes as high as the hard
// one allows (the engine polls, it never select()s), and the answer is what it is now.
rlim_t raiseFileLimit()
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return 1024;
    const rlim_t wanted = std::min<rlim_t>(limit.rlim_max, 65536);
    if (limit.rlim_cur < wanted) {
        limit.rlim_cur = wanted;
        ::setrlimit(RLIMIT_NOFILE, &limit);
        ::getrlimit(RLIMIT_NOFILE, &limit);
    }
    return limit.rlim_cur;
}

// The state directory, and sandboxes/ below it.
void makeDataDir(const QString &dataDir)
{
    if (!QDir().mkpath(dataDir + QStringLiteral("/sandboxes")))
        die(QStringLiteral("cannot create %1").arg(dataDir));
    // Sandboxes run as other uids and must reach their workspaces below this directory;
    // 0711 lets them pass through without listing it. The key and registry files are 0600.
    ::chmod(QFile::encodeName(dataDir).constData(), 0711);
    ::chmod(QFile::encodeName(dataDir + QStringLiteral("/sandboxes")).constData(), 0711);
}

// In a container the key comes from outside (the Worker); on a desktop the first start makes one.
void loadKeys(KeyStore &keys, const EngineOptions &options)
{
    if (const QByteArray envKey = qgetenv("SANDBOXD_API_KEY"); !envKey.isEmpty()) {
        if (const auto imported = keys.import(QStringLiteral("environment"), envKey, true);
            !imported)
            die(imported.error().message);
        qunsetenv("SANDBOXD_API_KEY");
    } else if (!options.prepare) {
        ensureKeyFile(keys, options.dataDir);
    }
}

// The options' configuration of the sandboxes, with what the host has: root or not, cgroups,
// the supervisor and bubblewrap (their absence ends the engine).
EngineConfig engineConfig(const EngineOptions &options)
{
    EngineConfig config = options.engine;
    config.dataDir = options.dataDir;
    config.supervisorPath = findSupervisor(options.supervisor);
    config.dropPrivileges = ::geteuid() == 0;
    // In a container the cgroup tree is read-only and the container's own limits (its instance
    // type) bound the sandbox: the engine makes no cgroups there.
    config.useCgroups = !options.noCgroups && !options.inContainer;
    // As root: the top of the hierarchy; as a normal user: the subtree systemd delegates to the
    // engine, if any. Either way every Sandbox object says which limits hold.
    config.cgroups = std::make_shared<const CgroupHost>(
        config.useCgroups ? CgroupHost::prepare(HostRoot(), ::geteuid())
        : options.inContainer
            ? CgroupHost::disabled(
                QStringLiteral("in a container the container's instance type sets the limits"))
            : CgroupHost::disabled(QStringLiteral("sandboxd was started with --no-cgroups")));
    if (!QFile::exists(config.supervisorPath))
        die(QStringLiteral("sandbox-supervisor not found at %1 (use --supervisor)")
                .arg(config.supervisorPath));
    config.bubblewrap = !options.inContainer;
    // A container's disk is the cap there (and it has no loop devices for workspace images).
    config.diskImages = !options.noDiskLimit && !options.inContainer
                        && WorkspaceVolume::isSupported();
    if (config.bubblewrap && !QFile::exists(config.bwrapPath))
        die(QStringLiteral("bubblewrap not found at %1: apt-get install bubblewrap")
                .arg(config.bwrapPath));
    return config;
}

// Open files: half for API connections (connectionLimits), the rest for the egress proxy,
// sandboxes and databases.
EgressService::Config egressConfig(const EngineOptions &options, rlim_t fileLimit)
{
    EgressService::Config config;
    config.dns = DnsResolver::systemConfig(options.egressHosts);
    if (!options.egressDns.isEmpty())
        config.dns.servers = options.egressDns;
    config.extraCaCertificates = options.egressCa;
    // The egress proxy holds two sockets and two pipes per connection (and a few spare).
    const qint64 fdsPerConnection = 6;
    const qint64 egressFiles = qint64(std::min<rlim_t>(fileLimit / 2, 1 << 20));
    config.limits.maxConnections = int(qBound(qint64(64), (egressFiles - 512) / fdsPerConnection,
                                              qint64(config.limits.maxConnections)));
    return config;
}

ConnectionGate::Limits connectionLimits(const EngineOptions &options, rlim_t fileLimit)
{
    ConnectionGate::Limits limits = options.connections;
    const int fileRoom = int(std::min<rlim_t>(fileLimit / 2, 1 << 20));
    if (limits.maxConnections > fileRoom) {
        std::fprintf(stderr, "sandboxd: at most %d connections (half the open-file limit)\n",
                     fileRoom);
        limits.maxConnections = fileRoom;
    }
    return limits;
}

// --prepare: the databases' templates, then the exit status.
int prepareTemplates(QCoreApplication &app, DatabaseAdapter &databases)
{
    int status = 1;
    databases.prepareTemplates(&app, [&app, &status](Result<bool> ready) {
        if (!ready)
            std::fprintf(stderr, "sandboxd: %s\n", qPrintable(ready.error().message));
        status = ready ? 0 : 1;
        app.quit();
    });
    app.exec();
    return status;
}

// docs/protocol.md 4.9: every denial goes to the sandbox owner's WebSockets.
void sendDenials(SandboxNetwork &network, ApiServer &server, const SandboxManager &sandboxes)
{
    QObject::connect(&network, &SandboxNetwork::denied, &server,
                     [&server, &sandboxes](const QString &id, const QJsonObject &denial) {
                         const QJsonObject n{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                             {QStringLiteral("method"),
                                              QStringLiteral("network.denied")},
                                             {QStringLiteral("params"),
                                              QJsonObject{{QStringLiteral("id"), id},
                                                          {QStringLiteral("denial"), denial}}}};
                         server.notifyKey(sandboxes.keyOf(id),
                                          QJsonDocument(n).toJson(QJsonDocument::Compact));
                     });
}

// SIGTERM and SIGINT end the event loop, through a pipe (a handler can do little else).
void quitOnSignals(QCoreApplication &app)
{
    if (::pipe2(g_signalPipe, O_CLOEXEC) != 0)
        die(QStringLiteral("pipe: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    auto *notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, &app);
    QObject::connect(notifier, &QSocketNotifier::activated, &app, &QCoreApplication::quit);
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

// The command line, read and checked (engineoptions.cpp); --help, --version and a wrong option
// end the program here.
EngineOptions readCommandLine(QCoreApplication &app)
{
    QCommandLineParser cli;
    cli.setApplicationDescription(
        QStringLiteral("The Sandbox Desktop local engine: bubblewrap sandboxes behind "
                       "a REST and JSON-RPC API (docs/protocol.md)."));
    cli.addHelpOption();
    cli.addVersionOption();
    addEngineOptions(cli, defaultDataDir());
    cli.process(app);
    auto options = readEngineOptions(cli);
    if (!options)
        die(options.error().message);
    return std::move(options).value();
}

} // namespace

int main(int argc, char **argv)
{
    // Qt's own event loop instead of GLib's: the engine needs nothing of GLib's, and each turn of
    // its loop (every /rpc call takes two or more) costs GLib's source bookkeeping and locks
    // besides the poll — a fifth of the engine's CPU time for a call such as sandbox.status,
    // measured. Read as the application and each thread make their event dispatcher.
    qputenv("QT_NO_GLIB", "1");
    QCoreApplication app(argc, argv);
    app.setApplicationName(QStringLiteral("sandboxd"));
    app.setApplicationVersion(QStringLiteral(SANDBOX_VERSION));
    if (app.arguments().value(1) == QLatin1String("doctor"))
        return runDoctorCommand(app.arguments().mid(1), defaultDataDir());
    const EngineOptions options = readCommandLine(app);
    if (!options.verbose)
        QLoggingCategory::setFilterRules(QStringLiteral("sandboxd.*.debug=false"));

    makeDataDir(options.dataDir);
    const UniqueFd lock = lockDataDir(options.dataDir);
    ::umask(077);
    auto registry = Registry::open(options.dataDir + QStringLiteral("/registry.db"));
    if (!registry)
        die(registry.error().message);
    KeyStore keys(registry->get());
    loadKeys(keys, options);
    const EngineConfig config = engineConfig(options);
    const rlim_t fileLimit = raiseFileLimit();

    EgressService egress(egressConfig(options, fileLimit));
    SandboxNetwork network(&egress);
    SandboxManager sandboxes(config, registry->get());
    // In container mode the container is the network boundary (the Worker's egress settings).
    if (config.bubblewrap)
        sandboxes.setNetwork(&network);
    sandboxes.recover();
    StreamHub streams;
    Methods methods(&sandboxes, &streams, &keys);
    methods.setNetwork(&network);
    const QString binDir = QCoreApplication::applicationDirPath();
    DatabaseAdapter databases(&methods, &sandboxes, DatabaseAdapter::findDbHost(binDir));
    AgentService agents(&sandboxes, &streams, &methods,
                        AgentClis::searchDirs(binDir, options.dataDir, options.agentsDir));
    if (config.bubblewrap)
        agents.setNetwork(&network);
    WorkspaceArchiver archiver(&methods, &sandboxes);
    if (options.prepare)
        return prepareTemplates(app, databases);

    databases.keepServersReady();
    ApiServer server(&methods, &streams, &keys);
    QObject::connect(&methods, &Methods::keyRevoked, &server, &ApiServer::disconnectKey);
    sendDenials(network, server, sandboxes);
    const auto url = server.listen(options.address, options.port,
                                   connectionLimits(options, fileLimit));
    if (!url)
        die(url.error().message);
    egress.setEnginePorts({quint16(url->port())});
    quitOnSignals(app);

    std::printf("sandboxd listening on %s\n", qPrintable(url->toString()));
    std::fflush(stdout);
    return app.exec();
}
