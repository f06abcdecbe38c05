// The adapters' reading of each CLI's output, line by line (lines as the real CLIs print them,
// recorded against the mock model server), and the secret redactor: success and failure decided
// from the events, not from the exit code alone.
#include "agents/agentadapter.h"
#include "agents/secretredactor.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTest>

using namespace Sandbox::Engine;

namespace {

struct Outcome
{
    QJsonObject result;
    QList<QJsonObject> events;

    QStringList types() const
    {
        QStringList t;
        for (const QJsonObject &e : events)
            t.append(e.value(QStringLiteral("type")).toString());
        return t;
    }
    QJsonObject first(const QString &type) const
    {
        for (const QJsonObject &e : events) {
            if (e.value(QStringLiteral("type")).toString() == type)
                return e;
        }
        return {};
    }
};

Outcome feed(const QString &type, const QByteArray &stdoutText, int exitCode = 0,
             const QByteArray &stderrText = {})
{
    auto adapter = AgentAdapter::create(type);
    // In odd pieces, as a pipe delivers them.
    for (qsizetype i = 0; i < stdoutText.size(); i += 37)
        adapter->feedStdout(
            QByteArrayView(stdoutText).sliced(i, qMin<qsizetype>(37, stdoutText.size() - i)));
    adapter->feedStderr(stderrText);
    Outcome o;
    o.result = adapter->finish({exitCode, false, 0, 10, QString::fromUtf8(stderrText)});
    o.events = adapter->takeEvents();
    return o;
}

} // namespace

class tst_Adapters : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void claudeWriteSucceeds();
    void claudeIsErrorFailsDespiteSubtypeSuccess();
    void claudeRetriesOfAnUnreachableApiAbort();
    void claudeContextInUseAndItsWindow();
    void codexFileChangeFailedFailsDespiteExitZero();
    void codexReconnectingAborts();
    void opencodeWriteAndNoFinalAnswer();
    void opencodeConnectionErrorsOnStderrAbort();
    void invocations_data();
    void invocations();
    void redactorScrubsSecrets();
    void patchFiles();
};

void tst_Adapters::claudeWriteSucceeds()
{
    const QByteArray out
        = R"j({"type":"system","subtype":"init","cwd":"/workspace","session_id":"s-1","model":"m"}
{"type":"assistant","message":{"content":[{"thinking":"plan","type":"thinking"}]},"session_id":"s-1"}
{"type":"assistant","message":{"content":[{"id":"t1","input":{"file_path":"/workspace/a","content":"x\ny"},"name":"Write","type":"tool_use"}]},"session_id":"s-1"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"File created"}]},"tool_use_result":{"type":"create","filePath":"/workspace/a","content":"x\ny","structuredPatch":[]}}
{"type":"assistant","message":{"content":[{"text":"Done.","type":"text"}]},"session_id":"s-1"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s-1","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":2,"cache_creation_input_tokens":1}}
)j";
    const Outcome o = feed(QStringLiteral("claude-code"), out);
    QVERIFY(o.result.value(QStringLiteral("success")).toBool());
    QCOMPARE(o.result.value(QStringLiteral("result")).toString(), QStringLiteral("Done."));
    QCOMPARE(o.result.value(QStringLiteral("sessionId")).toString(), QStringLiteral("s-1"));
    QCOMPARE(o.result.value(QStringLiteral("costUsd")).toDouble(), 0.5);
    QCOMPARE(o.result.value(QStringLiteral("usage"))
                 .toObject()
                 .value(QStringLiteral("cacheReadTokens"))
                 .toInt(),
             2);
    QCOMPARE(o.types(), (QStringList{QStringLiteral("session"), QStringLiteral("thinking"),
                                     QStringLiteral("tool_call"), QStringLiteral("tool_result"),
                                     QStringLiteral("file_change"), QStringLiteral("text"),
                                     QStringLiteral("usage"), QStringLiteral("result")}));
    const QJsonObject change = o.first(QStringLiteral("file_change"));
    QCOMPARE(change.value(QStringLiteral("kind")).toString(), QStringLiteral("add"));
    QCOMPARE(change.value(QStringLiteral("diff")).toString(),
             QStringLiteral("--- /dev/null\n+++ /workspace/a\n@@ -0,0 +1,2 @@\n+x\n+y\n"));
}

