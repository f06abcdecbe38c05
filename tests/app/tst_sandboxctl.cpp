// End to end: the sandboxctl binary against a real sandboxd.
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>

namespace {

struct Run
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

} // namespace

class tst_Sandboxctl : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void lifecycle();
    void createPrintsTheIdAndKeepsTheName_data();
    void createPrintsTheIdAndKeepsTheName();
    void execPassesExitCodeAndOutput_data();
    void execPassesExitCodeAndOutput();
    void execPassesOutputBeyondAMebibyteUpToItsLimit();
    void filesRoundTrip();
    void errors_data();
    void errors();
    void environmentVariablesSelectTheEngine();
    void runShowsEventsAndIsKept();
    void queryReadsEveryPage();

private:
    Run ctl(const QStringList &args, const QByteArray &stdinData = {}, const QString &key = {});

    EngineFixture m_engine; // only its engine: the suite talks to it through sandboxctl
    QString m_id;
    Sandbox::Mocks::MockModelServer m_mock;
};

Run tst_Sandboxctl::ctl(const QStringList &args, const QByteArray &stdinData, const QString &key)
{
    QProcess p;
    p.setProgram(QStringLiteral(SANDBOXCTL_BIN));
    p.setArguments(QStringList{QStringLiteral("--url"), m_engine.process().url().toString(),
                               QStringLiteral("--key"),
                               key.isEmpty() ? m_engine.process().key() : key}
                   + args);
    p.start();
    p.write(stdinData);
    p.closeWriteChannel();
    // Wait with the event loop running: the mock model server lives in this process.
    QSignalSpy finished(&p, &QProcess::finished);
    if (p.state() != QProcess::NotRunning)
        finished.wait(120000);
    return Run{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
               p.readAllStandardOutput(), p.readAllStandardError()};
}

void tst_Sandboxctl::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
}

void tst_Sandboxctl::lifecycle()
{
    const Run created = ctl({QStringLiteral("create"), QStringLiteral("claude-code"),
                             QStringLiteral("--size"), QStringLiteral("basic"),
                             QStringLiteral("--env"), QStringLiteral("GREETING=hi there")});
    QCOMPARE(created.exitCode, 0);
    m_id = QString::fromUtf8(created.out.trimmed());
    QVERIFY(m_id.startsWith(QLatin1String("sb_")));
    const Run list = ctl({QStringLiteral("list")});
    QCOMPARE(list.exitCode, 0);
    QVERIFY(list.out.contains(m_id.toUtf8()));
    QVERIFY(list.out.contains("running"));
    const Run status = ctl({QStringLiteral("status"), m_id});
    QVERIFY(status.out.contains("\"status\": \"running\""));
    QVERIFY(!status.out.contains("hi there")); // env values never come back
    QCOMPARE(ctl({QStringLiteral("stop"), m_id}).exitCode, 0);
    QVERIFY(ctl({QStringLiteral("status"), m_id}).out.contains("\"status\": \"stopped\""));
    QCOMPARE(ctl({QStringLiteral("start"), m_id}).exitCode, 0);
}

void tst_Sandboxctl::createPrintsTheIdAndKeepsTheName_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("name");
    QTest::newRow("database") << "sqlite"
                              << "pg-demo";
    QTest::newRow("agent") << "opencode"
                           << "web-app";
}

