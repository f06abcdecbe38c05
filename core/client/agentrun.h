#pragma once

#include "agenttypes.h"
#include "types.h" // Q_DECLARE_METATYPE(Sandbox::Error)

#include <QObject>
#include <QPointer>

namespace Sandbox {

class ExecStream;
class RpcClient;

// One agent run as it happens: agents.run (or runConversation / runOnRepo) with its
// `stream.event` notifications as typed signals (docs/protocol.md, 4.7). Made by
// AgentsService::runStreaming(); owned by the parent given there. It rides on RpcClient's streams,
// so it survives a dropped connection: events are resumed after the last one seen, each exactly
// once and in order. Ends with exactly one of finished() (the run's answer, also when it says
// success: false) or failed() (the request itself failed: bad params, cancelled, no such sandbox,
// connection closed for good).
class AgentRun final : public QObject
{
    Q_OBJECT

public:
    ~AgentRun() override;

    QString streamId() const;
    bool isDone() const { return m_done; }
    // Made by AgentsService::watchRun(): a run another connection started.
    bool isWatched() const;
    // Totals so far, from the last `usage` event.
    const AgentUsage &usage() const { return m_usage; }
    const QString &sessionId() const { return m_sessionId; }

    // Kills the CLI's process tree (stream.cancel, or rpc.cancel before the stream is known);
    // the run then fails with ErrorCode::Cancelled.
    void cancel();

Q_SIGNALS:
    void started(const QString &streamId);
    void event(const Sandbox::AgentEvent &event); // every event, before the typed signals below
    void sessionStarted(const QString &sessionId);
    void text(const QString &text, int turn);
    void thinking(const QString &text, int turn);
    void toolCall(const QString &id, const QString &name, const QJsonValue &input, int turn);
    void toolResult(const QString &id, const QString &name, const QString &output, bool isError,
                    int turn);
    void fileChange(const QString &path, const QString &kind, bool ok, const QString &diff,
                    int turn);
    void usageChanged(const Sandbox::AgentUsage &usage);
    void errorReported(const QString &message, int turn);
    void finished(const Sandbox::AgentRunResult &result);
    void failed(const Sandbox::Error &error);
    // Events firstMissingSeq..lastMissingSeq were lost (the server's backlog no longer had them).
    void gap(qint64 firstMissingSeq, qint64 lastMissingSeq);

private:
    friend class AgentsService;
    AgentRun(RpcClient *client, const QString &method, const QJsonObject &params, QObject *parent);
    // Follows a run another connection started (stream.watch).
    AgentRun(RpcClient *client, const QString &streamId, qint64 after, QObject *parent);
    void follow(ExecStream *stream);
    void onEvent(const QJsonObject &raw);
    void onEnded(const QJsonValue &result);
    void onFailed(const Error &error);

    ExecStream *m_stream = nullptr; // owned (child)
    AgentUsage m_usage;
    QString m_sessionId;
    bool m_done = false;
};

} // namespace Sandbox
