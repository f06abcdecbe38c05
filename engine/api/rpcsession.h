#pragma once

#include "protocol/jsonrpc.h"

#include "bytebudget.h"
#include "logthrottle.h"
#include "methods.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QObject>
#include <QPointer>
#include <QQueue>
#include <QTimer>
#include <QWebSocketProtocol>

#include <functional>
#include <memory>

class QTcpSocket;
class QWebSocket;

namespace Sandbox::Engine {

class KeyStore;
class StreamHub;

// One authenticated WebSocket at /rpc: JSON-RPC 2.0 per docs/protocol.md section 2, including
// batches, limits, rpc.cancel and stream.resume. Deletes itself when the socket closes.
// Messages wait in a bounded queue and are taken at a bounded rate, a few at a time, so that one
// client cannot hold the event loop; a client that sends faster than that, or reads nothing of
// its answers, is closed (1008) rather than buffered without end. The messages a read brought are
// taken at the end of that read, in the same turn of the event loop, as far as the rate allows.
class RpcSession final : public QObject
{
    Q_OBJECT

public:
    static constexpr int MaxInFlight = 256;
    // docs/protocol.md 2.2
    static constexpr int MaxQueuedMessages = 4096;
    static constexpr qsizetype MaxQueuedBytes = 3 * JsonRpc::MaxMessageBytes;
    static constexpr int MessagesPerSecond = 1000; // sustained; a burst may take MessageBurst
    static constexpr int MessageBurst = 2000;
    static constexpr qsizetype BytesPerMessage = 64 * 1024; // a big message counts as several
    static constexpr qint64 PauseAtUnsentBytes = 16 * 1024 * 1024;
    static constexpr qint64 MaxUnsentBytes = 64 * 1024 * 1024;
    // A part of an answer this big (a page of rows) is queued on the socket as it is, not copied
    // into the answer's frame (sendParts).
    static constexpr qsizetype QueuedWholeBytes = 256 * 1024;
    // The most a batch's answers may take together (they leave as one message): a call whose
    // answer would pass it answers -32006 instead. 100 pages of rows were 0.8 to 3.2 GB.
    static constexpr qsizetype MaxBatchAnswerBytes = 48 * 1024 * 1024;
    // The largest WebSocket frame sent: a whole output message (at most 1 MiB of output and its
    // binary prefix, docs/protocol.md 2.6) in one.
    static constexpr qsizetype kOutgoingFrameBytes = 2 * 1024 * 1024;

    // `device` is the socket `socket` was upgraded from (QWebSocketServer::handleConnection), not
    // owned: the messages its reads bring are taken at the end of each read (without it, on the
    // next turn of the event loop), and binary output messages are written to it under the
    // WebSocket (without it, through the WebSocket, copied). `queueBudget` bounds the bytes
    // waiting in every session's queue together; `log` is shared by every session too. Each
    // message is a use of the key `keyId` in `keys` (keys.list's lastUsedAt; none without it).
    RpcSession(QWebSocket *socket, QTcpSocket *device, QString keyId, KeyStore *keys,
               Methods *methods, StreamHub *streams, ByteBudget *queueBudget, LogThrottle *log,
               QObject *parent = nullptr);
    ~RpcSession() override;

    const QString &keyId() const { return m_keyId; }
    void close(int code, const QString &reason);
    // A server notification (JSON-RPC text) that belongs to no request, e.g. network.denied.
    void notify(const QByteArray &text) { send(text); }

private:
    struct Batch;
    struct Queued
    {
        QByteArray data;
        bool binary = false;
    };
    void onText(const QString &text);
    void onBinary(const QByteArray &data);
    void enqueue(Queued message);
    void refuseBinary();
    void drain();
    int process(const QByteArray &text); // answers what it cost, in messages
    void refuseAndClose(const QString &why);
    void handle(const JsonRpc::Message &m, const std::shared_ptr<Batch> &batch);
    // The function that answers request `m` (nothing for a notification, once for a request).
    Methods::Reply replyTo(const JsonRpc::Message &m, const std::shared_ptr<Batch> &batch);
    // A request's id is free and the connection has room for one more in flight; else answered.
    bool admit(const JsonRpc::Message &m, const QString &key, const std::shared_ptr<Batch> &batch);
    // The request's context; a request (not a notification) is in flight from here.
    CallContext callContext(const JsonRpc::Message &m, const QString &key,
                            const std::shared_ptr<Batch> &batch);
    // The methods of the connection itself (rpc.*, stream.resume, stream.watch): false for others.
    bool callConnectionMethod(const JsonRpc::Message &m, const QString &key, const CallContext &ctx,
                              const Methods::Reply &reply);
    void cancelRequest(const QJsonObject &params, const QString &ownKey,
                       const Methods::Reply &reply);
    void setStreamEncoding(const QJsonObject &params, const Methods::Reply &reply);
    void resumeStream(const QJsonObject &params, const CallContext &ctx,
                      const Methods::Reply &reply);
    void watchStream(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void answer(const QJsonObject &response, const std::shared_ptr<Batch> &batch);
    // The answer to `id` in parts: sent, or kept for its batch's array.
    void answerText(const QJsonValue &id, const QList<QByteArray> &parts,
                    const std::shared_ptr<Batch> &batch);
    void send(const QByteArray &text) { sendParts({text}); }
    // One text message, the text of `parts` one after another.
    void sendParts(const QList<QByteArray> &parts);
    // A binary output frame's WebSocket message, header included (StreamHub::setBinarySink).
    void sendBinary(const QByteArray &message);
    void dropIfNotReading();
    // Sends the close frame itself and half-closes the connection once it is written; what the
    // client still sends is read and dropped until it closes (or the refusal's time runs out).
    void closeLingering(QWebSocketProtocol::CloseCode code, const QString &reason);
    QString inFlightKey(const QJsonValue &id) const;

    QWebSocket *m_socket;          // owned
    QPointer<QTcpSocket> m_device; // not owned: m_socket's
    QString m_keyId;
    KeyStore *m_keys;          // not owned; may be null
    Methods *m_methods;        // not owned
    StreamHub *m_streams;      // not owned
    ByteBudget *m_queueBudget; // not owned
    LogThrottle *m_log;        // not owned
    // Requests in flight by id (as JSON text): their cancel functions.
    QHash<QString, std::shared_ptr<std::function<void()>>> m_inFlight;
    QQueue<Queued> m_queue;
    qsizetype m_queuedBytes = 0;
    double m_tokens = MessageBurst;
    QElapsedTimer m_clock; // since the tokens were last refilled
    QTimer m_drainTimer;
    bool m_waitingForWrites = false;
    bool m_closing = false;
    bool m_closeSent = false; // the WebSocket's close frame: no message may follow it
};

} // namespace Sandbox::Engine