void tst_Sandboxctl::createPrintsTheIdAndKeepsTheName()
{
    QFETCH(QString, type);
    QFETCH(QString, name);
    const Run created = ctl({QStringLiteral("create"), type, QStringLiteral("--size"),
                             QStringLiteral("lite"), QStringLiteral("--name"), name});
    QVERIFY2(created.exitCode == 0, created.err.constData());
    // One line: the id (as the README says), not the whole JSON.
    const QString id = QString::fromUtf8(created.out.trimmed());
    QVERIFY2(id.startsWith(QLatin1String("sb_")) && !id.contains(u'\n'), created.out.constData());
    const Run status = ctl({QStringLiteral("status"), id});
    const QByteArray nameField = QByteArray("\"name\": \"") + name.toUtf8() + '"';
    QVERIFY2(status.out.contains(nameField), status.out.constData());
    // `list` shows agent sandboxes, `list databases` the databases.
    const bool database = QString::fromLatin1(QTest::currentDataTag()) == QLatin1String("database");
    const Run list = database ? ctl({QStringLiteral("list"), QStringLiteral("databases")})
                              : ctl({QStringLiteral("list")});
    const QByteArray line = list.out.mid(list.out.indexOf(id.toUtf8())).split('\n').first();
    QVERIFY2(line.contains(name.toUtf8()), list.out.constData());
    QCOMPARE(ctl({QStringLiteral("delete"), id}).exitCode, 0);
}

void tst_Sandboxctl::execPassesExitCodeAndOutput_data()
{
    QTest::addColumn<QStringList>("command");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QByteArray>("out");
    QTest::addColumn<QByteArray>("err");
    QTest::newRow("shell line") << QStringList{QStringLiteral(
        "echo $GREETING; echo bad >&2; exit 7")}
                                << 7 << QByteArray("hi there\n") << QByteArray("bad\n");
    QTest::newRow("argv") << QStringList{QStringLiteral("printf"), QStringLiteral("%s-"),
                                         QStringLiteral("a b"), QStringLiteral("$X")}
                          << 0 << QByteArray("a b-$X-") << QByteArray();
    QTest::newRow("many lines stream through")
        << QStringList{QStringLiteral("seq 1 50000 | tail -n 2")} << 0
        << QByteArray("49999\n50000\n") << QByteArray();
}

void tst_Sandboxctl::execPassesExitCodeAndOutput()
{
    QFETCH(QStringList, command);
    QFETCH(int, exitCode);
    QFETCH(QByteArray, out);
    QFETCH(QByteArray, err);
    const Run r = ctl(QStringList{QStringLiteral("exec"), m_id, QStringLiteral("--")} + command);
    QCOMPARE(r.exitCode, exitCode);
    QCOMPARE(r.out, out);
    QCOMPARE(r.err, err);
}

void tst_Sandboxctl::execPassesOutputBeyondAMebibyteUpToItsLimit()
{
    // `exec ID -- cat big.log > big.log` gets all of it (the protocol's default kept 1 MiB)...
    const QStringList command{QStringLiteral("exec"), m_id, QStringLiteral("--"),
                              QStringLiteral("head -c 3000000 /dev/zero | tr '\\0' a")};
    const Run all = ctl(command);
    QCOMPARE(all.exitCode, 0);
    QCOMPARE(all.out.size(), 3000000);
    QVERIFY(all.out.count('a') == all.out.size());
    QVERIFY2(all.err.isEmpty(), all.err.constData());
    // ...and --max-output cuts each channel where asked, saying so.
    const Run cut = ctl(QStringList{QStringLiteral("exec"), m_id, QStringLiteral("--max-output"),
                                    QStringLiteral("2K")}
                        + command.mid(2));
    QCOMPARE(cut.exitCode, 0);
    QCOMPARE(cut.out.size(), 2048);
    QVERIFY2(cut.err.contains("truncated"), cut.err.constData());
}

void tst_Sandboxctl::filesRoundTrip()
{
    QByteArray bytes;
    for (int i = 0; i < 1024; ++i)
        bytes.append(char(i % 256));
    const Run w = ctl({QStringLiteral("write"), m_id, QStringLiteral("deep/dir/blob.bin"),
                       QStringLiteral("-"), QStringLiteral("-p")},
                      bytes);
    QCOMPARE(w.exitCode, 0);
    const Run r = ctl({QStringLiteral("read"), m_id, QStringLiteral("deep/dir/blob.bin")});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out, bytes);
    const Run ls = ctl({QStringLiteral("ls"), m_id, QStringLiteral("deep"), QStringLiteral("-r")});
    QVERIFY(ls.out.contains("/workspace/deep/dir/blob.bin"));
    QCOMPARE(ctl({QStringLiteral("rm"), m_id, QStringLiteral("deep"), QStringLiteral("-r")}).exitCode,
             0);
    QCOMPARE(ctl({QStringLiteral("read"), m_id, QStringLiteral("deep/dir/blob.bin")}).exitCode, 1);
}

