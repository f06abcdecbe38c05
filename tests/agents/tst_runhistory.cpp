// Transcripts that last (docs/protocol.md 4.7.1): the real Claude Code CLI in a real sandbox,
// against the mock model server; its run and events come back from agents.runs and
// agents.runEvents exactly as they were streamed, after a clean restart of the engine and after a
// kill -9; a run the engine died under is `interrupted`; runs that end on a refused tool call or
// on a question say that they need the user. A run's changes to /workspace come back as
// unified diffs (agents.runChanges), after restarts too, and agents.revertFile undoes them.
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <sqlite3.h>

using Sandbox::Mocks::MockModelServer;

namespace {

QString claudeBinary()
{
    return QStringLiteral(SANDBOX_BINARY_DIR "/agents/claude-code/node_modules/.bin/claude");
}

// The events of a running run that the engine's run store has committed to runs.db, read as
// another SQLite connection sees them (read only); -1 when there is no such run yet.
qint64 committedEventsOfRunningRun(const QString &dataDir)
{
    const QByteArray path = QFile::encodeName(dataDir + QStringLiteral("/runs.db"));
    sqlite3 *db = nullptr;
    qint64 count = -1;
    if (sqlite3_open_v2(path.constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt *s = nullptr;
        if (sqlite3_prepare_v2(db,
                               "SELECT event_count FROM runs WHERE status = 'running'"
                               " ORDER BY started_at DESC LIMIT 1",
                               -1, &s, nullptr)
                == SQLITE_OK
            && sqlite3_step(s) == SQLITE_ROW)
            count = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return count;
}

} // namespace

class tst_RunHistory : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void runIsKeptWithItsEvents();
    void transcriptSurvivesEngineRestart_data();
    void transcriptSurvivesEngineRestart();
    void turnChangesAreReviewedAndReverted();
    void runTheEngineDiedUnderIsInterrupted();
    void refusedToolCallNeedsInput();
    void questionNeedsInput();
    void anotherKeySeesNoRuns();
    void badParamsAreRefused();

private:
    bool startEngine();
    QJsonObject run(const QString &prompt, QJsonObject options = {});
    QList<QJsonObject> streamedEvents(const QString &streamId) const;
    QList<QJsonObject> storedEvents(const QString &runId, int pageSize = 1000);
    QJsonObject changes(const QString &runId);

    EngineFixture m_engine;
    MockModelServer m_mock;
    QString m_id;
    QString m_dataDir;
    QString m_runId;
    QList<QJsonObject> m_streamed; // the first run's events, as streamed
};

bool tst_RunHistory::startEngine()
{
    if (!m_engine.start({QStringLiteral("--agents-dir"),
                         QStringLiteral(SANDBOX_BINARY_DIR "/agents")},
                        m_dataDir))
        return false;
    m_dataDir = m_engine.process().dataDir();
    return true;
}

void tst_RunHistory::initTestCase()
{
    if (!QFileInfo::exists(claudeBinary()))
        QFAIL("the Claude Code CLI is not installed: run scripts/setup.sh");
    QVERIFY(m_mock.listen());
    QVERIFY2(startEngine(), qPrintable(m_engine.process().log()));
    m_id = m_engine.createAgent(
        QStringLiteral("claude-code"), {},
        {// The mock model API is on this computer's loopback: only an exact entry
         // reaches it (docs/protocol.md 3.5).
         {QStringLiteral("network"),
          QJsonObject{{QStringLiteral("allow"),
                       QJsonArray{QStringLiteral("127.0.0.1:%1").arg(m_mock.port())}}}},
         {QStringLiteral("env"),
          QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), QStringLiteral("sk-test-history")},
                      {QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}}}});
    QVERIFY2(!m_id.isEmpty(), dump(m_engine.rpc().lastError()).constData());
}

void tst_RunHistory::cleanupTestCase()
{
    m_engine.cleanup();
}

