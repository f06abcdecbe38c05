#include "claudecodeadapter.h"

#include <QJsonArray>

namespace Sandbox::Engine {

namespace {

// Claude Code's own retries of a model call (its default is 10, with a growing back-off of
// minutes); a run that cannot reach its model should fail in seconds, not minutes.
constexpr const char *kDefaultMaxRetries = "2";
// Connection failures in a row after which the run is given up as "unreachable".
constexpr int kUnreachableAfter = 3;

bool isFileTool(const QString &name)
{
    return name == QLatin1String("Write") || name == QLatin1String("Edit")
           || name == QLatin1String("MultiEdit") || name == QLatin1String("NotebookEdit");
}

QString textOfContent(const QJsonValue &content)
{
    if (content.isString())
        return content.toString();
    QStringList parts;
    for (const QJsonValue &v : content.toArray()) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("type")).toString() == QLatin1String("text"))
            parts.append(o.value(QStringLiteral("text")).toString());
    }
    return parts.join(u'\n');
}

// Claude's structuredPatch (hunks of {oldStart, oldLines, newStart, newLines, lines}) as a
// unified diff.
QString unifiedDiff(const QString &path, const QJsonArray &hunks)
{
    if (hunks.isEmpty())
        return {};
    QString diff = QStringLiteral("--- ") + path + QStringLiteral("\n+++ ") + path + u'\n';
    for (const QJsonValue &h : hunks) {
        const QJsonObject o = h.toObject();
        diff += QStringLiteral("@@ -%1,%2 +%3,%4 @@\n")
                    .arg(o.value(QStringLiteral("oldStart")).toInt())
                    .arg(o.value(QStringLiteral("oldLines")).toInt())
                    .arg(o.value(QStringLiteral("newStart")).toInt())
                    .arg(o.value(QStringLiteral("newLines")).toInt());
        for (const QJsonValue &l : o.value(QStringLiteral("lines")).toArray())
            diff += l.toString() + u'\n';
    }
    return diff;
}

} // namespace

