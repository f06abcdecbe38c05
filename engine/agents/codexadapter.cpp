#include "codexadapter.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace Sandbox::Engine {

namespace {

constexpr const char *kDefaultModel = "gpt-5.5";
constexpr const char *kDefaultBaseUrl = "https://api.openai.com/v1";
// Codex reports each failed connection as an `error` "Reconnecting..." and never gives up.
constexpr int kUnreachableAfter = 2;

// A TOML basic string (JSON's string syntax is a subset that TOML accepts).
QString toml(const QString &s)
{
    const QByteArray json = QJsonDocument(QJsonArray{s}).toJson(QJsonDocument::Compact);
    return QString::fromUtf8(json.mid(1, json.size() - 2));
}

} // namespace

AgentInvocation CodexAdapter::invocation(const AgentRunOptions &o) const
{
    QString baseUrl = o.baseUrl;
    if (baseUrl.isEmpty())
        baseUrl = o.env.value(QStringLiteral("OPENAI_BASE_URL"), QLatin1String(kDefaultBaseUrl));
    if (!baseUrl.endsWith(QLatin1String("/v1")) && !baseUrl.contains(QLatin1String("/v1/")))
        baseUrl = (baseUrl.endsWith(u'/') ? baseUrl.chopped(1) : baseUrl) + QStringLiteral("/v1");

    AgentInvocation inv;
    inv.argv = {QLatin1String(CliDir) + QStringLiteral("/node_modules/.bin/codex"),
                QStringLiteral("exec"), QStringLiteral("--skip-git-repo-check"),
                QStringLiteral("--json"),
                QStringLiteral("--dangerously-bypass-approvals-and-sandbox")};
    const auto config = [&inv](const QString &key, const QString &value) {
        inv.argv << QStringLiteral("-c") << key + u'=' + value;
    };
    config(QStringLiteral("model_provider"), toml(QStringLiteral("sandbox")));
    config(QStringLiteral("model_providers.sandbox.name"), toml(QStringLiteral("sandbox")));
    config(QStringLiteral("model_providers.sandbox.base_url"), toml(baseUrl));
    config(QStringLiteral("model_providers.sandbox.wire_api"), toml(QStringLiteral("responses")));
    config(QStringLiteral("model_providers.sandbox.env_key"),
           toml(QStringLiteral("OPENAI_API_KEY")));
    config(QStringLiteral("model_providers.sandbox.request_max_retries"), QStringLiteral("1"));
    config(QStringLiteral("model_providers.sandbox.stream_max_retries"), QStringLiteral("1"));
    if (!o.systemPrompt.isEmpty())
        config(QStringLiteral("developer_instructions"), toml(o.systemPrompt));
    if (o.maxThinkingTokens == 0)
        config(QStringLiteral("model_reasoning_effort"), toml(QStringLiteral("minimal")));
    inv.argv << QStringLiteral("-m")
             << (o.model.isEmpty() ? QLatin1String(kDefaultModel) : o.model);
    // A prompt that starts with '-' would be read as an option.
    const QString prompt = o.prompt.startsWith(u'-') ? u' ' + o.prompt : o.prompt;
    if (!o.sessionId.isEmpty())
        inv.argv << QStringLiteral("resume") << o.sessionId;
    inv.argv << prompt;

    inv.env.insert(QStringLiteral("HOME"), QLatin1String(HomeDir));
    inv.env.insert(QStringLiteral("CODEX_HOME"), QLatin1String(HomeDir) + QStringLiteral("/.codex"));
    return inv;
}

