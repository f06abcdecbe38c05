// The three real agent CLIs (Claude Code, Codex, OpenCode) in real sandboxes through a real
// sandboxd, against the local mock model server (tests/mocks): a prompt that writes a file, a
// second turn of the same session, an unreachable API, a timeout, a failed file change, a stop
// mid-run, and an API key that never comes back out.
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

using Sandbox::Mocks::MockModelServer;

namespace {

const QString kSecret = QStringLiteral("sk-test-9f8e7d6c5b4a-never-show-me");

QString agentsDir()
{
    return QStringLiteral(SANDBOX_BINARY_DIR "/agents");
}

// A port on which nothing listens.
quint16 closedPort()
{
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    const quint16 port = s.serverPort();
    s.close();
    return port;
}

} // namespace

class tst_Agents : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void runWritesAFileAndStreamsTheToolCall_data();
    void runWritesAFileAndStreamsTheToolCall();
    void secondTurnContinuesTheSession_data();
    void secondTurnContinuesTheSession();
    void conversationRunsPromptsInOrder();
    void unreachableApiFails_data();
    void unreachableApiFails();
    void failedFileChangeFails_data();
    void failedFileChangeFails();
    void timeoutKillsTheCli_data();
    void timeoutKillsTheCli();
    void runOnRepoClonesThenRuns();
    void badParamsAreRefused();
    void noNetworkFailsClearly();
    void stopMidRunKillsTheCli_data();
    void stopMidRunKillsTheCli();
    void keyNeverLeaves();
    void openCodeProviders_data();
    void openCodeProviders();

private:
    void addTypes();
    QJsonObject run(const QString &type, const QString &prompt, QJsonObject options = {},
                    int timeoutMs = 180000);
    QList<QJsonObject> eventsOf(const QJsonObject &answer) const;
    bool cliStillRuns(const QString &type);
    // The mock listens on this computer's loopback: only an exact allow entry reaches it.
    QJsonObject loopbackMock() const
    {
        return {{QStringLiteral("allow"),
                 QJsonArray{QStringLiteral("127.0.0.1:%1").arg(m_mock.port())}}};
    }

    EngineFixture m_engine;
    MockModelServer m_mock;
    QHash<QString, QString> m_ids; // type -> sandbox id
    QHash<QString, QString> m_sessions;
    QStringList m_allText; // every message the engine sent, verbatim
};

void tst_Agents::initTestCase()
{
    for (const QString &type :
         {QStringLiteral("claude-code"), QStringLiteral("codex"), QStringLiteral("opencode")}) {
        const QString cli = type == QLatin1String("claude-code") ? QStringLiteral("claude") : type;
        if (!QFileInfo::exists(agentsDir() + u'/' + type + QStringLiteral("/node_modules/.bin/")
                               + cli))
            QFAIL(
                qPrintable(QStringLiteral("the %1 CLI is not installed in %2: run scripts/setup.sh")
                               .arg(type, agentsDir())));
    }
    QVERIFY(m_mock.listen());
    QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"), agentsDir(),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("65536")}),
             qPrintable(m_engine.process().log()));
    connect(m_engine.rpc().socket(), &QWebSocket::textMessageReceived, this,
            [this](const QString &t) { m_allText.append(t); });

    const QString base = m_mock.baseUrl().toString();
    for (const QString &type :
         {QStringLiteral("claude-code"), QStringLiteral("codex"), QStringLiteral("opencode")}) {
        const QJsonObject env = type == QLatin1String("claude-code")
                                    ? QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), kSecret},
                                                  {QStringLiteral("ANTHROPIC_BASE_URL"), base}}
                                    : QJsonObject{{QStringLiteral("OPENAI_API_KEY"), kSecret},
                                                  {QStringLiteral("OPENAI_BASE_URL"),
                                                   QString(base + QStringLiteral("/v1"))}};
        const QJsonObject sb = m_engine.create(QStringLiteral("agents.create"),
                                               {{QStringLiteral("type"), type},
                                                {QStringLiteral("size"),
                                                 QStringLiteral("standard-3")},
                                                {QStringLiteral("network"), loopbackMock()},
                                                {QStringLiteral("env"), env}});
        QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
        QCOMPARE(sb.value(QStringLiteral("network")).toObject(), loopbackMock());
        QCOMPARE(sb.value(QStringLiteral("gateway")).toBool(), true);
        m_ids.insert(type, sb.value(QStringLiteral("id")).toString());
    }
}

