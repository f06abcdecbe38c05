#include "rpcsession.h"

#include "keystore.h"
#include "methods.h"
#include "protocol/fieldreader.h"
#include "protocol/streamframe.h"
#include "service/streamhub.h"
#include "socketwrite.h"

#include <QJsonDocument>
#include <QLoggingCategory>
#include <QTcpSocket>
#include <QWebSocket>
#include <QtEndian>

#include <cmath>

#include <sys/socket.h>

Q_LOGGING_CATEGORY(lcRpcSession, "sandboxd.rpc")

namespace Sandbox::Engine {

namespace {

// Where stream.resume and stream.watch pick a stream up: {streamId, after} (docs/protocol.md 2.3).
struct StreamPosition
{
    QString streamId;
    qint64 after = 0;
};

Result<StreamPosition> streamPosition(const QJsonObject &params)
{
    FieldReader p(params);
    StreamPosition at;
    at.streamId = p.requiredString(QStringLiteral("streamId"));
    at.after = p.optionalInteger(QStringLiteral("after"), 0, 0,
                                 std::numeric_limits<qint64>::max() / 2);
    if (p.failed())
        return p.error();
    return at;
}

} // namespace

// Collects the answers of one batch; sends them as one array when the last one is in.
struct RpcSession::Batch
{
    int outstanding = 0;
    QList<QByteArray> answers; // each one's text
    qsizetype bytes = 0;       // theirs together
};

RpcSession::RpcSession(QWebSocket *socket, QTcpSocket *device, QString keyId, KeyStore *keys,
                       Methods *methods, StreamHub *streams, ByteBudget *queueBudget,
                       LogThrottle *log, QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_device(device)
    , m_keyId(std::move(keyId))
    , m_keys(keys)
    , m_methods(methods)
    , m_streams(streams)
    , m_queueBudget(queueBudget)
    , m_log(log)
{
    m_socket->setParent(this);
    // Up to twice the limit a message is read and answered -32006; beyond that the socket is
    // closed (1009), so nobody can make the engine buffer without bound.
    m_socket->setMaxAllowedIncomingMessageSize(2 * JsonRpc::MaxMessageBytes);
    m_socket->setMaxAllowedIncomingFrameSize(2 * JsonRpc::MaxMessageBytes);
    // A message goes as one frame (QWebSocket cuts at 512 KiB by default): a client such as
    // QWebSocket joins the frames of a message by copying them, and a stream's output messages
    // are up to a pipe's read (1 MiB) and its prefix.
    m_socket->setOutgoingFrameSize(quint64(kOutgoingFrameBytes));
    connect(m_socket, &QWebSocket::aboutToClose, this, [this] { m_closeSent = true; });
    connect(m_socket, &QWebSocket::textMessageReceived, this, &RpcSession::onText);
    connect(m_socket, &QWebSocket::binaryMessageReceived, this, &RpcSession::onBinary);
    m_clock.start();
    m_drainTimer.setSingleShot(true);
    connect(&m_drainTimer, &QTimer::timeout, this, &RpcSession::drain);
    if (device) {
        // Connected after QWebSocket's own reader: by now it has taken every message this read
        // brought, and they are handled in this turn instead of the drain timer's, a turn of the
        // event loop (a wake-up and its system calls) less per request. The timer stays for
        // what the rate or the answers not yet written hold back.
        connect(device, &QIODevice::readyRead, this, [this] {
            if (m_drainTimer.isActive() && !m_waitingForWrites)
                drain();
        });
    }
    connect(m_socket, &QWebSocket::bytesWritten, this, [this] {
        // Streams whose program waits for this connection (StreamHub::setWindow).
        m_streams->drained(this);
        if (m_waitingForWrites && m_socket->bytesToWrite() < PauseAtUnsentBytes) {
            m_waitingForWrites = false;
            drain();
        }
    });
    // Terminals wait for this connection when it falls behind (StreamHub::sinkBacklog).
    m_streams->setBacklogProbe(this, [this] { return m_socket->bytesToWrite(); });
    connect(m_socket, &QWebSocket::disconnected, this, [this] {
        m_streams->detach(this);
        deleteLater();
    });
    qCDebug(lcRpcSession) << "connection for key" << m_keyId << "from" << m_socket->peerAddress();
}

RpcSession::~RpcSession()
{
    m_queueBudget->give(m_queuedBytes);
    m_streams->detach(this);
}

void RpcSession::close(int code, const QString &reason)
{
    m_socket->close(QWebSocketProtocol::CloseCode(code), reason);
}

void RpcSession::sendParts(const QList<QByteArray> &parts)
{
    if (m_closing || m_closeSent || m_socket->state() != QAbstractSocket::ConnectedState)
        return;
    qsizetype size = 0;
    bool valid = true;
    for (const QByteArray &part : parts) {
        size += part.size();
        valid = valid && part.isValidUtf8();
    }
    if (m_device && valid) {
        // One frame, straight to the socket as sendBinary() writes: QWebSocket would turn the
        // text into a QString and back and copy it once more (three passes over a page of rows).
        // What the session sends is our serializer's UTF-8, and a database host's page was
        // checked by Json::validate; should anything else ever reach here, it takes QWebSocket's
        // way, which replaces what is not UTF-8, so a client never gets an invalid text frame.
        // (Parts valid each are valid together: a part that ends inside a character is not.)
        // The header and the small parts are copied into one array; a big part (a page of rows)
        // is queued on the socket as the array it is, after them (QIODevice keeps a QByteArray
        // it is given whole), and leaves as the client reads: not copied once more in the turn
        // of the event loop that answers.
        QByteArray frame(StreamFrame::webSocketHeaderBytes(size), Qt::Uninitialized);
        StreamFrame::writeWebSocketHeader(frame.data(), size, StreamFrame::WebSocketOpcode::Text);
        for (const QByteArray &part : parts) {
            if (part.size() < QueuedWholeBytes) {
                frame += part;
                continue;
            }
            writeNow(m_device.data(), std::exchange(frame, {}));
            m_device->write(part);
        }
        // Written now, in the turn of the event loop that made the answer, when nothing waits
        // before it: through the socket's buffer an answer waited for one more turn.
        if (!frame.isEmpty())
            writeNow(m_device.data(), std::move(frame));
    } else {
        QByteArray text;
        text.reserve(size);
        for (const QByteArray &part : parts)
            text += part;
        m_socket->sendTextMessage(QString::fromUtf8(text));
    }
    dropIfNotReading();
}

void RpcSession::sendBinary(const QByteArray &message)
{
    if (m_closing || m_closeSent || m_socket->state() != QAbstractSocket::ConnectedState)
        return;
    if (m_device) {
        // Straight to the socket under the WebSocket: QWebSocket writes each of its own frames
        // (answers, pongs, the close) to it at once, whole, so the order of messages holds; and
        // the message is queued there as the array it is, shared with the stream's backlog,
        // instead of copied twice (QWebSocket copies a message to frame it, the socket copies it
        // to queue it).
        m_device->write(message);
    } else {
        const uchar length = uchar(message.at(1));
        m_socket->sendBinaryMessage(message.sliced(length < 126 ? 2 : length == 126 ? 4 : 10));
    }
    dropIfNotReading();
}

void RpcSession::dropIfNotReading()
{
    if (m_socket->bytesToWrite() > MaxUnsentBytes) {
        // The client reads nothing (stream output keeps coming): drop it; streams can be resumed.
        if (const int n = m_log->pass())
            qCInfo(lcRpcSession) << "dropped" << n << "connection(s) of key" << m_keyId
                                 << "holding over" << MaxUnsentBytes << "bytes of unread answers";
        m_closing = true;
        m_queue.clear();
        m_queueBudget->give(m_queuedBytes);
        m_queuedBytes = 0;
        // Queued: this runs inside a StreamHub sink (or a replay), and an abort here would emit
        // disconnected() and detach this connection from the hub while the hub is still
        // delivering. Nothing more is sent meanwhile (m_closing).
        QMetaObject::invokeMethod(m_socket, &QWebSocket::abort, Qt::QueuedConnection);
    }
}

void RpcSession::refuseAndClose(const QString &why)
{
    if (m_closing)
        return;
    m_closing = true;
    m_queue.clear();
    m_queueBudget->give(m_queuedBytes);
    m_queuedBytes = 0;
    if (const int n = m_log->pass())
        qCInfo(lcRpcSession).noquote()
            << "closed" << n << "connection(s) of key" << m_keyId << ":" << why;
    if (m_device)
        closeLingering(QWebSocketProtocol::CloseCodePolicyViolated, why);
    else
        m_socket->close(QWebSocketProtocol::CloseCodePolicyViolated, why);
    // A client that does not close in time is cut off.
    QTimer::singleShot(2000, m_socket, [socket = m_socket] { socket->abort(); });
}

void RpcSession::closeLingering(QWebSocketProtocol::CloseCode code, const QString &reason)
{
    // QWebSocket::close() closes the socket at once. A client refused while it is still sending
    // then has its next bytes answered by a reset, and a reset throws away what it had not read
    // yet: the close frame that says why, with the last answers. So the close frame is written
    // here, the sending side shut once it is out, and what the client still sends is read and
    // dropped, unparsed, until it closes too.
    m_closeSent = true;
    QByteArray reasonUtf8 = reason.toUtf8();
    if (reasonUtf8.size() > 123) { // a control frame's payload is at most 125 bytes
        qsizetype cut = 123;
        while (cut > 0 && (uchar(reasonUtf8.at(cut)) & 0xC0) == 0x80) // not inside a character
            --cut;
        reasonUtf8.truncate(cut);
    }
    const qsizetype payload = 2 + reasonUtf8.size();
    const qsizetype header = StreamFrame::webSocketHeaderBytes(payload);
    QByteArray frame(header + 2, Qt::Uninitialized);
    StreamFrame::writeWebSocketHeader(frame.data(), payload, StreamFrame::WebSocketOpcode::Close);
    qToBigEndian<quint16>(quint16(code), frame.data() + header);
    frame.append(reasonUtf8);
    QTcpSocket *device = m_device;
    disconnect(device, &QIODevice::readyRead, m_socket, nullptr); // QWebSocket's reader
    disconnect(device, &QIODevice::readyRead, this, nullptr);
    connect(device, &QIODevice::readyRead, this,
            [device] { device->skip(device->bytesAvailable()); });
    device->skip(device->bytesAvailable());
    const auto shutWhenWritten = [device] {
        if (device->bytesToWrite() == 0 && device->state() == QAbstractSocket::ConnectedState)
            ::shutdown(int(device->socketDescriptor()), SHUT_WR);
    };
    connect(device, &QIODevice::bytesWritten, this, shutWhenWritten);
    device->write(frame);
    device->flush();
    shutWhenWritten();
}

QString RpcSession::inFlightKey(const QJsonValue &id) const
{
    return QString::fromUtf8(QJsonDocument(QJsonArray{id}).toJson(QJsonDocument::Compact));
}

void RpcSession::onBinary(const QByteArray &data)
{
    enqueue({data, true});
}

void RpcSession::onText(const QString &text)
{
    enqueue({text.toUtf8(), false});
}

void RpcSession::enqueue(Queued message)
{
    if (m_closing)
        return;
    if (m_queue.size() >= MaxQueuedMessages || m_queuedBytes + message.data.size() > MaxQueuedBytes)
        return refuseAndClose(QStringLiteral("over %1 messages waiting: at most %2 per second are "
                                             "taken")
                                  .arg(MaxQueuedMessages)
                                  .arg(MessagesPerSecond));
    if (!m_queueBudget->take(message.data.size()))
        return refuseAndClose(QStringLiteral("the engine holds too many waiting messages; retry"));
    m_queuedBytes += message.data.size();
    m_queue.emplaceBack(std::move(message));
    if (!m_drainTimer.isActive() && !m_waitingForWrites)
        m_drainTimer.start(0);
}

void RpcSession::refuseBinary()
{
    send(JsonRpc::serialize(
        JsonRpc::errorObject(QJsonValue::Null,
                             Error{ErrorCode::InvalidRequest,
                                   QStringLiteral(
                                       "Invalid Request: send JSON-RPC as text messages"),
                                   {}})));
}

void RpcSession::drain()
{
    m_drainTimer.stop(); // when called at the end of a read
    const qint64 elapsed = m_clock.restart();
    m_tokens = qMin<double>(MessageBurst, m_tokens + double(elapsed) * MessagesPerSecond / 1000);
    // A few messages per turn of the event loop: other connections get theirs in between.
    for (int n = 0; n < 16 && !m_queue.isEmpty() && m_tokens > 0 && !m_closing; ++n) {
        if (m_socket->bytesToWrite() > PauseAtUnsentBytes) {
            m_waitingForWrites = true; // bytesWritten resumes
            return;
        }
        const Queued message = m_queue.dequeue();
        m_queuedBytes -= message.data.size();
        m_queueBudget->give(message.data.size());
        if (message.binary) {
            refuseBinary();
            m_tokens -= 1;
        } else {
            m_tokens -= process(message.data);
        }
    }
    if (m_queue.isEmpty() || m_closing)
        return;
    const double missing = 1 - m_tokens;
    m_drainTimer.start(missing > 0 ? int(std::ceil(missing * 1000 / MessagesPerSecond)) : 0);
}

int RpcSession::process(const QByteArray &text)
{
    const int bySize = int(text.size() / BytesPerMessage) + 1;
    if (m_keys)
        m_keys->noteUse(m_keyId); // written at most once a minute
    const JsonRpc::Incoming in = JsonRpc::parse(text);
    if (in.error) {
        send(JsonRpc::serialize(JsonRpc::errorObject(QJsonValue::Null, *in.error)));
        return bySize;
    }
    std::shared_ptr<Batch> batch;
    if (in.batch) {
        batch = std::make_shared<Batch>();
        for (const JsonRpc::Message &m : in.messages) {
            if (!m.isNotification())
                ++batch->outstanding;
        }
        if (batch->outstanding == 0)
            batch.reset(); // only notifications: nothing is sent back
    }
    for (const JsonRpc::Message &m : in.messages)
        handle(m, batch);
    return qMax(bySize, int(in.messages.size()));
}

void RpcSession::answer(const QJsonObject &response, const std::shared_ptr<Batch> &batch)
{
    answerText(response.value(QStringLiteral("id")), {JsonRpc::serialize(response)}, batch);
}

void RpcSession::answerText(const QJsonValue &id, const QList<QByteArray> &parts,
                            const std::shared_ptr<Batch> &batch)
{
    if (!batch)
        return sendParts(parts);
    qsizetype size = 0;
    for (const QByteArray &part : parts)
        size += part.size();
    QByteArray text;
    if (batch->bytes + size + 1 > MaxBatchAnswerBytes) {
        text = JsonRpc::serialize(JsonRpc::errorObject(
            id, Error{ErrorCode::PayloadTooLarge,
                      QStringLiteral("this answer (%1 bytes) would take the batch's answers over "
                                     "%2 MiB: send the call on its own")
                          .arg(size)
                          .arg(MaxBatchAnswerBytes >> 20),
                      {}}));
    } else {
        text.reserve(size);
        for (const QByteArray &part : parts)
            text += part;
    }
    batch->bytes += text.size() + 1;
    batch->answers.append(std::move(text));
    if (--batch->outstanding == 0)
        send('[' + batch->answers.join(',') + ']');
}

void RpcSession::handle(const JsonRpc::Message &m, const std::shared_ptr<Batch> &batch)
{
    using Kind = JsonRpc::Message::Kind;
    if (m.kind == Kind::Invalid || m.kind == Kind::Response) {
        const Error e = m.error && m.kind == Kind::Invalid
                            ? *m.error
                            : Error{ErrorCode::InvalidRequest,
                                    QStringLiteral(
                                        "Invalid Request: the server takes no responses"),
                                    {}};
        answer(JsonRpc::errorObject(m.id, e), batch);
        return;
    }
    const bool notification = m.isNotification();
    const Methods::Reply reply = replyTo(m, batch);
    if (m.error) { // params that are not a named object
        if (!notification)
            answer(JsonRpc::errorObject(m.id, *m.error), batch);
        return;
    }
    const QString key = inFlightKey(m.id);
    if (!notification && !admit(m, key, batch))
        return;
    const CallContext ctx = callContext(m, key, batch);
    if (!callConnectionMethod(m, key, ctx, reply))
        m_methods->call(m.method, m.params, ctx, reply);
}

Methods::Reply RpcSession::replyTo(const JsonRpc::Message &m, const std::shared_ptr<Batch> &batch)
{
    return [this, id = m.id, notification = m.isNotification(), batch, key = inFlightKey(m.id),
            guard = QPointer<RpcSession>(this)](Result<QJsonValue> r) {
        if (!guard)
            return;
        if (notification)
            return;
        // A request answered already (cancelled) answers no more.
        if (!m_inFlight.remove(key))
            return;
        answer(r ? JsonRpc::resultObject(id, r.value()) : JsonRpc::errorObject(id, r.error()),
               batch);
    };
}

bool RpcSession::admit(const JsonRpc::Message &m, const QString &key,
                       const std::shared_ptr<Batch> &batch)
{
    if (m_inFlight.contains(key)) {
        answer(JsonRpc::errorObject(m.id,
                                    Error{ErrorCode::InvalidRequest,
                                          QStringLiteral("Invalid Request: id %1 is already in use")
                                              .arg(key),
                                          {}}),
               batch);
        return false;
    }
    if (m_inFlight.size() >= MaxInFlight) {
        answer(JsonRpc::errorObject(m.id,
                                    Error{ErrorCode::PayloadTooLarge,
                                          QStringLiteral("too many requests in flight (limit %1)")
                                              .arg(MaxInFlight),
                                          {}}),
               batch);
        return false;
    }
    return true;
}

CallContext RpcSession::callContext(const JsonRpc::Message &m, const QString &key,
                                    const std::shared_ptr<Batch> &batch)
{
    const bool notification = m.isNotification();
    CallContext ctx;
    ctx.keyId = m_keyId;
    ctx.requestId = m.id;
    ctx.connection = this;
    ctx.guard = this;
    ctx.notify = [guard = QPointer<RpcSession>(this)](const QByteArray &n) {
        if (guard)
            guard->send(n);
    };
    if (!notification)
        m_inFlight.insert(key, ctx.onCancel);
    if (!notification) {
        // A result that is JSON text already (a page of rows) goes out as it is.
        ctx.replyRaw = [this, id = m.id, key, batch,
                        guard = QPointer<RpcSession>(this)](const QList<QByteArray> &result) {
            if (!guard || !m_inFlight.remove(key))
                return;
            QByteArray head = JsonRpc::serialize(JsonRpc::resultObject(id, QJsonValue::Null));
            head.chop(int(qstrlen("null}"))); // "result" is the last member
            QList<QByteArray> parts{head};
            parts += result;
            parts += QByteArrayLiteral("}");
            answerText(id, parts, batch);
        };
    }
    return ctx;
}

bool RpcSession::callConnectionMethod(const JsonRpc::Message &m, const QString &key,
                                      const CallContext &ctx, const Methods::Reply &reply)
{
    if (m.method == QLatin1String("rpc.cancel"))
        cancelRequest(m.params, key, reply);
    else if (m.method == QLatin1String("rpc.streamEncoding"))
        setStreamEncoding(m.params, reply);
    else if (m.method == QLatin1String("stream.resume"))
        resumeStream(m.params, ctx, reply);
    else if (m.method == QLatin1String("stream.watch"))
        watchStream(m.params, ctx, reply);
    else
        return false;
    return true;
}

void RpcSession::cancelRequest(const QJsonObject &params, const QString &ownKey,
                               const Methods::Reply &reply)
{
    FieldReader p(params);
    const QJsonValue target = p.raw(QStringLiteral("id"));
    const QString targetKey = inFlightKey(target);
    const auto cancel = m_inFlight.take(targetKey);
    if (cancel && targetKey != ownKey) {
        if (*cancel)
            (*cancel)();
        answer(JsonRpc::errorObject(target, Error{ErrorCode::Cancelled,
                                                  QStringLiteral("cancelled by the client"),
                                                  {}}),
               {});
        reply(QJsonValue(QJsonObject{{QStringLiteral("cancelled"), true}}));
    } else {
        reply(Error::notFound(QStringLiteral("request %1").arg(targetKey)));
    }
}

// docs/protocol.md 2.6: output of the streams this connection follows, from now on, as
// binary frames ("binary") or as stream.output notifications ("json", the default).
void RpcSession::setStreamEncoding(const QJsonObject &params, const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString encoding = p.optionalChoice(QStringLiteral("encoding"),
                                              {QStringLiteral("json"), QStringLiteral("binary")},
                                              QStringLiteral("json"));
    if (p.failed())
        return reply(p.error());
    if (encoding == QLatin1String("binary")) {
        m_streams->setBinarySink(this,
                                 [guard = QPointer<RpcSession>(this)](const QByteArray &frame) {
                                     if (guard)
                                         guard->sendBinary(frame);
                                 });
    } else {
        m_streams->setBinarySink(this, nullptr);
    }
    reply(QJsonValue(QJsonObject{{QStringLiteral("encoding"), encoding}}));
}

void RpcSession::resumeStream(const QJsonObject &params, const CallContext &ctx,
                              const Methods::Reply &reply)
{
    const auto at = streamPosition(params);
    if (!at)
        return reply(at.error());
    auto r = m_streams->resume(m_keyId, at->streamId, at->after, ctx.notify);
    if (!r)
        return reply(r.error());
    m_streams->setSinkOwner(at->streamId, this);
    reply(QJsonValue(r->answer));
    r->replay();
}

// docs/protocol.md 2.3: follow a stream of this key that another connection started, without
// taking it from that connection.
void RpcSession::watchStream(const QJsonObject &params, const CallContext &ctx,
                             const Methods::Reply &reply)
{
    const auto at = streamPosition(params);
    if (!at)
        return reply(at.error());
    auto r = m_streams->watch(m_keyId, at->streamId, at->after, this, ctx.notify);
    if (!r)
        return reply(r.error());
    reply(QJsonValue(r->answer));
    r->replay();
}

} // namespace Sandbox::Engine