void tst_Sandboxctl::errors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("key");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QByteArray>("message");
    QTest::newRow("unknown sandbox")
        << QStringList{QStringLiteral("status"), QStringLiteral("sb_000000000000")} << QString()
        << 1 << QByteArray("not found");
    QTest::newRow("path outside the sandbox")
        << QStringList{QStringLiteral("read"), QStringLiteral("%ID%"), QStringLiteral("/etc/shadow")}
        << QString() << 1 << QByteArray("path not allowed");
    QTest::newRow("unknown command")
        << QStringList{QStringLiteral("fly")} << QString() << 2 << QByteArray("unknown command");
    QTest::newRow("bad type") << QStringList{QStringLiteral("create"), QStringLiteral("vim")}
                              << QString() << 2 << QByteArray("TYPE is one of");
    QTest::newRow("bad --max-output")
        << QStringList{QStringLiteral("exec"),         QStringLiteral("%ID%"),
                       QStringLiteral("--max-output"), QStringLiteral("65M"),
                       QStringLiteral("--"),           QStringLiteral("true")}
        << QString() << 2 << QByteArray("--max-output wants bytes");
    QTest::newRow("wrong key") << QStringList{QStringLiteral("list")} << QStringLiteral("sk_wrong")
                               << 3 << QByteArray("unauthorized");
}

void tst_Sandboxctl::errors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, key);
    QFETCH(int, exitCode);
    QFETCH(QByteArray, message);
    args.replaceInStrings(QStringLiteral("%ID%"), m_id);
    const Run r = ctl(args, {}, key);
    QCOMPARE(r.exitCode, exitCode);
    QVERIFY2(r.err.contains(message), r.err.constData());
}

void tst_Sandboxctl::environmentVariablesSelectTheEngine()
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("SANDBOX_URL"), m_engine.process().url().toString());
    env.insert(QStringLiteral("SANDBOX_API_KEY"), m_engine.process().key());
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(SANDBOXCTL_BIN), {QStringLiteral("session")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("\"backend\": \"local\""));
}

void tst_Sandboxctl::runShowsEventsAndIsKept()
{
    // The real Claude Code CLI against the mock model: its events as lines, then the kept run.
    QVERIFY(m_mock.listen());
    // The mock is on this computer's loopback: only an exact allow entry reaches it.
    const Run created = ctl(
        {QStringLiteral("create"), QStringLiteral("claude-code"), QStringLiteral("--allow"),
         QStringLiteral("127.0.0.1:%1").arg(m_mock.port()), QStringLiteral("--env"),
         QStringLiteral("ANTHROPIC_API_KEY=sk-test-ctl"), QStringLiteral("--env"),
         QStringLiteral("ANTHROPIC_BASE_URL=") + m_mock.baseUrl().toString()});
    QCOMPARE(created.exitCode, 0);
    const QString id = QString::fromUtf8(created.out.trimmed());
    const Run run = ctl({QStringLiteral("run"), id, QStringLiteral("--model"),
                         QStringLiteral("claude-sonnet-4-5"),
                         QStringLiteral("[[write:/workspace/ctl.txt|from sandboxctl]]")});
    QVERIFY2(run.exitCode == 0, run.err.constData());
    QVERIFY2(run.out.contains("[0] > Write"), run.out.constData());
    QVERIFY(run.out.contains("[0] ~ add /workspace/ctl.txt"));
    QVERIFY(run.out.contains("[0] = done"));

    const Run runs = ctl({QStringLiteral("runs"), id});
    QCOMPARE(runs.exitCode, 0);
    const QList<QByteArray> lines = runs.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2); // the header and the run
    QVERIFY2(lines.at(1).contains("succeeded"), runs.out.constData());
    QVERIFY(lines.at(1).contains("[[write:/workspace/ctl.txt"));
    const QByteArray runId = lines.at(1).split(' ').first();
    QVERIFY(runId.startsWith("run_"));
    const Run transcript = ctl({QStringLiteral("transcript"), id, QString::fromLatin1(runId)});
    QCOMPARE(transcript.exitCode, 0);
    QCOMPARE(transcript.out, run.out);
    QCOMPARE(ctl({QStringLiteral("transcript"), id, QStringLiteral("run_0000000000000000")}).exitCode,
             1);
}

