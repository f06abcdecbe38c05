// Spare sandboxes (docs/protocol.md 6): started ahead of demand, each becomes exactly one owner's
// sandbox with that owner's environment, limits and network, never another's; the pool keeps to
// its cap and stays empty when memory is short; a crash leaves none behind.
#include "enginefixture.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <functional>

namespace {

const QStringList kQuota{QStringLiteral("--max-running"), QStringLiteral("64"),
                         QStringLiteral("--max-memory-mb"), QStringLiteral("1000000")};

QJsonArray spares(RpcTestClient &rpc)
{
    return rpc.result(QStringLiteral("engine.pool"), {}).value(QStringLiteral("spares")).toArray();
}

// The id of the engine's first spare that is ready and `fits` once there is one (empty if none
// comes within `timeoutMs`).
QString readySpareWhere(RpcTestClient &rpc, const std::function<bool(const QJsonObject &)> &fits,
                        int timeoutMs)
{
    QString ready;
    (void)QTest::qWaitFor(
        [&] {
            for (const QJsonValue &v : spares(rpc)) {
                const QJsonObject s = v.toObject();
                if (s.value(QStringLiteral("ready")).toBool() && fits(s)) {
                    ready = s.value(QStringLiteral("id")).toString();
                    return true;
                }
            }
            return false;
        },
        timeoutMs);
    return ready;
}

// The id of the engine's spare of this size (other than `besides`) once it is up (empty if none
// comes within 30 s).
QString readySpare(RpcTestClient &rpc, const QString &size, const QString &besides = {})
{
    return readySpareWhere(
        rpc,
        [&](const QJsonObject &s) {
            return s.value(QStringLiteral("size")).toString() == size
                   && s.value(QStringLiteral("id")).toString() != besides;
        },
        30000);
}

// The id of a warm spare (its server started too, other than `besides`; of `type` when given)
// once it is ready (empty if none comes within 60 s).
QString readyWarmSpare(RpcTestClient &rpc, const QString &besides = {}, const QString &type = {})
{
    return readySpareWhere(
        rpc,
        [&](const QJsonObject &s) {
            return s.value(QStringLiteral("warm")).toBool()
                   && s.value(QStringLiteral("id")).toString() != besides
                   && (type.isEmpty() || s.value(QStringLiteral("type")).toString() == type);
        },
        60000);
}

// One row of a query through the engine, as an array.
QJsonArray row(RpcTestClient &rpc, const QString &id, const QString &sql)
{
    return rpc
        .result(QStringLiteral("databases.query"),
                {{QStringLiteral("id"), id},
                 {QStringLiteral("sql"), sql},
                 {QStringLiteral("rowMode"), QStringLiteral("array")}},
                60000)
        .value(QStringLiteral("rows"))
        .toArray()
        .at(0)
        .toArray();
}

// Runs `sql` in database `id`; whether it succeeded (the error in rpc.lastError()).
bool execute(RpcTestClient &rpc, const QString &id, const QString &sql)
{
    return !rpc.result(QStringLiteral("databases.execute"),
                       {{QStringLiteral("id"), id}, {QStringLiteral("sql"), sql}})
                .isEmpty();
}

// A database created with `params`: its id (empty on failure, the error in rpc.lastError()).
QString createDatabase(RpcTestClient &rpc, const QJsonObject &params)
{
    return rpc.result(QStringLiteral("databases.create"), params, 120000)
        .value(QStringLiteral("id"))
        .toString();
}

// The files in a database's /workspace, as the host sees them (sorted).
QStringList workspaceFiles(const EngineProcess &engine, const QString &id)
{
    QStringList files;
    const QString root = engine.dataDir() + QStringLiteral("/sandboxes/") + id
                         + QStringLiteral("/volume/workspace");
    QDirIterator it(root, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        files << it.next().mid(root.size() + 1);
    files.sort();
    return files;
}

QString create(RpcTestClient &rpc, const QJsonObject &extra)
{
    QJsonObject params{{QStringLiteral("type"), QStringLiteral("codex")}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        params.insert(it.key(), it.value());
    const QJsonObject answer = rpc.call(QStringLiteral("agents.create"), params);
    if (answer.contains(QStringLiteral("error")))
        qWarning().noquote() << "agents.create:" << dump(answer.value(QStringLiteral("error")));
    return answer.value(QStringLiteral("result")).toObject().value(QStringLiteral("id")).toString();
}

QString run(RpcTestClient &rpc, const QString &id, const QString &command)
{
    return rpc
        .result(QStringLiteral("agents.exec"),
                {{QStringLiteral("id"), id}, {QStringLiteral("command"), command}})
        .value(QStringLiteral("stdout"))
        .toString()
        .trimmed();
}

} // namespace

class tst_Spares : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aSpareBecomesOneOwnersSandbox();
    void aSpareGetsItsOwnersSizeAndNetwork();
    void aDatabaseSpareGetsItsOwnersSettings_data();
    void aDatabaseSpareGetsItsOwnersSettings();
    void aPooledPostgresIsItsOwnersAlone();
    void aWarmFileDatabaseIsItsOwnersAlone_data();
    void aWarmFileDatabaseIsItsOwnersAlone();
    void aWarmFileDatabaseTakesItsOwnersFile_data();
    void aWarmFileDatabaseTakesItsOwnersFile();
    void aFileDatabaseCreateWithoutAWarmSpare_data();
    void aFileDatabaseCreateWithoutAWarmSpare();
    void aPostgresPoolOfNoneStillCreates();
    void thePoolKeepsToItsCap();
    void noSparesWhenMemoryIsShort();
    void aCrashLeavesNoSpareBehind();
    void aSpareMadeBeforeItsCliIsReplaced();
};

void tst_Spares::aSpareMadeBeforeItsCliIsReplaced()
{
    // An engine whose agents directory has no CLI yet (a package's first start): the first
    // create of a shape makes a spare of it, without the CLI.
    QTemporaryDir agents;
    // Readable by the sandboxes' uids, as an installed agents directory is.
    QFile::setPermissions(agents.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner
                                             | QFile::ReadGroup | QFile::ExeGroup | QFile::ReadOther
                                             | QFile::ExeOther);
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota + QStringList{QStringLiteral("--agents-dir"), agents.path()}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    const QJsonObject lite{{QStringLiteral("size"), QStringLiteral("lite")}};
    const QString first = create(rpc, lite);
    QVERIFY(!first.isEmpty());
    const QString stale = readySpare(rpc, QStringLiteral("lite"));
    QVERIFY(!stale.isEmpty());

    // Then the CLI is there (as agents.installCli or scripts/setup.sh puts it).
    const QString cli = QStringLiteral(SANDBOX_BINARY_DIR "/agents/codex");
    if (!QFileInfo::exists(cli + QStringLiteral("/node_modules/.bin/codex")))
        QSKIP("the Codex CLI is not installed in the build tree (scripts/setup.sh)");
    QVERIFY(QFile::link(cli, agents.path() + QStringLiteral("/codex")));

    // A create now cannot take the old spare (it has no /opt/agent); the pool replaces it with
    // one that has the CLI, and the next create takes that one and can run the CLI.
    const QString second = create(rpc, lite);
    QVERIFY(!second.isEmpty());
    QVERIFY(second != stale);
    QCOMPARE(run(rpc, second,
                 QStringLiteral("test -x /opt/agent/node_modules/.bin/codex && echo cli")),
             QStringLiteral("cli"));
    const QString fresh = readySpare(rpc, QStringLiteral("lite"), stale);
    QVERIFY2(!fresh.isEmpty(), "no spare with the CLI came");
    const auto staleKept = [&rpc, &stale] {
        for (const QJsonValue &v : spares(rpc)) {
            if (v.toObject().value(QStringLiteral("id")).toString() == stale)
                return true;
        }
        return false;
    };
    QVERIFY2(!staleKept(), "the spare made before the CLI was kept");
    const QString third = create(rpc, lite);
    QCOMPARE(third, fresh);
    QCOMPARE(run(rpc, third,
                 QStringLiteral("test -x /opt/agent/node_modules/.bin/codex && echo cli")),
             QStringLiteral("cli"));
    // The old spare is gone, not left to hold a place.
    for (const QJsonValue &v : spares(rpc))
        QVERIFY(v.toObject().value(QStringLiteral("id")).toString() != stale);
}

void tst_Spares::aSpareBecomesOneOwnersSandbox()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &admin = engine.rpc();
    const QString key = admin
                            .result(QStringLiteral("keys.create"),
                                    {{QStringLiteral("name"), QStringLiteral("b")}})
                            .value(QStringLiteral("key"))
                            .toString();
    RpcTestClient other;
    QVERIFY(other.open(engine.process().wsUrl(), key));
    // Only an admin key sees the pool.
    QCOMPARE(other.call(QStringLiteral("engine.pool"), {})
                 .value(QStringLiteral("error"))
                 .toObject()
                 .value(QStringLiteral("code"))
                 .toInt(),
             -32001);