QJsonObject tst_RunHistory::run(const QString &prompt, QJsonObject options)
{
    options.insert(QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5"));
    m_engine.rpc().notifications.clear();
    return m_engine.rpc().call(QStringLiteral("agents.run"),
                               {{QStringLiteral("id"), m_id},
                                {QStringLiteral("prompt"), prompt},
                                {QStringLiteral("options"), options}},
                               180000);
}

QList<QJsonObject> tst_RunHistory::streamedEvents(const QString &streamId) const
{
    QList<QJsonObject> out;
    for (const QJsonObject &n : m_engine.rpc().notifications) {
        const QJsonObject p = n.value(QStringLiteral("params")).toObject();
        if (p.value(QStringLiteral("streamId")).toString() == streamId
            && n.value(QStringLiteral("method")).toString() == QLatin1String("stream.event"))
            out.append(p.value(QStringLiteral("event")).toObject());
    }
    return out;
}

QList<QJsonObject> tst_RunHistory::storedEvents(const QString &runId, int pageSize)
{
    QList<QJsonObject> out;
    qint64 after = 0;
    for (int page = 0; page < 1000; ++page) {
        const QJsonObject r = m_engine.rpc().result(QStringLiteral("agents.runEvents"),
                                                    {{QStringLiteral("id"), m_id},
                                                     {QStringLiteral("runId"), runId},
                                                     {QStringLiteral("after"), after},
                                                     {QStringLiteral("limit"), pageSize}});
        if (r.isEmpty())
            return {};
        for (const QJsonValue &v : r.value(QStringLiteral("events")).toArray()) {
            const QJsonObject e = v.toObject();
            if (e.value(QStringLiteral("seq")).toInteger() != after + 1)
                return {}; // a hole: the comparison fails
            after = e.value(QStringLiteral("seq")).toInteger();
            out.append(e.value(QStringLiteral("event")).toObject());
        }
        if (!r.value(QStringLiteral("more")).toBool())
            break;
    }
    return out;
}

void tst_RunHistory::runIsKeptWithItsEvents()
{
    const QJsonObject answer = run(QStringLiteral(
                                       "Please [[write:/workspace/kept.txt|kept\\nfor later]]"),
                                   {{QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(), dump(answer).constData());
    m_streamed = streamedEvents(r.value(QStringLiteral("streamId")).toString());
    QVERIFY(m_streamed.size() >= 4);

    const QJsonObject listed = m_engine.rpc().result(QStringLiteral("agents.runs"),
                                                     {{QStringLiteral("id"), m_id}});
    const QJsonArray runs = listed.value(QStringLiteral("runs")).toArray();
    QCOMPARE(runs.size(), 1);
    const QJsonObject kept = runs.first().toObject();
    m_runId = kept.value(QStringLiteral("runId")).toString();
    QCOMPARE(kept.value(QStringLiteral("status")).toString(), QStringLiteral("succeeded"));
    QCOMPARE(kept.value(QStringLiteral("method")).toString(), QStringLiteral("agents.run"));
    QVERIFY(kept.value(QStringLiteral("prompt")).toString().contains(QLatin1String("kept.txt")));
    QCOMPARE(kept.value(QStringLiteral("sessionId")), r.value(QStringLiteral("sessionId")));
    QCOMPARE(kept.value(QStringLiteral("usage")), r.value(QStringLiteral("usage")));
    QVERIFY(
        kept.value(QStringLiteral("usage")).toObject().value(QStringLiteral("inputTokens")).toDouble()
        > 0);
    QCOMPARE(kept.value(QStringLiteral("costUsd")), r.value(QStringLiteral("costUsd")));
    QVERIFY(kept.value(QStringLiteral("costUsd")).toDouble() > 0);
    QCOMPARE(kept.value(QStringLiteral("eventCount")).toInt(), m_streamed.size());
    QCOMPARE(kept.value(QStringLiteral("streamId")), r.value(QStringLiteral("streamId")));
    QCOMPARE(kept.value(QStringLiteral("answer")).toObject().value(QStringLiteral("result")),
             r.value(QStringLiteral("result")));
    QCOMPARE(kept.value(QStringLiteral("options")).toObject().value(QStringLiteral("model")),
             QJsonValue(QStringLiteral("claude-sonnet-4-5")));

    // The events, in small pages, are exactly the ones that were streamed.
    QCOMPARE(storedEvents(m_runId, 3), m_streamed);
    // The file change names the file the mock's tool call wrote.
    const auto change = std::find_if(m_streamed.begin(), m_streamed.end(), [](const QJsonObject &e) {
        return e.value(QStringLiteral("type")).toString() == QLatin1String("file_change");
    });
    QVERIFY(change != m_streamed.end());
    QCOMPARE(change->value(QStringLiteral("path")).toString(),
             QStringLiteral("/workspace/kept.txt"));
}

void tst_RunHistory::transcriptSurvivesEngineRestart_data()
{
    QTest::addColumn<bool>("crash");
    QTest::newRow("clean stop") << false;
    QTest::newRow("kill -9") << true;
}

void tst_RunHistory::transcriptSurvivesEngineRestart()
{
    QFETCH(bool, crash);
    if (m_runId.isEmpty())
        QSKIP("the first run failed");
    if (crash)
        m_engine.process().kill9();
    else
        m_engine.process().terminate();
    QVERIFY2(startEngine(), qPrintable(m_engine.process().log()));
    const QJsonArray runs = m_engine.rpc()
                                .result(QStringLiteral("agents.runs"),
                                        {{QStringLiteral("id"), m_id}})
                                .value(QStringLiteral("runs"))
                                .toArray();
    QVERIFY(!runs.isEmpty());
    const QJsonObject kept = runs.last().toObject();
    QCOMPARE(kept.value(QStringLiteral("runId")).toString(), m_runId);
    QCOMPARE(kept.value(QStringLiteral("status")).toString(), QStringLiteral("succeeded"));
    QCOMPARE(storedEvents(m_runId), m_streamed);
}

QJsonObject tst_RunHistory::changes(const QString &runId)
{
    return m_engine.rpc().result(QStringLiteral("agents.runChanges"),
                                 {{QStringLiteral("id"), m_id}, {QStringLiteral("runId"), runId}});
}

void tst_RunHistory::turnChangesAreReviewedAndReverted()
{
    if (m_runId.isEmpty())
        QSKIP("the first run failed");
    // The first run (before two restarts of the engine) made kept.txt: its changes say so.
    const QJsonObject first = changes(m_runId);
    QVERIFY2(first.value(QStringLiteral("done")).toBool(),
             dump(m_engine.rpc().lastError()).constData());
    const QJsonArray firstFiles = first.value(QStringLiteral("files")).toArray();
    QCOMPARE(firstFiles.size(), 1);
    const QJsonObject made = firstFiles.first().toObject();
    QCOMPARE(made.value(QStringLiteral("path")).toString(), QStringLiteral("/workspace/kept.txt"));
    QCOMPARE(made.value(QStringLiteral("kind")).toString(), QStringLiteral("add"));
    QCOMPARE(made.value(QStringLiteral("diff")).toString(),
             QStringLiteral("--- a/kept.txt\n+++ b/kept.txt\n@@ -0,0 +1,2 @@\n+kept\n+for later\n"
                            "\\ No newline at end of file\n"));

    // The next run, in the same conversation (Claude Code's Write overwrites only a file it
    // knows), rewrites kept.txt; another file, written meanwhile, is not the run's change.
    const QString kept = QStringLiteral("/workspace/kept.txt");
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("agents.writeFile"),
                         {{QStringLiteral("id"), m_id},
                          {QStringLiteral("path"), QStringLiteral("/workspace/untouched.txt")},
                          {QStringLiteral("content"), QStringLiteral("same\n")}})
                 .isEmpty());
    const QJsonObject answer
        = run(QStringLiteral("Again [[write:/workspace/kept.txt|kept\\nFOR LATER\\nand more\\n]]"),
              {{QStringLiteral("sessionId"),
                m_streamed.first().value(QStringLiteral("sessionId"))}});
    QVERIFY2(answer.value(QStringLiteral("result"))
                 .toObject()
                 .value(QStringLiteral("success"))
                 .toBool(),
             dump(answer).constData());
    QCOMPARE(m_engine.readFile(m_id, kept), QStringLiteral("kept\nFOR LATER\nand more\n"));
    const QString runId = m_engine.rpc()
                              .result(QStringLiteral("agents.runs"),
                                      {{QStringLiteral("id"), m_id}, {QStringLiteral("limit"), 1}})
                              .value(QStringLiteral("runs"))
                              .toArray()
                              .first()
                              .toObject()
                              .value(QStringLiteral("runId"))
                              .toString();
    const QJsonObject turn = changes(runId);
    const QJsonArray files = turn.value(QStringLiteral("files")).toArray();
    QVERIFY2(files.size() == 1, dump(turn).constData());
    const QJsonObject changed = files.first().toObject();
    QCOMPARE(changed.value(QStringLiteral("path")).toString(), kept);
    QCOMPARE(changed.value(QStringLiteral("kind")).toString(), QStringLiteral("update"));
    QCOMPARE(changed.value(QStringLiteral("diff")).toString(),
             QStringLiteral("--- a/kept.txt\n+++ b/kept.txt\n@@ -1,2 +1,3 @@\n kept\n-for later\n"
                            "\\ No newline at end of file\n+FOR LATER\n+and more\n"));
    QCOMPARE(changed.value(QStringLiteral("added")).toInt(), 2);
    QCOMPARE(changed.value(QStringLiteral("removed")).toInt(), 1);
    QVERIFY(changed.value(QStringLiteral("revertible")).toBool());
    QVERIFY(turn.value(QStringLiteral("truncated")).isNull());

    // Revert: the file is as it was before the run; reverting the first run's new file deletes it.
    const QJsonObject reverted = m_engine.rpc().result(QStringLiteral("agents.revertFile"),
                                                       {{QStringLiteral("id"), m_id},
                                                        {QStringLiteral("runId"), runId},
                                                        {QStringLiteral("path"), kept}});
    QCOMPARE(reverted.value(QStringLiteral("reverted")).toString(), QStringLiteral("restored"));
    QCOMPARE(m_engine.readFile(m_id, kept), QStringLiteral("kept\nfor later"));
    QCOMPARE(m_engine.rpc()
                 .result(QStringLiteral("agents.revertFile"), {{QStringLiteral("id"), m_id},
                                                               {QStringLiteral("runId"), m_runId},
                                                               {QStringLiteral("path"), kept}})
                 .value(QStringLiteral("reverted"))
                 .toString(),
             QStringLiteral("deleted"));
    QCOMPARE(m_engine.errorCode(QStringLiteral("agents.stat"),
                                {{QStringLiteral("id"), m_id}, {QStringLiteral("path"), kept}}),
             -32002);

    // Outside /workspace, or a run that is not this sandbox's: refused.
    QCOMPARE(m_engine.errorCode(QStringLiteral("agents.revertFile"),
                                {{QStringLiteral("id"), m_id},
                                 {QStringLiteral("runId"), runId},
                                 {QStringLiteral("path"),
                                  QStringLiteral("/workspace/../etc/passwd")}}),
             -32007);
    QCOMPARE(m_engine.errorCode(QStringLiteral("agents.runChanges"),
                                {{QStringLiteral("id"), m_id},
                                 {QStringLiteral("runId"),
                                  QStringLiteral("run_0123456789abcdef")}}),
             -32002);
}

void tst_RunHistory::runTheEngineDiedUnderIsInterrupted()
{
    // A slow model: the run is still going when the engine is killed.
    QJsonObject params{{QStringLiteral("id"), m_id},
                       {QStringLiteral("prompt"), QStringLiteral("[[sleep:30000]] slow")},
                       {QStringLiteral("options"),
                        QJsonObject{{QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5")},
                                    {QStringLiteral("newSession"), true}}}};
    m_engine.rpc().notifications.clear();
    m_engine.rpc().sendText(
        QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                  {QStringLiteral("id"), 77},
                                  {QStringLiteral("method"), QStringLiteral("agents.run")},
                                  {QStringLiteral("params"), params}})
            .toJson(QJsonDocument::Compact));
    QTRY_VERIFY_WITH_TIMEOUT(!m_engine.rpc().notifications.isEmpty(), 60000);
    // The session event has come; the kill comes once the store has committed it.
    QTRY_VERIFY_WITH_TIMEOUT(committedEventsOfRunningRun(m_dataDir) >= 1, 10000);
    m_engine.process().kill9();
    QVERIFY2(startEngine(), qPrintable(m_engine.process().log()));
    const QJsonObject newest = m_engine.rpc()
                                   .result(QStringLiteral("agents.runs"),
                                           {{QStringLiteral("id"), m_id}})
                                   .value(QStringLiteral("runs"))
                                   .toArray()
                                   .first()
                                   .toObject();
    QCOMPARE(newest.value(QStringLiteral("status")).toString(), QStringLiteral("interrupted"));
    QVERIFY(newest.value(QStringLiteral("eventCount")).toInt() >= 1);
    QVERIFY(!newest.value(QStringLiteral("endedAt")).toString().isEmpty());
}