void tst_Agents::cleanupTestCase()
{
    m_engine.cleanup();
}

void tst_Agents::addTypes()
{
    QTest::addColumn<QString>("type");
    QTest::newRow("claude-code") << QStringLiteral("claude-code");
    QTest::newRow("codex") << QStringLiteral("codex");
    QTest::newRow("opencode") << QStringLiteral("opencode");
}

QJsonObject tst_Agents::run(const QString &type, const QString &prompt, QJsonObject options,
                            int timeoutMs)
{
    if (type == QLatin1String("claude-code") && !options.contains(QStringLiteral("model")))
        options.insert(QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5"));
    m_engine.rpc().notifications.clear();
    return m_engine.rpc().call(QStringLiteral("agents.run"),
                               {{QStringLiteral("id"), m_ids.value(type)},
                                {QStringLiteral("prompt"), prompt},
                                {QStringLiteral("options"), options}},
                               timeoutMs);
}

QList<QJsonObject> tst_Agents::eventsOf(const QJsonObject &answer) const
{
    const QString streamId = answer.value(QStringLiteral("result"))
                                 .toObject()
                                 .value(QStringLiteral("streamId"))
                                 .toString();
    QList<QJsonObject> out;
    qint64 lastSeq = 0;
    for (const QJsonObject &n : m_engine.rpc().notifications) {
        const QJsonObject p = n.value(QStringLiteral("params")).toObject();
        if (p.value(QStringLiteral("streamId")).toString() != streamId)
            continue;
        const qint64 seq = qint64(p.value(QStringLiteral("seq")).toDouble());
        if (seq != lastSeq + 1)
            return {}; // a gap: the test fails on the missing events
        lastSeq = seq;
        if (n.value(QStringLiteral("method")).toString() == QLatin1String("stream.event"))
            out.append(p.value(QStringLiteral("event")).toObject());
    }
    return out;
}

bool tst_Agents::cliStillRuns(const QString &type)
{
    // argv without a shell: pgrep does not match itself.
    const QJsonObject r = m_engine.rpc().result(QStringLiteral("agents.exec"),
                                                {{QStringLiteral("id"), m_ids.value(type)},
                                                 {QStringLiteral("command"),
                                                  QJsonArray{QStringLiteral("pgrep"),
                                                             QStringLiteral("-f"),
                                                             QStringLiteral("/opt/agent/")}}});
    return r.value(QStringLiteral("exitCode")).toInt() == 0;
}

void tst_Agents::runWritesAFileAndStreamsTheToolCall_data()
{
    addTypes();
}

void tst_Agents::runWritesAFileAndStreamsTheToolCall()
{
    QFETCH(QString, type);
    const int callsBefore = m_mock.modelCallCount();
    const QString path = QStringLiteral("/workspace/hello-%1.txt").arg(type);
    const QJsonObject answer
        = run(type,
              QStringLiteral("Please [[write:%1|Hello from %2\\nsecond line]] [[remember:zebra]]")
                  .arg(path, type),
              {{QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(),
             QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("result")).toString(),
             QStringLiteral("Done: the file is written."));
    QCOMPARE(r.value(QStringLiteral("exitCode")).toInt(), 0);
    QVERIFY(!r.value(QStringLiteral("sessionId")).toString().isEmpty());
    QVERIFY(
        r.value(QStringLiteral("usage")).toObject().value(QStringLiteral("inputTokens")).toDouble()
        > 0);
    QVERIFY(r.value(QStringLiteral("stdout"))
                .toString()
                .contains(QLatin1String("Done: the file is written.")));
    QVERIFY(m_mock.modelCallCount()
            >= callsBefore + 2); // the tool call, then the answer after its result
    m_sessions.insert(type, r.value(QStringLiteral("sessionId")).toString());

    // The file is really there, in the sandbox.
    const QJsonObject file = m_engine.rpc().result(QStringLiteral("agents.readFile"),
                                                   {{QStringLiteral("id"), m_ids.value(type)},
                                                    {QStringLiteral("path"), path}});
    // (Codex's apply_patch ends the file with a newline; the others write it as given.)
    QCOMPARE(file.value(QStringLiteral("content")).toString().trimmed(),
             QStringLiteral("Hello from %1\nsecond line").arg(type));

    // The stream showed the tool call, the file change and the final text, in that order.
    const QList<QJsonObject> events = eventsOf(answer);
    QVERIFY2(!events.isEmpty(), "no stream.event notifications (or a gap in seq)");
    qsizetype toolCall = -1, fileChange = -1, text = -1, result = -1;
    for (qsizetype i = 0; i < events.size(); ++i) {
        const QString t = events[i].value(QStringLiteral("type")).toString();
        if (t == QLatin1String("tool_call") && toolCall < 0)
            toolCall = i;
        if (t == QLatin1String("file_change")
            && events[i].value(QStringLiteral("path")).toString() == path) {
            QCOMPARE(events[i].value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
            QCOMPARE(events[i].value(QStringLiteral("kind")).toString(), QStringLiteral("add"));
            fileChange = i;
        }
        if (t == QLatin1String("text"))
            text = i;
        if (t == QLatin1String("result"))
            result = i;
    }
    QVERIFY2(toolCall >= 0 && fileChange > toolCall && text > fileChange && result > text,
             QJsonDocument(QJsonArray::fromVariantList(QVariantList(events.begin(), events.end())))
                 .toJson()
                 .constData());
    // The stream ends with the same answer.
    const QJsonObject end = m_engine.rpc().notifications.last();
    QCOMPARE(end.value(QStringLiteral("method")).toString(), QStringLiteral("stream.end"));
    QCOMPARE(end.value(QStringLiteral("params")).toObject().value(QStringLiteral("result")).toObject(),
             r);
    // Every notification of the stream names the request that started it (docs/protocol.md 2.3).
    const QJsonValue requestId = answer.value(QStringLiteral("id"));
    // (network.denied notifications are about the sandbox, not the request: 4.9.)
    for (const QJsonObject &n : m_engine.rpc().notifications) {
        if (n.value(QStringLiteral("method")).toString().startsWith(QLatin1String("stream.")))
            QCOMPARE(n.value(QStringLiteral("params")).toObject().value(QStringLiteral("requestId")),
                     requestId);
    }

    // The key reached the model API as the provider expects it (and only there).
    const MockModelServer::Request &last = m_mock.requests().constLast();
    const QByteArray auth = last.headers.value("x-api-key", last.headers.value("authorization"));
    QVERIFY2(auth.contains(kSecret.toUtf8()), auth.constData());
}

void tst_Agents::secondTurnContinuesTheSession_data()
{
    addTypes();
}

void tst_Agents::secondTurnContinuesTheSession()
{
    QFETCH(QString, type);
    if (!m_sessions.contains(type))
        QSKIP("the first turn failed");
    // No sessionId: the sandbox's last conversation goes on. The mock answers from the history
    // the CLI sends, so "zebra" comes back only if the first turn was really sent again.
    const QJsonObject answer = run(type,
                                   QStringLiteral("What did I ask you to remember? [[recall]]"));
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(),
             QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("result")).toString(), QStringLiteral("I remember: zebra."));
    QCOMPARE(r.value(QStringLiteral("sessionId")).toString(), m_sessions.value(type));

    // An explicit new session remembers nothing.
    const QJsonObject fresh = run(type, QStringLiteral("[[recall]]"),
                                  {{QStringLiteral("newSession"), true}});
    const QJsonObject f = fresh.value(QStringLiteral("result")).toObject();
    QVERIFY2(f.value(QStringLiteral("success")).toBool(), QJsonDocument(fresh).toJson().constData());
    QCOMPARE(f.value(QStringLiteral("result")).toString(), QStringLiteral("I remember nothing."));
    QVERIFY(f.value(QStringLiteral("sessionId")).toString() != m_sessions.value(type));

    // And the first session can still be picked by id.
    const QJsonObject again = run(type, QStringLiteral("[[recall]]"),
                                  {{QStringLiteral("sessionId"), m_sessions.value(type)}});
    QCOMPARE(again.value(QStringLiteral("result"))
                 .toObject()
                 .value(QStringLiteral("result"))
                 .toString(),
             QStringLiteral("I remember: zebra."));
}

void tst_Agents::conversationRunsPromptsInOrder()
{
    m_engine.rpc().notifications.clear();
    const QJsonObject answer
        = m_engine.rpc().call(QStringLiteral("agents.runConversation"),
                              {{QStringLiteral("id"), m_ids.value(QStringLiteral("codex"))},
                               {QStringLiteral("prompts"),
                                QJsonArray{QStringLiteral("[[remember:otter]] hi"),
                                           QStringLiteral("[[remember:lynx]] and"),
                                           QStringLiteral("[[recall]]")}},
                               {QStringLiteral("options"),
                                QJsonObject{{QStringLiteral("newSession"), true}}}},
                              180000);
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(),
             QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("turns")).toArray().size(), 3);
    QCOMPARE(r.value(QStringLiteral("result")).toString(),
             QStringLiteral("I remember: otter, lynx."));
    // Events of every turn went into the one stream, marked with their turn.
    QSet<int> turns;
    for (const QJsonObject &e : eventsOf(answer))
        turns.insert(e.value(QStringLiteral("turn")).toInt());
    QCOMPARE(turns, (QSet<int>{0, 1, 2}));
}

