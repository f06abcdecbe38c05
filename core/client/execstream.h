#pragma once

#include "types.h"

#include <QObject>
#include <QPointer>

namespace Sandbox {

class RpcClient;

// The live output of one stream (docs/protocol.md 2.3), e.g. an exec with `stream: true`.
// Made by RpcClient::startStream() (or AgentsService::execStreaming()); owned by the parent
// given there. RpcClient keeps it going across reconnects: it resumes after the last `seq` seen,
// drops duplicates, and reports a hole the server's backlog can no longer fill as gap().
//
// Every chunk of output arrives exactly once, in order; then exactly one of finished() (from
// `stream.end`, even when the response of the request that started the stream was lost) or
// failed(). Destroying the object stops following the stream; the work goes on (cancel() stops
// it).
class ExecStream final : public QObject
{
    Q_OBJECT

public:
    // What `stream.end` carries: an Exec result (finished()), or any other answer, e.g. an agent
    // run's, delivered raw by ended() only (then failed() comes only when the request failed).
    enum class ResultKind { Exec, Raw };

    ~ExecStream() override;

    // Empty until the first notification or the response of the starting request.
    QString streamId() const { return m_streamId; }
    // The last sequence number delivered (0 for none).
    qint64 lastSeq() const { return m_lastSeq; }
    // After finished() or failed().
    bool isDone() const { return m_done; }
    // Made by RpcClient::watchStream(): follows a stream another connection started.
    bool isWatching() const { return m_watching; }
    // A terminal's state as the engine last described it on a resume ({cols, rows, modes};
    // docs/protocol.md 4.8); empty for other streams.
    const QJsonObject &terminalState() const { return m_terminal; }

    // Stops the work behind the stream (`stream.cancel`, or `rpc.cancel` while the stream id is
    // not known yet). The stream still ends with finished() (e.g. killed) or failed() (cancelled).
    void cancel();

Q_SIGNALS:
    void started(const QString &streamId);
    // `channel` is "stdout" or "stderr"; `data` is decoded (`data` or `dataBase64`).
    void output(const QString &channel, const QByteArray &data);
    // A typed event (`stream.event`'s `event`), e.g. of an agent run.
    void event(const QJsonObject &event);
    // The raw `result` of `stream.end`, just before finished().
    void ended(const QJsonValue &result);
    void finished(const Sandbox::ExecResult &result);
    // The stream cannot go on: the request failed, the resume was refused (e.g. expired), the
    // connection was closed for good, or `stream.end` carried a malformed result.
    void failed(const Sandbox::Error &error);
    // Notifications firstMissingSeq..lastMissingSeq are lost: the server's backlog no longer
    // held them when the client resumed (-32009). Output goes on after the hole.
    void gap(qint64 firstMissingSeq, qint64 lastMissingSeq);

private:
    friend class RpcClient;
    ExecStream(RpcClient *client, QObject *parent);

    QPointer<RpcClient> m_client;
    QString m_streamId;
    qint64 m_requestId = 0; // the starting request while it is pending
    qint64 m_lastSeq = 0;
    bool m_resuming = false;
    bool m_watching = false; // follows another connection's stream (stream.watch)
    bool m_done = false;
    ResultKind m_resultKind = ResultKind::Exec;
    QJsonObject m_terminal;
};

} // namespace Sandbox
