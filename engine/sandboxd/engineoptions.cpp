#include "engineoptions.h"

#include "protocol/sandboxenums.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>

namespace Sandbox::Engine {

using namespace Qt::StringLiterals;

namespace {

struct OptionRow
{
    QString name;
    QString valueName; // empty: a switch
    QString defaultValue;
    QString description;
};

// The options of `sandboxd --help`, in its order.
QList<OptionRow> optionTable(const QString &defaultDataDir)
{
    return {
        {u"listen"_s, u"host:port"_s, u"127.0.0.1:7465"_s,
         u"Address to listen on (default 127.0.0.1:7465; port 0 picks one)."_s},
        {u"data-dir"_s, u"dir"_s, defaultDataDir,
         u"State directory (default %1)."_s.arg(defaultDataDir)},
        {u"supervisor"_s, u"path"_s, QString(), u"Path of sandbox-supervisor."_s},
        {u"no-cgroups"_s, QString(), QString(),
         u"Do not use cgroups (no memory, process or CPU limits)."_s},
        {u"max-running"_s, u"n"_s, u"8"_s, u"Running sandboxes per key (default 8)."_s},
        {u"max-memory-mb"_s, u"mib"_s, u"16384"_s,
         u"Sandbox memory per key in MiB (default 16384)."_s},
        {u"max-sandboxes"_s, u"n"_s, u"64"_s, u"Sandboxes per key (default 64)."_s},
        {u"spares"_s, u"n"_s, u"2"_s,
         u"Sandboxes started ahead of demand, one per kind, type and size recently created, "
         "at most N in all (default 2; 0: none)."_s},
        {u"spares-min-available-mb"_s, u"mib"_s, u"2048"_s,
         u"No spares while the host has less memory available, in MiB (default 2048)."_s},
        {u"database-pool"_s, u"n"_s, u"1"_s,
         u"Databases of each type kept started ahead of demand, once one of the type was "
         "created (default 1; 0: none); or per type, e.g. postgres=2,duckdb=0."_s},
        {u"sleep-after"_s, u"ms"_s, u"600000"_s,
         u"Default idle time before a sandbox sleeps, in ms (default 600000)."_s},
        {u"uid-base"_s, u"uid"_s, u"200000"_s,
         u"When run as root, sandbox N runs as uid BASE+N (default 200000)."_s},
        {u"isolation"_s, u"mode"_s, u"bubblewrap"_s,
         u"bubblewrap (default), or container when the engine runs inside a container that is "
         "itself the sandbox boundary."_s},
        {u"no-disk-limit"_s, QString(), QString(),
         u"Plain directories as workspaces, without a size cap."_s},
        {u"agents-dir"_s, u"dir"_s, QString(),
         u"Where the agent CLIs are installed, searched before DATA_DIR/agents (where "
         "agents.installCli installs them); default: the build tree's BIN/../agents, then the "
         "package's libexec/sandbox-desktop/agents."_s},
        {u"max-connections"_s, u"n"_s, u"1024"_s,
         u"Open API connections in all, WebSockets included (default 1024); more are answered "
         "429."_s},
        {u"max-connections-per-address"_s, u"n"_s, u"128"_s,
         u"Open API connections from one address, an IPv6 /64 counting as one (default 128)."_s},
        {u"prepare"_s, u"type"_s, QString(),
         u"Prepare what sandboxes of TYPE start from (postgres: the template cluster) in the "
         "data dir, then exit; for images."_s},
        {u"egress-dns"_s, u"host:port"_s, QString(),
         u"The DNS server the egress proxy asks (default: the ones in /etc/resolv.conf)."_s},
        {u"egress-hosts"_s, u"file"_s, QString(),
         u"More names for the egress proxy's resolver, in /etc/hosts format, consulted first."_s},
        {u"egress-ca"_s, u"file"_s, QString(),
         u"More CA certificates (PEM) the model gateway trusts."_s},
        {u"verbose"_s, QString(), QString(), u"Log debug messages."_s},
    };
}

// Each reader takes the options of one concern from the parser into EngineOptions, and says
// what is wrong with them (empty: nothing).
using Reader = QString (*)(const QCommandLineParser &cli, EngineOptions &options);

QString readListen(const QCommandLineParser &cli, EngineOptions &options)
{
    const QString listen = cli.value(u"listen"_s);
    const qsizetype colon = listen.lastIndexOf(u':');
    bool portOk = false;
    const uint port = listen.mid(colon + 1).toUInt(&portOk);
    options.address = QHostAddress(colon > 0 ? listen.left(colon) : QString());
    if (colon <= 0 || !portOk || port > 65535 || options.address.isNull())
        return u"--listen wants HOST:PORT with a numeric address, e.g. 127.0.0.1:7465, not '%1'"_s
            .arg(listen);
    options.port = quint16(port);
    return {};
}

// How the engine runs: which isolation, and whether it only prepares a type's template.
QString readMode(const QCommandLineParser &cli, EngineOptions &options)
{
    const QString isolation = cli.value(u"isolation"_s);
    if (isolation != "bubblewrap"_L1 && isolation != "container"_L1)
        return u"--isolation is bubblewrap or container, not '%1'"_s.arg(isolation);
    options.inContainer = isolation == "container"_L1;
    options.prepare = cli.isSet(u"prepare"_s);
    const QString prepare = cli.value(u"prepare"_s);
    if (options.prepare && fromWire<SandboxType>(prepare) != SandboxType::Postgres)
        return u"--prepare takes postgres (the only type with something to prepare), not '%1'"_s.arg(
            prepare);
    return {};
}

QString readSandboxLimits(const QCommandLineParser &cli, EngineOptions &options)
{
    EngineConfig &config = options.engine;
    config.uidBase = cli.value(u"uid-base"_s).toUInt();
    if (config.uidBase < 1000)
        return u"--uid-base must be 1000 or more"_s;
    config.maxRunningPerKey = cli.value(u"max-running"_s).toInt();
    config.maxMemoryMbPerKey = cli.value(u"max-memory-mb"_s).toLongLong();
    config.defaultSleepAfterMs = cli.value(u"sleep-after"_s).toLongLong();
    bool countsOk = false, sparesOk = false, sparesMemoryOk = false;
    config.maxSandboxesPerKey = cli.value(u"max-sandboxes"_s).toInt(&countsOk);
    config.spares = cli.value(u"spares"_s).toInt(&sparesOk);
    config.sparesMinAvailableMb
        = cli.value(u"spares-min-available-mb"_s).toLongLong(&sparesMemoryOk);
    if (!countsOk || config.maxSandboxesPerKey < 1)
        return u"--max-sandboxes wants a number of 1 or more"_s;
    if (!sparesOk || config.spares < 0 || config.spares > 64)
        return u"--spares wants a number from 0 to 64"_s;
    if (!sparesMemoryOk || config.sparesMinAvailableMb < 0)
        return u"--spares-min-available-mb wants a number of MiB"_s;
    return {};
}

// "N" for every type, or "TYPE=N,..." for some; later parts win.
QString readDatabasePool(const QCommandLineParser &cli, EngineOptions &options)
{
    QHash<QString, int> &pool = options.engine.databasePool;
    for (const QString &part : cli.value(u"database-pool"_s).split(u',')) {
        const qsizetype eq = part.indexOf(u'=');
        const QString type = eq < 0 ? QString() : part.left(eq);
        bool ok = false;
        const int count = part.mid(eq + 1).toInt(&ok);
        if (!ok || count < 0 || count > 16 || (eq >= 0 && !pool.contains(type)))
            return u"--database-pool wants a number from 0 to 16, for every type or as TYPE=N "
                   "(postgres, sqlite, duckdb)"_s;
        for (auto it = pool.begin(); it != pool.end(); ++it) {
            if (eq < 0 || it.key() == type)
                it.value() = count;
        }
    }
    return {};
}

QString readEgress(const QCommandLineParser &cli, EngineOptions &options)
{
    options.egressHosts = cli.value(u"egress-hosts"_s);
    if (cli.isSet(u"egress-hosts"_s) && !QFile::exists(options.egressHosts))
        return u"--egress-hosts: no file %1"_s.arg(options.egressHosts);
    if (cli.isSet(u"egress-dns"_s)) {
        const QString dns = cli.value(u"egress-dns"_s);
        const QHostAddress server(dns.section(u':', 0, -2));
        bool ok = false;
        const uint port = dns.section(u':', -1).toUInt(&ok);
        if (server.isNull() || !ok || port == 0 || port > 65535)
            return u"--egress-dns wants ADDRESS:PORT, not '%1'"_s.arg(dns);
        options.egressDns = {{server, quint16(port)}};
    }
    if (cli.isSet(u"egress-ca"_s)) {
        QFile ca(cli.value(u"egress-ca"_s));
        if (!ca.open(QIODevice::ReadOnly))
            return u"--egress-ca: cannot read %1"_s.arg(ca.fileName());
        options.egressCa = QSslCertificate::fromData(ca.read(4 * 1024 * 1024));
        if (options.egressCa.isEmpty())
            return u"--egress-ca: no PEM certificate in %1"_s.arg(ca.fileName());
    }
    return {};
}

QString readConnectionLimits(const QCommandLineParser &cli, EngineOptions &options)
{
    bool maxOk = false, perAddressOk = false;
    options.connections.maxConnections = cli.value(u"max-connections"_s).toInt(&maxOk);
    options.connections.maxConnectionsPerPeer
        = cli.value(u"max-connections-per-address"_s).toInt(&perAddressOk);
    if (!maxOk || !perAddressOk || options.connections.maxConnections < 1
        || options.connections.maxConnectionsPerPeer < 1)
        return u"--max-connections and --max-connections-per-address want a number of 1 or "
               "more"_s;
    return {};
}

} // namespace

void addEngineOptions(QCommandLineParser &cli, const QString &defaultDataDir)
{
    for (const OptionRow &row : optionTable(defaultDataDir))
        cli.addOption(
            QCommandLineOption(row.name, row.description, row.valueName, row.defaultValue));
}

Result<EngineOptions> readEngineOptions(const QCommandLineParser &cli)
{
    EngineOptions options;
    options.dataDir = QDir(cli.value(u"data-dir"_s)).absolutePath();
    options.supervisor = cli.value(u"supervisor"_s);
    if (cli.isSet(u"agents-dir"_s))
        options.agentsDir = QDir(cli.value(u"agents-dir"_s)).absolutePath();
    options.noCgroups = cli.isSet(u"no-cgroups"_s);
    options.noDiskLimit = cli.isSet(u"no-disk-limit"_s);
    options.verbose = cli.isSet(u"verbose"_s);
    // The options that can be wrong, in the order they are checked.
    static constexpr Reader readers[] = {readListen,       readMode,   readSandboxLimits,
                                         readDatabasePool, readEgress, readConnectionLimits};
    for (const Reader read : readers) {
        if (const QString error = read(cli, options); !error.isEmpty())
            return Error{ErrorCode::InvalidParams, error, {}};
    }
    return options;
}

} // namespace Sandbox::Engine