    // The first create of a shape starts a spare of it.
    const QString first = create(admin,
                                 {{QStringLiteral("size"), QStringLiteral("lite")},
                                  {QStringLiteral("env"),
                                   QJsonObject{{QStringLiteral("OWNER"), QStringLiteral("a")}}}});
    QVERIFY(!first.isEmpty());
    QCOMPARE(run(admin, first, QStringLiteral("echo secret > mine.txt; echo $OWNER")),
             QStringLiteral("a"));
    const QString spare = readySpare(admin, QStringLiteral("lite"));
    QVERIFY(!spare.isEmpty());
    QVERIFY(spare != first);

    // Another key's create of that shape takes it, with its own environment and nothing of the
    // first owner's.
    const QString second = create(other,
                                  {{QStringLiteral("size"), QStringLiteral("lite")},
                                   {QStringLiteral("env"),
                                    QJsonObject{{QStringLiteral("OWNER"), QStringLiteral("b")}}}});
    QCOMPARE(second, spare);
    QCOMPARE(run(other, second, QStringLiteral("echo $OWNER $SANDBOX_ID; ls -A /workspace")),
             QStringLiteral("b ") + second);
    QCOMPARE(run(other, second, QStringLiteral("hostname")), second);
    QVERIFY(run(admin, first, QStringLiteral("id -u"))
            != run(other, second, QStringLiteral("id -u")));
    QCOMPARE(other.result(QStringLiteral("agents.list"), {})
                 .value(QStringLiteral("agents"))
                 .toArray()
                 .size(),
             1);

