// Hostile sandboxes against the paths the engine touches (issue 9, part 2): a sandbox that plants
// links, sockets and floods where the engine works must never make the engine (root) act on the
// host, write past its disk limit, or stall. Each case runs against a real sandboxd (root, disk
// images, as the README runs it), with GET /health probed all along: it must answer within 100 ms.
#include "enginefixture.h"
#include "healthprobe.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace {

// GET /health answers a probe needs to have seen for its verdict to mean anything.
constexpr int kMinSamples = 10;

QString text(const QJsonObject &o)
{
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

// Host processes whose command line contains `marker` (other engines on the machine may run
// sandboxes with the same uids, so a uid alone does not tell).
int processesWith(const QByteArray &marker)
{
    int n = 0;
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool isPid = false;
        e.toInt(&isPid);
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(e));
        if (isPid && cmdline.open(QIODevice::ReadOnly)
            && cmdline.readAll().replace('\0', ' ').contains(marker))
            ++n;
    }
    return n;
}

// Mounts of this (the host's) namespace below `dir`.
int mountsBelow(const QString &dir)
{
    QFile f(QStringLiteral("/proc/self/mountinfo"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    int n = 0;
    for (const QByteArray &line : f.readAll().split('\n')) {
        const QList<QByteArray> fields = line.split(' ');
        if (fields.size() > 4 && QFile::decodeName(fields[4]).startsWith(dir))
            ++n;
    }
    return n;
}

// Loop devices whose backing file lies below `dir`.
int loopDevicesBelow(const QString &dir)
{
    int n = 0;
    for (const QString &dev :
         QDir(QStringLiteral("/sys/block")).entryList({QStringLiteral("loop*")}, QDir::Dirs)) {
        QFile f(QStringLiteral("/sys/block/%1/loop/backing_file").arg(dev));
        if (f.open(QIODevice::ReadOnly) && QString::fromUtf8(f.readAll()).startsWith(dir))
            ++n;
    }
    return n;
}

} // namespace

class tst_HostPaths : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void lostFoundLinkLeavesTheHostAlone();
    void agentHomeLinksAreNotFollowed_data();
    void agentHomeLinksAreNotFollowed();
    void swappedDatabaseSocketDoesNotFreezeTheEngine_data();
    void swappedDatabaseSocketDoesNotFreezeTheEngine();
    void databaseSocketLinkIsNotFollowed_data();
    void databaseSocketLinkIsNotFollowed();
    void everythingWritableCountsAgainstTheDiskLimit();
    void deletingAHugeTreeNeverStallsTheEngine();
    void deletedWhileBusyCleansUpFully();
    void deletedWhileStartingCleansUpFully();
    void fileApiRefusesWhatIsNotAFile();
    void fileApiStaysInsideWhileLinksMove();
    void fileApiRefusesProcPaths_data();
    void fileApiRefusesProcPaths();
    void hardlinksCannotReachOutside_data();
    void hardlinksCannotReachOutside();
    void fileApiLongNamesAndDeepTrees();
    void fileApiHugeDirectoriesKeepTheSupervisorAnswering();

private:
    QString create(const QString &kind, const QJsonObject &params);
    // The answer to the request `id` sent with sendText (other messages stay queued).
    QJsonObject answerTo(int id, int timeoutMs);
    QJsonObject exec(const QString &id, const QString &command, int timeoutMs = 60000);
    void remove(const QString &id);
    void stopProbe(HealthProbe &probe);
    void checkHealth(const HealthProbe &probe, const char *what);
    QJsonObject file(const QString &method, const QString &id, QJsonObject params);

    EngineFixture m_engine;
    QTemporaryDir m_host;  // host files a sandbox must not reach
    QString m_procSandbox; // shared by the rows of fileApiRefusesProcPaths
};

void tst_HostPaths::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("these attacks are on the engine as the README runs it: root, with disk images");
    QVERIFY(m_host.isValid());
    ::chmod(QFile::encodeName(m_host.path()).constData(), 0755);
    QVERIFY2(m_engine.start({QStringLiteral("--max-running"), QStringLiteral("16"),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("65536")}),
             qPrintable(m_engine.process().log()));
}

void tst_HostPaths::cleanupTestCase()
{
    m_engine.cleanup();
}

QString tst_HostPaths::create(const QString &kind, const QJsonObject &params)
{
    const QString id = m_engine.create(kind + QStringLiteral(".create"), params)
                           .value(QStringLiteral("id"))
                           .toString();
    if (id.isEmpty())
        qWarning("create failed: %s", qPrintable(text(m_engine.rpc().lastError())));
    return id;
}

QJsonObject tst_HostPaths::answerTo(int id, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    QList<QJsonValue> others;
    QJsonObject found;
    while (!deadline.hasExpired()) {
        const QJsonValue m = m_engine.rpc().nextMessage(
            int(qMax<qint64>(1, deadline.remainingTime())));
        if (m.isUndefined())
            break;
        if (m.toObject().value(QStringLiteral("id")) == QJsonValue(id)) {
            found = m.toObject();
            break;
        }
        others.append(m);
    }
    m_engine.rpc().messages = others + m_engine.rpc().messages;
    return found;
}

