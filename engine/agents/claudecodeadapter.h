#pragma once

#include "agentadapter.h"

#include <QHash>

namespace Sandbox::Engine {

// Claude Code (`@anthropic-ai/claude-code`): `claude -p PROMPT --output-format stream-json
// --verbose ...`, resumed with `--resume SESSION`. Reads its stream-json lines: system/init,
// assistant (text, thinking, tool_use), user (tool_result, with `tool_use_result` details for
// file edits), system/api_retry, and the final `result` (whose `is_error` decides, since the exit
// code and `subtype` do not always tell).
class ClaudeCodeAdapter final : public AgentAdapter
{
public:
    QString type() const override { return QStringLiteral("claude-code"); }
    AgentInvocation invocation(const AgentRunOptions &options) const override;

protected:
    void parseLine(const QJsonObject &line) override;
    void complete(const Exit &exit) override;

private:
    struct ToolUse
    {
        QString name;
        QJsonObject input;
    };
    void onAssistant(const QJsonObject &message);
    void onToolResults(const QJsonObject &line);
    void onResult(const QJsonObject &line);

    QHash<QString, ToolUse> m_toolUses;
    QString m_model; // of the run's own assistant messages (not a subagent's)
    int m_connectionRetries = 0;
    bool m_isError = false;
    QString m_errorText;
};

} // namespace Sandbox::Engine