void tst_Agents::unreachableApiFails_data()
{
    addTypes();
}

void tst_Agents::unreachableApiFails()
{
    QFETCH(QString, type);
    const quint16 port = closedPort();
    const QString url = QStringLiteral("http://127.0.0.1:%1").arg(port);
    // The policy lets it through: nothing answers there.
    QJsonObject policy = loopbackMock();
    policy.insert(QStringLiteral("allow"), QJsonArray{policy.value(QStringLiteral("allow"))[0],
                                                      QStringLiteral("127.0.0.1:%1").arg(port)});
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.setNetwork"),
                         {{QStringLiteral("id"), m_ids.value(type)},
                          {QStringLiteral("network"), policy}})
                 .isEmpty());
    const auto restore = qScopeGuard([&] {
        m_engine.rpc().result(QStringLiteral("sandbox.setNetwork"),
                              {{QStringLiteral("id"), m_ids.value(type)},
                               {QStringLiteral("network"), loopbackMock()}});
    });
    QElapsedTimer clock;
    clock.start();
    const QJsonObject answer = run(type, QStringLiteral("hello"),
                                   {{QStringLiteral("baseUrl"), url},
                                    {QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(!r.isEmpty(), QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("success")).toBool(), false);
    const QString error = r.value(QStringLiteral("error")).toString();
    QVERIFY2(error.contains(QLatin1String("unreachable"), Qt::CaseInsensitive)
                 || error.contains(QLatin1String("connect"), Qt::CaseInsensitive)
                 || error.contains(QLatin1String("refused"), Qt::CaseInsensitive),
             qPrintable(error));
    qInfo("%s: the run failed after %lld ms", qPrintable(type), clock.elapsed());
    // OpenCode's own start is 14-20 s of CPU (30-40 s in a half-CPU sandbox) before its first
    // call, and its first connection error comes after its retries: 78-89 s on an idle 2-core
    // machine, 110 s loaded. Claude Code and Codex fail in 2-3 s.
    const qint64 bound = type == QLatin1String("opencode") ? 150000 : 90000;
    QVERIFY2(clock.elapsed() < bound,
             "an unreachable API must fail in seconds, not after minutes of retries");
    QVERIFY(!cliStillRuns(type));
}

void tst_Agents::failedFileChangeFails_data()
{
    addTypes();
}

void tst_Agents::failedFileChangeFails()
{
    QFETCH(QString, type);
    // /usr is read-only in the sandbox: the CLI's write fails, whatever its exit code says.
    const QJsonObject answer = run(type, QStringLiteral("[[write:/usr/share/forbidden.txt|nope]]"),
                                   {{QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(!r.isEmpty(), QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("success")).toBool(), false);
    QVERIFY2(r.value(QStringLiteral("error"))
                 .toString()
                 .contains(QLatin1String("file change failed")),
             QJsonDocument(r).toJson().constData());
    bool sawFailedChange = false;
    for (const QJsonObject &e : eventsOf(answer))
        sawFailedChange
            = sawFailedChange
              || (e.value(QStringLiteral("type")).toString() == QLatin1String("file_change")
                  && e.value(QStringLiteral("status")).toString() == QLatin1String("failed"));
    QVERIFY(sawFailedChange);
}

void tst_Agents::timeoutKillsTheCli_data()
{
    addTypes();
}

void tst_Agents::timeoutKillsTheCli()
{
    QFETCH(QString, type);
    constexpr int timeoutMs = 8000;
    QElapsedTimer clock;
    clock.start();
    // The mock holds its answer for two minutes.
    const QJsonObject answer = run(type, QStringLiteral("[[sleep:120000]] take your time"),
                                   {{QStringLiteral("timeout"), timeoutMs},
                                    {QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(!r.isEmpty(), QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("success")).toBool(), false);
    QCOMPARE(r.value(QStringLiteral("timedOut")).toBool(), true);
    QVERIFY(r.value(QStringLiteral("error"))
                .toString()
                .contains(QLatin1String("did not finish within 8000 ms")));
    QVERIFY2(clock.elapsed() < timeoutMs + 20000, qPrintable(QString::number(clock.elapsed())));
    QVERIFY(!cliStillRuns(type));
    // Its connection to the model API is gone with it.
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.openConnections(), 0, 10000);
}

void tst_Agents::runOnRepoClonesThenRuns()
{
    // A real git repository, served over git's dumb HTTP protocol by the mock server.
    QTemporaryDir dir;
    const QString src = dir.filePath(QStringLiteral("src")),
                  bare = dir.filePath(QStringLiteral("served/demo.git"));
    const auto git = [](const QStringList &args, const QString &cwd = {}) {
        QProcess p;
        p.setWorkingDirectory(cwd);
        p.start(QStringLiteral("git"), args);
        return p.waitForFinished(30000) && p.exitCode() == 0;
    };
    QVERIFY(QDir().mkpath(src));
    QVERIFY(git({QStringLiteral("init"), QStringLiteral("-q"), QStringLiteral("-b"),
                 QStringLiteral("main"), src}));
    QFile readme(src + QStringLiteral("/README.md"));
    QVERIFY(readme.open(QIODevice::WriteOnly));
    readme.write("# demo\n");
    readme.close();
    QVERIFY(git({QStringLiteral("-C"), src, QStringLiteral("add"), QStringLiteral(".")}));
    QVERIFY(git({QStringLiteral("-C"), src, QStringLiteral("-c"), QStringLiteral("user.name=t"),
                 QStringLiteral("-c"), QStringLiteral("user.email=t@t"), QStringLiteral("commit"),
                 QStringLiteral("-qm"), QStringLiteral("first")}));
    QVERIFY(
        git({QStringLiteral("clone"), QStringLiteral("-q"), QStringLiteral("--bare"), src, bare}));
    QVERIFY(git({QStringLiteral("-C"), bare, QStringLiteral("update-server-info")}));
    m_mock.setStaticRoot(dir.filePath(QStringLiteral("served")));

    const QString url = m_mock.baseUrl().toString() + QStringLiteral("/files/demo.git");
    m_engine.rpc().notifications.clear();
    const QJsonObject answer
        = m_engine.rpc().call(QStringLiteral("agents.runOnRepo"),
                              {{QStringLiteral("id"), m_ids.value(QStringLiteral("claude-code"))},
                               {QStringLiteral("url"), url},
                               {QStringLiteral("prompt"),
                                QStringLiteral("[[write:/workspace/demo/NOTES.md|notes]]")},
                               // git's dumb HTTP protocol cannot clone shallow
                               {QStringLiteral("options"),
                                QJsonObject{{QStringLiteral("shallow"), false},
                                            {QStringLiteral("branch"), QStringLiteral("main")},
                                            {QStringLiteral("model"),
                                             QStringLiteral("claude-sonnet-4-5")}}}},
                              180000);
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(),
             QJsonDocument(answer).toJson().constData());
    QCOMPARE(r.value(QStringLiteral("path")).toString(), QStringLiteral("/workspace/demo"));
    // It ran in the clone: Claude Code's init event names its working directory.
    QVERIFY(r.value(QStringLiteral("stdout"))
                .toString()
                .contains(QLatin1String("\"cwd\":\"/workspace/demo\"")));
    for (const QString &f : {QStringLiteral("/workspace/demo/README.md"),
                             QStringLiteral("/workspace/demo/NOTES.md")}) {
        const QJsonObject st = m_engine.rpc().result(QStringLiteral("agents.stat"),
                                                     {{QStringLiteral("id"),
                                                       m_ids.value(QStringLiteral("claude-code"))},
                                                      {QStringLiteral("path"), f}});
        QCOMPARE(st.value(QStringLiteral("type")).toString(), QStringLiteral("file"));
    }

    // A clone that fails is a failed run, with git's reason.
    const QJsonObject bad
        = m_engine.rpc().result(QStringLiteral("agents.runOnRepo"),
                                {{QStringLiteral("id"), m_ids.value(QStringLiteral("claude-code"))},
                                 {QStringLiteral("url"),
                                  QString(m_mock.baseUrl().toString()
                                          + QStringLiteral("/files/missing.git"))},
                                 {QStringLiteral("prompt"), QStringLiteral("hi")}},
                                120000);
    QCOMPARE(bad.value(QStringLiteral("success")).toBool(), false);
    QVERIFY2(bad.value(QStringLiteral("error"))
                 .toString()
                 .startsWith(QLatin1String("git clone failed")),
             QJsonDocument(bad).toJson().constData());
}

void tst_Agents::badParamsAreRefused()
{
    const QString id = m_ids.value(QStringLiteral("claude-code"));
    const struct
    {
        QJsonObject params;
        QString field;
    } cases[] = {
        {{{QStringLiteral("id"), id}}, QStringLiteral("prompt")},
        {{{QStringLiteral("id"), id},
          {QStringLiteral("prompt"), QStringLiteral("x")},
          {QStringLiteral("options"),
           QJsonObject{{QStringLiteral("permissionMode"), QStringLiteral("yolo")}}}},
         QStringLiteral("options.permissionMode")},
        {{{QStringLiteral("id"), id},
          {QStringLiteral("prompt"), QStringLiteral("x")},
          {QStringLiteral("options"),
           QJsonObject{{QStringLiteral("sessionId"), QStringLiteral("../../etc")}}}},
         QStringLiteral("options.sessionId")},
        {{{QStringLiteral("id"), id},
          {QStringLiteral("prompt"), QStringLiteral("x")},
          {QStringLiteral("options"), QJsonObject{{QStringLiteral("timeout"), 0}}}},
         QStringLiteral("options.timeout")},
        {{{QStringLiteral("id"), id},
          {QStringLiteral("prompt"), QStringLiteral("x")},
          {QStringLiteral("options"),
           QJsonObject{{QStringLiteral("baseUrl"), QStringLiteral("file:///etc/passwd")}}}},
         QStringLiteral("options.baseUrl")},
        {{{QStringLiteral("id"), id},
          {QStringLiteral("prompt"), QStringLiteral("x")},
          {QStringLiteral("options"),
           QJsonObject{{QStringLiteral("allowedTools"), QJsonArray{1, 2}}}}},
         QStringLiteral("options.allowedTools")},
    };
    for (const auto &c : cases) {
        const QJsonObject error = m_engine.rpc()
                                      .call(QStringLiteral("agents.run"), c.params)
                                      .value(QStringLiteral("error"))
                                      .toObject();
        QCOMPARE(error.value(QStringLiteral("code")).toInt(), -32602);
        QCOMPARE(error.value(QStringLiteral("data"))
                     .toObject()
                     .value(QStringLiteral("field"))
                     .toString(),
                 c.field);
    }
    const QJsonObject missing
        = m_engine.rpc().call(QStringLiteral("agents.run"),
                              {{QStringLiteral("id"), QStringLiteral("sb_nope")},
                               {QStringLiteral("prompt"), QStringLiteral("x")}});
    QCOMPARE(missing.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32002);
}

void tst_Agents::noNetworkFailsClearly()
{
    // The model gateway reaches the provider whatever the policy, but a model server on this
    // computer's loopback needs its allow entry: without it the run fails, and says why.
    const QJsonObject sb
        = m_engine.create(QStringLiteral("agents.create"),
                          {{QStringLiteral("type"), QStringLiteral("claude-code")},
                           {QStringLiteral("size"), QStringLiteral("lite")},
                           {QStringLiteral("env"),
                            QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), kSecret},
                                        {QStringLiteral("ANTHROPIC_BASE_URL"),
                                         m_mock.baseUrl().toString()}}}});
    QVERIFY(!sb.isEmpty());
    QCOMPARE(sb.value(QStringLiteral("network")).toBool(true), false);
    const int before = m_mock.modelCallCount();
    m_engine.rpc().notifications.clear();
    const QJsonObject answer
        = m_engine.rpc().call(QStringLiteral("agents.run"),
                              {{QStringLiteral("id"), sb.value(QStringLiteral("id"))},
                               {QStringLiteral("prompt"), QStringLiteral("hi")},
                               {QStringLiteral("options"),
                                QJsonObject{{QStringLiteral("model"),
                                             QStringLiteral("claude-sonnet-4-5")},
                                            {QStringLiteral("timeout"), 120000}}}},
                              180000);
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QCOMPARE(r.value(QStringLiteral("success")).toBool(true), false);
    QCOMPARE(m_mock.modelCallCount(), before);
    // The stream and the log name the refused endpoint and the entry that would let it through.
    bool streamed = false;
    for (const QJsonObject &e : eventsOf(answer))
        streamed = streamed
                   || (e.value(QStringLiteral("type")).toString() == QLatin1String("network.denied")
                       && e.value(QStringLiteral("via")).toString() == QLatin1String("gateway")
                       && e.value(QStringLiteral("allowWith")).toString()
                              == QStringLiteral("127.0.0.1:%1").arg(m_mock.port()));
    QVERIFY(streamed);
    const QJsonObject log = m_engine.rpc().result(QStringLiteral("sandbox.networkLog"),
                                                  {{QStringLiteral("id"),
                                                    sb.value(QStringLiteral("id"))}});
    QVERIFY(!log.value(QStringLiteral("denied")).toArray().isEmpty());
    m_engine.rpc().result(QStringLiteral("agents.delete"),
                          {{QStringLiteral("id"), sb.value(QStringLiteral("id"))}});
}

