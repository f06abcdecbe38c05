#include "agenttypes.h"

namespace Sandbox {

namespace {

Error malformed(const QString &object, const QString &field)
{
    return Error{ErrorCode::InternalError,
                 QStringLiteral("malformed %1 from server: field \"%2\"").arg(object, field),
                 QJsonObject{{QStringLiteral("object"), object}, {QStringLiteral("field"), field}}};
}

AgentEvent::Type typeOf(const QString &name)
{
    static const QHash<QString, AgentEvent::Type> types{
        {QStringLiteral("session"), AgentEvent::Type::Session},
        {QStringLiteral("text"), AgentEvent::Type::Text},
        {QStringLiteral("thinking"), AgentEvent::Type::Thinking},
        {QStringLiteral("tool_call"), AgentEvent::Type::ToolCall},
        {QStringLiteral("tool_result"), AgentEvent::Type::ToolResult},
        {QStringLiteral("file_change"), AgentEvent::Type::FileChange},
        {QStringLiteral("usage"), AgentEvent::Type::Usage},
        {QStringLiteral("error"), AgentEvent::Type::Error},
        {QStringLiteral("result"), AgentEvent::Type::Result},
    };
    return types.value(name, AgentEvent::Type::Other);
}

} // namespace

AgentUsage AgentUsage::fromJson(const QJsonObject &o, const QJsonValue &costUsd)
{
    AgentUsage u;
    u.inputTokens = qint64(o.value(QStringLiteral("inputTokens")).toDouble());
    u.outputTokens = qint64(o.value(QStringLiteral("outputTokens")).toDouble());
    u.cacheReadTokens = qint64(o.value(QStringLiteral("cacheReadTokens")).toDouble());
    u.cacheWriteTokens = qint64(o.value(QStringLiteral("cacheWriteTokens")).toDouble());
    u.reasoningTokens = qint64(o.value(QStringLiteral("reasoningTokens")).toDouble());
    if (costUsd.isDouble())
        u.costUsd = costUsd.toDouble();
    return u;
}

Result<AgentEvent> AgentEvent::fromJson(const QJsonValue &value)
{
    const QJsonObject o = value.toObject();
    if (!value.isObject() || !o.value(QStringLiteral("type")).isString())
        return malformed(QStringLiteral("agent event"), QStringLiteral("type"));
    AgentEvent e;
    e.raw = o;
    e.typeName = o.value(QStringLiteral("type")).toString();
    e.type = typeOf(e.typeName);
    e.turn = o.value(QStringLiteral("turn")).toInt();
    switch (e.type) {
    case Type::Session:
        e.sessionId = o.value(QStringLiteral("sessionId")).toString();
        break;
    case Type::Text:
    case Type::Thinking:
        e.text = o.value(QStringLiteral("text")).toString();
        break;
    case Type::ToolCall:
        e.id = o.value(QStringLiteral("id")).toString();
        e.name = o.value(QStringLiteral("name")).toString();
        e.input = o.value(QStringLiteral("input"));
        break;
    case Type::ToolResult:
        e.id = o.value(QStringLiteral("id")).toString();
        e.name = o.value(QStringLiteral("name")).toString();
        e.output = o.value(QStringLiteral("output")).toString();
        e.isError = o.value(QStringLiteral("isError")).toBool();
        break;
    case Type::FileChange:
        e.path = o.value(QStringLiteral("path")).toString();
        e.changeKind = o.value(QStringLiteral("kind")).toString();
        e.isError = o.value(QStringLiteral("status")).toString() == QLatin1String("failed");
        e.diff = o.value(QStringLiteral("diff")).toString();
        e.content = o.value(QStringLiteral("content")).toString();
        break;
    case Type::Usage:
        e.usage = AgentUsage::fromJson(o, o.value(QStringLiteral("costUsd")));
        break;
    case Type::Error:
        e.text = o.value(QStringLiteral("message")).toString();
        break;
    case Type::Result:
        e.text = o.value(QStringLiteral("result")).toString();
        e.isError = !o.value(QStringLiteral("success")).toBool();
        e.output = o.value(QStringLiteral("error")).toString();
        break;
    case Type::Other:
        break;
    }
    return e;
}

Result<AgentRunResult> AgentRunResult::fromJson(const QJsonValue &value)
{
    const QJsonObject o = value.toObject();
    if (!value.isObject())
        return malformed(QStringLiteral("agent run result"), QStringLiteral("(object)"));
    if (!o.value(QStringLiteral("success")).isBool())
        return malformed(QStringLiteral("agent run result"), QStringLiteral("success"));
    AgentRunResult r;
    r.success = o.value(QStringLiteral("success")).toBool();
    r.result = o.value(QStringLiteral("result")).toString();
    r.error = o.value(QStringLiteral("error")).toString();
    r.sessionId = o.value(QStringLiteral("sessionId")).toString();
    r.usage = AgentUsage::fromJson(o.value(QStringLiteral("usage")).toObject(),
                                   o.value(QStringLiteral("costUsd")));
    r.durationMs = qint64(o.value(QStringLiteral("durationMs")).toDouble());
    if (o.value(QStringLiteral("exitCode")).isDouble())
        r.exitCode = o.value(QStringLiteral("exitCode")).toInt();
    r.timedOut = o.value(QStringLiteral("timedOut")).toBool();
    r.standardOutput = o.value(QStringLiteral("stdout")).toString().toUtf8();
    r.streamId = o.value(QStringLiteral("streamId")).toString();
    r.turns = o.value(QStringLiteral("turns")).toArray();
    return r;
}

QJsonObject AgentRunOptions::toJson() const
{
    QJsonObject o;
    if (!model.isEmpty())
        o.insert(QStringLiteral("model"), model);
    if (!permissionMode.isEmpty())
        o.insert(QStringLiteral("permissionMode"), permissionMode);
    if (maxThinkingTokens)
        o.insert(QStringLiteral("maxThinkingTokens"), double(*maxThinkingTokens));
    if (!systemPrompt.isEmpty())
        o.insert(QStringLiteral("systemPrompt"), systemPrompt);
    if (!allowedTools.isEmpty())
        o.insert(QStringLiteral("allowedTools"), QJsonArray::fromStringList(allowedTools));
    if (!disallowedTools.isEmpty())
        o.insert(QStringLiteral("disallowedTools"), QJsonArray::fromStringList(disallowedTools));
    if (timeoutMs)
        o.insert(QStringLiteral("timeout"), double(*timeoutMs));
    if (!sessionId.isEmpty())
        o.insert(QStringLiteral("sessionId"), sessionId);
    if (newSession)
        o.insert(QStringLiteral("newSession"), true);
    if (!cwd.isEmpty())
        o.insert(QStringLiteral("cwd"), cwd);
    if (!baseUrl.isEmpty())
        o.insert(QStringLiteral("baseUrl"), baseUrl);
    if (!env.isEmpty()) {
        QJsonObject e;
        for (auto it = env.cbegin(); it != env.cend(); ++it)
            e.insert(it.key(), it.value());
        o.insert(QStringLiteral("env"), e);
    }
    return o;
}

} // namespace Sandbox
