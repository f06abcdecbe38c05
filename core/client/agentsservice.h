#pragma once

#include "agentrun.h"
#include "execstream.h"
#include "sandboxmethods.h"

namespace Sandbox {

// `agents.*` (docs/protocol.md 4.1): coding-agent sandboxes. The exec and file methods come
// from SandboxMethods. Not a QObject: a thin, copyable view over an ApiCaller (not owned).
class AgentsService final : public SandboxMethods
{
public:
    explicit AgentsService(ApiCaller *caller);

    RpcCall create(const AgentCreateOptions &options, QObject *context,
                   Callback<SandboxInfo> callback);
    RpcCall get(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall list(QObject *context, Callback<QList<SandboxInfo>> callback);
    // Runs `git clone` in the sandbox (needs `network: true`); answers the clone's exec result.
    RpcCall cloneRepo(const QString &id, const QString &url, const CloneOptions &options,
                      QObject *context, Callback<ExecResult> callback);
    // `agents.run`: the agent's answer as the server sent it
    // ({success, result, stdout, sessionId, usage, costUsd, durationMs, exitCode}).
    RpcCall run(const QString &id, const QString &prompt, const QJsonObject &options,
                QObject *context, Callback<QJsonObject> callback);
    // `agents.run` with its events as they come (docs/protocol.md 4.7). Returns nullptr when the
    // caller cannot stream (REST). The run is owned by `parent`.
    AgentRun *runStreaming(const QString &id, const QString &prompt, const AgentRunOptions &options,
                           QObject *parent);
    // A run that another connection of the key started and still streams (a `running` run of
    // agents.runs names its `streamId`), followed live through `stream.watch` (docs/protocol.md
    // 2.3) from after `after` without taking it over: its events as they come, then finished()
    // or failed() like a run of this client. Returns nullptr when the caller cannot stream
    // (REST). Owned by `parent`.
    AgentRun *watchRun(const QString &streamId, qint64 after, QObject *parent);
    // `agents.runs`: the sandbox's kept runs, newest first (docs/protocol.md 4.7.1).
    RpcCall runs(const QString &id, int limit, QObject *context,
                 Callback<QList<AgentRunRecord>> callback);
    // `agents.runEvents`: one page of a run's kept events after `after`.
    RpcCall runEvents(const QString &id, const QString &runId, qint64 after, int limit,
                      QObject *context, Callback<AgentRunEvents> callback);
    // `agents.runChanges`: what the run changed in /workspace (docs/protocol.md 4.7.2).
    RpcCall runChanges(const QString &id, const QString &runId, QObject *context,
                       Callback<AgentRunChanges> callback);
    // `agents.revertFile`: `path` back as it was before the run; answers "restored" or "deleted".
    RpcCall revertFile(const QString &id, const QString &runId, const QString &path,
                       QObject *context, Callback<QString> callback);
    // `agents.clis`: the agent CLIs this backend runs and whether each is installed (4.7.3).
    RpcCall clis(QObject *context, Callback<QList<AgentCliInfo>> callback);
    // `agents.installCli`: installs the type's CLI at its pinned version, its progress as stream
    // events ({type:"progress", downloadedBytes, expectedBytes, installedBytes} and
    // {type:"log", line}), the answer as ended(). Returns nullptr when the caller cannot stream
    // (REST). Owned by `parent`; cancel() stops npm.
    ExecStream *installCli(const QString &type, QObject *parent);
    // `agents.runConversation`: the prompts in order, in one conversation and one stream.
    AgentRun *runConversation(const QString &id, const QStringList &prompts,
                              const AgentRunOptions &options, QObject *parent);
};

} // namespace Sandbox
