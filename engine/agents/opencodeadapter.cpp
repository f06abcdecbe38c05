#include "opencodeadapter.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace Sandbox::Engine {

namespace {

constexpr const char *kDefaultModel = "gpt-5.5";
constexpr const char *kDefaultBaseUrl = "https://api.openai.com/v1";
constexpr const char *kDefaultAnthropicModel = "claude-sonnet-4-20250514";
constexpr const char *kDefaultAnthropicBaseUrl = "https://api.anthropic.com/v1";
constexpr const char *kDefaultOllamaModel = "llama3.1";
constexpr const char *kDefaultOllamaBaseUrl = "http://127.0.0.1:11434/v1";
constexpr int kUnreachableAfter = 2;
constexpr const char *kInstructionsFile = ".config/sandbox/instructions.md";

bool isFileTool(const QString &name)
{
    return name == QLatin1String("write") || name == QLatin1String("edit")
           || name == QLatin1String("patch") || name == QLatin1String("multiedit")
           || name == QLatin1String("apply_patch");
}

} // namespace

AgentInvocation OpenCodeAdapter::invocation(const AgentRunOptions &o) const
{
    // One provider: OpenAI-compatible Chat Completions ("sandbox": openai, and ollama without a
    // key), or Anthropic's Messages API (OpenCode's own "anthropic", pointed at baseUrl).
    const bool anthropic = o.provider == QLatin1String("anthropic");
    const bool ollama = o.provider == QLatin1String("ollama");
    const QString provider = anthropic ? QStringLiteral("anthropic") : QStringLiteral("sandbox");
    QString baseUrl = o.baseUrl;
    if (baseUrl.isEmpty())
        baseUrl = anthropic ? o.env.value(QStringLiteral("ANTHROPIC_BASE_URL"),
                                          QLatin1String(kDefaultAnthropicBaseUrl))
                  : ollama  ? QLatin1String(kDefaultOllamaBaseUrl)
                            : o.env.value(QStringLiteral("OPENAI_BASE_URL"),
                                          QLatin1String(kDefaultBaseUrl));
    if (!baseUrl.endsWith(QLatin1String("/v1")) && !baseUrl.contains(QLatin1String("/v1/")))
        baseUrl = (baseUrl.endsWith(u'/') ? baseUrl.chopped(1) : baseUrl) + QStringLiteral("/v1");
    QString model = o.model.isEmpty() ? QLatin1String(anthropic ? kDefaultAnthropicModel
                                                      : ollama  ? kDefaultOllamaModel
                                                                : kDefaultModel)
                                      : o.model;
    for (const QString &prefix : {provider, o.provider, QStringLiteral("sandbox")}) {
        if (!prefix.isEmpty() && model.startsWith(prefix + u'/'))
            model = model.mid(prefix.size() + 1);
    }

    // `external_directory`: OpenCode asks (and, run without a person, refuses) before it touches
    // a path outside the directory it started in. The sandbox is the boundary, and in container
    // mode the start directory is the workspace's real path (/data/sandboxes/ID/workspace), so
    // `/workspace/x` would count as outside: where edits are allowed, so are other directories.
    QJsonObject permission;
    if (o.permissionMode == QLatin1String("bypassPermissions"))
        permission = {{QStringLiteral("edit"), QStringLiteral("allow")},
                      {QStringLiteral("bash"), QStringLiteral("allow")},
                      {QStringLiteral("webfetch"), QStringLiteral("allow")},
                      {QStringLiteral("external_directory"), QStringLiteral("allow")}};
    else if (o.permissionMode == QLatin1String("acceptEdits"))
        permission = {{QStringLiteral("edit"), QStringLiteral("allow")},
                      {QStringLiteral("bash"), QStringLiteral("deny")},
                      {QStringLiteral("webfetch"), QStringLiteral("deny")},
                      {QStringLiteral("external_directory"), QStringLiteral("allow")}};
    else
        permission = {{QStringLiteral("edit"), QStringLiteral("deny")},
                      {QStringLiteral("bash"), QStringLiteral("deny")},
                      {QStringLiteral("webfetch"), QStringLiteral("deny")}};

    QJsonObject models;
    models.insert(model, QJsonObject{{QStringLiteral("name"), model}});
    const QJsonObject providerConfig{
        {QStringLiteral("npm"), anthropic ? QStringLiteral("@ai-sdk/anthropic")
                                          : QStringLiteral("@ai-sdk/openai-compatible")},
        {QStringLiteral("name"), o.provider.isEmpty() ? provider : o.provider},
        {QStringLiteral("options"),
         QJsonObject{{QStringLiteral("baseURL"), baseUrl},
                     {QStringLiteral("apiKey"),
                      anthropic ? QStringLiteral("{env:ANTHROPIC_API_KEY}")
                      : ollama  ? QStringLiteral("ollama")
                                : QStringLiteral("{env:OPENAI_API_KEY}")}}},
        {QStringLiteral("models"), models},
    };
    QJsonObject config;
    config.insert(QStringLiteral("$schema"), QStringLiteral("https://opencode.ai/config.json"));
    config.insert(QStringLiteral("provider"), QJsonObject{{provider, providerConfig}});
    config.insert(QStringLiteral("model"), QString(provider + u'/' + model));
    config.insert(QStringLiteral("small_model"), QString(provider + u'/' + model));
    config.insert(QStringLiteral("permission"), permission);
    config.insert(QStringLiteral("autoupdate"), false);
    config.insert(QStringLiteral("share"), QStringLiteral("disabled"));
    QJsonObject tools;
    for (const QString &t : o.allowedTools)
        tools.insert(t.toLower(), true);
    for (const QString &t : o.disallowedTools)
        tools.insert(t.toLower(), false);
    if (!tools.isEmpty())
        config.insert(QStringLiteral("tools"), tools);

    AgentInvocation inv;
    if (!o.systemPrompt.isEmpty()) {
        inv.homeFiles.insert(QLatin1String(kInstructionsFile), o.systemPrompt.toUtf8());
        config.insert(QStringLiteral("instructions"),
                      QJsonArray{QString(QLatin1String(HomeDir) + u'/'
                                         + QLatin1String(kInstructionsFile))});
    }

    inv.argv = {QLatin1String(CliDir) + QStringLiteral("/node_modules/.bin/opencode"),
                QStringLiteral("--print-logs"),
                QStringLiteral("--log-level"),
                QStringLiteral("ERROR"),
                QStringLiteral("run"),
                QStringLiteral("--pure"),
                QStringLiteral("--format"),
                QStringLiteral("json")};
    if (!o.sessionId.isEmpty())
        inv.argv << QStringLiteral("--session") << o.sessionId;
    inv.argv << QStringLiteral("--") << o.prompt;

    inv.env.insert(QStringLiteral("HOME"), QLatin1String(HomeDir));
    inv.env.insert(QStringLiteral("OPENCODE_CONFIG_CONTENT"),
                   QString::fromUtf8(QJsonDocument(config).toJson(QJsonDocument::Compact)));
    for (const char *flag : {"OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE",
                             "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_DEFAULT_PLUGINS",
                             "OPENCODE_DISABLE_SHARE"})
        inv.env.insert(QLatin1String(flag), QStringLiteral("1"));
    return inv;
}