    // The next spare is a new sandbox again: the first owner's next create does not get the
    // second owner's (deleted) sandbox back.
    other.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), second}});
    const QString next = readySpare(admin, QStringLiteral("lite"));
    QVERIFY(!next.isEmpty());
    QVERIFY(next != second && next != first);
    const QString third = create(admin,
                                 {{QStringLiteral("size"), QStringLiteral("lite")},
                                  {QStringLiteral("env"),
                                   QJsonObject{{QStringLiteral("OWNER"), QStringLiteral("a2")}}}});
    QCOMPARE(third, next);
    QCOMPARE(run(admin, third, QStringLiteral("echo $OWNER; ls -A /workspace")),
             QStringLiteral("a2"));
}

void tst_Spares::aSpareGetsItsOwnersSizeAndNetwork()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    // A spare of standard-2 (a 512 MiB /tmp) is never handed to a lite create (64 MiB).
    QVERIFY(!create(rpc, {{QStringLiteral("size"), QStringLiteral("standard-2")}}).isEmpty());
    const QString big = readySpare(rpc, QStringLiteral("standard-2"));
    QVERIFY(!big.isEmpty());
    const QString lite = create(rpc, {{QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!lite.isEmpty() && lite != big);
    QCOMPARE(run(rpc, lite, QStringLiteral("df -k --output=size /tmp | tail -1")),
             QStringLiteral("65536"));

    // The spare of standard-2 goes to the next standard-2 create, with that create's policy:
    // its proxy listener and environment, and its limits.
    const QJsonObject policy{{QStringLiteral("allow"), QJsonArray{QStringLiteral("example.com")}}};
    const QString claimed = create(rpc, {{QStringLiteral("size"), QStringLiteral("standard-2")},
                                         {QStringLiteral("network"), policy}});
    QCOMPARE(claimed, big);
    QCOMPARE(run(rpc, claimed, QStringLiteral("df -k --output=size /tmp | tail -1")),
             QStringLiteral("524288"));
    QCOMPARE(run(rpc, claimed,
                 QStringLiteral("echo $HTTP_PROXY; "
                                "bash -c '(exec 3<>/dev/tcp/127.0.0.1/3128) && echo open'")),
             QStringLiteral("http://127.0.0.1:3128\nopen"));
    const QJsonObject info = rpc.result(QStringLiteral("agents.get"),
                                        {{QStringLiteral("id"), claimed}});
    QCOMPARE(info.value(QStringLiteral("network")).toObject(), policy);
    QCOMPARE(info.value(QStringLiteral("size")).toString(), QStringLiteral("standard-2"));
    // Its cgroup's limits are standard-2's (cgroup v2, or v1's hierarchies).
    const bool v2 = QFileInfo::exists(QStringLiteral("/sys/fs/cgroup/sandboxd/%1").arg(claimed));
    const QString memoryMax
        = v2 ? QStringLiteral("/sys/fs/cgroup/sandboxd/%1/memory.max").arg(claimed)
             : QStringLiteral("/sys/fs/cgroup/memory/sandboxd/%1/memory.limit_in_bytes").arg(claimed);
    const QString cpuMax
        = v2 ? QStringLiteral("/sys/fs/cgroup/sandboxd/%1/cpu.max").arg(claimed)
             : QStringLiteral("/sys/fs/cgroup/cpu/sandboxd/%1/cpu.cfs_quota_us").arg(claimed);
    if (QFileInfo::exists(memoryMax)) {
        QFile f(memoryMax);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().trimmed(), QByteArray::number(6144LL * 1024 * 1024));
        QFile cpu(cpuMax);
        QVERIFY(cpu.open(QIODevice::ReadOnly));
        QCOMPARE(cpu.readAll().trimmed().split(' ').value(0), QByteArray("100000"));
    }
}