AgentInvocation ClaudeCodeAdapter::invocation(const AgentRunOptions &o) const
{
    AgentInvocation inv;
    inv.argv = {QLatin1String(CliDir) + QStringLiteral("/node_modules/.bin/claude"),
                QStringLiteral("-p"),
                o.prompt,
                QStringLiteral("--output-format"),
                QStringLiteral("stream-json"),
                QStringLiteral("--verbose"),
                QStringLiteral("--permission-mode"),
                o.permissionMode};
    if (!o.model.isEmpty())
        inv.argv << QStringLiteral("--model") << o.model;
    if (o.maxThinkingTokens >= 0)
        inv.argv << QStringLiteral("--max-thinking-tokens") << QString::number(o.maxThinkingTokens);
    if (!o.systemPrompt.isEmpty())
        inv.argv << QStringLiteral("--append-system-prompt") << o.systemPrompt;
    if (!o.allowedTools.isEmpty())
        inv.argv << QStringLiteral("--allowedTools") << o.allowedTools.join(u',');
    if (!o.disallowedTools.isEmpty())
        inv.argv << QStringLiteral("--disallowedTools") << o.disallowedTools.join(u',');
    if (!o.sessionId.isEmpty())
        inv.argv << QStringLiteral("--resume") << o.sessionId;

    inv.env.insert(QStringLiteral("HOME"), QLatin1String(HomeDir));
    inv.env.insert(QStringLiteral("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), QStringLiteral("1"));
    inv.env.insert(QStringLiteral("DISABLE_AUTOUPDATER"), QStringLiteral("1"));
    inv.env.insert(QStringLiteral("DISABLE_TELEMETRY"), QStringLiteral("1"));
    // The sandbox is the isolation; Claude Code wants to be told so for bypassPermissions.
    inv.env.insert(QStringLiteral("IS_SANDBOX"), QStringLiteral("1"));
    if (!o.env.contains(QStringLiteral("CLAUDE_CODE_MAX_RETRIES")))
        inv.env.insert(QStringLiteral("CLAUDE_CODE_MAX_RETRIES"), QLatin1String(kDefaultMaxRetries));
    if (!o.baseUrl.isEmpty())
        inv.env.insert(QStringLiteral("ANTHROPIC_BASE_URL"), o.baseUrl);
    return inv;
}

void ClaudeCodeAdapter::parseLine(const QJsonObject &line)
{
    const QString type = line.value(QStringLiteral("type")).toString();
    const QString subtype = line.value(QStringLiteral("subtype")).toString();
    if (type == QLatin1String("system")) {
        setSession(line.value(QStringLiteral("session_id")).toString());
        if (subtype == QLatin1String("api_retry")) {
            // error_status null: no HTTP answer at all (refused, DNS, timeout).
            if (line.value(QStringLiteral("error_status")).isNull()) {
                if (++m_connectionRetries >= kUnreachableAfter)
                    abortRun(QStringLiteral(
                                 "the model API is unreachable (%1 connection failures in a row)")
                                 .arg(m_connectionRetries));
            } else {
                m_connectionRetries = 0;
            }
        }
    } else if (type == QLatin1String("assistant")) {
        setSession(line.value(QStringLiteral("session_id")).toString());
        const QJsonObject message = line.value(QStringLiteral("message")).toObject();
        // The context in use: what the model read on this call. A subagent's calls (a Task
        // tool's) have a context of their own and are not the session's.
        const QJsonValue parent = line.value(QStringLiteral("parent_tool_use_id"));
        if (parent.isNull() || parent.isUndefined()) {
            const QJsonObject u = message.value(QStringLiteral("usage")).toObject();
            // (A message Claude Code makes up for a failed call reads nothing: no context.)
            const qint64 input = tokenCount(u.value(QStringLiteral("input_tokens")));
            const qint64 read
                = input
                  + qMax<qint64>(0, tokenCount(u.value(QStringLiteral("cache_read_input_tokens"))))
                  + qMax<qint64>(0, tokenCount(
                                        u.value(QStringLiteral("cache_creation_input_tokens"))));
            if (input >= 0 && read > 0) {
                if (const QString model = message.value(QStringLiteral("model")).toString();
                    !model.isEmpty() && model.size() <= 200)
                    m_model = model;
                setContext(read, -1, true);
            }
        }
        onAssistant(message);
    } else if (type == QLatin1String("user")) {
        onToolResults(line);
    } else if (type == QLatin1String("result")) {
        onResult(line);
    }
}

void ClaudeCodeAdapter::onAssistant(const QJsonObject &message)
{
    for (const QJsonValue &v : message.value(QStringLiteral("content")).toArray()) {
        const QJsonObject block = v.toObject();
        const QString kind = block.value(QStringLiteral("type")).toString();
        if (kind == QLatin1String("text")) {
            emitText(block.value(QStringLiteral("text")).toString());
        } else if (kind == QLatin1String("thinking")) {
            emitThinking(block.value(QStringLiteral("thinking")).toString());
        } else if (kind == QLatin1String("tool_use")) {
            const QString id = block.value(QStringLiteral("id")).toString();
            const QString name = block.value(QStringLiteral("name")).toString();
            const QJsonObject input = block.value(QStringLiteral("input")).toObject();
            m_toolUses.insert(id, {name, input});
            emitToolCall(id, name, input);
        }
    }
}

void ClaudeCodeAdapter::onToolResults(const QJsonObject &line)
{
    const QJsonObject details = line.value(QStringLiteral("tool_use_result")).toObject();
    const QJsonArray content
        = line.value(QStringLiteral("message")).toObject().value(QStringLiteral("content")).toArray();
    for (const QJsonValue &v : content) {
        const QJsonObject block = v.toObject();
        if (block.value(QStringLiteral("type")).toString() != QLatin1String("tool_result"))
            continue;
        const QString id = block.value(QStringLiteral("tool_use_id")).toString();
        const bool isError = block.value(QStringLiteral("is_error")).toBool();
        const QString output = textOfContent(block.value(QStringLiteral("content")));
        const ToolUse use = m_toolUses.value(id);
        emitToolResult(id, use.name, output, isError);
        if (!isFileTool(use.name))
            continue;
        const QString path
            = details.value(QStringLiteral("filePath"))
                  .toString(
                      use.input.value(QStringLiteral("file_path"))
                          .toString(use.input.value(QStringLiteral("notebook_path")).toString()));
        const bool created = details.value(QStringLiteral("type")).toString()
                             == QLatin1String("create");
        const QString kind = created ? QStringLiteral("add") : QStringLiteral("update");
        QString diff = unifiedDiff(path, details.value(QStringLiteral("structuredPatch")).toArray());
        const QString newContent = details.value(QStringLiteral("content"))
                                       .toString(
                                           use.input.value(QStringLiteral("content")).toString());
        if (diff.isEmpty() && created)
            diff = diffForNewFile(path, newContent);
        emitFileChange(path, kind, !isError, diff, created ? newContent : QString());
    }
}

void ClaudeCodeAdapter::onResult(const QJsonObject &line)
{
    m_sawResult = true;
    setSession(line.value(QStringLiteral("session_id")).toString());
    const QJsonValue result = line.value(QStringLiteral("result"));
    if (result.isString() && !result.toString().isEmpty())
        m_resultText = result.toString();
    // The context window of the session's model (Claude Code names it per model in modelUsage):
    // the model its messages came from, else the one that read the most.
    const QJsonObject perModel = line.value(QStringLiteral("modelUsage")).toObject();
    QJsonObject main = perModel.value(m_model).toObject();
    if (main.isEmpty()) {
        qint64 most = -1;
        for (auto it = perModel.begin(); it != perModel.end(); ++it) {
            const QJsonObject m = it.value().toObject();
            const qint64 read
                = qMax<qint64>(0, tokenCount(m.value(QStringLiteral("inputTokens"))))
                  + qMax<qint64>(0, tokenCount(m.value(QStringLiteral("cacheReadInputTokens"))))
                  + qMax<qint64>(0,
                                 tokenCount(m.value(QStringLiteral("cacheCreationInputTokens"))));
            if (read > most) {
                most = read;
                main = m;
            }
        }
    }
    const qint64 window = tokenCount(main.value(QStringLiteral("contextWindow")));
    setContext(-1, window > 0 ? window : -1, false); // said by the totals' usage event below
    const QJsonObject u = line.value(QStringLiteral("usage")).toObject();
    setTotals(qint64(u.value(QStringLiteral("input_tokens")).toDouble()),
              qint64(u.value(QStringLiteral("output_tokens")).toDouble()),
              qint64(u.value(QStringLiteral("cache_read_input_tokens")).toDouble()),
              qint64(u.value(QStringLiteral("cache_creation_input_tokens")).toDouble()),
              qint64(u.value(QStringLiteral("output_tokens_details"))
                         .toObject()
                         .value(QStringLiteral("thinking_tokens"))
                         .toDouble()),
              line.value(QStringLiteral("total_cost_usd")).toDouble(-1));
    // `subtype` says "success" even when the API was unreachable; `is_error` tells the truth.
    m_isError
        = line.value(QStringLiteral("is_error")).toBool()
          || line.value(QStringLiteral("subtype")).toString().startsWith(QLatin1String("error"));
    if (m_isError) {
        m_errorText = result.isString() && !result.toString().isEmpty()
                          ? result.toString()
                          : QStringLiteral("Claude Code reported an error (%1)")
                                .arg(line.value(QStringLiteral("subtype")).toString());
        emitError(m_errorText);
    }
    for (const QJsonValue &d : line.value(QStringLiteral("permission_denials")).toArray()) {
        const QString tool = d.toObject().value(QStringLiteral("tool_name")).toString();
        addPermissionDenial(tool, d.toObject().value(QStringLiteral("tool_input")));
        emitError(QStringLiteral("permission denied: %1").arg(tool));
        if (isFileTool(tool))
            fail(QStringLiteral("a file change was not permitted (%1); use permissionMode "
                                "acceptEdits or bypassPermissions")
                     .arg(tool));
    }
}

void ClaudeCodeAdapter::complete(const Exit &)
{
    if (m_isError)
        fail(m_errorText);
}

} // namespace Sandbox::Engine