void OpenCodeAdapter::parseLine(const QJsonObject &line)
{
    const QString type = line.value(QStringLiteral("type")).toString();
    setSession(line.value(QStringLiteral("sessionID")).toString());
    const QJsonObject part = line.value(QStringLiteral("part")).toObject();
    if (type == QLatin1String("text")) {
        emitText(part.value(QStringLiteral("text")).toString());
    } else if (type == QLatin1String("reasoning")) {
        emitThinking(part.value(QStringLiteral("text")).toString());
    } else if (type == QLatin1String("tool_use")) {
        onToolUse(part);
    } else if (type == QLatin1String("step_finish")) {
        const QJsonObject t = part.value(QStringLiteral("tokens")).toObject();
        const QJsonObject cache = t.value(QStringLiteral("cache")).toObject();
        addUsage(qint64(t.value(QStringLiteral("input")).toDouble()),
                 qint64(t.value(QStringLiteral("output")).toDouble()),
                 qint64(cache.value(QStringLiteral("read")).toDouble()),
                 qint64(cache.value(QStringLiteral("write")).toDouble()),
                 qint64(t.value(QStringLiteral("reasoning")).toDouble()),
                 part.value(QStringLiteral("cost")).toDouble(-1));
        const QString reason = part.value(QStringLiteral("reason")).toString();
        if (reason != QLatin1String("tool-calls"))
            m_sawResult = true;
    } else if (type == QLatin1String("error")) {
        const QJsonObject error = line.value(QStringLiteral("error")).toObject();
        QString message = error.value(QStringLiteral("data"))
                              .toObject()
                              .value(QStringLiteral("message"))
                              .toString();
        if (message.isEmpty())
            message = error.value(QStringLiteral("name"))
                          .toString(QStringLiteral("OpenCode reported an error"));
        emitError(message);
        fail(message);
    }
}