void tst_Agents::stopMidRunKillsTheCli_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("how");
    QTest::newRow("claude-code, rpc.cancel")
        << QStringLiteral("claude-code") << QStringLiteral("rpc.cancel");
    QTest::newRow("codex, stream.cancel")
        << QStringLiteral("codex") << QStringLiteral("stream.cancel");
    QTest::newRow("opencode, agents.stop")
        << QStringLiteral("opencode") << QStringLiteral("agents.stop");
}

void tst_Agents::stopMidRunKillsTheCli()
{
    QFETCH(QString, type);
    QFETCH(QString, how);
    m_engine.rpc().notifications.clear();
    const int callsBefore = m_mock.modelCallCount();
    const int requestId = 777000 + int(m_ids.value(type).size()) + int(how.size());
    QJsonObject options{{QStringLiteral("newSession"), true}};
    if (type == QLatin1String("claude-code"))
        options.insert(QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5"));
    const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                              {QStringLiteral("id"), requestId},
                              {QStringLiteral("method"), QStringLiteral("agents.run")},
                              {QStringLiteral("params"),
                               QJsonObject{{QStringLiteral("id"), m_ids.value(type)},
                                           {QStringLiteral("prompt"),
                                            QStringLiteral("[[sleep:300000]] slow")},
                                           {QStringLiteral("options"), options}}}};
    m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
    // Mid-run: the CLI has asked the model and waits for its answer.
    QTRY_VERIFY_WITH_TIMEOUT(m_mock.modelCallCount() > callsBefore && m_mock.openConnections() > 0,
                             120000);
    QVERIFY(cliStillRuns(type));
    QElapsedTimer clock;
    clock.start();
    if (how == QLatin1String("rpc.cancel")) {
        m_engine.rpc().sendText(
            QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                      {QStringLiteral("method"), QStringLiteral("rpc.cancel")},
                                      {QStringLiteral("params"),
                                       QJsonObject{{QStringLiteral("id"), requestId}}}})
                .toJson(QJsonDocument::Compact));
    } else if (how == QLatin1String("stream.cancel")) {
        QString streamId;
        for (const QJsonObject &n : m_engine.rpc().notifications) {
            const QJsonObject p = n.value(QStringLiteral("params")).toObject();
            if (p.value(QStringLiteral("requestId")).toInt() == requestId)
                streamId = p.value(QStringLiteral("streamId")).toString();
        }
        QVERIFY2(!streamId.isEmpty(), "no stream notification before the model call");
        const QJsonObject c = m_engine.rpc().result(QStringLiteral("stream.cancel"),
                                                    {{QStringLiteral("streamId"), streamId}});
        QCOMPARE(c.value(QStringLiteral("cancelled")).toBool(), true);
    } else {
        const QJsonObject stopped = m_engine.rpc().result(QStringLiteral("agents.stop"),
                                                          {{QStringLiteral("id"),
                                                            m_ids.value(type)}});
        QCOMPARE(stopped.value(QStringLiteral("status")).toString(), QStringLiteral("stopped"));
    }
    // The run answers "cancelled" at once, and the CLI is gone (its connection closed).
    QJsonObject answer;
    const bool answered = QTest::qWaitFor(
        [&] {
            for (qsizetype k = 0; k < m_engine.rpc().messages.size(); ++k) {
                if (m_engine.rpc().messages[k].toObject().value(QStringLiteral("id")).toInt()
                    == requestId)
                    answer = m_engine.rpc().messages.takeAt(k).toObject();
            }
            return !answer.isEmpty();
        },
        10000);
    QVERIFY2(answered, "the cancelled request was not answered");
    QCOMPARE(answer.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32012);
    QVERIFY2(clock.elapsed() < 15000, qPrintable(QString::number(clock.elapsed())));
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.openConnections(), 0, 10000);
    if (how != QLatin1String("agents.stop"))
        QVERIFY(!cliStillRuns(type));
}