void tst_Spares::aDatabaseSpareGetsItsOwnersSettings_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QJsonObject>("settings"); // of the create that takes the spare
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QJsonArray>("row"); // what it answers in that database

    QTest::newRow("sqlite") << QStringLiteral(
        "sqlite") << QJsonObject{{QStringLiteral("database"), QStringLiteral("data/b.db")}}
                            << QStringLiteral(
                                   "SELECT file FROM pragma_database_list WHERE name = 'main'")
                            << QJsonArray{QStringLiteral("/workspace/data/b.db")};
    QTest::newRow("postgres") << QStringLiteral("postgres")
                              << QJsonObject{{QStringLiteral("database"), QStringLiteral("shop")},
                                             {QStringLiteral("username"), QStringLiteral("ann")}}
                              << QStringLiteral("SELECT current_database(), current_user")
                              << QJsonArray{QStringLiteral("shop"), QStringLiteral("ann")};
}

void tst_Spares::aDatabaseSpareGetsItsOwnersSettings()
{
    QFETCH(QString, type);
    QFETCH(QJsonObject, settings);
    QFETCH(QString, sql);
    QFETCH(QJsonArray, row);
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    // The first database of a type starts a spare of it: a sandbox without a server (PostgreSQL's
    // is warm, its server started with the template's names).
    const QString first = createDatabase(rpc, {{QStringLiteral("type"), type}});
    QVERIFY2(!first.isEmpty(), qPrintable(engine.process().log()));
    QVERIFY(execute(rpc, first, QStringLiteral("CREATE TABLE mine(x int)")));
    const QString spare = readySpare(rpc, QStringLiteral("standard-1"));
    QVERIFY(!spare.isEmpty());
    QVERIFY(spare != first);

    // The next create of the type takes it, and its server starts with that create's settings
    // and none of the first database's data.
    QJsonObject params = settings;
    params.insert(QStringLiteral("type"), type);
    const QJsonObject second = rpc.result(QStringLiteral("databases.create"), params, 120000);
    QCOMPARE(second.value(QStringLiteral("id")).toString(), spare);
    const QJsonObject answer = rpc.result(QStringLiteral("databases.query"),
                                          {{QStringLiteral("id"), spare},
                                           {QStringLiteral("sql"), sql},
                                           {QStringLiteral("rowMode"), QStringLiteral("array")}});
    QCOMPARE(answer.value(QStringLiteral("rows")).toArray().at(0).toArray(), row);
    rpc.result(QStringLiteral("databases.query"),
               {{QStringLiteral("id"), spare},
                {QStringLiteral("sql"), QStringLiteral("SELECT * FROM mine")}});
    QCOMPARE(rpc.lastError().value(QStringLiteral("code")).toInt(), -32014);
}