void tst_Adapters::claudeIsErrorFailsDespiteSubtypeSuccess()
{
    const QByteArray out = R"j({"type":"system","subtype":"init","session_id":"s-2"}
{"type":"result","subtype":"success","is_error":true,"result":"API Error: Connection refused","session_id":"s-2","total_cost_usd":0,"usage":{}}
)j";
    const Outcome o = feed(QStringLiteral("claude-code"), out, 0);
    QVERIFY(!o.result.value(QStringLiteral("success")).toBool());
    QCOMPARE(o.result.value(QStringLiteral("error")).toString(),
             QStringLiteral("API Error: Connection refused"));
}

void tst_Adapters::claudeRetriesOfAnUnreachableApiAbort()
{
    auto adapter = AgentAdapter::create(QStringLiteral("claude-code"));
    const QByteArray retry
        = R"j({"type":"system","subtype":"api_retry","attempt":1,"error_status":null,"error":"unknown"})j"
          "\n";
    adapter->feedStdout(retry);
    adapter->feedStdout(retry);
    QVERIFY(adapter->abortReason().isEmpty());
    adapter->feedStdout(retry);
    QVERIFY(adapter->abortReason().contains(QLatin1String("unreachable")));
    // An HTTP error (a status) is not "unreachable".
    auto other = AgentAdapter::create(QStringLiteral("claude-code"));
    for (int i = 0; i < 5; ++i)
        other->feedStdout(R"j({"type":"system","subtype":"api_retry","error_status":529})j"
                          "\n");
    QVERIFY(other->abortReason().isEmpty());
}

void tst_Adapters::claudeContextInUseAndItsWindow()
{
    // Each assistant message says what the model read on that call (input + cache read + cache
    // write): the context in use, said at once. A subagent's message (parent_tool_use_id) is not
    // the session's context. The result names each model's window; the session's model's counts.
    const QByteArray out
        = R"j({"type":"system","subtype":"init","session_id":"s-3","model":"claude-sonnet-4-5"}
{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"text":"Looking.","type":"text"}],"usage":{"input_tokens":100,"cache_read_input_tokens":900,"cache_creation_input_tokens":50,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s-3"}
{"type":"assistant","message":{"model":"claude-haiku-4-5","content":[{"text":"Sub.","type":"text"}],"usage":{"input_tokens":70000,"output_tokens":1}},"parent_tool_use_id":"toolu_9","session_id":"s-3"}
{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"text":"Done.","type":"text"}],"usage":{"input_tokens":20,"cache_read_input_tokens":1500,"cache_creation_input_tokens":0,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"s-3"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s-3","total_cost_usd":0.01,"usage":{"input_tokens":120,"output_tokens":6},"modelUsage":{"claude-haiku-4-5":{"inputTokens":90000,"contextWindow":100000},"claude-sonnet-4-5":{"inputTokens":120,"cacheReadInputTokens":2400,"contextWindow":200000}}}
)j";
    const Outcome o = feed(QStringLiteral("claude-code"), out);
    QVERIFY(o.result.value(QStringLiteral("success")).toBool());
    const QJsonObject usage = o.result.value(QStringLiteral("usage")).toObject();
    QCOMPARE(usage.value(QStringLiteral("contextTokens")).toInteger(), 1520);
    QCOMPARE(usage.value(QStringLiteral("contextWindow")).toInteger(), 200000);
    QList<QJsonObject> usages;
    for (const QJsonObject &e : o.events) {
        if (e.value(QStringLiteral("type")).toString() == QLatin1String("usage"))
            usages.append(e);
    }
    // Live: 1050 after the first call, 1520 after the second (the window not known yet), then the
    // totals with the window.
    QCOMPARE(usages.size(), 3);
    QCOMPARE(usages[0].value(QStringLiteral("contextTokens")).toInteger(), 1050);
    QVERIFY(usages[0].value(QStringLiteral("contextWindow")).isNull());
    QCOMPARE(usages[1].value(QStringLiteral("contextTokens")).toInteger(), 1520);
    QCOMPARE(usages[2].value(QStringLiteral("contextWindow")).toInteger(), 200000);
    QCOMPARE(usages[2].value(QStringLiteral("inputTokens")).toInteger(), 120);

    // Figures that are not token counts are not known, not 0 or garbage.
    QByteArray odd = out;
    odd.replace("\"contextWindow\":200000", "\"contextWindow\":-5");
    odd.replace("\"contextWindow\":100000", "\"contextWindow\":100000.5");
    odd.replace("\"input_tokens\":100,", "\"input_tokens\":1.5,");
    odd.replace("\"input_tokens\":20,", "\"input_tokens\":\"20\",");
    const QJsonObject oddUsage
        = feed(QStringLiteral("claude-code"), odd).result.value(QStringLiteral("usage")).toObject();
    QVERIFY(oddUsage.value(QStringLiteral("contextTokens")).isNull());
    QVERIFY(oddUsage.value(QStringLiteral("contextWindow")).isNull());

    // The message Claude Code makes up for a failed call (all zeros) is no context of 0.
    const QByteArray failed
        = R"j({"type":"assistant","message":{"model":"<synthetic>","content":[{"text":"API Error: 400","type":"text"}],"usage":{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0}},"parent_tool_use_id":null,"session_id":"s-4"}
{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400","session_id":"s-4","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":0,"contextWindow":200000}}}
)j";
    const QJsonObject failedUsage = feed(QStringLiteral("claude-code"), failed)
                                        .result.value(QStringLiteral("usage"))
                                        .toObject();
    QVERIFY(failedUsage.value(QStringLiteral("contextTokens")).isNull());
}