QJsonObject tst_HostPaths::exec(const QString &id, const QString &command, int timeoutMs)
{
    return m_engine.exec(id, command, {{QStringLiteral("timeout"), timeoutMs}}, timeoutMs + 30000);
}

void tst_HostPaths::remove(const QString &id)
{
    m_engine.rpc().result(QStringLiteral("sandbox.delete"), {{QStringLiteral("id"), id}}, 120000);
}

void tst_HostPaths::stopProbe(HealthProbe &probe)
{
    // An attack the engine turns down at once is over before the probe's first answer: the
    // probe goes on a little, so that its verdict covers the moments right after it too.
    QTRY_VERIFY_WITH_TIMEOUT(probe.samples() >= kMinSamples, 10000);
    probe.stop();
}

void tst_HostPaths::checkHealth(const HealthProbe &probe, const char *what)
{
    qInfo("GET /health while %s: %s", what, qUtf8Printable(probe.summary()));
    const QString stall = probe.stall();
    QVERIFY2(stall.isEmpty(), qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(what), stall)));
}

// Attack 1: lost+found replaced by a link to a host directory, then stop + start. The engine used
// to delete lost+found (recursively, as root) on every mount.
void tst_HostPaths::lostFoundLinkLeavesTheHostAlone()
{
    const QString victim = m_host.path() + QStringLiteral("/victim-dir");
    QVERIFY(QDir().mkpath(victim + QStringLiteral("/sub")));
    QFile precious(victim + QStringLiteral("/sub/precious"));
    QVERIFY(precious.open(QIODevice::WriteOnly) && precious.write("keep me") == 7);
    precious.close();

    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!id.isEmpty());
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    const QString plant = QStringLiteral("rm -rf /workspace/lost+found /home/agent/lost+found; "
                                         "ln -s %1 /workspace/lost+found && "
                                         "ln -s %1 /home/agent/lost+found && echo planted")
                              .arg(victim);
    QCOMPARE(exec(id, plant).value(QStringLiteral("stdout")).toString(),
             QStringLiteral("planted\n"));
    for (int round = 0; round < 2; ++round) {
        QVERIFY2(!m_engine.rpc()
                      .result(QStringLiteral("agents.stop"), {{QStringLiteral("id"), id}})
                      .isEmpty(),
                 qPrintable(text(m_engine.rpc().lastError())));
        QVERIFY2(!m_engine.rpc()
                      .result(QStringLiteral("agents.start"), {{QStringLiteral("id"), id}}, 120000)
                      .isEmpty(),
                 qPrintable(text(m_engine.rpc().lastError())));
    }
    stopProbe(probe);
    QVERIFY2(QFileInfo::exists(victim + QStringLiteral("/sub/precious")),
             "the engine deleted a host directory through the sandbox's lost+found link");
    // And the sandbox's own files are left as it made them.
    QCOMPARE(exec(id, QStringLiteral("readlink /workspace/lost+found"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             victim + u'\n');
    checkHealth(probe, "stopping and starting a sandbox with planted links");
    remove(id);
    QVERIFY(QFileInfo::exists(victim + QStringLiteral("/sub/precious")));
}

void tst_HostPaths::agentHomeLinksAreNotFollowed_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("link");      // in /home/agent
    QTest::addColumn<bool>("victimIsFile"); // what the link points at
    QTest::newRow("codex: .codex -> a root-only file")
        << QStringLiteral("codex") << QStringLiteral(".codex") << true;
    QTest::newRow("opencode: .config -> a host directory")
        << QStringLiteral("opencode") << QStringLiteral(".config") << false;
}

// Attack 2: the agent's home is the sandbox's; links it plants there must not lead root elsewhere.
void tst_HostPaths::agentHomeLinksAreNotFollowed()
{
    QFETCH(QString, type);
    QFETCH(QString, link);
    QFETCH(bool, victimIsFile);
    const QString victim = m_host.path() + QStringLiteral("/home-victim-") + type;
    if (victimIsFile) {
        QFile f(victim);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write("secret") == 6);
        f.close();
        QVERIFY(::chmod(QFile::encodeName(victim).constData(), 0600) == 0);
    } else {
        QVERIFY(QDir().mkpath(victim));
    }
    // Runs need network: true; the model API is unreachable on purpose (the run itself fails).
    const QString id
        = create(QStringLiteral("agents"),
                 {{QStringLiteral("type"), type},
                  {QStringLiteral("size"), QStringLiteral("lite")},
                  {QStringLiteral("network"), true},
                  {QStringLiteral("env"),
                   QJsonObject{{QStringLiteral("OPENAI_API_KEY"), QStringLiteral("sk-test")}}}});
    QVERIFY(!id.isEmpty());
    QCOMPARE(exec(id, QStringLiteral("rm -rf /home/agent/%1 && ln -s %2 /home/agent/%1 && echo ok")
                          .arg(link, victim))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("ok\n"));
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    const QJsonObject answer = m_engine.rpc().call(
        QStringLiteral("agents.run"),
        {{QStringLiteral("id"), id},
         {QStringLiteral("prompt"), QStringLiteral("say hi")},
         {QStringLiteral("options"),
          QJsonObject{{QStringLiteral("systemPrompt"), QStringLiteral("planted instructions")},
                      {QStringLiteral("baseUrl"), QStringLiteral("http://127.0.0.1:9/v1")},
                      {QStringLiteral("timeout"), 20000}}}},
        120000);
    stopProbe(probe);
    qInfo("run answered: %s", qPrintable(text(answer).left(300)));
    struct stat st;
    QVERIFY(::lstat(QFile::encodeName(victim).constData(), &st) == 0);
    QVERIFY2(st.st_uid == 0 && st.st_gid == 0,
             "the engine handed a host file to the sandbox's uid");
    if (victimIsFile) {
        QCOMPARE(st.st_mode & 07777, 0600u);
    } else {
        QVERIFY2(QDir(victim).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                 "the engine wrote into a host directory through the sandbox's link");
    }
    // The run says why it could not start rather than working around the link silently.
    QVERIFY2(text(answer).contains(QStringLiteral("symbolic link")), qPrintable(text(answer)));
    checkHealth(probe, "an agent run meets planted links");
    remove(id);
}

