// The core client's AgentRun against a real sandboxd running the real Claude Code CLI (the
// fastest of the three to start) on the mock model server: typed signals in order, the answer,
// and cancel.
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <client/client.h>

#include <QSignalSpy>
#include <QTest>

using namespace Sandbox;
using Sandbox::Mocks::MockModelServer;

class tst_AgentRun : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void runEmitsTypedEventsAndFinishes();
    void cancelKillsTheRun();
    void failureIsAResultNotAnError();
    void engineStopsCleanlyMidRun();

private:
    AgentRunOptions options() const
    {
        AgentRunOptions o;
        o.model = QStringLiteral("claude-sonnet-4-5");
        o.newSession = true;
        return o;
    }

    EngineFixture m_engine;
    MockModelServer m_mock;
    std::unique_ptr<Client> m_client;
    QString m_id;
};

void tst_AgentRun::initTestCase()
{
    QVERIFY(m_mock.listen());
    QVERIFY2(m_engine.start(
                 {QStringLiteral("--agents-dir"), QStringLiteral(SANDBOX_BINARY_DIR "/agents")}),
             qPrintable(m_engine.process().log()));
    m_client = std::make_unique<Client>(
        ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    m_client->open();
    QTRY_COMPARE(m_client->rpc()->state(), RpcClient::State::Connected);

    AgentCreateOptions create;
    create.type = QStringLiteral("claude-code");
    create.size = QStringLiteral("standard-2");
    // The mock listens on this computer's loopback: only an exact allow entry reaches it.
    create.networkPolicy = NetworkPolicy::off().allowing(
        QStringLiteral("127.0.0.1:%1").arg(m_mock.port()));
    create.env = {{QStringLiteral("ANTHROPIC_API_KEY"),
                   QStringLiteral("sk-ant-test-agentrun-1234")},
                  {QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}};
    m_id = m_engine.create(QStringLiteral("agents.create"), create.toJson(), 30000)
               .value(QStringLiteral("id"))
               .toString();
    QVERIFY2(!m_id.isEmpty(), dump(m_engine.rpc().lastError()).constData());
}

void tst_AgentRun::cleanupTestCase()
{
    m_client.reset();
    m_engine.cleanup();
}

void tst_AgentRun::runEmitsTypedEventsAndFinishes()
{
    AgentRun *run = m_client->agents()
                        .runStreaming(m_id,
                                      QStringLiteral(
                                          "[[think:plan first]] [[write:/workspace/a.txt|alpha]]"),
                                      options(), this);
    QVERIFY(run);
    QSignalSpy started(run, &AgentRun::started);
    QSignalSpy thinking(run, &AgentRun::thinking);
    QSignalSpy toolCalls(run, &AgentRun::toolCall);
    QSignalSpy files(run, &AgentRun::fileChange);
    QSignalSpy texts(run, &AgentRun::text);
    QSignalSpy usage(run, &AgentRun::usageChanged);
    QSignalSpy finished(run, &AgentRun::finished);
    QSignalSpy failed(run, &AgentRun::failed);
    QStringList order;
    connect(run, &AgentRun::event, this,
            [&order](const AgentEvent &e) { order.append(e.typeName); });
    QVERIFY(finished.wait(120000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(started.count(), 1);
    QCOMPARE(thinking.count(), 1);
    QCOMPARE(thinking.at(0).at(0).toString(), QStringLiteral("plan first"));
    QCOMPARE(toolCalls.count(), 1);
    QCOMPARE(toolCalls.at(0).at(1).toString(), QStringLiteral("Write"));
    QCOMPARE(files.count(), 1);
    QCOMPARE(files.at(0).at(0).toString(), QStringLiteral("/workspace/a.txt"));
    QCOMPARE(files.at(0).at(2).toBool(), true);
    QVERIFY(files.at(0).at(3).toString().contains(QLatin1String("+alpha")));
    QCOMPARE(texts.last().at(0).toString(), QStringLiteral("Done: the file is written."));
    QVERIFY(usage.count() >= 1);
    QVERIFY(order.indexOf(QStringLiteral("thinking")) < order.indexOf(QStringLiteral("tool_call")));
    QVERIFY(order.indexOf(QStringLiteral("tool_call"))
            < order.indexOf(QStringLiteral("file_change")));
    QCOMPARE(order.last(), QStringLiteral("result"));
    const auto result = finished.at(0).at(0).value<AgentRunResult>();
    QVERIFY(result.success);
    QCOMPARE(result.result, QStringLiteral("Done: the file is written."));
    QVERIFY(!result.sessionId.isEmpty());
    QCOMPARE(run->sessionId(), result.sessionId);
    QVERIFY(result.usage.costUsd.has_value());
    QVERIFY(result.usage.inputTokens > 0);
    QCOMPARE(run->usage().inputTokens, result.usage.inputTokens);
    // The real CLI says its context: what the model read on the last call, and the window of
    // the model it used (from its result's modelUsage).
    QVERIFY(result.usage.contextTokens.has_value());
    QVERIFY(*result.usage.contextTokens > 0);
    QVERIFY(result.usage.contextWindow.has_value());
    QVERIFY2(*result.usage.contextWindow > *result.usage.contextTokens,
             qPrintable(QString::number(*result.usage.contextWindow)));
}

void tst_AgentRun::cancelKillsTheRun()
{
    const int before = m_mock.modelCallCount();
    AgentRun *run = m_client->agents().runStreaming(m_id, QStringLiteral("[[sleep:300000]] wait"),
                                                    options(), this);
    QSignalSpy failed(run, &AgentRun::failed);
    QSignalSpy finished(run, &AgentRun::finished);
    QTRY_VERIFY_WITH_TIMEOUT(m_mock.modelCallCount() > before && m_mock.openConnections() > 0,
                             60000);
    run->cancel();
    QVERIFY(failed.wait(15000));
    QCOMPARE(failed.at(0).at(0).value<Error>().code, ErrorCode::Cancelled);
    QCOMPARE(finished.count(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.openConnections(), 0, 10000);
}

void tst_AgentRun::failureIsAResultNotAnError()
{
    AgentRunOptions o = options();
    o.baseUrl = QStringLiteral("http://127.0.0.1:9"); // discard port: nothing listens
    AgentRun *run = m_client->agents().runStreaming(m_id, QStringLiteral("hello"), o, this);
    QSignalSpy finished(run, &AgentRun::finished);
    QSignalSpy errors(run, &AgentRun::errorReported);
    QVERIFY(finished.wait(120000));
    const auto result = finished.at(0).at(0).value<AgentRunResult>();
    QVERIFY(!result.success);
    QVERIFY(!result.error.isEmpty());
    QVERIFY(errors.count() >= 1);
}

void tst_AgentRun::engineStopsCleanlyMidRun()
{
    const int before = m_mock.modelCallCount();
    AgentRun *run = m_client->agents().runStreaming(m_id, QStringLiteral("[[sleep:300000]] wait"),
                                                    options(), this);
    QSignalSpy failed(run, &AgentRun::failed);
    QTRY_VERIFY_WITH_TIMEOUT(m_mock.modelCallCount() > before && m_mock.openConnections() > 0,
                             60000);
    m_engine.process().terminate();
    QVERIFY2(m_engine.process().exitedCleanly(), qPrintable(m_engine.process().log().right(2000)));
    // The CLI died with its sandbox, and the client was told.
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.openConnections(), 0, 10000);
    m_client->close();
    QTRY_VERIFY(failed.count() == 1);
}

QTEST_GUILESS_MAIN(tst_AgentRun)
#include "tst_agentrun.moc"