void tst_Adapters::codexFileChangeFailedFailsDespiteExitZero()
{
    const QByteArray out = R"j({"type":"thread.started","thread_id":"th-1"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"i0","type":"file_change","changes":[{"path":"/usr/x","kind":"add"}],"status":"in_progress"}}
{"type":"item.completed","item":{"id":"i0","type":"file_change","changes":[{"path":"/usr/x","kind":"add"}],"status":"failed"}}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"Hm."}}
{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":1,"output_tokens":2,"reasoning_output_tokens":1}}
)j";
    const Outcome o = feed(QStringLiteral("codex"), out, 0);
    QVERIFY(!o.result.value(QStringLiteral("success")).toBool());
    QCOMPARE(o.result.value(QStringLiteral("error")).toString(),
             QStringLiteral("a file change failed: add /usr/x"));
    QCOMPARE(o.result.value(QStringLiteral("sessionId")).toString(), QStringLiteral("th-1"));
    QVERIFY(o.result.value(QStringLiteral("costUsd")).isNull());
    // Codex does not say its context: not known, rather than 0.
    const QJsonObject usage = o.result.value(QStringLiteral("usage")).toObject();
    QVERIFY(usage.contains(QStringLiteral("contextTokens")));
    QVERIFY(usage.value(QStringLiteral("contextTokens")).isNull());
    QVERIFY(usage.value(QStringLiteral("contextWindow")).isNull());
    QCOMPARE(o.first(QStringLiteral("file_change")).value(QStringLiteral("status")).toString(),
             QStringLiteral("failed"));

    // The same change redone successfully afterwards: the run succeeds.
    QByteArray redone = out;
    redone.replace(
        R"j({"type":"item.completed","item":{"id":"i1")j",
        R"j({"type":"item.completed","item":{"id":"i2","type":"file_change","changes":[{"path":"/usr/x","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"i1")j");
    QVERIFY(
        feed(QStringLiteral("codex"), redone, 0).result.value(QStringLiteral("success")).toBool());
}