void tst_Agents::keyNeverLeaves()
{
    // The key was really used: the mock saw it.
    bool mockSawKey = false;
    for (const MockModelServer::Request &r : m_mock.requests())
        mockSawKey = mockSawKey || r.headers.value("x-api-key").contains(kSecret.toUtf8())
                     || r.headers.value("authorization").contains(kSecret.toUtf8());
    QVERIFY(mockSawKey);
    // Listing and reading the sandboxes shows env names only.
    const QJsonObject list = m_engine.rpc().result(QStringLiteral("agents.list"), {});
    QVERIFY(list.value(QStringLiteral("agents")).toArray().size() >= 3);
    QVERIFY(!m_allText.isEmpty());
    for (const QString &text : std::as_const(m_allText))
        QVERIFY2(!text.contains(kSecret), qPrintable(text.left(400)));
    const QString log = m_engine.process().log();
    QVERIFY2(!log.contains(kSecret), qPrintable(log.right(2000)));
    // Not in the engine's files outside the sandboxes' own homes either (the registry keeps env
    // values for restarts; nothing else may).
    QDir data(m_engine.process().dataDir());
    for (const QString &name : data.entryList(QDir::Files)) {
        if (name.startsWith(QLatin1String("registry.db")))
            continue;
        QFile f(data.filePath(name));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY2(!f.readAll().contains(kSecret.toUtf8()), qPrintable(name));
    }
}

