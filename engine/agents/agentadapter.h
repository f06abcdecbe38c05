#pragma once

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <memory>

namespace Sandbox::Engine {

// What one agent run asks for (docs/protocol.md, 4.7: agents.run options), already validated.
struct AgentRunOptions
{
    QString prompt;
    QString model;
    QString permissionMode = QStringLiteral("bypassPermissions");
    qint64 maxThinkingTokens = -1; // -1: the CLI's default
    QString systemPrompt;          // appended to the CLI's own
    QStringList allowedTools;
    QStringList disallowedTools;
    QString sessionId; // continue this conversation; empty: a new one
    qint64 timeoutMs = 600000;
    QString cwd = QStringLiteral("/workspace");
    QString baseUrl; // the model API's endpoint; empty: the sandbox's env or the provider's default
    // OpenCode's model provider: openai (an OpenAI-compatible API, the default), anthropic, ollama.
    QString provider;
    // The sandbox's environment plus the run's own `env` (values: API keys stay in the engine).
    QMap<QString, QString> env;
};

// How to start the CLI inside the sandbox.
struct AgentInvocation
{
    QStringList argv;
    QMap<QString, QString> env; // added to the sandbox's environment for this run
    // Files the engine writes into the agent's home before the run (relative path -> content).
    QMap<QString, QByteArray> homeFiles;
};

// One CLI run's reading of its output: the CLI-specific part of an agent run. One subclass per
// CLI (Claude Code, Codex, OpenCode); a new instance per run, since it keeps the run's state.
// It turns the CLI's JSON lines into normalised events (docs/protocol.md, 4.7) and decides from
// them — not from the exit code alone — whether the run succeeded.
class AgentAdapter
{
public:
    // Where the engine mounts the CLI's install directory (read-only) and the agent's home.
    static constexpr const char *CliDir = "/opt/agent";
    static constexpr const char *HomeDir = "/home/agent";

    static std::unique_ptr<AgentAdapter> create(const QString &type);
    static QStringList types();

    virtual ~AgentAdapter() = default;

    virtual QString type() const = 0;
    // The command line and environment for a run.
    virtual AgentInvocation invocation(const AgentRunOptions &options) const = 0;
    // Directories below the agent's home the CLI needs to exist before it starts.
    virtual QStringList homeDirectories() const { return {}; }

    // Output as it comes; complete lines are parsed, the events they make are queued.
    void feedStdout(QByteArrayView bytes);
    void feedStderr(QByteArrayView bytes);
    QList<QJsonObject> takeEvents() { return std::exchange(m_events, {}); }

    // Set when the output shows that the run cannot succeed and must be stopped (e.g. the model
    // API is unreachable and the CLI would retry for minutes). The runner then kills it.
    const QString &abortReason() const { return m_abortReason; }

    struct Exit
    {
        int exitCode = 0;
        bool timedOut = false;
        qint64 timeoutMs = 0;
        qint64 durationMs = 0;
        QString stderrTail;
    };
    // After the CLI exited: the run's answer without `stdout` (the runner adds it). Its
    // `needsInput` says whether the run ended waiting for the user: {reason: "permission",
    // tools: [{name, input}]} when its permission mode refused tool calls, {reason: "question",
    // question} when it ended on a question; null otherwise.
    QJsonObject finish(const Exit &exit);

    const QString &sessionId() const { return m_sessionId; }

protected:
    virtual void parseLine(const QJsonObject &line) = 0;
    virtual void parseStderrLine(const QByteArray &line) { Q_UNUSED(line) }
    // The CLI-specific last word on success, after the exit (e.g. Claude's `is_error`).
    virtual void complete(const Exit &exit) { Q_UNUSED(exit) }

    void emitEvent(const QString &type, QJsonObject fields);
    void emitText(const QString &text);
    void emitThinking(const QString &text);
    void emitToolCall(const QString &id, const QString &name, const QJsonValue &input);
    void emitToolResult(const QString &id, const QString &name, const QString &output, bool isError);
    // kind: add | update | delete. A failed change makes the run fail, unless a later change of
    // the same path (or, for a failure without a path, any later change) succeeds.
    void emitFileChange(const QString &path, const QString &kind, bool ok, const QString &diff = {},
                        const QString &content = {});
    void emitError(const QString &message);
    // Token counts of one model call (added to the run's totals); costUsd < 0: not known.
    void addUsage(qint64 input, qint64 output, qint64 cacheRead, qint64 cacheWrite,
                  qint64 reasoning, double costUsd = -1);
    // Replaces the totals (a CLI that reports them for the whole run at the end).
    void setTotals(qint64 input, qint64 output, qint64 cacheRead, qint64 cacheWrite,
                   qint64 reasoning, double costUsd);
    // The model's context: the tokens it read on the run's latest call (input, cache read and
    // cache write) and its context window; < 0 leaves a figure as it is. With `announce`, a
    // `usage` event says the change at once (else the next one does).
    void setContext(qint64 tokens, qint64 window, bool announce);
    // A token count the CLI printed: a whole number from 0 to 2^53, else -1 (not known).
    static qint64 tokenCount(const QJsonValue &value);
    void setSession(const QString &id);
    // A tool call the run's permission mode refused: the run then needs the user (needsInput).
    void addPermissionDenial(const QString &tool, const QJsonValue &input);
    void fail(const QString &reason);
    void abortRun(const QString &reason);

    QString m_sessionId;
    QString m_resultText; // the last assistant text, or the CLI's own result
    bool m_sawResult = false;

private:
    QJsonValue needsInput(bool success) const;
    void splitLines(QByteArray &buffer, QByteArrayView bytes, bool isStderr);

    QList<QJsonObject> m_events;
    QByteArray m_stdoutBuffer;
    QByteArray m_stderrBuffer;
    QString m_failure;                      // the first reason the run failed
    QMap<QString, QString> m_failedChanges; // path ("" when unknown) -> why
    QString m_abortReason;
    QJsonArray m_denials; // [{name, input}]
    qint64 m_input = 0, m_output = 0, m_cacheRead = 0, m_cacheWrite = 0, m_reasoning = 0;
    double m_cost = -1;
    qint64 m_contextTokens = -1, m_contextWindow = -1; // -1: not known
    // inputTokens … reasoningTokens, contextTokens and contextWindow (null when not known).
    QJsonObject usageObject() const;
};

// A unified diff that creates a file with `content` (for CLIs that report only the new text).
QString diffForNewFile(const QString &path, const QString &content);

// The files an apply_patch text ("*** Begin Patch ... *** Add File: P ...") touches: (path, kind).
QList<QPair<QString, QString>> filesInPatch(const QString &patch);

} // namespace Sandbox::Engine