void tst_Spares::aPooledPostgresIsItsOwnersAlone()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    // The first PostgreSQL database of a data dir builds the template; from then on the engine
    // keeps a server started (the pool, default 1).
    const QString first = createDatabase(rpc,
                                         {{QStringLiteral("type"), QStringLiteral("postgres")}});
    QVERIFY2(!first.isEmpty(), qPrintable(engine.process().log()));
    QVERIFY(execute(rpc, first, QStringLiteral("CREATE TABLE mine(x int)")));
    const QString warm = readyWarmSpare(rpc);
    QVERIFY2(!warm.isEmpty(), "no PostgreSQL server was kept ready");
    QVERIFY(warm != first);

    // The next create takes it: its names, its password, nothing of anyone else's.
    const QJsonObject created = rpc.result(QStringLiteral("databases.create"),
                                           {{QStringLiteral("type"), QStringLiteral("postgres")},
                                            {QStringLiteral("database"), QStringLiteral("shop")},
                                            {QStringLiteral("username"), QStringLiteral("ann")},
                                            {QStringLiteral("password"),
                                             QStringLiteral("an'n's secret")}},
                                           120000);
    QCOMPARE(created.value(QStringLiteral("id")).toString(), warm);
    QCOMPARE(created.value(QStringLiteral("status")).toString(), QStringLiteral("running"));
    QCOMPARE(created.value(QStringLiteral("database")).toObject(),
             (QJsonObject{{QStringLiteral("type"), QStringLiteral("postgres")},
                          {QStringLiteral("database"), QStringLiteral("shop")},
                          {QStringLiteral("username"), QStringLiteral("ann")}}));
    QCOMPARE(row(rpc, warm,
                 QStringLiteral("SELECT current_database()::text, current_user::text, "
                                "(SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles "
                                "WHERE rolcanlogin), (SELECT count(*)::int FROM pg_class c JOIN "
                                "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
                                "'public'), (SELECT rolsuper FROM pg_roles WHERE rolname = "
                                "current_user)")),
             (QJsonArray{QStringLiteral("shop"), QStringLiteral("ann"),
                         QStringLiteral("ann,sandbox_admin"), 0, false}));
    rpc.result(QStringLiteral("databases.query"),
               {{QStringLiteral("id"), warm},
                {QStringLiteral("sql"), QStringLiteral("TABLE mine")}});
    QCOMPARE(rpc.lastError().value(QStringLiteral("code")).toInt(), -32014);
    // Its role has a password, the create's (the template's role has none; a superuser's view, on
    // the server's own socket).
    QProcess psql;
    psql.start(QStringLiteral("psql"),
               {QStringLiteral("-X"), QStringLiteral("-A"), QStringLiteral("-t"),
                QStringLiteral("-h"),
                engine.process().dataDir() + QStringLiteral("/sandboxes/") + warm
                    + QStringLiteral("/volume/run"),
                QStringLiteral("-U"), QStringLiteral("sandbox_admin"), QStringLiteral("-d"),
                QStringLiteral("template1"), QStringLiteral("-c"),
                QStringLiteral("SELECT rolpassword FROM pg_authid WHERE rolname = 'ann'")});
    QVERIFY(psql.waitForFinished(30000));
    const QByteArray secret = psql.readAllStandardOutput().trimmed();
    QVERIFY2(secret.startsWith("SCRAM-SHA-256$4096:"), secret.constData());
    // It is the password's SCRAM secret, as a client that logs in with it checks it (RFC 5802:
    // StoredKey and ServerKey from the salted password), by Python's own PBKDF2 and HMAC.
    QProcess check;
    check.start(QStringLiteral("python3"),
                {QStringLiteral("-c"),
                 QStringLiteral("import sys, hashlib, hmac, base64\n"
                                "_, head, keys = sys.argv[1].split('$')\n"
                                "n, salt = head.split(':'); stored, server = keys.split(':')\n"
                                "s = hashlib.pbkdf2_hmac('sha256', sys.argv[2].encode(), "
                                "base64.b64decode(salt), int(n))\n"
                                "mac = lambda t: hmac.new(s, t, 'sha256').digest()\n"
                                "print(hashlib.sha256(mac(b'Client Key')).digest() == "
                                "base64.b64decode(stored) and mac(b'Server Key') == "
                                "base64.b64decode(server))"),
                 QString::fromLatin1(secret), QStringLiteral("an'n's secret")});
    QVERIFY(check.waitForFinished(30000));
    QCOMPARE(check.readAllStandardOutput().trimmed(), QByteArray("True"));

    // The pool makes the next one.
    QVERIFY2(!readyWarmSpare(rpc, warm).isEmpty(), "the pool was not refilled");

    // It sleeps and wakes as any database: the same names, its data kept.
    QVERIFY(execute(rpc, warm, QStringLiteral("CREATE TABLE t(x int); INSERT INTO t VALUES (7)")));
    QVERIFY(!rpc.result(QStringLiteral("databases.stop"), {{QStringLiteral("id"), warm}}, 60000)
                 .isEmpty());
    QVERIFY2(!rpc.result(QStringLiteral("databases.start"), {{QStringLiteral("id"), warm}}, 60000)
                  .isEmpty(),
             qPrintable(QString::fromUtf8(dump(rpc.lastError()))
                        + engine.process().log().right(4000)));
    QCOMPARE(row(rpc, warm, QStringLiteral("SELECT current_user::text, (SELECT x FROM t)")),
             (QJsonArray{QStringLiteral("ann"), 7}));
}