void tst_RunHistory::refusedToolCallNeedsInput()
{
    // In `default` mode a non-interactive Claude Code refuses to write: the run needs the user.
    const QJsonObject answer = run(QStringLiteral("[[write:/workspace/refused.txt|no]]"),
                                   {{QStringLiteral("permissionMode"), QStringLiteral("default")},
                                    {QStringLiteral("newSession"), true}});
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(!r.isEmpty(), dump(answer).constData());
    const QJsonObject needs = r.value(QStringLiteral("needsInput")).toObject();
    QCOMPARE(needs.value(QStringLiteral("reason")).toString(), QStringLiteral("permission"));
    const QJsonObject tool = needs.value(QStringLiteral("tools")).toArray().first().toObject();
    QCOMPARE(tool.value(QStringLiteral("name")).toString(), QStringLiteral("Write"));
    QCOMPARE(tool.value(QStringLiteral("input")).toObject().value(QStringLiteral("file_path")),
             QJsonValue(QStringLiteral("/workspace/refused.txt")));
    // The stream's result event says so too, and the run's record keeps it.
    const QList<QJsonObject> events = streamedEvents(r.value(QStringLiteral("streamId")).toString());
    QVERIFY(!events.isEmpty());
    QCOMPARE(events.last().value(QStringLiteral("type")).toString(), QStringLiteral("result"));
    QCOMPARE(events.last().value(QStringLiteral("needsInput")).toObject(), needs);
    const QJsonObject kept = m_engine.rpc()
                                 .result(QStringLiteral("agents.runs"),
                                         {{QStringLiteral("id"), m_id},
                                          {QStringLiteral("limit"), 1}})
                                 .value(QStringLiteral("runs"))
                                 .toArray()
                                 .first()
                                 .toObject();
    QCOMPARE(kept.value(QStringLiteral("needsInput")).toObject(), needs);
}

