#include "apiserver.h"

#include "connectiongate.h"
#include "keystore.h"
#include "methods.h"
#include "restroutes.h"
#include "rpcsession.h"

#include <QHttpServerRequest>
#include <QHttpServerResponder>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QMetaEnum>
#include <QTcpSocket>
#include <QWebSocket>

Q_LOGGING_CATEGORY(lcApi, "sandboxd.api")

namespace Sandbox::Engine {

namespace {

using StatusCode = QHttpServerResponder::StatusCode;

QString peerKey(const QHostAddress &address, quint16 port)
{
    return address.toString() + u'|' + QString::number(port);
}

QByteArray errorBody(const Error &e)
{
    return QJsonDocument(QJsonObject{{QStringLiteral("error"), e.toJson()}})
        .toJson(QJsonDocument::Compact);
}

QByteArray statusReason(int status)
{
    switch (status) {
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    default:
        return "Error";
    }
}

// A complete HTTP response written straight to a socket (before any HTTP server owns it).
void writeRawResponse(QTcpSocket *socket, int status, const QByteArray &body,
                      const QByteArray &extraHeaders = {})
{
    socket->write("HTTP/1.1 " + QByteArray::number(status) + ' ' + statusReason(status)
                  + "\r\n"
                    "Content-Type: application/json\r\nContent-Length: "
                  + QByteArray::number(body.size()) + "\r\nConnection: close\r\n" + extraHeaders
                  + "\r\n" + body);
    socket->disconnectFromHost();
}

} // namespace

ApiServer::ApiServer(Methods *methods, StreamHub *streams, KeyStore *keys, QObject *parent)
    : QAbstractHttpServer(parent)
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

Result<QUrl> ApiServer::listen(const QHostAddress &address, quint16 port)
{
    auto *gate = new ConnectionGate([this](QTcpSocket *socket,
                                           const QByteArray &head) { onUpgrade(socket, head); },
                                    this);
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
    bind(gate);
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

void ApiServer::onUpgrade(QTcpSocket *socket, const QByteArray &head)
{
    const QUrl target(QString::fromLatin1(HttpHead::target(head)));
    if (target.path() != QLatin1String("/rpc")) {
        writeRawResponse(socket, 404,
                         errorBody(Error{ErrorCode::MethodNotFound,
                                         QStringLiteral("WebSockets are served at /rpc only"),
                                         {}}));
        return;
    }
    const QUrlQuery query(target);
    Result<QString> key = Error{ErrorCode::Unauthorized, QStringLiteral("missing API key"), {}};
    if (query.hasQueryItem(QStringLiteral("key")) || query.hasQueryItem(QStringLiteral("token"))
        || query.hasQueryItem(QStringLiteral("apiKey"))) {
        key = Error{ErrorCode::Unauthorized,
                    QStringLiteral("API keys in URLs are refused; use the Authorization header or "
                                   "the bearer subprotocol"),
                    {}};
    } else if (const QByteArray auth = HttpHead::header(head, "authorization"); !auth.isEmpty()) {
        key = authenticate(auth);
    } else {
        // Browsers: Sec-WebSocket-Protocol: sandbox.v1, bearer.KEY
        for (const QByteArray &p : HttpHead::header(head, "sec-websocket-protocol").split(',')) {
            const QByteArray proto = p.trimmed();
            if (proto.startsWith("bearer."))
                key = m_keys->verify(proto.mid(7));
        }
    }
    if (!key) {
        qCInfo(lcApi) << "refused a WebSocket from" << socket->peerAddress() << ":"
                      << key.error().message;
        writeRawResponse(socket, 401, errorBody(key.error()), "WWW-Authenticate: Bearer\r\n");
        return;
    }
    m_upgradedKeys.insert(peerKey(socket->peerAddress(), socket->peerPort()), key.value());
    m_wsServer.handleConnection(socket);
    Q_EMIT socket->readyRead();
}

void ApiServer::onWebSocket()
{
    while (QWebSocket *ws = m_wsServer.nextPendingConnection()) {
        const QString key = m_upgradedKeys.take(peerKey(ws->peerAddress(), ws->peerPort()));
        if (key.isEmpty()) {
            ws->close(QWebSocketProtocol::CloseCode(4401), QStringLiteral("unauthorized"));
            ws->deleteLater();
            continue;
        }
        auto *session = new RpcSession(ws, key, m_methods, m_streams, this);
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

int ApiServer::sessionCount() const
{
    return int(std::count_if(m_sessions.begin(), m_sessions.end(),
                             [](const auto &s) { return !s.isNull(); }));
}

bool ApiServer::handleRequest(const QHttpServerRequest &request, QTcpSocket *socket)
{
    // An upgrade that reaches us here came on a connection that already spoke HTTP.
    if (!request.value("upgrade").isEmpty())
        return false;

    auto responder = std::make_shared<QHttpServerResponder>(makeResponder(request, socket));
    QPointer<QTcpSocket> alive(socket);
    const auto sendJson = [responder, alive](int status, const QByteArray &body,
                                             bool authChallenge = false) {
        if (!alive)
            return;
        if (authChallenge)
            responder->write(body,
                             {{"Content-Type", "application/json"}, {"WWW-Authenticate", "Bearer"}},
                             StatusCode(status));
        else
            responder->write(body, {{"Content-Type", "application/json"}}, StatusCode(status));
    };
    const auto sendError = [sendJson](const Error &e) {
        sendJson(httpStatusFor(e.code), errorBody(e), e.code == ErrorCode::Unauthorized);
    };

    const QString path = request.url().path();
    const QByteArray method
        = QHttpServerRequest::staticMetaObject
              .enumerator(QHttpServerRequest::staticMetaObject.indexOfEnumerator("Method"))
              .valueToKey(int(request.method()));
    if (path == QLatin1String("/health") && request.method() == QHttpServerRequest::Method::Get) {
        sendJson(200, QJsonDocument(
                          QJsonObject{{QStringLiteral("status"), QStringLiteral("ok")},
                                      {QStringLiteral("version"), QStringLiteral(SANDBOX_VERSION)},
                                      {QStringLiteral("backend"), QStringLiteral("local")}})
                          .toJson(QJsonDocument::Compact));
        return true;
    }
    if (!path.startsWith(QLatin1String("/api/"))) {
        sendError(Error{ErrorCode::MethodNotFound, QStringLiteral("no route for %1").arg(path), {}});
        return true;
    }
    const auto key = authenticate(request.value("authorization"));
    if (!key) {
        sendError(key.error());
        return true;
    }
    if (request.body().size() > 16 * 1024 * 1024 + 1024) {
        sendError(Error{ErrorCode::PayloadTooLarge,
                        QStringLiteral("the body is over the limit of 16 MiB"),
                        {}});
        return true;
    }
    const auto call = routeRestRequest(method.toUpper(), path, request.query(), request.body());
    if (!call) {
        sendError(call.error());
        return true;
    }
    CallContext ctx;
    ctx.keyId = key.value();
    ctx.guard = socket;
    const int successStatus = call->successStatus;
    const bool raw = call->response == RestCall::Body::RawFileContent;
    m_methods
        ->call(call->method, call->params, ctx,
               [responder, alive, sendJson, sendError, successStatus, raw](Result<QJsonValue> r) {
                   if (!r)
                       return sendError(r.error());
                   if (raw) {
                       if (!alive)
                           return;
                       const QByteArray bytes = QByteArray::fromBase64(
                           r->toObject().value(QStringLiteral("content")).toString().toLatin1());
                       responder->write(bytes, {{"Content-Type", "application/octet-stream"}},
                                        StatusCode::Ok);
                       return;
                   }
                   const QJsonValue v = r.value();
                   sendJson(successStatus,
                            v.isObject()
                                ? QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact)
                                : QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact));
               });
    return true;
}

void ApiServer::missingHandler(const QHttpServerRequest &request, QTcpSocket *socket)
{
    auto responder = makeResponder(request, socket);
    responder.write(errorBody(
                        Error{ErrorCode::InvalidRequest,
                              QStringLiteral(
                                  "a WebSocket upgrade must be the first request on a connection"),
                              {}}),
                    {{"Content-Type", "application/json"}}, StatusCode::BadRequest);
}

} // namespace Sandbox::Engine
