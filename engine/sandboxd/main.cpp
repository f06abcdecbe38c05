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
#include "protocol/sandboxenums.h"
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
#include <QSslCertificate>
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

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    app.setApplicationName(QStringLiteral("sandboxd"));
    app.setApplicationVersion(QStringLiteral(SANDBOX_VERSION));
    if (app.arguments().value(1) == QLatin1String("doctor"))
        return runDoctorCommand(app.arguments().mid(1), defaultDataDir());

    QCommandLineParser cli;
    cli.setApplicationDescription(
        QStringLiteral("The Sandbox Desktop local engine: bubblewrap sandboxes behind "
                       "a REST and JSON-RPC API (docs/protocol.md)."));
    cli.addHelpOption();
    cli.addVersionOption();
    const QCommandLineOption
        listenOpt(QStringLiteral("listen"),
                  QStringLiteral(
                      "Address to listen on (default 127.0.0.1:7465; port 0 picks one)."),
                  QStringLiteral("host:port"), QStringLiteral("127.0.0.1:7465"));
    const QCommandLineOption dataOpt(QStringLiteral("data-dir"),
                                     QStringLiteral("State directory (default %1).")
                                         .arg(defaultDataDir()),
                                     QStringLiteral("dir"), defaultDataDir());
    const QCommandLineOption supervisorOpt(QStringLiteral("supervisor"),
                                           QStringLiteral("Path of sandbox-supervisor."),
                                           QStringLiteral("path"));
    const QCommandLineOption
        noCgroupsOpt(QStringLiteral("no-cgroups"),
                     QStringLiteral("Do not use cgroups (no memory, process or CPU limits)."));
    const QCommandLineOption maxRunningOpt(QStringLiteral("max-running"),
                                           QStringLiteral("Running sandboxes per key (default 8)."),
                                           QStringLiteral("n"), QStringLiteral("8"));
    const QCommandLineOption maxMemoryOpt(QStringLiteral("max-memory-mb"),
                                          QStringLiteral(
                                              "Sandbox memory per key in MiB (default 16384)."),
                                          QStringLiteral("mib"), QStringLiteral("16384"));
    const QCommandLineOption maxSandboxesOpt(QStringLiteral("max-sandboxes"),
                                             QStringLiteral("Sandboxes per key (default 64)."),
                                             QStringLiteral("n"), QStringLiteral("64"));
    const QCommandLineOption
        sparesOpt(QStringLiteral("spares"),
                  QStringLiteral("Sandboxes started ahead of demand, one per kind, type and size "
                                 "recently created, at most N in all (default 2; 0: none)."),
                  QStringLiteral("n"), QStringLiteral("2"));
    const QCommandLineOption
        sparesMemoryOpt(QStringLiteral("spares-min-available-mb"),
                        QStringLiteral("No spares while the host has less memory available, in "
                                       "MiB (default 2048)."),
                        QStringLiteral("mib"), QStringLiteral("2048"));
    const QCommandLineOption
        databasePoolOpt(QStringLiteral("database-pool"),
                        QStringLiteral("Databases of each type kept started ahead of demand, "
                                       "once one of the type was created (default 1; 0: none); "
                                       "or per type, e.g. postgres=2,duckdb=0."),
                        QStringLiteral("n"), QStringLiteral("1"));
    const QCommandLineOption
        sleepAfterOpt(QStringLiteral("sleep-after"),
                      QStringLiteral(
                          "Default idle time before a sandbox sleeps, in ms (default 600000)."),
                      QStringLiteral("ms"), QStringLiteral("600000"));
    const QCommandLineOption
        uidBaseOpt(QStringLiteral("uid-base"),
                   QStringLiteral(
                       "When run as root, sandbox N runs as uid BASE+N (default 200000)."),
                   QStringLiteral("uid"), QStringLiteral("200000"));
    const QCommandLineOption
        isolationOpt(QStringLiteral("isolation"),
                     QStringLiteral(
                         "bubblewrap (default), or container when the engine runs inside a "
                         "container that is itself the sandbox boundary."),
                     QStringLiteral("mode"), QStringLiteral("bubblewrap"));
    const QCommandLineOption
        noDiskLimitOpt(QStringLiteral("no-disk-limit"),
                       QStringLiteral("Plain directories as workspaces, without a size cap."));
    const QCommandLineOption
        agentsDirOpt(QStringLiteral("agents-dir"),
                     QStringLiteral(
                         "Where the agent CLIs are installed, searched before DATA_DIR/agents "
                         "(where agents.installCli installs them); default: the build tree's "
                         "BIN/../agents, then the package's libexec/sandbox-desktop/agents."),
                     QStringLiteral("dir"));
    const QCommandLineOption
        maxConnectionsOpt(QStringLiteral("max-connections"),
                          QStringLiteral("Open API connections in all, WebSockets included "
                                         "(default 1024); more are answered 429."),
                          QStringLiteral("n"), QStringLiteral("1024"));
    const QCommandLineOption
        maxPerAddressOpt(QStringLiteral("max-connections-per-address"),
                         QStringLiteral("Open API connections from one address, an IPv6 /64 "
                                        "counting as one (default 128)."),
                         QStringLiteral("n"), QStringLiteral("128"));
    const QCommandLineOption
        prepareOpt(QStringLiteral("prepare"),
                   QStringLiteral("Prepare what sandboxes of TYPE start from (postgres: the "
                                  "template cluster) in the data dir, then exit; for images."),
                   QStringLiteral("type"));
    const QCommandLineOption
        egressDnsOpt(QStringLiteral("egress-dns"),
                     QStringLiteral("The DNS server the egress proxy asks (default: the ones in "
                                    "/etc/resolv.conf)."),
                     QStringLiteral("host:port"));
    const QCommandLineOption
        egressHostsOpt(QStringLiteral("egress-hosts"),
                       QStringLiteral("More names for the egress proxy's resolver, in /etc/hosts "
                                      "format, consulted first."),
                       QStringLiteral("file"));
    const QCommandLineOption
        egressCaOpt(QStringLiteral("egress-ca"),
                    QStringLiteral("More CA certificates (PEM) the model gateway trusts."),
                    QStringLiteral("file"));
    const QCommandLineOption verboseOpt(QStringLiteral("verbose"),
                                        QStringLiteral("Log debug messages."));
    cli.addOptions({listenOpt,        dataOpt,         supervisorOpt,   noCgroupsOpt,
                    maxRunningOpt,    maxMemoryOpt,    maxSandboxesOpt, sparesOpt,
                    sparesMemoryOpt,  databasePoolOpt, sleepAfterOpt,   uidBaseOpt,
                    isolationOpt,     noDiskLimitOpt,  agentsDirOpt,    maxConnectionsOpt,
                    maxPerAddressOpt, prepareOpt,      egressDnsOpt,    egressHostsOpt,
                    egressCaOpt,      verboseOpt});
    cli.process(app);
    if (!cli.isSet(verboseOpt))
        QLoggingCategory::setFilterRules(QStringLiteral("sandboxd.*.debug=false"));

    const QString listen = cli.value(listenOpt);
    const qsizetype colon = listen.lastIndexOf(u':');
    bool portOk = false;
    const uint port = listen.mid(colon + 1).toUInt(&portOk);
    const QHostAddress address(colon > 0 ? listen.left(colon) : QString());
    if (colon <= 0 || !portOk || port > 65535 || address.isNull())
        die(QStringLiteral(
                "--listen wants HOST:PORT with a numeric address, e.g. 127.0.0.1:7465, not '%1'")
                .arg(listen));

    const QString dataDir = QDir(cli.value(dataOpt)).absolutePath();
    if (!QDir().mkpath(dataDir + QStringLiteral("/sandboxes")))
        die(QStringLiteral("cannot create %1").arg(dataDir));
    // Sandboxes run as other uids and must reach their workspaces below this directory;
    // 0711 lets them pass through without listing it. The key and registry files are 0600.
    ::chmod(QFile::encodeName(dataDir).constData(), 0711);
    ::chmod(QFile::encodeName(dataDir + QStringLiteral("/sandboxes")).constData(), 0711);

    const UniqueFd lock = lockDataDir(dataDir);

    ::umask(077);
    auto registry = Registry::open(dataDir + QStringLiteral("/registry.db"));
    if (!registry)
        die(registry.error().message);

    const QString isolation = cli.value(isolationOpt);
    if (isolation != QLatin1String("bubblewrap") && isolation != QLatin1String("container"))
        die(QStringLiteral("--isolation is bubblewrap or container, not '%1'").arg(isolation));
    const bool inContainer = isolation == QLatin1String("container");
    const QString prepare = cli.value(prepareOpt);
    if (cli.isSet(prepareOpt) && fromWire<SandboxType>(prepare) != SandboxType::Postgres)
        die(QStringLiteral("--prepare takes postgres (the only type with something to prepare), "
                           "not '%1'")
                .arg(prepare));

    KeyStore keys(registry->get());
    // In a container the key comes from outside (the Worker); on a desktop the first start makes one.
    if (const QByteArray envKey = qgetenv("SANDBOXD_API_KEY"); !envKey.isEmpty()) {
        if (const auto imported = keys.import(QStringLiteral("environment"), envKey, true);
            !imported)
            die(imported.error().message);
        qunsetenv("SANDBOXD_API_KEY");
    } else if (!cli.isSet(prepareOpt)) {
        ensureKeyFile(keys, dataDir);
    }

    EngineConfig config;
    config.dataDir = dataDir;
    config.supervisorPath = findSupervisor(cli.value(supervisorOpt));
    config.dropPrivileges = ::geteuid() == 0;
    config.uidBase = cli.value(uidBaseOpt).toUInt();
    if (config.uidBase < 1000)
        die(QStringLiteral("--uid-base must be 1000 or more"));
    // In a container the cgroup tree is read-only and the container's own limits (its instance
    // type) bound the sandbox: the engine makes no cgroups there.
    config.useCgroups = !cli.isSet(noCgroupsOpt) && !inContainer;
    // As root: the top of the hierarchy; as a normal user: the subtree systemd delegates to the
    // engine, if any. Either way every Sandbox object says which limits hold.
    config.cgroups = std::make_shared<const CgroupHost>(
        config.useCgroups ? CgroupHost::prepare(HostRoot(), ::geteuid())
        : inContainer
            ? CgroupHost::disabled(
                QStringLiteral("in a container the container's instance type sets the limits"))
            : CgroupHost::disabled(QStringLiteral("sandboxd was started with --no-cgroups")));
    config.maxRunningPerKey = cli.value(maxRunningOpt).toInt();
    config.maxMemoryMbPerKey = cli.value(maxMemoryOpt).toLongLong();
    bool countsOk = false, sparesOk = false, sparesMemoryOk = false, poolOk = false;
    config.maxSandboxesPerKey = cli.value(maxSandboxesOpt).toInt(&countsOk);
    config.spares = cli.value(sparesOpt).toInt(&sparesOk);
    config.sparesMinAvailableMb = cli.value(sparesMemoryOpt).toLongLong(&sparesMemoryOk);
    if (!countsOk || config.maxSandboxesPerKey < 1)
        die(QStringLiteral("--max-sandboxes wants a number of 1 or more"));
    if (!sparesOk || config.spares < 0 || config.spares > 64)
        die(QStringLiteral("--spares wants a number from 0 to 64"));
    if (!sparesMemoryOk || config.sparesMinAvailableMb < 0)
        die(QStringLiteral("--spares-min-available-mb wants a number of MiB"));
    for (const QString &part : cli.value(databasePoolOpt).split(u',')) {
        const qsizetype eq = part.indexOf(u'=');
        const QString type = eq < 0 ? QString() : part.left(eq);
        const int count = part.mid(eq + 1).toInt(&poolOk);
        if (!poolOk || count < 0 || count > 16 || (eq >= 0 && !config.databasePool.contains(type)))
            die(QStringLiteral("--database-pool wants a number from 0 to 16, for every type or "
                               "as TYPE=N (postgres, sqlite, duckdb)"));
        for (auto it = config.databasePool.begin(); it != config.databasePool.end(); ++it) {
            if (eq < 0 || it.key() == type)
                it.value() = count;
        }
    }
    config.defaultSleepAfterMs = cli.value(sleepAfterOpt).toLongLong();
    if (!QFile::exists(config.supervisorPath))
        die(QStringLiteral("sandbox-supervisor not found at %1 (use --supervisor)")
                .arg(config.supervisorPath));
    config.bubblewrap = !inContainer;
    // A container's disk is the cap there (and it has no loop devices for workspace images).
    config.diskImages = !cli.isSet(noDiskLimitOpt) && !inContainer
                        && WorkspaceVolume::isSupported();
    if (config.bubblewrap && !QFile::exists(config.bwrapPath))
        die(QStringLiteral("bubblewrap not found at %1: apt-get install bubblewrap")
                .arg(config.bwrapPath));

    // Open files: half for API connections (below), the rest for the egress proxy, sandboxes
    // and databases.
    const rlim_t fileLimit = raiseFileLimit();
    EgressService::Config egressConfig;
    egressConfig.dns = DnsResolver::systemConfig(cli.value(egressHostsOpt));
    if (cli.isSet(egressHostsOpt) && !QFile::exists(cli.value(egressHostsOpt)))
        die(QStringLiteral("--egress-hosts: no file %1").arg(cli.value(egressHostsOpt)));
    if (cli.isSet(egressDnsOpt)) {
        const QString dns = cli.value(egressDnsOpt);
        const QHostAddress server(dns.section(u':', 0, -2));
        bool ok = false;
        const uint dnsPort = dns.section(u':', -1).toUInt(&ok);
        if (server.isNull() || !ok || dnsPort == 0 || dnsPort > 65535)
            die(QStringLiteral("--egress-dns wants ADDRESS:PORT, not '%1'").arg(dns));
        egressConfig.dns.servers = {{server, quint16(dnsPort)}};
    }
    if (cli.isSet(egressCaOpt)) {
        QFile ca(cli.value(egressCaOpt));
        if (!ca.open(QIODevice::ReadOnly))
            die(QStringLiteral("--egress-ca: cannot read %1").arg(ca.fileName()));
        egressConfig.extraCaCertificates = QSslCertificate::fromData(ca.read(4 * 1024 * 1024));
        if (egressConfig.extraCaCertificates.isEmpty())
            die(QStringLiteral("--egress-ca: no PEM certificate in %1").arg(ca.fileName()));
    }
    // The egress proxy holds two sockets and two pipes per connection (and a few spare).
    const qint64 fdsPerConnection = 6;
    const qint64 egressFiles = qint64(std::min<rlim_t>(fileLimit / 2, 1 << 20));
    egressConfig.limits.maxConnections = int(qBound(qint64(64),
                                                    (egressFiles - 512) / fdsPerConnection,
                                                    qint64(egressConfig.limits.maxConnections)));
    EgressService egress(egressConfig);
    SandboxNetwork network(&egress);

    SandboxManager sandboxes(config, registry->get());
    // In container mode the container is the network boundary (the Worker's egress settings).
    if (config.bubblewrap)
        sandboxes.setNetwork(&network);
    sandboxes.recover();
    StreamHub streams;
    Methods methods(&sandboxes, &streams, &keys);
    methods.setNetwork(&network);
    DatabaseAdapter databases(&methods, &sandboxes,
                              DatabaseAdapter::findDbHost(QCoreApplication::applicationDirPath()));
    AgentService agents(&sandboxes, &streams, &methods,
                        AgentClis::searchDirs(QCoreApplication::applicationDirPath(), dataDir,
                                              cli.isSet(agentsDirOpt)
                                                  ? QDir(cli.value(agentsDirOpt)).absolutePath()
                                                  : QString()));
    if (config.bubblewrap)
        agents.setNetwork(&network);
    WorkspaceArchiver archiver(&methods, &sandboxes);
    if (cli.isSet(prepareOpt)) {
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
    databases.keepServersReady();
    ApiServer server(&methods, &streams, &keys);
    QObject::connect(&methods, &Methods::keyRevoked, &server, &ApiServer::disconnectKey);
    // docs/protocol.md 4.9: every denial goes to the sandbox owner's WebSockets.
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

    ConnectionGate::Limits gateLimits;
    bool maxOk = false, perAddressOk = false;
    gateLimits.maxConnections = cli.value(maxConnectionsOpt).toInt(&maxOk);
    gateLimits.maxConnectionsPerPeer = cli.value(maxPerAddressOpt).toInt(&perAddressOk);
    if (!maxOk || !perAddressOk || gateLimits.maxConnections < 1
        || gateLimits.maxConnectionsPerPeer < 1)
        die(QStringLiteral("--max-connections and --max-connections-per-address want a number "
                           "of 1 or more"));
    const int fileRoom = int(std::min<rlim_t>(fileLimit / 2, 1 << 20));
    if (gateLimits.maxConnections > fileRoom) {
        std::fprintf(stderr, "sandboxd: at most %d connections (half the open-file limit)\n",
                     fileRoom);
        gateLimits.maxConnections = fileRoom;
    }
    const auto url = server.listen(address, quint16(port), gateLimits);
    if (!url)
        die(url.error().message);
    egress.setEnginePorts({quint16(url->port())});

    if (::pipe2(g_signalPipe, O_CLOEXEC) != 0)
        die(QStringLiteral("pipe: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    QSocketNotifier signalNotifier(g_signalPipe[0], QSocketNotifier::Read);
    QObject::connect(&signalNotifier, &QSocketNotifier::activated, &app, &QCoreApplication::quit);
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    std::printf("sandboxd listening on %s\n", qPrintable(url->toString()));
    std::fflush(stdout);
    return app.exec();
}