// OpenCode's provider per run (the original OpenCodeSandbox's `provider`): Anthropic's Messages
// API for anthropic, OpenAI-compatible Chat Completions without a key for ollama.
void tst_Agents::openCodeProviders_data()
{
    QTest::addColumn<QString>("provider");
    QTest::addColumn<QByteArray>("endpoint");
    QTest::newRow("anthropic") << QStringLiteral("anthropic") << QByteArray("/v1/messages");
    QTest::newRow("ollama") << QStringLiteral("ollama") << QByteArray("/v1/chat/completions");
}

void tst_Agents::openCodeProviders()
{
    QFETCH(QString, provider);
    QFETCH(QByteArray, endpoint);
    // stopMidRunKillsTheCli may have stopped the OpenCode sandbox: it runs again first.
    const QString id = m_ids.value(QStringLiteral("opencode"));
    const QJsonObject sb = m_engine.rpc().result(QStringLiteral("agents.get"),
                                                 {{QStringLiteral("id"), id}});
    if (sb.value(QStringLiteral("status")).toString() != QLatin1String("running"))
        m_engine.rpc().result(QStringLiteral("agents.start"), {{QStringLiteral("id"), id}});
    m_mock.clear();
    const QString base = m_mock.baseUrl().toString();
    QJsonObject options{{QStringLiteral("provider"), provider},
                        {QStringLiteral("newSession"), true}};
    if (provider == QLatin1String("anthropic"))
        options.insert(QStringLiteral("env"),
                       QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), kSecret},
                                   {QStringLiteral("ANTHROPIC_BASE_URL"), base}});
    else
        options.insert(QStringLiteral("baseUrl"), QString(base + QStringLiteral("/v1")));
    const QString path = QStringLiteral("/workspace/provider-%1.txt").arg(provider);
    const QJsonObject answer
        = run(QStringLiteral("opencode"),
              QStringLiteral("[[write:%1|written through %2]]").arg(path, provider), options);
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(),
             QJsonDocument(answer).toJson().constData());
    bool used = false;
    for (const auto &req : m_mock.requests())
        used = used || (req.method == "POST" && req.path.startsWith(endpoint));
    QVERIFY2(used, endpoint.constData());
    const QJsonObject file = m_engine.rpc().result(QStringLiteral("agents.readFile"),
                                                   {{QStringLiteral("id"),
                                                     m_ids.value(QStringLiteral("opencode"))},
                                                    {QStringLiteral("path"), path}});
    QCOMPARE(file.value(QStringLiteral("content")).toString(),
             QStringLiteral("written through %1").arg(provider));
}

QTEST_GUILESS_MAIN(tst_Agents)
#include "tst_agents.moc"
