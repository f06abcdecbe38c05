#pragma once

#include "apicaller.h"
#include "execstream.h"

#include <protocol/jsonrpc.h>

#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QTimer>

#include <deque>
#include <map>
#include <memory>
#include <optional>

namespace Sandbox {

class Transport;

// A JSON-RPC 2.0 client over a Transport (docs/protocol.md 2), with automatic reconnects and
// streams that survive them.
//
// Requests: call() returns an RpcCall handle; the callback runs exactly once unless cancelled.
// While the client is Connecting or Reconnecting, new requests wait in a queue of at most
// MaxQueuedRequests and go out, in order, once connected; when the queue is full, or the client
// is Disconnected or Unauthorized, they fail at once (asynchronously) with ConnectionError (or
// Unauthorized). Requests already sent when the connection drops fail with ConnectionError —
// except the ones that started a stream whose id is known: those streams are resumed.
//
// Reconnects: exponential backoff from ReconnectPolicy::initialDelayMs, doubling up to
// maxDelayMs, plus up to `jitter` of random extra; the backoff restarts after a connection that
// received a message or lasted 5 s. Close code 4401 (or HTTP 401 on the upgrade) ends in
// Unauthorized: no more attempts until open() is called again.
class RpcClient final : public QObject, public ApiCaller
{
    Q_OBJECT

public:
    enum class State {
        Disconnected, // not started, closed by close(), or out of attempts
        Connecting,   // an attempt is under way
        Connected,
        Reconnecting, // waiting for the next attempt: see msUntilReconnect()
        Unauthorized, // the server refused the key; no retry
    };
    Q_ENUM(State)

    struct ReconnectPolicy
    {
        int initialDelayMs = 250;
        int maxDelayMs = 30000;
        double jitter = 0.2; // up to 20 % added at random
        // Give up (Disconnected) after this many failed attempts in a row — a connection that
        // drops before it received anything counts as one; 0: never give up.
        int maxAttempts = 0;
    };

    static constexpr int MaxQueuedRequests = 256;
    static constexpr int DefaultTimeoutMs = 120000;

    // Takes ownership of `transport`.
    explicit RpcClient(Transport *transport, QObject *parent = nullptr);
    ~RpcClient() override;

    Transport *transport() const { return m_transport; }

    // Starts connecting (and reconnecting after drops) until close().
    void open();
    // Closes the connection: pending and queued requests fail with ConnectionError, open streams
    // fail too, and no reconnect follows.
    void close();

    State state() const { return m_state; }
    // Milliseconds until the next attempt while Reconnecting, else -1.
    int msUntilReconnect() const;

    // Stream output as binary frames (docs/protocol.md 2.6): asked for with `rpc.streamEncoding`
    // at the start of every connection; a server that does not offer them sends JSON as before.
    // Takes effect from the next connection on. Default off (Client turns it on).
    void setBinaryStreams(bool on) { m_binaryStreams = on; }
    bool binaryStreams() const { return m_binaryStreams; }

    void setReconnectPolicy(const ReconnectPolicy &policy) { m_policy = policy; }
    ReconnectPolicy reconnectPolicy() const { return m_policy; }
    // Used for CallOptions{timeoutMs = -1}; 0 disables the timeout. Default DefaultTimeoutMs.
    void setDefaultTimeout(int ms) { m_defaultTimeoutMs = ms; }
    int defaultTimeout() const { return m_defaultTimeoutMs; }

    RpcCall call(const QString &method, const QJsonObject &params, QObject *context,
                 JsonCallback callback, CallOptions options = {}) override;
    RpcClient *streamClient() override { return this; }

    // Sends a notification if connected; returns false (and sends nothing) otherwise.
    bool notify(const QString &method, const QJsonObject &params);

    // Sends a request that starts a stream (e.g. agents.exec with options.stream = true) and
    // returns the object that follows it, owned by `parent`. The request has no timeout.
    ExecStream *startStream(const QString &method, const QJsonObject &params, QObject *parent,
                            ExecStream::ResultKind kind = ExecStream::ResultKind::Exec);

    // Follows a stream of this key that another connection started (`stream.watch`,
    // docs/protocol.md 2.3) from after `after`, without taking it from that connection: its
    // notifications from `after + 1` on, then the live ones, exactly once and in order, also
    // across reconnects (which watch it again). Owned by `parent`. A stream this client follows
    // already fails at once (asynchronously) with ErrorCode::AlreadyExists.
    ExecStream *watchStream(const QString &streamId, qint64 after, QObject *parent,
                            ExecStream::ResultKind kind = ExecStream::ResultKind::Raw);
    // `stream.watch` without an ExecStream, for observers that need every event but no order or
    // exactly-once (e.g. the agents dashboard): the notifications come as streamActivity() and
    // notification(), the backlog after `after` first. Ends with the stream or the connection (a
    // new connection is not watched again); a stream this client follows comes anyway.
    RpcCall observeStream(const QString &streamId, qint64 after, QObject *context,
                          JsonCallback callback);
    // Whether a stream of this client (started or watched) has that id and has not ended.
    bool followsStream(const QString &streamId) const { return m_streams.contains(streamId); }