void tst_Adapters::codexReconnectingAborts()
{
    auto adapter = AgentAdapter::create(QStringLiteral("codex"));
    const QByteArray line
        = R"j({"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"})j"
          "\n";
    adapter->feedStdout(line);
    QVERIFY(adapter->abortReason().isEmpty());
    adapter->feedStdout(line);
    QVERIFY(adapter->abortReason().startsWith(QLatin1String("the model API is unreachable")));
    const QJsonObject r = adapter->finish({137, false, 0, 10, {}});
    QVERIFY(!r.value(QStringLiteral("success")).toBool());
    QVERIFY(r.value(QStringLiteral("error")).toString().contains(QLatin1String("unreachable")));
    // turn.failed fails the run.
    const Outcome f = feed(QStringLiteral("codex"),
                           R"j({"type":"turn.failed","error":{"message":"quota exceeded"}})j"
                           "\n");
    QCOMPARE(f.result.value(QStringLiteral("error")).toString(), QStringLiteral("quota exceeded"));
}

void tst_Adapters::opencodeWriteAndNoFinalAnswer()
{
    const QByteArray out = R"j({"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"write","callID":"c1","state":{"status":"completed","input":{"content":"hi","filePath":"/workspace/h"},"output":"Wrote file successfully.","metadata":{"exists":false}}}}
{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","tokens":{"input":7,"output":4,"reasoning":0,"cache":{"write":0,"read":1}},"cost":0.01}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Written."}}
{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":8,"output":1,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.02}}
)j";
    const Outcome o = feed(QStringLiteral("opencode"), out);
    QVERIFY(o.result.value(QStringLiteral("success")).toBool());
    QCOMPARE(o.result.value(QStringLiteral("usage"))
                 .toObject()
                 .value(QStringLiteral("inputTokens"))
                 .toInt(),
             15);
    QCOMPARE(o.result.value(QStringLiteral("costUsd")).toDouble(), 0.03);
    QCOMPARE(o.first(QStringLiteral("file_change")).value(QStringLiteral("path")).toString(),
             QStringLiteral("/workspace/h"));
    // Killed after the tool call, before any final step: not a success even with exit code 0.
    const QByteArray cut = out.left(out.indexOf(R"j({"type":"text")j"));
    const Outcome c = feed(QStringLiteral("opencode"), cut, 0);
    QVERIFY(!c.result.value(QStringLiteral("success")).toBool());
    QVERIFY(c.result.value(QStringLiteral("error"))
                .toString()
                .contains(QLatin1String("without a final answer")));
}

void tst_Adapters::opencodeConnectionErrorsOnStderrAbort()
{
    auto adapter = AgentAdapter::create(QStringLiteral("opencode"));
    const QByteArray title
        = R"j(timestamp=x level=ERROR message="stream error" small=true agent=title error.error="AI_RetryError: Cannot connect to API")j"
          "\n";
    const QByteArray build
        = R"j(timestamp=x level=ERROR message="stream error" small=false agent=build error.error="AI_APICallError: Cannot connect to API: Unable to connect")j"
          "\n";
    adapter->feedStderr(title);
    adapter->feedStderr(title);
    adapter->feedStderr(build);
    QVERIFY(adapter->abortReason().isEmpty());
    adapter->feedStderr(build);
    QVERIFY(adapter->abortReason().contains(QLatin1String("unreachable")));
}

void tst_Adapters::invocations_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QStringList>("expected"); // arguments that must be there
    QTest::newRow("claude-code") << QStringLiteral("claude-code")
                                 << QStringList{QStringLiteral(
                                                    "/opt/agent/node_modules/.bin/claude"),
                                                QStringLiteral("-p"),
                                                QStringLiteral("--resume"),
                                                QStringLiteral("S"),
                                                QStringLiteral("--permission-mode"),
                                                QStringLiteral("acceptEdits"),
                                                QStringLiteral("--append-system-prompt"),
                                                QStringLiteral("--allowedTools"),
                                                QStringLiteral("Read,Write"),
                                                QStringLiteral("--max-thinking-tokens"),
                                                QStringLiteral("1000")};
    QTest::newRow("codex")
        << QStringLiteral("codex")
        << QStringList{QStringLiteral("/opt/agent/node_modules/.bin/codex"),
                       QStringLiteral("exec"),
                       QStringLiteral("--json"),
                       QStringLiteral("resume"),
                       QStringLiteral("S"),
                       QStringLiteral("model_providers.sandbox.base_url=\"http://h:1/v1\"")};
    QTest::newRow("opencode") << QStringLiteral("opencode")
                              << QStringList{QStringLiteral(
                                                 "/opt/agent/node_modules/.bin/opencode"),
                                             QStringLiteral("run"),
                                             QStringLiteral("--session"),
                                             QStringLiteral("S"),
                                             QStringLiteral("--format"),
                                             QStringLiteral("json")};
}

