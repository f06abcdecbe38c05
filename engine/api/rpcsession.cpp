#include "rpcsession.h"

#include "methods.h"
#include "params.h"
#include "service/streamhub.h"

#include <QJsonDocument>
#include <QLoggingCategory>
#include <QWebSocket>

Q_LOGGING_CATEGORY(lcRpcSession, "sandboxd.rpc")

namespace Sandbox::Engine {

// Collects the answers of one batch; sends them as one array when the last one is in.
struct RpcSession::Batch
{
    int outstanding = 0;
    QJsonArray answers;
};

RpcSession::RpcSession(QWebSocket *socket, QString keyId, Methods *methods, StreamHub *streams,
                       QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_keyId(std::move(keyId))
    , m_methods(methods)
    , m_streams(streams)
{
    m_socket->setParent(this);
    // Up to twice the limit a message is read and answered -32006; beyond that the socket is
    // closed (1009), so nobody can make the engine buffer without bound.
    m_socket->setMaxAllowedIncomingMessageSize(2 * JsonRpc::MaxMessageBytes);
    m_socket->setMaxAllowedIncomingFrameSize(2 * JsonRpc::MaxMessageBytes);
    connect(m_socket, &QWebSocket::textMessageReceived, this, &RpcSession::onText);
    connect(m_socket, &QWebSocket::binaryMessageReceived, this, &RpcSession::onBinary);
    connect(m_socket, &QWebSocket::disconnected, this, [this] {
        m_streams->detach(this);
        deleteLater();
    });
    qCDebug(lcRpcSession) << "connection for key" << m_keyId << "from" << m_socket->peerAddress();
}

RpcSession::~RpcSession()
{
    m_streams->detach(this);
}

void RpcSession::close(int code, const QString &reason)
{
    m_socket->close(QWebSocketProtocol::CloseCode(code), reason);
}

void RpcSession::send(const QByteArray &text)
{
    if (m_socket->state() == QAbstractSocket::ConnectedState)
        m_socket->sendTextMessage(QString::fromUtf8(text));
}

QString RpcSession::inFlightKey(const QJsonValue &id) const
{
    return QString::fromUtf8(QJsonDocument(QJsonArray{id}).toJson(QJsonDocument::Compact));
}

void RpcSession::onBinary(const QByteArray &)
{
    send(JsonRpc::serialize(
        JsonRpc::errorObject(QJsonValue::Null,
                             Error{ErrorCode::InvalidRequest,
                                   QStringLiteral(
                                       "Invalid Request: send JSON-RPC as text messages"),
                                   {}})));
}

void RpcSession::onText(const QString &text)
{
    const JsonRpc::Incoming in = JsonRpc::parse(text.toUtf8());
    if (in.error) {
        send(JsonRpc::serialize(JsonRpc::errorObject(QJsonValue::Null, *in.error)));
        return;
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
}

void RpcSession::answer(const QJsonObject &response, const std::shared_ptr<Batch> &batch)
{
    if (!batch) {
        send(JsonRpc::serialize(response));
        return;
    }
    batch->answers.append(response);
    if (--batch->outstanding == 0)
        send(QJsonDocument(batch->answers).toJson(QJsonDocument::Compact));
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
    auto reply = [this, id = m.id, notification, batch, key = inFlightKey(m.id),
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
    if (m.error) { // params that are not a named object
        if (!notification)
            answer(JsonRpc::errorObject(m.id, *m.error), batch);
        return;
    }
    const QString key = inFlightKey(m.id);
    if (!notification) {
        if (m_inFlight.contains(key)) {
            answer(JsonRpc::errorObject(m.id, Error{ErrorCode::InvalidRequest,
                                                    QStringLiteral(
                                                        "Invalid Request: id %1 is already in use")
                                                        .arg(key),
                                                    {}}),
                   batch);
            return;
        }
        if (m_inFlight.size() >= MaxInFlight) {
            answer(JsonRpc::errorObject(m.id, Error{ErrorCode::PayloadTooLarge,
                                                    QStringLiteral(
                                                        "too many requests in flight (limit %1)")
                                                        .arg(MaxInFlight),
                                                    {}}),
                   batch);
            return;
        }
    }

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

    // Methods that belong to the connection itself.
    if (m.method == QLatin1String("rpc.cancel")) {
        Params p(m.params);
        const QJsonValue target = p.raw(QStringLiteral("id"));
        const QString targetKey = inFlightKey(target);
        const auto cancel = m_inFlight.take(targetKey);
        if (cancel && targetKey != key) {
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
        return;
    }
    if (m.method == QLatin1String("stream.resume")) {
        Params p(m.params);
        const QString streamId = p.requiredString(QStringLiteral("streamId"));
        const qint64 after = p.optionalInteger(QStringLiteral("after"), 0, 0,
                                               std::numeric_limits<qint64>::max() / 2);
        if (p.failed())
            return reply(p.error());
        auto r = m_streams->resume(m_keyId, streamId, after, ctx.notify);
        if (!r)
            return reply(r.error());
        m_streams->setSinkOwner(streamId, this);
        reply(QJsonValue(r->answer));
        r->replay();
        return;
    }
    m_methods->call(m.method, m.params, ctx, reply);
}

} // namespace Sandbox::Engine