namespace {

void fileTypes()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("tables"); // how many tables the database has
    QTest::addColumn<QString>("file");   // the path of the database's file
    QTest::newRow("sqlite") << QStringLiteral("sqlite")
                            << QStringLiteral("SELECT count(*) FROM sqlite_schema")
                            << QStringLiteral(
                                   "SELECT file FROM pragma_database_list WHERE name = 'main'");
    QTest::newRow("duckdb") << QStringLiteral(
        "duckdb") << QStringLiteral("SELECT count(*)::INTEGER FROM information_schema.tables")
                            << QStringLiteral("SELECT path FROM duckdb_databases() WHERE "
                                              "database_name = current_database()");
}

} // namespace

void tst_Spares::aWarmFileDatabaseIsItsOwnersAlone_data()
{
    fileTypes();
}

void tst_Spares::aWarmFileDatabaseIsItsOwnersAlone()
{
    QFETCH(QString, type);
    QFETCH(QString, tables);
    QFETCH(QString, file);
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    const QString key = rpc.result(QStringLiteral("keys.create"),
                                   {{QStringLiteral("name"), QStringLiteral("b")}})
                            .value(QStringLiteral("key"))
                            .toString();
    RpcTestClient other;
    QVERIFY(other.open(engine.process().wsUrl(), key));
    // The first database of the type starts as always; from then on the engine keeps one with
    // its server started (the pool, default 1).
    const QString first = createDatabase(rpc, {{QStringLiteral("type"), type}});
    QVERIFY2(!first.isEmpty(), qPrintable(engine.process().log()));
    QVERIFY(execute(rpc, first,
                    QStringLiteral("CREATE TABLE mine(x INTEGER); INSERT INTO mine "
                                   "VALUES (1)")));
    const QString warm = readyWarmSpare(rpc, {}, type);
    QVERIFY2(!warm.isEmpty(), "no server of the type was kept ready");
    QVERIFY(warm != first);

    // Another key's create takes it: running at once, empty, its own file, nothing of the first
    // database's.
    const QJsonObject created = other.result(QStringLiteral("databases.create"),
                                             {{QStringLiteral("type"), type}}, 120000);
    QCOMPARE(created.value(QStringLiteral("id")).toString(), warm);
    QCOMPARE(created.value(QStringLiteral("status")).toString(), QStringLiteral("running"));
    QCOMPARE(row(other, warm, tables), QJsonArray{0});
    const QString defaultFile = type == QLatin1String("sqlite") ? QStringLiteral("main.db")
                                                                : QStringLiteral("main.duckdb");
    QCOMPARE(row(other, warm, file),
             QJsonArray{QString(QStringLiteral("/workspace/") + defaultFile)});
    other.result(QStringLiteral("databases.query"),
                 {{QStringLiteral("id"), warm},
                  {QStringLiteral("sql"), QStringLiteral("TABLE mine")}});
    QCOMPARE(other.lastError().value(QStringLiteral("code")).toInt(), -32014);
    // Its owner's alone: the first key neither sees nor reaches it.
    QCOMPARE(engine.errorCode(QStringLiteral("databases.get"), {{QStringLiteral("id"), warm}}),
             -32002);
    QCOMPARE(other.result(QStringLiteral("databases.list"), {})
                 .value(QStringLiteral("databases"))
                 .toArray()
                 .size(),
             1);

    // A second create while the pool makes the next one: it starts as without a pool.
    const QString second = createDatabase(other, {{QStringLiteral("type"), type}});
    QVERIFY2(!second.isEmpty(), qPrintable(engine.process().log()));
    QVERIFY(second != warm && second != first);
    QCOMPARE(row(other, second, tables), QJsonArray{0});

    // Usable, and its data stays its own across a restart of its server.
    QVERIFY(execute(other, warm,
                    QStringLiteral("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (7)")));
    QVERIFY(
        !other.result(QStringLiteral("databases.restart"), {{QStringLiteral("id"), warm}}, 60000)
             .isEmpty());
    QCOMPARE(row(other, warm, QStringLiteral("SELECT x FROM t")), QJsonArray{7});
    QCOMPARE(row(other, second, tables), QJsonArray{0});
    QCOMPARE(row(rpc, first, QStringLiteral("SELECT x FROM mine")), QJsonArray{1});

    // The pool makes the next one.
    QVERIFY2(!readyWarmSpare(rpc, warm, type).isEmpty(), "the pool was not refilled");
}