    int pendingCount() const { return int(m_pending.size()); }
    int queuedCount() const { return int(m_queue.size()); }
    int openStreamCount() const { return int(m_streams.size()); }

Q_SIGNALS:
    void stateChanged(Sandbox::RpcClient::State state);
    // Entering Reconnecting: the next attempt is in `msUntilNextAttempt` ms.
    void reconnectScheduled(int msUntilNextAttempt);
    // A server notification that is not part of a stream this client follows.
    void notification(const QString &method, const QJsonObject &params);
    // Every `stream.event` and `stream.end` that arrives, whoever follows its stream (observers
    // such as the agents dashboard; a resume may bring one twice).
    void streamActivity(const QString &method, const QJsonObject &params);
    // The server sent something malformed (not JSON, wrong version, an unknown id, a binary
    // frame, ...). It was ignored (a request it named fails); the connection goes on.
    void protocolError(const Sandbox::Error &error);

private:
    friend class ExecStream;

    struct Pending
    {
        QByteArray message; // until sent
        QPointer<QObject> context;
        bool hasContext = false;
        JsonCallback callback;
        std::shared_ptr<Internal::CallState> state;
        QMetaObject::Connection contextGuard;
        qint64 deadline = -1; // on m_clock, -1 for none
        bool sent = false;
        QPointer<ExecStream> stream;          // set for the request that starts a stream
        std::shared_ptr<QByteArray> rowsText; // CallOptions::rowsText
    };
    enum class TellServer { No, Yes };

    qint64 enqueue(const QString &method, const QJsonObject &params, QObject *context,
                   JsonCallback callback, int timeoutMs,
                   std::shared_ptr<Internal::CallState> state);
    void submit(qint64 id);
    bool sendNow(qint64 id);
    void failSoon(qint64 id, const Error &error);
    void complete(qint64 id, Result<QJsonValue> result, TellServer tell = TellServer::No);
    void cancelRequest(qint64 id);
    void rememberCancelled(qint64 id);
    void armTimeoutTimer();
    void onTimeoutTimer();

    void setState(State state);
    void onOpened();
    void onClosed(int closeCode, const QString &reason);
    void onText(const QByteArray &text);
    // A response whose result holds a page of rows, for a call that asked for them as text
    // (CallOptions::rowsText): the message without them, and their text. Nothing for any other
    // message.
    struct PageResponse
    {
        JsonRpc::Message message;
        QByteArray rows;
    };
    std::optional<PageResponse> pageResponse(const QByteArray &text) const;
    void onBinary(const QByteArray &message);
    void handleMessage(const JsonRpc::Message &message);
    void reportProtocolError(const Error &error);
    void scheduleReconnect();
    void attempt();
    void failAll(const Error &error, bool includingQueued);

    void handleStreamNotification(const QString &method, const QJsonObject &params);
    ExecStream *followedStream(const QString &streamId, qint64 requestId);
    bool takeSeq(ExecStream *stream, qint64 seq);
    void handleStreamResponse(ExecStream *stream, const Result<QJsonValue> &result);
    void bindStream(ExecStream *stream, const QString &streamId);
    void resumeStream(ExecStream *stream);
    void endStream(ExecStream *stream, const QJsonValue &result);
    void failStream(ExecStream *stream, const Error &error);
    void cancelStream(ExecStream *stream);
    void forgetStream(ExecStream *stream);

    Transport *m_transport; // owned (child)
    State m_state = State::Disconnected;
    bool m_wantOpen = false;
    ReconnectPolicy m_policy;
    int m_defaultTimeoutMs = DefaultTimeoutMs;
    int m_failedAttempts = 0;
    QTimer m_reconnectTimer;
    QElapsedTimer m_connectionAge;
    bool m_gotMessage = false;
    bool m_binaryStreams = false;

    qint64 m_nextId = 1; // never reused, also across reconnects
    std::map<qint64, Pending> m_pending;
    std::deque<qint64> m_queue;                // ids not sent yet, in order
    std::multimap<qint64, qint64> m_deadlines; // deadline -> id
    QElapsedTimer m_clock;
    QTimer m_timeoutTimer;
    QSet<qint64> m_cancelled; // recently cancelled ids: their late answers are not errors
    std::deque<qint64> m_cancelledOrder;

    QHash<QString, ExecStream *> m_streams; // by stream id; entries removed when done/destroyed
    QSet<ExecStream *> m_unboundStreams;    // started, id not known yet
    QSet<QString> m_observed; // observeStream() ids until their end or the connection's
};

} // namespace Sandbox