void tst_Sandboxctl::queryReadsEveryPage()
{
    const Run created = ctl({QStringLiteral("create"), QStringLiteral("sqlite"),
                             QStringLiteral("--size"), QStringLiteral("lite")});
    QCOMPARE(created.exitCode, 0);
    // create prints the id alone.
    const QString id = QString::fromUtf8(created.out.trimmed());
    QVERIFY2(id.startsWith(QLatin1String("sb_")), created.out.constData());
    // With --json: the whole Sandbox object, as the engine answered.
    const Run json = ctl({QStringLiteral("--json"), QStringLiteral("create"),
                          QStringLiteral("sqlite"), QStringLiteral("--size"), QStringLiteral("lite"),
                          QStringLiteral("--name"), QStringLiteral("json-db")});
    QCOMPARE(json.exitCode, 0);
    const QJsonObject object = QJsonDocument::fromJson(json.out).object();
    QVERIFY2(object.value(QStringLiteral("id")).toString().startsWith(QLatin1String("sb_")),
             json.out.constData());
    QCOMPARE(object.value(QStringLiteral("name")).toString(), QStringLiteral("json-db"));
    QVERIFY2(object.contains(QStringLiteral("startupTimeMs")), json.out.constData());
    QCOMPARE(ctl({QStringLiteral("delete"), object.value(QStringLiteral("id")).toString()}).exitCode,
             0);
    QCOMPARE(ctl({QStringLiteral("execute"), id,
                  QStringLiteral("CREATE TABLE t (id INTEGER, v TEXT)")})
                 .exitCode,
             0);
    const Run inserted = ctl(
        {QStringLiteral("execute"), id,
         QStringLiteral("INSERT INTO t WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL "
                        "SELECT g + 1 FROM s WHERE g < 250) SELECT g, 'v' || g "
                        "FROM s")});
    QCOMPARE(inserted.out, QByteArray("INSERT 250\n"));
    const Run q = ctl({QStringLiteral("query"), id,
                       QStringLiteral("SELECT id, v FROM t ORDER BY id"),
                       QStringLiteral("--page-size"), QStringLiteral("100")});
    QCOMPARE(q.exitCode, 0);
    const QList<QByteArray> lines = q.out.split('\n');
    QCOMPARE(lines.size(), 252); // header, 250 rows, the empty rest after the last newline
    QCOMPARE(lines.first(), QByteArray("id\tv"));
    QCOMPARE(lines.at(250), QByteArray("250\tv250"));
    QVERIFY2(q.err.contains("(250 rows, 3 pages)"), q.err.constData());
    // Parameters are values (JSON where they parse as JSON), never SQL text.
    const Run p = ctl({QStringLiteral("query"), id, QStringLiteral("SELECT ? + 1 AS n, ? AS s"),
                       QStringLiteral("--param"), QStringLiteral("41"), QStringLiteral("--param"),
                       QStringLiteral("'); DROP TABLE t; --")});
    QCOMPARE(p.out, QByteArray("n\ts\n42\t'); DROP TABLE t; --\n"));
    const Run bad = ctl({QStringLiteral("query"), id, QStringLiteral("SELEC 1")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("query error"), bad.err.constData());
}

QTEST_GUILESS_MAIN(tst_Sandboxctl)
#include "tst_sandboxctl.moc"