void tst_HostPaths::swappedDatabaseSocketDoesNotFreezeTheEngine_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("socket");
    QTest::newRow("sqlite: dbhost.sock")
        << QStringLiteral("sqlite") << QStringLiteral("dbhost.sock");
    QTest::newRow("postgres: .s.PGSQL.5432")
        << QStringLiteral("postgres") << QStringLiteral(".s.PGSQL.5432");
}

// Attack 5: the database's socket replaced by a listener whose backlog is full. A blocking connect
// on the event loop used to freeze every call of every key until that listener went away.
void tst_HostPaths::swappedDatabaseSocketDoesNotFreezeTheEngine()
{
    QFETCH(QString, type);
    QFETCH(QString, socket);
    const QString id = create(QStringLiteral("databases"),
                              {{QStringLiteral("type"), type},
                               {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!id.isEmpty());
    // A listener that accepts nothing and whose queue is full, renamed over the server's socket;
    // it stays 20 s (so that an engine that would block is freed again and the test ends).
    const QString script = QStringLiteral("import socket, os, time\n"
                                          "p = '/run/db/evil.sock'\n"
                                          "s = socket.socket(socket.AF_UNIX)\n"
                                          "s.bind(p)\n"
                                          "s.listen(0)\n"
                                          "held = []\n"
                                          "for i in range(8):\n"
                                          "    c = socket.socket(socket.AF_UNIX)\n"
                                          "    c.setblocking(False)\n"
                                          "    try:\n"
                                          "        c.connect(p)\n"
                                          "    except OSError:\n"
                                          "        pass\n"
                                          "    held.append(c)\n"
                                          "os.rename(p, '/run/db/%1')\n"
                                          "open('/run/db/evil.ready', 'w').close()\n"
                                          "time.sleep(20)\n")
                               .arg(socket);
    const QJsonObject planted
        = exec(id, QStringLiteral(
                       "cat > /run/db/evil.py <<'EOF'\n%1EOF\n"
                       "setsid python3 /run/db/evil.py </dev/null >/dev/null 2>&1 &\n"
                       "while [ ! -e /run/db/evil.ready ]; do sleep 0.02; done; echo planted")
                       .arg(script));
    QCOMPARE(planted.value(QStringLiteral("stdout")).toString(), QStringLiteral("planted\n"));

    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    // More concurrent calls than the engine keeps connections, so that it must open new ones;
    // rounds of them until the probe has seen enough (one round may take only a few ms).
    QElapsedTimer clock;
    clock.start();
    const int perRound = 10;
    int calls = 0, answered = 0, failed = 0;
    QString lastError;
    do {
        const int first = 9000 + calls;
        for (int i = 0; i < perRound; ++i) {
            const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                      {QStringLiteral("id"), first + i},
                                      {QStringLiteral("method"), QStringLiteral("databases.query")},
                                      {QStringLiteral("params"),
                                       QJsonObject{{QStringLiteral("id"), id},
                                                   {QStringLiteral("sql"),
                                                    QStringLiteral("SELECT 1 AS one")}}}};
            m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
        }
        calls += perRound;
        for (int i = 0; i < perRound; ++i) {
            const QJsonObject m = answerTo(first + i, 40000);
            QVERIFY2(!m.isEmpty(), "a query got no answer");
            ++answered;
            if (m.contains(QStringLiteral("error"))) {
                ++failed;
                lastError = text(m.value(QStringLiteral("error")).toObject());
            }
        }
    } while (probe.samples() < kMinSamples && clock.elapsed() < 15000);
    stopProbe(probe);
    qInfo("%d of %d queries answered in %lld ms, %d failed%s", answered, calls, clock.elapsed(),
          failed, failed ? qPrintable(QStringLiteral(" (e.g. ") + lastError + u')') : "");
    checkHealth(probe, "queries meet a swapped database socket");
    remove(id);
}

void tst_HostPaths::databaseSocketLinkIsNotFollowed_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("socket");
    QTest::addColumn<QString>("slowQuery");
    QTest::newRow("postgres: .s.PGSQL.5432")
        << QStringLiteral("postgres") << QStringLiteral(".s.PGSQL.5432")
        << QStringLiteral("SELECT pg_sleep(0.2)");
    QTest::newRow("sqlite: dbhost.sock")
        << QStringLiteral("sqlite") << QStringLiteral("dbhost.sock")
        << QStringLiteral("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x "
                          "< 300000) SELECT count(*) FROM c");
}

