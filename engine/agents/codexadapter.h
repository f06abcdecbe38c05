#pragma once

#include "agentadapter.h"

namespace Sandbox::Engine {

// Codex (`@openai/codex`): `codex exec --json ... PROMPT`, resumed with `codex exec ... resume
// THREAD PROMPT`. The model provider is given on the command line (`-c model_providers.sandbox.*`,
// the Responses API, key from OPENAI_API_KEY), so nothing is written to its home. Its own
// sandbox is turned off (ours is the sandbox; its bubblewrap cannot nest in ours). Its exit code
// is 0 even when a file change failed, and it retries an unreachable server forever: both are
// read from its events (`item.completed` file_change status, `error` "Reconnecting...").
class CodexAdapter final : public AgentAdapter
{
public:
    QString type() const override { return QStringLiteral("codex"); }
    AgentInvocation invocation(const AgentRunOptions &options) const override;
    QStringList homeDirectories() const override { return {QStringLiteral(".codex")}; }

protected:
    void parseLine(const QJsonObject &line) override;

private:
    void onItem(const QJsonObject &item, bool completed);

    int m_connectionFailures = 0;
};

} // namespace Sandbox::Engine