void tst_RunHistory::questionNeedsInput()
{
    m_mock.setFinalText(QStringLiteral("I wrote the draft.\n\nShould I also add tests?"));
    const QJsonObject answer = run(QStringLiteral("[[write:/workspace/draft.txt|draft]]"),
                                   {{QStringLiteral("newSession"), true}});
    m_mock.setFinalText(QStringLiteral("Done: the file is written."));
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(r.value(QStringLiteral("success")).toBool(), dump(answer).constData());
    const QJsonObject needs = r.value(QStringLiteral("needsInput")).toObject();
    QCOMPARE(needs.value(QStringLiteral("reason")).toString(), QStringLiteral("question"));
    QCOMPARE(needs.value(QStringLiteral("question")).toString(),
             QStringLiteral("Should I also add tests?"));

    // A plain answer needs nothing.
    const QJsonObject plain = run(QStringLiteral("hello"));
    QVERIFY(plain.value(QStringLiteral("result"))
                .toObject()
                .value(QStringLiteral("needsInput"))
                .isNull());
}

void tst_RunHistory::anotherKeySeesNoRuns()
{
    const QJsonObject key = m_engine.rpc().result(QStringLiteral("keys.create"),
                                                  {{QStringLiteral("name"),
                                                    QStringLiteral("other")}});
    RpcTestClient other;
    QVERIFY(other.open(m_engine.process().wsUrl(), key.value(QStringLiteral("key")).toString()));
    const QJsonObject r = other.call(QStringLiteral("agents.runs"), {{QStringLiteral("id"), m_id}});
    QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32002);
    const QJsonObject e = other.call(QStringLiteral("agents.runEvents"),
                                     {{QStringLiteral("id"), m_id},
                                      {QStringLiteral("runId"), m_runId}});
    QCOMPARE(e.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32002);
}

void tst_RunHistory::badParamsAreRefused()
{
    const auto code = [this](const QString &method, const QJsonObject &params) {
        return m_engine.rpc()
            .call(method, params)
            .value(QStringLiteral("error"))
            .toObject()
            .value(QStringLiteral("code"))
            .toInt();
    };
    QCOMPARE(code(QStringLiteral("agents.runs"), {}), -32602);
    QCOMPARE(code(QStringLiteral("agents.runs"),
                  {{QStringLiteral("id"), m_id}, {QStringLiteral("limit"), 0}}),
             -32602);
    QCOMPARE(code(QStringLiteral("agents.runEvents"), {{QStringLiteral("id"), m_id}}), -32602);
    QCOMPARE(code(QStringLiteral("agents.runEvents"),
                  {{QStringLiteral("id"), m_id},
                   {QStringLiteral("runId"), QStringLiteral("run_0")}}),
             -32002);
    QCOMPARE(code(QStringLiteral("agents.runEvents"), {{QStringLiteral("id"), m_id},
                                                       {QStringLiteral("runId"), m_runId},
                                                       {QStringLiteral("after"), -1}}),
             -32602);
}

QTEST_GUILESS_MAIN(tst_RunHistory)
#include "tst_runhistory.moc"