// Attack 5b: the database's socket replaced by a symbolic link to a socket of the host. The engine
// (root) connects to the server anew for concurrent calls (libpq through the engine's own link to
// the socket's inode, PgSocketLink; the dbhost directly): it must refuse the link, never reach the
// host's socket through it.
void tst_HostPaths::databaseSocketLinkIsNotFollowed()
{
    QFETCH(QString, type);
    QFETCH(QString, socket);
    QFETCH(QString, slowQuery);
    // A host socket only root may reach (the sandbox cannot even see it): nothing reaches it but
    // the engine following the link.
    const QByteArray hostSocket = QFile::encodeName(m_host.path() + QStringLiteral("/host-") + type
                                                    + QStringLiteral(".sock"));
    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    QVERIFY(listener >= 0);
    const auto closeListener = qScopeGuard([listener] { ::close(listener); });
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    QVERIFY(size_t(hostSocket.size()) < sizeof addr.sun_path);
    memcpy(addr.sun_path, hostSocket.constData(), size_t(hostSocket.size()) + 1);
    ::unlink(hostSocket.constData());
    QVERIFY(::bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0);
    QVERIFY(::listen(listener, 64) == 0);

    const QString id = create(QStringLiteral("databases"),
                              {{QStringLiteral("type"), type},
                               {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!id.isEmpty());
    QCOMPARE(exec(id, QStringLiteral("mv /run/db/%1 /run/db/moved.sock && ln -s %2 /run/db/%1 && "
                                     "echo planted")
                          .arg(socket, QFile::decodeName(hostSocket)))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("planted\n"));

    // More concurrent calls than the engine keeps connections: it must open new ones.
    const int calls = 12;
    for (int i = 0; i < calls; ++i) {
        const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                  {QStringLiteral("id"), 9500 + i},
                                  {QStringLiteral("method"), QStringLiteral("databases.query")},
                                  {QStringLiteral("params"),
                                   QJsonObject{{QStringLiteral("id"), id},
                                               {QStringLiteral("sql"), slowQuery}}}};
        m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
    }
    int refused = 0;
    for (int i = 0; i < calls; ++i) {
        const QJsonObject m = answerTo(9500 + i, 60000);
        QVERIFY2(!m.isEmpty(), "a query got no answer");
        if (text(m.value(QStringLiteral("error")).toObject())
                .contains(QLatin1String("a symbolic link is in its place")))
            ++refused;
    }
    int reached = 0;
    for (int c; (c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ::close(c))
        ++reached;
    qInfo("%d of %d queries refused the link; the host socket was reached %d times", refused, calls,
          reached);
    QCOMPARE(reached, 0);
    QVERIFY2(refused > 0, "no query needed a new connection: the attack was not met");
    remove(id);
}

// Attack 7: everything a sandbox can write (workspace, agent home, database run directory, the
// tmpfs mounts) counts against its disk limit; nothing else is writable.
void tst_HostPaths::everythingWritableCountsAgainstTheDiskLimit()
{
    const QString agent = create(QStringLiteral("agents"),
                                 {{QStringLiteral("type"), QStringLiteral("claude-code")},
                                  {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!agent.isEmpty());
    // lite: 2048 MiB in all. fallocate reserves space at once without writing gigabytes.
    QJsonObject r = exec(agent, QStringLiteral("fallocate -l 2600M /home/agent/big; echo rc=$?"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("rc=1\n"));
    QVERIFY2(r.value(QStringLiteral("stderr")).toString().contains(QStringLiteral("No space left")),
             qPrintable(text(r)));
    // One budget for the workspace and the home together.
    r = exec(agent, QStringLiteral("rm -f /home/agent/big; fallocate -l 1200M /workspace/a && "
                                   "fallocate -l 800M /home/agent/b; echo rc=$?"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("rc=1\n"));
    // bubblewrap's own root and /dev are not a place to write to.
    r = exec(agent, QStringLiteral("for f in /big /dev/big /run/big /home/big; do "
                                   "head -c 1M /dev/zero > $f && echo wrote $f; done; true"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QString());
    // The tmpfs mounts are capped, and their caps are carved out of the disk limit.
    r = exec(agent, QStringLiteral("head -c 100M /dev/zero > /tmp/x; echo rc=$?; "
                                   "head -c 100M /dev/zero > /dev/shm/x; echo rc=$?; "
                                   "rm -f /tmp/x /dev/shm/x /workspace/a /home/agent/b; "
                                   "t=$(df -m --output=size /tmp | tail -1); "
                                   "s=$(df -m --output=size /dev/shm | tail -1); "
                                   "w=$(df -m --output=size /workspace | tail -1); "
                                   "echo total $((t + s + w))"));
    const QStringList lines
        = r.value(QStringLiteral("stdout")).toString().split(u'\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.value(0), QStringLiteral("rc=1"));
    QCOMPARE(lines.value(1), QStringLiteral("rc=1"));
    QVERIFY2(lines.value(2).section(u' ', 1).toInt() <= 2048, qPrintable(lines.join(u'|')));
    remove(agent);

    const QString db = create(QStringLiteral("databases"),
                              {{QStringLiteral("type"), QStringLiteral("sqlite")},
                               {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!db.isEmpty());
    r = exec(db, QStringLiteral("fallocate -l 2600M /run/db/big; echo rc=$?"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("rc=1\n"));
    remove(db);
}

// Deleting a sandbox with a huge tree (a workspace in plain directories, as without disk images)
// is done off the event loop.
void tst_HostPaths::deletingAHugeTreeNeverStallsTheEngine()
{
    EngineFixture plain;
    QVERIFY2(plain.start({QStringLiteral("--no-disk-limit")}), qPrintable(plain.process().log()));
    const QString id = plain.createAgent(QStringLiteral("claude-code"), {});
    QVERIFY(!id.isEmpty());
    const QJsonObject made = plain.exec(
        id,
        QStringLiteral("for d in $(seq 1 100); do mkdir d$d; (cd d$d && seq 1 1500 | xargs touch); "
                       "done; ln -s /etc etc-link; find . | wc -l"),
        {{QStringLiteral("timeout"), 300000}}, 330000);
    QVERIFY2(made.value(QStringLiteral("stdout")).toString().trimmed().toInt() > 150000,
             qPrintable(text(made)));
    const QString state = plain.process().dataDir() + QStringLiteral("/sandboxes/") + id;
    HealthProbe probe(plain.process().url(), plain.process().pid(), 10);
    probe.start();
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!plain.rpc()
                 .result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 120000)
                 .isEmpty());
    const qint64 answerMs = clock.elapsed();
    QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(state)
                                 && QDir(plain.process().dataDir() + QStringLiteral("/trash"))
                                        .isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot
                                                 | QDir::Hidden),
                             120000);
    stopProbe(probe);
    qInfo("delete answered in %lld ms; the tree was gone after %lld ms", answerMs, clock.elapsed());
    checkHealth(probe, "a sandbox with 150,000 files is deleted");
    QVERIFY(QFileInfo::exists(QStringLiteral("/etc/passwd")));
}

// A sandbox deleted in the middle of an exec, with background processes and a mounted image,
// leaves nothing behind: no process, no mount, no loop device, no files.
void tst_HostPaths::deletedWhileBusyCleansUpFully()
{
    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!id.isEmpty());
    // Background processes that outlive their exec, one of them in a session of its own.
    const QByteArray marker = "sleep 1000."
                              + QByteArray::number(QRandomGenerator::global()->bounded(1000000));
    QCOMPARE(exec(id, QStringLiteral("(setsid %1 &) ; nohup %1 >/dev/null 2>&1 & "
                                     "head -c 50M /dev/urandom > /workspace/data && echo ok")
                          .arg(QString::fromLatin1(marker)))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("ok\n"));
    QCOMPARE(processesWith(marker), 2);
    const QString state = m_engine.process().dataDir() + QStringLiteral("/sandboxes/") + id;
    QCOMPARE(mountsBelow(state), 1);
    QCOMPARE(loopDevicesBelow(state), 1);

    // A long exec in flight while the sandbox is deleted.
    const QByteArray inFlight = "sleep 600."
                                + QByteArray::number(QRandomGenerator::global()->bounded(1000000));
    const QJsonObject busy{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                           {QStringLiteral("id"), 7001},
                           {QStringLiteral("method"), QStringLiteral("agents.exec")},
                           {QStringLiteral("params"), QJsonObject{{QStringLiteral("id"), id},
                                                                  {QStringLiteral("command"),
                                                                   QString::fromLatin1(inFlight)}}}};
    m_engine.rpc().sendText(QJsonDocument(busy).toJson(QJsonDocument::Compact));
    QTRY_VERIFY_WITH_TIMEOUT(processesWith(inFlight) >= 1, 10000);
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    const QJsonObject deleted = m_engine.rpc().call(QStringLiteral("agents.delete"),
                                                    {{QStringLiteral("id"), id}}, 60000);
    QVERIFY2(deleted.contains(QStringLiteral("result")), qPrintable(text(deleted)));
    // The exec in flight is answered (an error: its sandbox is gone), not left hanging.
    QVERIFY(!answerTo(7001, 10000).isEmpty());
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(marker), 0, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(inFlight), 0, 10000);
    // The groups go once their last process is reaped (off the event loop, after the answer).
    for (const QString &controller : QDir(QStringLiteral("/sys/fs/cgroup")).entryList(QDir::Dirs))
        QTRY_VERIFY2_WITH_TIMEOUT(!QFileInfo::exists(QStringLiteral("/sys/fs/cgroup/%1/sandboxd/%2")
                                                         .arg(controller, id)),
                                  qPrintable(controller), 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(QStringLiteral("/sys/fs/cgroup/sandboxd/") + id),
                             10000);
    QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(state)
                                 && QDir(m_engine.process().dataDir() + QStringLiteral("/trash"))
                                        .isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot
                                                 | QDir::Hidden),
                             30000);
    stopProbe(probe);
    QCOMPARE(mountsBelow(m_engine.process().dataDir() + QStringLiteral("/trash")), 0);
    QCOMPARE(mountsBelow(state), 0);
    QTRY_COMPARE_WITH_TIMEOUT(loopDevicesBelow(m_engine.process().dataDir()
                                               + QStringLiteral("/sandboxes/") + id),
                              0, 10000);
    checkHealth(probe, "a busy sandbox is deleted");
}

// Deleted while it is still being created (its image being made and mounted).
void tst_HostPaths::deletedWhileStartingCleansUpFully()
{
    const QJsonObject create{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                             {QStringLiteral("id"), 7101},
                             {QStringLiteral("method"), QStringLiteral("agents.create")},
                             {QStringLiteral("params"),
                              QJsonObject{{QStringLiteral("type"), QStringLiteral("claude-code")},
                                          {QStringLiteral("size"), QStringLiteral("standard-4")}}}};
    m_engine.rpc().sendText(QJsonDocument(create).toJson(QJsonDocument::Compact));
    QString id;
    QTRY_VERIFY_WITH_TIMEOUT(
        !(id =
              [&] {
                  const QJsonArray all = m_engine.rpc()
                                             .result(QStringLiteral("agents.list"), {})
                                             .value(QStringLiteral("agents"))
                                             .toArray();
                  for (const QJsonValue &s : all)
                      if (s.toObject().value(QStringLiteral("size")).toString()
                          == QLatin1String("standard-4"))
                          return s.toObject().value(QStringLiteral("id")).toString();
                  return QString();
              }())
             .isEmpty(),
        10000);
    const QJsonObject deleted = m_engine.rpc().call(QStringLiteral("agents.delete"),
                                                    {{QStringLiteral("id"), id}}, 60000);
    QVERIFY2(deleted.contains(QStringLiteral("result")), qPrintable(text(deleted)));
    const QString state = m_engine.process().dataDir() + QStringLiteral("/sandboxes/") + id;
    QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(state)
                                 && QDir(m_engine.process().dataDir() + QStringLiteral("/trash"))
                                        .isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot
                                                 | QDir::Hidden),
                             30000);
    QTest::qWait(500); // a mount that would land after the delete
    // (Below its own directory: the engine's spares have theirs.)
    QCOMPARE(mountsBelow(state), 0);
    QTRY_COMPARE_WITH_TIMEOUT(loopDevicesBelow(state), 0, 10000);
}

QJsonObject tst_HostPaths::file(const QString &method, const QString &id, QJsonObject params)
{
    params.insert(QStringLiteral("id"), id);
    return m_engine.rpc().call(QStringLiteral("sandbox.") + method, params, 60000);
}

// FIFOs and sockets in the workspace: the file methods refuse them at once, without opening them
// (a FIFO would block the supervisor) and without replacing them.
void tst_HostPaths::fileApiRefusesWhatIsNotAFile()
{
    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("basic")}});
    QVERIFY(!id.isEmpty());
    QCOMPARE(exec(id, QStringLiteral("mkfifo /workspace/fifo && python3 -c \"import socket; "
                                     "socket.socket(socket.AF_UNIX).bind('/workspace/sock')\" && "
                                     "echo ok"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("ok\n"));
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    struct Case
    {
        const char *method;
        const char *path;
        const char *kind;
    };
    const Case cases[] = {{"readFile", "fifo", "FIFO"},
                          {"readFile", "sock", "socket"},
                          {"writeFile", "fifo", "FIFO"},
                          {"writeFile", "sock", "socket"}};
    for (const Case &c : cases) {
        QElapsedTimer clock;
        clock.start();
        const QJsonObject answer = file(QLatin1String(c.method), id,
                                        {{QStringLiteral("path"), QLatin1String(c.path)},
                                         {QStringLiteral("content"), QStringLiteral("x")}});
        qInfo("%s %s: %lld ms: %s", c.method, c.path, clock.elapsed(), qPrintable(text(answer)));
        QVERIFY2(answer.contains(QStringLiteral("error")), qPrintable(text(answer)));
        QVERIFY2(text(answer).contains(QLatin1String(c.kind)), qPrintable(text(answer)));
        QVERIFY(clock.elapsed() < 5000);
    }
    // Nothing was replaced, and the supervisor answers at once.
    QCOMPARE(exec(id,
                  QStringLiteral("test -p /workspace/fifo && test -S /workspace/sock && echo kept"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("kept\n"));
    stopProbe(probe);
    checkHealth(probe, "the file methods meet FIFOs and sockets");
    remove(id);
}

// A directory swapped for a link to outside /workspace, over and over, while the file methods use
// it: they only ever see the workspace.
void tst_HostPaths::fileApiStaysInsideWhileLinksMove()
{
    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("basic")}});
    QVERIFY(!id.isEmpty());
    QCOMPARE(exec(id,
                  QStringLiteral(
                      "echo outside > /home/agent/secret; echo outside > /home/agent/only-outside; "
                      "mkdir -p /workspace/d && echo inside > /workspace/d/secret; "
                      "setsid sh -c 'cd /workspace; while :; do mv d d.real; ln -s /home/agent d; "
                      "rm d; mv d.real d; done' </dev/null >/dev/null 2>&1 & echo started"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("started\n"));
    int inside = 0, refused = 0;
    for (int i = 0; i < 300; ++i) {
        const QJsonObject read = file(QStringLiteral("readFile"), id,
                                      {{QStringLiteral("path"), QStringLiteral("d/secret")}});
        const QString content = read.value(QStringLiteral("result"))
                                    .toObject()
                                    .value(QStringLiteral("content"))
                                    .toString();
        QVERIFY2(content != QLatin1String("outside\n"),
                 "readFile followed a link out of /workspace");
        content == QLatin1String("inside\n") ? ++inside : ++refused;
        const QJsonObject list = file(QStringLiteral("listFiles"), id,
                                      {{QStringLiteral("path"), QStringLiteral("d")}});
        QVERIFY2(!text(list).contains(QStringLiteral("only-outside")),
                 "listFiles listed outside /workspace");
        file(QStringLiteral("writeFile"), id,
             {{QStringLiteral("path"), QStringLiteral("d/secret")},
              {QStringLiteral("content"), QStringLiteral("inside\n")}});
    }
    qInfo("300 reads while the directory moved: %d inside, %d refused or not found", inside,
          refused);
    QCOMPARE(exec(id, QStringLiteral("cat /home/agent/secret"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("outside\n"));
    remove(id);
}

void tst_HostPaths::fileApiRefusesProcPaths_data()
{
    QTest::addColumn<QString>("setup");
    QTest::addColumn<QString>("path");
    QTest::newRow("/proc itself") << QString() << QStringLiteral("/proc/self/environ");
    QTest::newRow("relative escape") << QString() << QStringLiteral("../proc/1/environ");
    QTest::newRow("absolute link")
        << QStringLiteral("ln -s /proc/self/environ /workspace/env") << QStringLiteral("env");
    QTest::newRow("relative link out")
        << QStringLiteral("ln -s ../proc/1/environ /workspace/rel") << QStringLiteral("rel");
    QTest::newRow("link to /proc/self/root")
        << QStringLiteral("ln -s /proc/self/root /workspace/root")
        << QStringLiteral("root/etc/passwd");
}

void tst_HostPaths::fileApiRefusesProcPaths()
{
    QFETCH(QString, setup);
    QFETCH(QString, path);
    if (m_procSandbox.isEmpty())
        m_procSandbox = create(QStringLiteral("agents"),
                               {{QStringLiteral("type"), QStringLiteral("claude-code")},
                                {QStringLiteral("size"), QStringLiteral("lite")}});
    QVERIFY(!m_procSandbox.isEmpty());
    if (!setup.isEmpty())
        exec(m_procSandbox, setup);
    for (const char *method : {"readFile", "listFiles", "writeFile"}) {
        const QJsonObject answer = file(QLatin1String(method), m_procSandbox,
                                        {{QStringLiteral("path"), path},
                                         {QStringLiteral("content"), QStringLiteral("x")}});
        QCOMPARE(answer.value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("code"))
                     .toInt(),
                 -32007);
    }
}

void tst_HostPaths::hardlinksCannotReachOutside_data()
{
    QTest::addColumn<bool>("diskImages");
    QTest::newRow("disk image: /workspace its own file system") << true;
    QTest::newRow("plain directories: one host file system") << false;
}

// A hard link names the same file from another place: the sandbox cannot make one to a file
// outside its trees (each is its own mount), so no file method or engine step reaches one.
void tst_HostPaths::hardlinksCannotReachOutside()
{
    QFETCH(bool, diskImages);
    EngineFixture plain;
    EngineFixture *engine = &m_engine;
    if (!diskImages) {
        QVERIFY2(plain.start({QStringLiteral("--no-disk-limit")}),
                 qPrintable(plain.process().log()));
        engine = &plain;
    }
    const QString id = engine->createAgent(QStringLiteral("claude-code"), QStringLiteral("lite"));
    QVERIFY(!id.isEmpty());
    const QJsonObject r
        = engine->exec(id, QStringLiteral(
                               "echo home > /home/agent/h; echo x > /workspace/a; "
                               "ln /home/agent/h /workspace/h; echo rc=$?; "
                               "ln /etc/passwd /workspace/p; echo rc=$?; "
                               "ln /run/sandbox/sandbox-supervisor /workspace/s; echo rc=$?; "
                               "ln /workspace/a /workspace/b; echo rc=$?"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(),
             QStringLiteral("rc=1\nrc=1\nrc=1\nrc=0\n"));
    QCOMPARE(r.value(QStringLiteral("stderr"))
                 .toString()
                 .count(QStringLiteral("Invalid cross-device link")),
             3);
    // A hard link inside the workspace is just a file to the file methods.
    QCOMPARE(engine->readFile(id, QStringLiteral("b")), QStringLiteral("x\n"));
    engine->rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}});
}

// Names at the limit, paths past it, and a tree deeper than any path can name.
void tst_HostPaths::fileApiLongNamesAndDeepTrees()
{
    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("basic")}});
    QVERIFY(!id.isEmpty());
    const QString longest(255, u'n');
    QJsonObject answer = file(QStringLiteral("writeFile"), id,
                              {{QStringLiteral("path"), longest},
                               {QStringLiteral("content"), QStringLiteral("ok")}});
    QVERIFY2(answer.contains(QStringLiteral("result")), qPrintable(text(answer)));
    answer = file(QStringLiteral("writeFile"), id,
                  {{QStringLiteral("path"), QString(longest + u'n')},
                   {QStringLiteral("content"), QStringLiteral("no")}});
    QVERIFY2(text(answer).contains(QStringLiteral("File name too long")), qPrintable(text(answer)));
    answer = file(QStringLiteral("readFile"), id, {{QStringLiteral("path"), QString(5000, u'a')}});
    QVERIFY2(answer.contains(QStringLiteral("error")), qPrintable(text(answer)));

    // 3000 levels: past PATH_MAX, and past what one descriptor per level would allow.
    QCOMPARE(exec(id,
                  QStringLiteral("cat > /tmp/deep.py <<'EOF'\n"
                                 "import os\n"
                                 "os.chdir('/workspace')\n"
                                 "os.mkdir('deep')\n"
                                 "os.chdir('deep')\n"
                                 "for i in range(3000):\n"
                                 "    os.mkdir('d')\n"
                                 "    os.chdir('d')\n"
                                 "open('leaf', 'w').close()\n"
                                 "print('made')\n"
                                 "EOF\n"
                                 "python3 /tmp/deep.py"),
                  120000)
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("made\n"));
    QElapsedTimer clock;
    clock.start();
    answer = file(QStringLiteral("deleteFile"), id,
                  {{QStringLiteral("path"), QStringLiteral("deep")},
                   {QStringLiteral("recursive"), true}});
    qInfo("deleting a tree 3000 levels deep: %lld ms", clock.elapsed());
    QVERIFY2(answer.contains(QStringLiteral("result")), qPrintable(text(answer)));
    QCOMPARE(exec(id, QStringLiteral("test -e /workspace/deep || echo gone"))
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("gone\n"));
    remove(id);
}

