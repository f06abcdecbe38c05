#include "agentadapter.h"

#include "claudecodeadapter.h"
#include "codexadapter.h"
#include "opencodeadapter.h"
#include "protocol/sandboxenums.h"

#include <QJsonDocument>
#include <QLoggingCategory>

#include <cmath>

Q_LOGGING_CATEGORY(lcAdapter, "sandboxd.agents.adapter")

namespace Sandbox::Engine {

namespace {
constexpr qsizetype kMaxLineBytes = 16 * 1024 * 1024;
constexpr qsizetype kMaxEventText = 256 * 1024; // one event's text; the rest is cut with a note

QString bounded(const QString &text)
{
    if (text.size() <= kMaxEventText)
        return text;
    return text.left(kMaxEventText)
           + QStringLiteral("\n[... %1 more characters]").arg(text.size() - kMaxEventText);
}
} // namespace

std::unique_ptr<AgentAdapter> AgentAdapter::create(const QString &type)
{
    switch (fromWire<SandboxType>(type)) {
    case SandboxType::ClaudeCode:
        return std::make_unique<ClaudeCodeAdapter>();
    case SandboxType::Codex:
        return std::make_unique<CodexAdapter>();
    case SandboxType::OpenCode:
        return std::make_unique<OpenCodeAdapter>();
    default:
        return nullptr;
    }
}

QStringList AgentAdapter::types()
{
    return {toWire(SandboxType::ClaudeCode), toWire(SandboxType::OpenCode),
            toWire(SandboxType::Codex)};
}

void AgentAdapter::feedStdout(QByteArrayView bytes)
{
    splitLines(m_stdoutBuffer, bytes, false);
}

void AgentAdapter::feedStderr(QByteArrayView bytes)
{
    splitLines(m_stderrBuffer, bytes, true);
}

void AgentAdapter::splitLines(QByteArray &buffer, QByteArrayView bytes, bool isStderr)
{
    buffer.append(bytes);
    qsizetype start = 0;
    for (;;) {
        const qsizetype eol = buffer.indexOf('\n', start);
        if (eol < 0)
            break;
        const QByteArray line = buffer.mid(start, eol - start).trimmed();
        start = eol + 1;
        if (line.isEmpty())
            continue;
        if (isStderr) {
            parseStderrLine(line);
            continue;
        }
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
        if (doc.isObject())
            parseLine(doc.object());
        else
            qCDebug(lcAdapter) << "not a JSON line from the CLI:" << line.left(200);
    }
    buffer.remove(0, start);
    if (buffer.size() > kMaxLineBytes) {
        qCWarning(lcAdapter) << "a line of more than" << kMaxLineBytes
                             << "bytes from the CLI: dropped";
        buffer.clear();
    }
}

void AgentAdapter::emitEvent(const QString &type, QJsonObject fields)
{
    fields.insert(QStringLiteral("type"), type);
    m_events.append(fields);
}

void AgentAdapter::emitText(const QString &text)
{
    if (text.isEmpty())
        return;
    m_resultText = text;
    emitEvent(QStringLiteral("text"), {{QStringLiteral("text"), bounded(text)}});
}

void AgentAdapter::emitThinking(const QString &text)
{
    if (!text.isEmpty())
        emitEvent(QStringLiteral("thinking"), {{QStringLiteral("text"), bounded(text)}});
}

void AgentAdapter::emitToolCall(const QString &id, const QString &name, const QJsonValue &input)
{
    emitEvent(QStringLiteral("tool_call"), {{QStringLiteral("id"), id},
                                            {QStringLiteral("name"), name},
                                            {QStringLiteral("input"), input}});
}

void AgentAdapter::emitToolResult(const QString &id, const QString &name, const QString &output,
                                  bool isError)
{
    emitEvent(QStringLiteral("tool_result"), {{QStringLiteral("id"), id},
                                              {QStringLiteral("name"), name},
                                              {QStringLiteral("output"), bounded(output)},
                                              {QStringLiteral("isError"), isError}});
}

void AgentAdapter::emitFileChange(const QString &path, const QString &kind, bool ok,
                                  const QString &diff, const QString &content)
{
    QJsonObject e{{QStringLiteral("path"), path},
                  {QStringLiteral("kind"), kind},
                  {QStringLiteral("status"), ok ? QStringLiteral("ok") : QStringLiteral("failed")}};
    if (!diff.isEmpty())
        e.insert(QStringLiteral("diff"), bounded(diff));
    if (!content.isNull())
        e.insert(QStringLiteral("content"), bounded(content));
    emitEvent(QStringLiteral("file_change"), e);
    if (!ok) {
        m_failedChanges.insert(path,
                               QStringLiteral("%1 %2").arg(kind, path.isEmpty()
                                                                     ? QStringLiteral("(a file)")
                                                                     : path));
    } else {
        m_failedChanges.remove(path);
        m_failedChanges.remove(QString());
    }
}

void AgentAdapter::emitError(const QString &message)
{
    emitEvent(QStringLiteral("error"), {{QStringLiteral("message"), bounded(message)}});
}

void AgentAdapter::addUsage(qint64 input, qint64 output, qint64 cacheRead, qint64 cacheWrite,
                            qint64 reasoning, double costUsd)
{
    setTotals(m_input + input, m_output + output, m_cacheRead + cacheRead,
              m_cacheWrite + cacheWrite, m_reasoning + reasoning,
              costUsd < 0 ? m_cost : qMax(0.0, m_cost) + costUsd);
}

void AgentAdapter::setTotals(qint64 input, qint64 output, qint64 cacheRead, qint64 cacheWrite,
                             qint64 reasoning, double costUsd)
{
    m_input = input;
    m_output = output;
    m_cacheRead = cacheRead;
    m_cacheWrite = cacheWrite;
    m_reasoning = reasoning;
    m_cost = costUsd;
    QJsonObject e = usageObject();
    e.insert(QStringLiteral("costUsd"), m_cost < 0 ? QJsonValue() : QJsonValue(m_cost));
    emitEvent(QStringLiteral("usage"), e);
}

void AgentAdapter::setContext(qint64 tokens, qint64 window, bool announce)
{
    const qint64 t = tokens < 0 ? m_contextTokens : tokens;
    const qint64 w = window < 0 ? m_contextWindow : window;
    if (t == m_contextTokens && w == m_contextWindow)
        return;
    m_contextTokens = t;
    m_contextWindow = w;
    if (announce)
        setTotals(m_input, m_output, m_cacheRead, m_cacheWrite, m_reasoning, m_cost);
}

qint64 AgentAdapter::tokenCount(const QJsonValue &value)
{
    if (!value.isDouble())
        return -1;
    const double d = value.toDouble();
    // (NaN fails both comparisons.)
    if (!(d >= 0 && d <= 9007199254740992.0) || d != std::floor(d))
        return -1;
    return qint64(d);
}

QJsonObject AgentAdapter::usageObject() const
{
    const auto known = [](qint64 n) { return n < 0 ? QJsonValue() : QJsonValue(double(n)); };
    return {{QStringLiteral("inputTokens"), double(m_input)},
            {QStringLiteral("outputTokens"), double(m_output)},
            {QStringLiteral("cacheReadTokens"), double(m_cacheRead)},
            {QStringLiteral("cacheWriteTokens"), double(m_cacheWrite)},
            {QStringLiteral("reasoningTokens"), double(m_reasoning)},
            {QStringLiteral("contextTokens"), known(m_contextTokens)},
            {QStringLiteral("contextWindow"), known(m_contextWindow)}};
}

void AgentAdapter::setSession(const QString &id)
{
    if (id.isEmpty() || id == m_sessionId)
        return;
    m_sessionId = id;
    emitEvent(QStringLiteral("session"), {{QStringLiteral("sessionId"), id}});
}

void AgentAdapter::addPermissionDenial(const QString &tool, const QJsonValue &input)
{
    if (m_denials.size() < 50)
        m_denials.append(
            QJsonObject{{QStringLiteral("name"), tool}, {QStringLiteral("input"), input}});
}

void AgentAdapter::fail(const QString &reason)
{
    if (m_failure.isEmpty())
        m_failure = reason;
}

void AgentAdapter::abortRun(const QString &reason)
{
    if (m_abortReason.isEmpty()) {
        m_abortReason = reason;
        fail(reason);
        emitError(reason);
    }
}

QJsonObject AgentAdapter::finish(const Exit &exit)
{
    // Whatever is left without a newline is a last line.
    if (!m_stdoutBuffer.isEmpty())
        feedStdout("\n");
    if (!m_stderrBuffer.isEmpty())
        feedStderr("\n");
    complete(exit);
    if (!m_failedChanges.isEmpty())
        fail(QStringLiteral("a file change failed: ")
             + QStringList(m_failedChanges.values()).join(QStringLiteral(", ")));
    if (exit.timedOut)
        fail(QStringLiteral("the agent did not finish within %1 ms and was killed")
                 .arg(exit.timeoutMs));
    else if (m_abortReason.isEmpty() && exit.exitCode != 0) {
        QString why
            = QStringLiteral("the %1 CLI exited with status %2").arg(type()).arg(exit.exitCode);
        const QString tail = exit.stderrTail.trimmed().section(u'\n', -3);
        if (!tail.isEmpty())
            why += QStringLiteral(": ") + tail;
        fail(why);
    }
    if (m_failure.isEmpty() && !m_sawResult)
        fail(QStringLiteral("the %1 CLI ended without a final answer").arg(type()));

    const bool success = m_failure.isEmpty();
    const QJsonObject usage = usageObject();
    QJsonObject result{{QStringLiteral("success"), success},
                       {QStringLiteral("result"), m_resultText},
                       {QStringLiteral("sessionId"),
                        m_sessionId.isEmpty() ? QJsonValue() : QJsonValue(m_sessionId)},
                       {QStringLiteral("usage"), usage},
                       {QStringLiteral("costUsd"), m_cost < 0 ? QJsonValue() : QJsonValue(m_cost)},
                       {QStringLiteral("durationMs"), double(exit.durationMs)},
                       {QStringLiteral("exitCode"), exit.exitCode},
                       {QStringLiteral("timedOut"), exit.timedOut},
                       {QStringLiteral("error"), success ? QJsonValue() : QJsonValue(m_failure)}};
    const QJsonValue needs = needsInput(success);
    result.insert(QStringLiteral("needsInput"), needs);
    emitEvent(QStringLiteral("result"),
              {{QStringLiteral("success"), success},
               {QStringLiteral("result"), bounded(m_resultText)},
               {QStringLiteral("error"), result.value(QStringLiteral("error"))},
               {QStringLiteral("needsInput"), needs}});
    return result;
}

QJsonValue AgentAdapter::needsInput(bool success) const
{
    if (!m_denials.isEmpty())
        return QJsonObject{{QStringLiteral("reason"), QStringLiteral("permission")},
                           {QStringLiteral("tools"), m_denials}};
    // A run that ends on a question waits for the user's answer. The question is the last
    // paragraph of the final text.
    const QString text = m_resultText.trimmed();
    if (!success || !text.endsWith(u'?'))
        return QJsonValue::Null;
    QString question = text.section(QStringLiteral("\n\n"), -1).trimmed();
    if (question.size() > 2000)
        question = question.right(2000);
    return QJsonObject{{QStringLiteral("reason"), QStringLiteral("question")},
                       {QStringLiteral("question"), question}};
}

QString diffForNewFile(const QString &path, const QString &content)
{
    QStringList lines = content.split(u'\n');
    if (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    QString diff = QStringLiteral("--- /dev/null\n+++ ") + path
                   + QStringLiteral("\n@@ -0,0 +1,%1 @@\n").arg(lines.size());
    for (const QString &l : std::as_const(lines))
        diff += u'+' + l + u'\n';
    return diff;
}

} // namespace Sandbox::Engine

namespace Sandbox::Engine {

QList<QPair<QString, QString>> filesInPatch(const QString &patch)
{
    QList<QPair<QString, QString>> out;
    static const struct
    {
        const char *marker;
        const char *kind;
    } markers[] = {{"*** Add File: ", "add"},
                   {"*** Update File: ", "update"},
                   {"*** Delete File: ", "delete"}};
    for (const QString &line : patch.split(u'\n')) {
        for (const auto &m : markers) {
            if (line.startsWith(QLatin1String(m.marker)))
                out.append(
                    {line.mid(qsizetype(qstrlen(m.marker))).trimmed(), QLatin1String(m.kind)});
        }
    }
    return out;
}

} // namespace Sandbox::Engine
