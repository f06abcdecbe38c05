#pragma once

#include "agentadapter.h"
#include "api/methods.h"
#include "runtime/supervisorchannel.h"
#include "turnsnapshots.h"

#include <QHash>
#include <QMap>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <memory>

namespace Sandbox::Engine {

class AgentCliInstaller;
class RunStore;
class SandboxManager;
class SandboxNetwork;
class StreamHub;
struct SandboxRecord;

// Coding agents in agent sandboxes (docs/protocol.md, 4.7): mounts each type's CLI read-only at
// /opt/agent and a persistent home at /home/agent (SandboxTypeHooks), and serves agents.run,
// agents.runConversation, agents.runOnRepo and the run-aware agents.stop. A run is one exec of the
// CLI through the sandbox's supervisor (stdin /dev/null, under a timeout); its output is read by
// the type's AgentAdapter and streamed as `stream.event` notifications. One run per sandbox at a
// time. Secrets of the run's environment never leave the engine: every event and answer is
// scrubbed of them, and none is logged.
class AgentService final : public QObject
{
    Q_OBJECT

public:
    // `agentsDirs` (AgentClis::searchDirs) hold one directory per type
    // (`claude-code/node_modules/.bin/claude`, ...), searched in order; agents.installCli installs
    // into DATA_DIR/agents (which should be one of them).
    AgentService(SandboxManager *sandboxes, StreamHub *streams, Methods *methods,
                 QStringList agentsDirs, QObject *parent = nullptr);
    ~AgentService() override;

    const QStringList &agentsDirs() const { return m_agentsDirs; }

    // The sandboxes' network: the model gateway takes a run's keys and endpoint, and a run's
    // stream carries its sandbox's network denials.
    void setNetwork(SandboxNetwork *network);

    // Runs in progress (for tests and diagnostics).
    int runningCount() const { return int(m_jobs.size()); }
    // The runs' transcripts (agents.runs, agents.runEvents); null when the store could not be
    // opened.
    RunStore *runStore() const { return m_runs.get(); }

private:
    struct Job;
    struct TurnOutput;
    using Done = std::function<void(Result<QJsonObject>)>;

    void installHooks();
    void run(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void runConversation(const QJsonObject &params, const CallContext &ctx,
                         const Methods::Reply &reply);
    void runOnRepo(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void stop(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);

    // Checks what every run needs; on success a Job registered for the sandbox, its run recorded
    // with `method`, `prompts` and `options` (the request's, without env).
    Result<std::shared_ptr<Job>> beginJob(const QString &id, const CallContext &ctx,
                                          const QString &method, const QStringList &prompts,
                                          const QJsonObject &options);
    void listRuns(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void runEvents(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void runChanges(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void revertFile(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    // The records of the sandbox's workspace around its runs (docs/protocol.md 4.7.2).
    TurnSnapshots snapshotsOf(const SandboxRecord &record) const;
    // Records the workspace for the job's run off the event loop, then calls `then` (also when the
    // record could not be made: a run does not fail for it, its changes are then unknown).
    void recordWorkspace(const std::shared_ptr<Job> &job, TurnSnapshots::Phase phase,
                         const QString &cwd, std::function<void()> then);
    void endJob(const std::shared_ptr<Job> &job, Result<QJsonObject> result,
                const Methods::Reply &reply);
    // One CLI run; `done` gets the run's answer (or an Error when the run could not be made).
    void runTurn(const std::shared_ptr<Job> &job, AgentRunOptions options, int turn, Done done);
    // The turn's environment (the sandbox's, the run's on top; through the model gateway if the
    // sandbox has one); `options.env` becomes the merged one, `options.baseUrl` the gateway's.
    QMap<QString, QString> runEnvironment(const std::shared_ptr<Job> &job, AgentRunOptions &options);
    // The turn once its sandbox's supervisor answers: the home prepared, the CLI run, its output
    // read as it comes, and the workspace recorded around it.
    void startTurn(const std::shared_ptr<Job> &job, const std::shared_ptr<AgentAdapter> &adapter,
                   const AgentInvocation &inv, const QJsonObject &request, int turn,
                   const QString &cwd, const Done &done, Result<SupervisorChannel *> r);
    // The adapter's events so far, with their turn, redacted, to the run's record and stream.
    void publishEvents(const std::shared_ptr<Job> &job, AgentAdapter &adapter, int turn);
    static void keepOutput(TurnOutput &output, AgentAdapter &adapter, int channel,
                           QByteArrayView bytes);
    // The turn's answer from the CLI's exit and output; the sandbox's activity ends.
    void finishTurn(const std::shared_ptr<Job> &job, const std::shared_ptr<AgentAdapter> &adapter,
                    const TurnOutput &output, const std::function<void()> &flush,
                    const QString &cwd, const QJsonObject &request, const Done &done,
                    Result<SupervisorChannel::Reply> r);
    // Makes the adapter's directories and files in the sandbox's /home/agent (fd-relative, as the
    // sandbox's uid, never through a link); the sandbox must be running (its disk is mounted).
    Result<bool> prepareHome(const SandboxRecord &record, const AgentAdapter &adapter,
                             const AgentInvocation &inv) const;
    void rememberSession(const QString &sandboxId, const QString &sessionId,
                         const QString &cwd) const;
    QJsonObject lastSession(const QString &sandboxId) const;
    // Picks the conversation (and its working directory) a run continues.
    void resumeSession(const QString &id, AgentRunOptions &options, bool newSession,
                       bool cwdGiven) const;
    // DIR/TYPE of the type's CLI at its pinned version; empty when it is not installed.
    QString cliDir(const QString &type) const;
    void installCli(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void listClis(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);

    SandboxManager *m_sandboxes;         // not owned
    StreamHub *m_streams;                // not owned
    Methods *m_methods;                  // not owned
    SandboxNetwork *m_network = nullptr; // not owned
    QStringList m_agentsDirs;
    AgentCliInstaller *m_installer;    // owned (child)
    QSet<QString> m_startedWithoutCli; // sandbox ids whose running start had no CLI to mount
    QHash<QString, std::shared_ptr<Job>> m_jobs; // by sandbox id
    std::unique_ptr<RunStore> m_runs;
};

} // namespace Sandbox::Engine