void OpenCodeAdapter::onToolUse(const QJsonObject &part)
{
    const QString id = part.value(QStringLiteral("callID")).toString();
    const QString tool = part.value(QStringLiteral("tool")).toString();
    const QJsonObject state = part.value(QStringLiteral("state")).toObject();
    const QString status = state.value(QStringLiteral("status")).toString();
    const QJsonObject input = state.value(QStringLiteral("input")).toObject();
    emitToolCall(id, tool, input);
    if (status != QLatin1String("completed") && status != QLatin1String("error"))
        return;
    const bool isError = status == QLatin1String("error");
    emitToolResult(id, tool,
                   isError ? state.value(QStringLiteral("error")).toString()
                           : state.value(QStringLiteral("output")).toString(),
                   isError);
    if (!isFileTool(tool))
        return;
    const QJsonObject meta = state.value(QStringLiteral("metadata")).toObject();
    if (tool == QLatin1String("apply_patch") || tool == QLatin1String("patch")) {
        const auto files = filesInPatch(input.value(QStringLiteral("patchText")).toString());
        if (files.isEmpty())
            emitFileChange(QString(), QStringLiteral("update"), !isError);
        for (const auto &[path, kind] : files)
            emitFileChange(path, kind, !isError, meta.value(QStringLiteral("diff")).toString());
        return;
    }
    const QString path = input.value(QStringLiteral("filePath"))
                             .toString(meta.value(QStringLiteral("filepath")).toString());
    const bool existed = meta.value(QStringLiteral("exists")).toBool(tool != QLatin1String("write"));
    const QString kind = existed ? QStringLiteral("update") : QStringLiteral("add");
    QString diff = meta.value(QStringLiteral("diff")).toString();
    const QString content = input.value(QStringLiteral("content")).toString();
    if (diff.isEmpty() && tool == QLatin1String("write") && !existed)
        diff = diffForNewFile(path, content);
    emitFileChange(path, kind, !isError, diff, tool == QLatin1String("write") ? content : QString());
}

void OpenCodeAdapter::parseStderrLine(const QByteArray &line)
{
    if (!line.contains("level=ERROR"))
        return;
    const bool connection = line.contains("Cannot connect to API")
                            || line.contains("Unable to connect");
    // Title requests (small=true) fail too; count the agent's own calls.
    if (connection && !line.contains("small=true") && ++m_connectionFailures >= kUnreachableAfter)
        abortRun(QStringLiteral(
                     "the model API is unreachable: OpenCode could not connect to it (%1 attempts)")
                     .arg(m_connectionFailures));
}

} // namespace Sandbox::Engine
