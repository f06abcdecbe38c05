#include "apiserver.h"

#include "keystore.h"
#include "methods.h"
#include "rpcsession.h"

#include "protocol/restroutes.h"

#include <QJsonDocument>
#include <QLoggingCategory>
#include <QTcpSocket>
#include <QWebSocket>

Q_LOGGING_CATEGORY(lcApi, "sandboxd.api")

namespace Sandbox::Engine {

namespace {

QString peerKey(const QHostAddress &address, quint16 port)
{
    return address.toString() + u'|' + QString::number(port);
}

bool isHealth(const HttpRequestHead &head)
{
    return head.method == "GET" && head.path() == QLatin1String("/health");
}

HttpResponse jsonResponse(int status, const QJsonValue &v)
{
    HttpResponse r;
    r.status = status;
    r.body = v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                         : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
    return r;
}

} // namespace

ApiServer::ApiServer(Methods *methods, StreamHub *streams, KeyStore *keys, QObject *parent)
    : QObject(parent)
    , m_methods(methods)
    , m_streams(streams)
    , m_keys(keys)
    , m_wsServer(QStringLiteral("sandboxd"), QWebSocketServer::NonSecureMode)
{
    m_wsServer.setSupportedSubprotocols({QStringLiteral("sandbox.v1")});
    connect(&m_wsServer, &QWebSocketServer::newConnection, this, &ApiServer::onWebSocket);
}

ApiServer::~ApiServer()
{
    for (const auto &s : std::as_const(m_sessions))
        delete s.data();
}

Result<QUrl> ApiServer::listen(const QHostAddress &address, quint16 port,
                               const ConnectionGate::Limits &limits)
{
    auto *gate = new ConnectionGate(this, limits, this);
    if (!gate->listen(address, port)) {
        const Error e{ErrorCode::InternalError,
                      QStringLiteral("cannot listen on %1:%2: %3")
                          .arg(address.toString())
                          .arg(port)
                          .arg(gate->errorString()),
                      {}};
        delete gate;
        return e;
    }
    QUrl url;
    url.setScheme(QStringLiteral("http"));
    url.setHost(address.toString());
    url.setPort(gate->serverPort());
    return url;
}

Result<QString> ApiServer::authenticate(QByteArrayView authorization)
{
    const QByteArray token = KeyStore::bearerToken(authorization);
    if (token.isEmpty())
        return Error{ErrorCode::Unauthorized,
                     QStringLiteral("missing API key: send Authorization: Bearer KEY"),
                     {}};
    return m_keys->verify(token);
}

int ApiServer::webSocketsOf(const QString &keyId) const
{
    int n = int(std::count_if(m_upgrades.cbegin(), m_upgrades.cend(),
                              [&keyId](const Upgrade &u) { return u.keyId == keyId; }));
    for (const auto &s : m_sessions) {
        if (s && s->keyId() == keyId)
            ++n;
    }
    return n;
}

std::optional<HttpResponse> ApiServer::admit(const HttpRequestHead &head, QString *keyId)
{
    if (head.isWebSocketUpgrade())
        return admitUpgrade(head, keyId);
    if (isHealth(head))
        return std::nullopt;
    const QString path = head.path();
    if (!path.startsWith(QLatin1String("/api/")))
        return HttpResponse::error(
            Error{ErrorCode::MethodNotFound, QStringLiteral("no route for %1").arg(path), {}});
    const auto key = authenticate(head.header("authorization"));
    if (!key)
        return HttpResponse::error(key.error());
    *keyId = key.value();
    return std::nullopt;
}

std::optional<HttpResponse> ApiServer::admitUpgrade(const HttpRequestHead &head, QString *keyId)
{
    if (head.path() != QLatin1String("/rpc"))
        return HttpResponse::error(Error{ErrorCode::MethodNotFound,
                                         QStringLiteral("WebSockets are served at /rpc only"),
                                         {}});
    const QUrlQuery query = head.query();
    Result<QString> key = Error{ErrorCode::Unauthorized, QStringLiteral("missing API key"), {}};
    if (query.hasQueryItem(QStringLiteral("key")) || query.hasQueryItem(QStringLiteral("token"))
        || query.hasQueryItem(QStringLiteral("apiKey"))) {
        key = Error{ErrorCode::Unauthorized,
                    QStringLiteral("API keys in URLs are refused; use the Authorization header or "
                                   "the bearer subprotocol"),
                    {}};
    } else if (const QByteArray auth = head.header("authorization"); !auth.isEmpty()) {
        key = authenticate(auth);
    } else {
        // Browsers: Sec-WebSocket-Protocol: sandbox.v1, bearer.KEY
        for (const QByteArray &p : head.header("sec-websocket-protocol").split(',')) {
            const QByteArray proto = p.trimmed();
            if (proto.startsWith("bearer."))
                key = m_keys->verify(proto.mid(7));
        }
    }
    if (!key) {
        if (const int n = m_refusedLog.pass())
            qCInfo(lcApi).noquote()
                << "refused" << n << "WebSocket upgrade(s); the latest:" << key.error().message;
        return HttpResponse::error(key.error());
    }
    if (webSocketsOf(key.value()) >= MaxWebSocketsPerKey) {
        HttpResponse r = HttpResponse::error(
            Error{ErrorCode::QuotaExceeded,
                  QStringLiteral("this key has %1 WebSockets open, the limit")
                      .arg(MaxWebSocketsPerKey),
                  {}});
        r.headers.emplaceBack("Retry-After", "1");
        return r;
    }
    *keyId = key.value();
    return std::nullopt;
}

void ApiServer::upgrade(QTcpSocket *socket, const HttpRequestHead &, const QString &keyId)
{
    const QString peer = peerKey(socket->peerAddress(), socket->peerPort());
    m_upgrades.insert(peer, {keyId, socket});
    // The socket is ours to delete (QWebSocket does not own the socket it upgrades): a handshake
    // that fails closes it and never reaches onWebSocket(); its place is freed with it.
    connect(socket, &QAbstractSocket::disconnected, this, [this, peer, socket] {
        if (m_upgrades.value(peer).socket == socket) {
            m_upgrades.remove(peer);
            socket->deleteLater();
        }
    });
    m_wsServer.handleConnection(socket);
}

void ApiServer::onWebSocket()
{
    while (QWebSocket *ws = m_wsServer.nextPendingConnection()) {
        const Upgrade upgrade = m_upgrades.take(peerKey(ws->peerAddress(), ws->peerPort()));
        // The socket goes with its WebSocket (and with it the connection's place at the gate).
        if (upgrade.socket)
            connect(ws, &QObject::destroyed, upgrade.socket, &QObject::deleteLater);
        const QString key = upgrade.keyId;
        if (key.isEmpty() || !upgrade.socket) {
            ws->close(QWebSocketProtocol::CloseCode(4401), QStringLiteral("unauthorized"));
            ws->deleteLater();
            continue;
        }
        auto *session = new RpcSession(ws, upgrade.socket, key, m_keys, m_methods, m_streams,
                                       &m_queueBudget, &m_sessionLog, this);
        m_sessions.removeAll(nullptr);
        m_sessions.append(session);
    }
}

void ApiServer::disconnectKey(const QString &keyId)
{
    for (const auto &s : std::as_const(m_sessions)) {
        if (s && s->keyId() == keyId)
            s->close(4401, QStringLiteral("the API key was revoked"));
    }
}

void ApiServer::notifyKey(const QString &keyId, const QByteArray &notification)
{
    for (const auto &s : std::as_const(m_sessions)) {
        if (s && s->keyId() == keyId)
            s->notify(notification);
    }
}

int ApiServer::sessionCount() const
{
    return int(std::count_if(m_sessions.begin(), m_sessions.end(),
                             [](const auto &s) { return !s.isNull(); }));
}

void ApiServer::handle(const HttpRequestHead &head, const QByteArray &body, const QString &keyId,
                       QObject *guard, Respond respond)
{
    if (isHealth(head)) {
        respond(
            jsonResponse(200,
                         QJsonObject{{QStringLiteral("status"), QStringLiteral("ok")},
                                     {QStringLiteral("version"), QStringLiteral(SANDBOX_VERSION)},
                                     {QStringLiteral("backend"), QStringLiteral("local")}}));
        return;
    }
    const auto call = Rest::callForRequest(head.method, head.path(), head.query(), body);
    if (!call)
        return respond(HttpResponse::error(call.error()));
    CallContext ctx;
    ctx.keyId = keyId;
    ctx.guard = guard;
    const int successStatus = call->route->successStatus;
    const bool raw = call->route->answer == Rest::Route::Answer::Raw;
    if (!raw) {
        // A result that is JSON text already (a page of rows) is the body as it is.
        ctx.replyRaw = [respond, successStatus](const QList<QByteArray> &parts) {
            HttpResponse text;
            text.status = successStatus;
            qsizetype size = 0;
            for (const QByteArray &part : parts)
                size += part.size();
            text.body.reserve(size);
            for (const QByteArray &part : parts)
                text.body += part;
            respond(std::move(text));
        };
    }
    m_methods->call(call->method, call->params, ctx,
                    [respond, successStatus, raw](Result<QJsonValue> r) {
                        if (!r)
                            return respond(HttpResponse::error(r.error()));
                        if (!raw)
                            return respond(jsonResponse(successStatus, r.value()));
                        HttpResponse bytes;
                        bytes.contentType = "application/octet-stream";
                        bytes.body = QByteArray::fromBase64(
                            r->toObject().value(QStringLiteral("content")).toString().toLatin1());
                        respond(std::move(bytes));
                    });
}

} // namespace Sandbox::Engine