void tst_Spares::aWarmFileDatabaseTakesItsOwnersFile_data()
{
    fileTypes();
}

void tst_Spares::aWarmFileDatabaseTakesItsOwnersFile()
{
    QFETCH(QString, type);
    QFETCH(QString, tables);
    QFETCH(QString, file);
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota), qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    QVERIFY2(!createDatabase(rpc, {{QStringLiteral("type"), type}}).isEmpty(),
             qPrintable(engine.process().log()));
    const QString warm = readyWarmSpare(rpc, {}, type);
    QVERIFY2(!warm.isEmpty(), "no server of the type was kept ready");

    // A create with a file of its own takes the warm spare too: the spare's database moves to
    // that file, and no other file is left in its workspace.
    const QString name = QStringLiteral("data/b.") + type;
    QCOMPARE(createDatabase(rpc,
                            {{QStringLiteral("type"), type}, {QStringLiteral("database"), name}}),
             warm);
    QCOMPARE(row(rpc, warm, file), QJsonArray{QString(QStringLiteral("/workspace/") + name)});
    QCOMPARE(row(rpc, warm, tables), QJsonArray{0});
    QVERIFY(
        execute(rpc, warm, QStringLiteral("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (7)")));
    // Its settings are kept: a stop and a start open the same file.
    QVERIFY(!rpc.result(QStringLiteral("databases.stop"), {{QStringLiteral("id"), warm}}, 60000)
                 .isEmpty());
    // (a -wal beside it: the server's shutdown is immediate)
    for (const QString &f : workspaceFiles(engine.process(), warm))
        QVERIFY2(f.startsWith(name), qPrintable(f));
    QVERIFY(!rpc.result(QStringLiteral("databases.start"), {{QStringLiteral("id"), warm}}, 60000)
                 .isEmpty());
    QCOMPARE(row(rpc, warm, QStringLiteral("SELECT x FROM t")), QJsonArray{7});
    QCOMPARE(row(rpc, warm, file), QJsonArray{QString(QStringLiteral("/workspace/") + name)});
}

void tst_Spares::aFileDatabaseCreateWithoutAWarmSpare_data()
{
    fileTypes();
}

