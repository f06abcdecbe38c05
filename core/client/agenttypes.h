#pragma once

#include <protocol/result.h>

#include <QDateTime>
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
    // The model's context on the latest call and its window, where the CLI says (Claude Code).
    std::optional<qint64> contextTokens;
    std::optional<qint64> contextWindow;

    static AgentUsage fromJson(const QJsonObject &object, const QJsonValue &costUsd);
};

// Why a run that ended waits for the user (docs/protocol.md 4.7, `needsInput`).
struct AgentNeedsInput
{
    enum class Reason { None, Permission, Question };
    struct Tool
    {
        QString name;
        QJsonValue input;
    };

    Reason reason = Reason::None;
    QString question;  // Question: the last paragraph of the final text
    QList<Tool> tools; // Permission: the refused tool calls

    bool isNeeded() const { return reason != Reason::None; }
    QStringList toolNames() const;
    static AgentNeedsInput fromJson(const QJsonValue &value);
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
    QString text;               // Text, Thinking, Error (message), Result (the final text)
    QString id;                 // ToolCall, ToolResult
    QString name;               // ToolCall, ToolResult
    QJsonValue input;           // ToolCall
    QString output;             // ToolResult
    bool isError = false;       // ToolResult; FileChange failed; Result unsuccessful
    QString path;               // FileChange
    QString changeKind;         // FileChange: add | update | delete
    QString diff;               // FileChange, when known
    QString content;            // FileChange: a new file's text, when known
    QString sessionId;          // Session
    AgentUsage usage;           // Usage
    AgentNeedsInput needsInput; // Result
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
    AgentNeedsInput needsInput;

    static Result<AgentRunResult> fromJson(const QJsonValue &value);
};

// An agent CLI the engine can run, and whether it has it (docs/protocol.md 4.7.3, `agents.clis`).
struct AgentCliInfo
{
    QString type;    // "claude-code"
    QString name;    // "Claude Code"
    QString package; // "@anthropic-ai/claude-code"
    QString version;
    qint64 downloadBytes = 0; // what installing it fetches, about
    bool installed = false;
    bool installing = false;
    bool canInstall = false; // agents.installCli would install it (false: the backend ships it)
    QString dir;

    static Result<AgentCliInfo> fromJson(const QJsonValue &value);
};

// One run of a sandbox as the engine keeps it (docs/protocol.md 4.7.1, `agents.runs`).
struct AgentRunRecord
{
    enum class Status { Running, Succeeded, Failed, Cancelled, Interrupted, Unknown };

    QString runId;
    QString method; // agents.run | agents.runConversation | agents.runOnRepo
    QString prompt; // the last prompt
    QStringList prompts;
    QJsonObject options;
    Status status = Status::Unknown;
    QString statusName; // as sent
    QDateTime startedAt;
    QDateTime endedAt;
    std::optional<qint64> durationMs;
    QString sessionId;
    AgentUsage usage; // so far, while it runs
    AgentNeedsInput needsInput;
    std::optional<AgentRunResult> answer;
    std::optional<Error> error; // a request that failed (no answer)
    qint64 eventCount = 0;
    qint64 eventsDropped = 0;
    QDateTime lastEventAt;
    QString lastEventType;
    QString streamId;
    QString model() const { return options.value(QStringLiteral("model")).toString(); }

    static Result<AgentRunRecord> fromJson(const QJsonValue &value);
};

// A page of a run's kept events (`agents.runEvents`).
struct AgentRunEvents
{
    QString runId;
    QList<qint64> seqs;       // parallel to events
    QList<AgentEvent> events; // in order
    qint64 last = 0;
    bool done = false;
    bool more = false;

    static Result<AgentRunEvents> fromJson(const QJsonValue &value);
};

// One file a run changed (`agents.runChanges`, docs/protocol.md 4.7.2).
struct AgentFileChange
{
    enum class Kind { Add, Update, Delete };

    QString path; // /workspace/...
    Kind kind = Kind::Update;
    std::optional<qint64> sizeBefore;
    std::optional<qint64> sizeAfter;
    bool revertible = false;
    bool binary = false;
    bool link = false;
    QString diff;        // unified (diff -u); empty when omitted
    QString diffOmitted; // why there is no diff: binary, large, too many changes, answer full
    int added = 0;
    int removed = 0;

    static Result<AgentFileChange> fromJson(const QJsonValue &value);
};

// What a run changed in /workspace (`agents.runChanges`).
struct AgentRunChanges
{
    QString runId;
    bool done = false; // false while the run goes on (then no files)
    QList<AgentFileChange> files;
    QString gitRoot;   // the repository the run worked in; empty without one
    QString gitBranch; // empty when detached (then gitHead)
    QString gitHead;
    QString truncated; // a bound the records met (files, bytes, depth); empty: none

    static Result<AgentRunChanges> fromJson(const QJsonValue &value);
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
Q_DECLARE_METATYPE(Sandbox::AgentRunRecord)
