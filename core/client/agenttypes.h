#pragma once

#include <protocol/result.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QMap>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <optional>

// The objects of agent runs (docs/protocol.md, 4.7) as C++ values.
namespace Sandbox {

// Token counts and cost of a run (or of the run so far).
struct AgentUsage
{
    qint64 inputTokens = 0;
    qint64 outputTokens = 0;
    qint64 cacheReadTokens = 0;
    qint64 cacheWriteTokens = 0;
    qint64 reasoningTokens = 0;
    std::optional<double> costUsd; // not every CLI reports a cost (Codex does not)

    static AgentUsage fromJson(const QJsonObject &object, const QJsonValue &costUsd);
};

// One normalised event of a run (`stream.event`'s `event`).
struct AgentEvent
{
    enum class Type {
        Session,
        Text,
        Thinking,
        ToolCall,
        ToolResult,
        FileChange,
        Usage,
        Error,
        Result,
        Other
    };

    Type type = Type::Other;
    QString typeName; // as sent, e.g. "tool_call"
    int turn = 0;
    QString text;         // Text, Thinking, Error (message), Result (the final text)
    QString id;           // ToolCall, ToolResult
    QString name;         // ToolCall, ToolResult
    QJsonValue input;     // ToolCall
    QString output;       // ToolResult
    bool isError = false; // ToolResult; FileChange failed; Result unsuccessful
    QString path;         // FileChange
    QString changeKind;   // FileChange: add | update | delete
    QString diff;         // FileChange, when known
    QString content;      // FileChange: a new file's text, when known
    QString sessionId;    // Session
    AgentUsage usage;     // Usage
    QJsonObject raw;

    static Result<AgentEvent> fromJson(const QJsonValue &value);
};

// The answer of agents.run / runConversation / runOnRepo.
struct AgentRunResult
{
    bool success = false;
    QString result; // the agent's final text
    QString error;  // why, when !success
    QString sessionId;
    AgentUsage usage;
    qint64 durationMs = 0;
    std::optional<int> exitCode;
    bool timedOut = false;
    QByteArray standardOutput; // the CLI's raw JSON lines
    QString streamId;
    QJsonArray turns; // runConversation: every turn's answer

    static Result<AgentRunResult> fromJson(const QJsonValue &value);
};

// `options` of agents.run.
struct AgentRunOptions
{
    QString model;
    QString permissionMode; // default on the server: bypassPermissions
    std::optional<qint64> maxThinkingTokens;
    QString systemPrompt;
    QStringList allowedTools;
    QStringList disallowedTools;
    std::optional<qint64> timeoutMs; // server default 600 000
    QString sessionId;
    bool newSession = false;
    QString cwd;
    QString baseUrl;
    QMap<QString, QString> env; // e.g. an API key for this run only

    QJsonObject toJson() const;
};

} // namespace Sandbox

Q_DECLARE_METATYPE(Sandbox::AgentEvent)
Q_DECLARE_METATYPE(Sandbox::AgentRunResult)