// A directory of 100,000 entries: a listing is bounded, and deleting it leaves the supervisor
// answering other requests meanwhile.
void tst_HostPaths::fileApiHugeDirectoriesKeepTheSupervisorAnswering()
{
    const QString id = create(QStringLiteral("agents"),
                              {{QStringLiteral("type"), QStringLiteral("claude-code")},
                               {QStringLiteral("size"), QStringLiteral("standard-1")}});
    QVERIFY(!id.isEmpty());
    QCOMPARE(exec(id,
                  QStringLiteral("mkdir /workspace/big && cd /workspace/big && "
                                 "seq 1 100000 | xargs touch && echo made"),
                  300000)
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("made\n"));
    QElapsedTimer clock;
    clock.start();
    const QJsonObject listing = file(QStringLiteral("listFiles"), id,
                                     {{QStringLiteral("path"), QStringLiteral("big")}});
    const QJsonObject result = listing.value(QStringLiteral("result")).toObject();
    qInfo("listing 100,000 entries: %lld ms", clock.elapsed());
    QCOMPARE(result.value(QStringLiteral("truncated")).toBool(), true);
    QCOMPARE(result.value(QStringLiteral("entries")).toArray().size(), 10000);

    const QJsonObject del{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                          {QStringLiteral("id"), 7201},
                          {QStringLiteral("method"), QStringLiteral("sandbox.deleteFile")},
                          {QStringLiteral("params"),
                           QJsonObject{{QStringLiteral("id"), id},
                                       {QStringLiteral("path"), QStringLiteral("big")},
                                       {QStringLiteral("recursive"), true}}}};
    clock.restart();
    m_engine.rpc().sendText(QJsonDocument(del).toJson(QJsonDocument::Compact));
    QTest::qWait(50); // on purpose: the deletion is under way when the echo comes
    // While it deletes, the supervisor still answers.
    QElapsedTimer echo;
    echo.start();
    const QJsonObject alive = exec(id, QStringLiteral("echo alive"));
    const qint64 echoMs = echo.elapsed();
    // Answered while the deletion still ran (a supervisor busy deleting answered it only after).
    bool deletedFirst = false;
    for (const QJsonValue &m : std::as_const(m_engine.rpc().messages))
        deletedFirst = deletedFirst || m.toObject().value(QStringLiteral("id")) == QJsonValue(7201);
    const QJsonObject deleted = answerTo(7201, 120000);
    qInfo("deleting 100,000 files: %lld ms; an exec meanwhile answered in %lld ms", clock.elapsed(),
          echoMs);
    QVERIFY2(deleted.contains(QStringLiteral("result")), qPrintable(text(deleted)));
    QCOMPARE(alive.value(QStringLiteral("stdout")).toString(), QStringLiteral("alive\n"));
    QVERIFY2(!deletedFirst, "the supervisor answered nothing else while it deleted a directory");
    remove(id);
}

QTEST_GUILESS_MAIN(tst_HostPaths)
#include "tst_hostpaths.moc"