void tst_Adapters::invocations()
{
    QFETCH(QString, type);
    QFETCH(QStringList, expected);
    AgentRunOptions o;
    o.prompt = QStringLiteral("-starts with a dash");
    o.sessionId = QStringLiteral("S");
    o.permissionMode = QStringLiteral("acceptEdits");
    o.systemPrompt = QStringLiteral("be brief");
    o.allowedTools = {QStringLiteral("Read"), QStringLiteral("Write")};
    o.maxThinkingTokens = 1000;
    o.baseUrl = QStringLiteral("http://h:1");
    o.env = {{QStringLiteral("OPENAI_API_KEY"), QStringLiteral("sk-secret-value-123")}};
    const auto adapter = AgentAdapter::create(type);
    const AgentInvocation inv = adapter->invocation(o);
    for (const QString &arg : expected)
        QVERIFY2(inv.argv.contains(arg),
                 qPrintable(arg + QStringLiteral(" missing from ") + inv.argv.join(u' ')));
    QCOMPARE(inv.env.value(QStringLiteral("HOME")), QStringLiteral("/home/agent"));
    // A key is never on the command line (visible in /proc to every process).
    QVERIFY(!inv.argv.join(u' ').contains(QLatin1String("sk-secret-value-123")));
    // A prompt that starts with '-' is not taken for an option.
    const qsizetype p = inv.argv.indexOf(
        QRegularExpression(QStringLiteral(".*starts with a dash")));
    QVERIFY(p > 0);
    QVERIFY(inv.argv[p - 1] == QLatin1String("-p") || inv.argv[p - 1] == QLatin1String("--")
            || !inv.argv[p].startsWith(u'-'));
}

void tst_Adapters::redactorScrubsSecrets()
{
    SecretRedactor r;
    r.addFromEnvironment(
        {{QStringLiteral("ANTHROPIC_API_KEY"), QStringLiteral("sk-ant-abcdef123456")},
         {QStringLiteral("MY_TOKEN"), QStringLiteral("tok-zzzzzzzzzz")},
         {QStringLiteral("SHORT_KEY"), QStringLiteral("abc")},
         {QStringLiteral("PATH"), QStringLiteral("/usr/bin:/bin/with/long")}});
    QCOMPARE(r.apply(QStringLiteral("key sk-ant-abcdef123456 and tok-zzzzzzzzzz")),
             QStringLiteral("key [redacted] and [redacted]"));
    QCOMPARE(r.apply(QStringLiteral("abc /usr/bin:/bin/with/long")),
             QStringLiteral("abc /usr/bin:/bin/with/long"));
    const QJsonValue j = r.apply(
        QJsonObject{{QStringLiteral("a"), QJsonArray{QStringLiteral("x sk-ant-abcdef123456")}},
                    {QStringLiteral("sk-ant-abcdef123456"), 1}});
    QCOMPARE(j.toObject().value(QStringLiteral("a")).toArray().at(0).toString(),
             QStringLiteral("x [redacted]"));
    QVERIFY(j.toObject().contains(QStringLiteral("[redacted]")));
}

void tst_Adapters::patchFiles()
{
    const auto files = filesInPatch(QStringLiteral(
        "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: /w/b\n@@\n-y\n+z\n"
        "*** Delete File: c\n*** End Patch\n"));
    QCOMPARE(files.size(), 3);
    QCOMPARE(files[0], (QPair<QString, QString>{QStringLiteral("a.txt"), QStringLiteral("add")}));
    QCOMPARE(files[1], (QPair<QString, QString>{QStringLiteral("/w/b"), QStringLiteral("update")}));
    QCOMPARE(files[2], (QPair<QString, QString>{QStringLiteral("c"), QStringLiteral("delete")}));
}

QTEST_GUILESS_MAIN(tst_Adapters)
#include "tst_adapters.moc"
