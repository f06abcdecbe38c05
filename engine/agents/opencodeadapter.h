#pragma once

#include "agentadapter.h"

namespace Sandbox::Engine {

// OpenCode (`opencode-ai`): `opencode run --pure --format json PROMPT`, resumed with
// `--session ses_...`. Configured inline (OPENCODE_CONFIG_CONTENT) with one OpenAI-compatible
// provider ("sandbox": Chat Completions at the run's base URL, key from OPENAI_API_KEY). Its JSON
// lines (step_start, text, reasoning, tool_use, step_finish, error) carry no final summary: the
// last text, the last step's reason and the exit code decide. It retries an unreachable server
// silently for over a minute; `--print-logs --log-level ERROR` puts those failures on stderr,
// where they are counted.
class OpenCodeAdapter final : public AgentAdapter
{
public:
    QString type() const override { return QStringLiteral("opencode"); }
    AgentInvocation invocation(const AgentRunOptions &options) const override;

protected:
    void parseLine(const QJsonObject &line) override;
    void parseStderrLine(const QByteArray &line) override;

private:
    void onToolUse(const QJsonObject &part);

    int m_connectionFailures = 0;
    bool m_failedFromEvent = false;
};

} // namespace Sandbox::Engine