void CodexAdapter::parseLine(const QJsonObject &line)
{
    const QString type = line.value(QStringLiteral("type")).toString();
    if (type == QLatin1String("thread.started")) {
        setSession(line.value(QStringLiteral("thread_id")).toString());
    } else if (type == QLatin1String("item.started") || type == QLatin1String("item.completed")) {
        onItem(line.value(QStringLiteral("item")).toObject(),
               type == QLatin1String("item.completed"));
    } else if (type == QLatin1String("turn.completed")) {
        m_sawResult = true;
        const QJsonObject u = line.value(QStringLiteral("usage")).toObject();
        addUsage(qint64(u.value(QStringLiteral("input_tokens")).toDouble()),
                 qint64(u.value(QStringLiteral("output_tokens")).toDouble()),
                 qint64(u.value(QStringLiteral("cached_input_tokens")).toDouble()),
                 qint64(u.value(QStringLiteral("cache_write_input_tokens")).toDouble()),
                 qint64(u.value(QStringLiteral("reasoning_output_tokens")).toDouble()));
    } else if (type == QLatin1String("turn.failed")) {
        const QString message = line.value(QStringLiteral("error"))
                                    .toObject()
                                    .value(QStringLiteral("message"))
                                    .toString(QStringLiteral("the turn failed"));
        emitError(message);
        fail(message);
    } else if (type == QLatin1String("error")) {
        const QString message = line.value(QStringLiteral("message")).toString();
        const bool connection = message.contains(QLatin1String("Connection failed"))
                                || message.contains(QLatin1String("waiting for network"));
        if (!connection) {
            emitError(message);
            return;
        }
        if (++m_connectionFailures >= kUnreachableAfter)
            abortRun(QStringLiteral("the model API is unreachable: ") + message);
    }
}

void CodexAdapter::onItem(const QJsonObject &item, bool completed)
{
    const QString id = item.value(QStringLiteral("id")).toString();
    const QString kind = item.value(QStringLiteral("type")).toString();
    const QString status = item.value(QStringLiteral("status")).toString();
    if (kind == QLatin1String("agent_message")) {
        if (completed)
            emitText(item.value(QStringLiteral("text")).toString());
    } else if (kind == QLatin1String("reasoning")) {
        if (completed)
            emitThinking(item.value(QStringLiteral("text")).toString());
    } else if (kind == QLatin1String("command_execution")) {
        if (!completed) {
            emitToolCall(id, QStringLiteral("shell"),
                         QJsonObject{
                             {QStringLiteral("command"), item.value(QStringLiteral("command"))}});
        } else {
            const int exitCode = item.value(QStringLiteral("exit_code")).toInt(-1);
            emitToolResult(id, QStringLiteral("shell"),
                           item.value(QStringLiteral("aggregated_output")).toString(),
                           exitCode != 0 || status == QLatin1String("failed"));
        }
    } else if (kind == QLatin1String("file_change")) {
        const QJsonArray changes = item.value(QStringLiteral("changes")).toArray();
        if (!completed) {
            emitToolCall(id, QStringLiteral("apply_patch"),
                         QJsonObject{{QStringLiteral("changes"), changes}});
            return;
        }
        const bool ok = status == QLatin1String("completed");
        emitToolResult(id, QStringLiteral("apply_patch"),
                       ok ? QStringLiteral("applied") : QStringLiteral("failed"), !ok);
        for (const QJsonValue &c : changes) {
            const QJsonObject change = c.toObject();
            emitFileChange(change.value(QStringLiteral("path")).toString(),
                           change.value(QStringLiteral("kind")).toString(QStringLiteral("update")),
                           ok);
        }
    } else if (kind == QLatin1String("mcp_tool_call")) {
        const QString name = item.value(QStringLiteral("server")).toString() + u'.'
                             + item.value(QStringLiteral("tool")).toString();
        if (!completed)
            emitToolCall(id, name, item.value(QStringLiteral("arguments")));
        else
            emitToolResult(id, name,
                           QString::fromUtf8(
                               QJsonDocument(item.value(QStringLiteral("result")).toObject())
                                   .toJson(QJsonDocument::Compact)),
                           status == QLatin1String("failed"));
    } else if (kind == QLatin1String("web_search")) {
        if (!completed)
            emitToolCall(id, QStringLiteral("web_search"),
                         QJsonObject{
                             {QStringLiteral("query"), item.value(QStringLiteral("query"))}});
    } else if (kind == QLatin1String("error")) {
        emitError(item.value(QStringLiteral("message")).toString());
    }
}

} // namespace Sandbox::Engine