void tst_Spares::aFileDatabaseCreateWithoutAWarmSpare()
{
    QFETCH(QString, type);
    QFETCH(QString, tables);
    // The type's pool is off: the spare is a sandbox up to HELLO, and a create starts its server.
    EngineFixture engine;
    QVERIFY2(engine.start(
                 kQuota
                 + QStringList{QStringLiteral("--database-pool"), type + QStringLiteral("=0")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    QVERIFY2(!createDatabase(rpc, {{QStringLiteral("type"), type}}).isEmpty(),
             qPrintable(engine.process().log()));
    const QString spare = readySpare(rpc, QStringLiteral("standard-1"));
    QVERIFY(!spare.isEmpty());
    for (const QJsonValue &v : spares(rpc))
        QVERIFY(!v.toObject().value(QStringLiteral("warm")).toBool());
    QCOMPARE(createDatabase(rpc, {{QStringLiteral("type"), type}}), spare);
    QCOMPARE(row(rpc, spare, tables), QJsonArray{0});

    // With the pool on, a create of another size than the warm spares' cannot take one: it
    // starts its own server.
    EngineFixture pooled;
    QVERIFY2(pooled.start(kQuota), qPrintable(pooled.process().log()));
    RpcTestClient &p = pooled.rpc();
    QVERIFY2(!createDatabase(p, {{QStringLiteral("type"), type}}).isEmpty(),
             qPrintable(pooled.process().log()));
    const QString warm = readyWarmSpare(p, {}, type);
    QVERIFY(!warm.isEmpty());
    const QString lite = createDatabase(p, {{QStringLiteral("type"), type},
                                            {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY2(!lite.isEmpty(), qPrintable(pooled.process().log()));
    QVERIFY(lite != warm);
    QCOMPARE(row(p, lite, tables), QJsonArray{0});
    QCOMPARE(p.result(QStringLiteral("databases.get"), {{QStringLiteral("id"), lite}})
                 .value(QStringLiteral("size"))
                 .toString(),
             QStringLiteral("lite"));
    QCOMPARE(readyWarmSpare(p, {}, type), warm); // still there for the next standard-1
}

void tst_Spares::aPostgresPoolOfNoneStillCreates()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota
                          + QStringList{QStringLiteral("--database-pool"), QStringLiteral("0")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    const QString first = createDatabase(rpc, {{QStringLiteral("type"), QStringLiteral("postgres")},
                                               {QStringLiteral("database"), QStringLiteral("a")}});
    QVERIFY2(!first.isEmpty(), qPrintable(engine.process().log()));
    QCOMPARE(row(rpc, first, QStringLiteral("SELECT current_database()::text")),
             QJsonArray{QStringLiteral("a")});
    // No server kept ready: the spare is a sandbox up to HELLO, and the next create starts its
    // server.
    const QString spare = readySpare(rpc, QStringLiteral("standard-1"));
    QVERIFY(!spare.isEmpty());
    for (const QJsonValue &v : spares(rpc))
        QVERIFY(!v.toObject().value(QStringLiteral("warm")).toBool());
    const QString second = createDatabase(rpc,
                                          {{QStringLiteral("type"), QStringLiteral("postgres")},
                                           {QStringLiteral("database"), QStringLiteral("b")}});
    QCOMPARE(second, spare);
    QCOMPARE(row(rpc, second, QStringLiteral("SELECT current_database()::text")),
             QJsonArray{QStringLiteral("b")});
}

void tst_Spares::thePoolKeepsToItsCap()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota + QStringList{QStringLiteral("--spares"), QStringLiteral("1")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    QCOMPARE(rpc.result(QStringLiteral("engine.pool"), {}).value(QStringLiteral("capacity")).toInt(),
             1);
    QVERIFY(!create(rpc, {{QStringLiteral("size"), QStringLiteral("lite")}}).isEmpty());
    QVERIFY(!readySpare(rpc, QStringLiteral("lite")).isEmpty());
    // The most recent shape wins the one place; the lite spare is stopped.
    QVERIFY(!create(rpc, {{QStringLiteral("size"), QStringLiteral("basic")}}).isEmpty());
    QVERIFY(!readySpare(rpc, QStringLiteral("basic")).isEmpty());
    const QJsonArray now = spares(rpc);
    QCOMPARE(now.size(), 1);
    QCOMPARE(now.first().toObject().value(QStringLiteral("size")).toString(),
             QStringLiteral("basic"));
    // Its files went with it: one directory per sandbox and one for the spare.
    QTRY_COMPARE(QDir(engine.process().dataDir() + QStringLiteral("/sandboxes"))
                     .entryList(QDir::Dirs | QDir::NoDotAndDotDot)
                     .size(),
                 3);
}

void tst_Spares::noSparesWhenMemoryIsShort()
{
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota
                          + QStringList{QStringLiteral("--spares-min-available-mb"),
                                        QStringLiteral("100000000")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    QVERIFY(!create(rpc, {{QStringLiteral("size"), QStringLiteral("lite")}}).isEmpty());
    QTest::qWait(500); // on purpose: a refill would have started by now
    const QJsonObject pool = rpc.result(QStringLiteral("engine.pool"), {});
    QCOMPARE(pool.value(QStringLiteral("spares")).toArray().size(), 0);
    QVERIFY(pool.value(QStringLiteral("availableMb")).toDouble() > 0);
}

void tst_Spares::aCrashLeavesNoSpareBehind()
{
    QTemporaryDir dir;
    EngineFixture engine;
    QVERIFY2(engine.start(kQuota, dir.path()), qPrintable(engine.process().log()));
    const QString id = create(engine.rpc(), {{QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!id.isEmpty());
    QVERIFY(!readySpare(engine.rpc(), QStringLiteral("lite")).isEmpty());
    const QDir sandboxes(dir.path() + QStringLiteral("/sandboxes"));
    QCOMPARE(sandboxes.entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 2);
    engine.process().kill9();
    EngineFixture again;
    QVERIFY2(again.start(kQuota, dir.path()), qPrintable(again.process().log()));
    QCOMPARE(sandboxes.entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList{id});
    QFile mounts(QStringLiteral("/proc/self/mountinfo"));
    QVERIFY(mounts.open(QIODevice::ReadOnly));
    const QByteArray mounted = mounts.readAll();
    QCOMPARE(mounted.count(dir.path().toUtf8()), qsizetype(0)); // the sandbox sleeps: no mount
}

QTEST_GUILESS_MAIN(tst_Spares)
#include "tst_spares.moc"
