#include "rpctestserver.h"

#include <QJsonDocument>
#include <QWebSocket>

RpcTestServer::RpcTestServer(QObject *parent)
    : QObject(parent)
    , m_server(QStringLiteral("test"), QWebSocketServer::NonSecureMode)
{
    handler = [](QWebSocket *socket, const QJsonObject &message) {
        if (message.value(QStringLiteral("method")).toString() == QStringLiteral("test.echo"))
            reply(socket, message, message.value(QStringLiteral("params")));
    };
    connect(&m_server, &QWebSocketServer::newConnection, this, &RpcTestServer::onNewConnection);
}

RpcTestServer::~RpcTestServer()
{
    dropAll();
}

bool RpcTestServer::listen(quint16 port)
{
    if (!m_server.listen(QHostAddress::LocalHost, port))
        return false;
    m_port = m_server.serverPort();
    return true;
}

void RpcTestServer::stopListening()
{
    m_server.close();
}

QUrl RpcTestServer::url() const
{
    return QUrl(QStringLiteral("ws://127.0.0.1:%1/rpc").arg(m_port));
}

void RpcTestServer::send(QWebSocket *socket, const QJsonObject &message)
{
    socket->sendTextMessage(
        QString::fromUtf8(QJsonDocument(message).toJson(QJsonDocument::Compact)));
}

void RpcTestServer::sendRaw(QWebSocket *socket, const QByteArray &text)
{
    socket->sendTextMessage(QString::fromUtf8(text));
}

void RpcTestServer::reply(QWebSocket *socket, const QJsonObject &request, const QJsonValue &result)
{
    send(socket, QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                             {QStringLiteral("id"), request.value(QStringLiteral("id"))},
                             {QStringLiteral("result"), result}});
}

void RpcTestServer::dropAll()
{
    for (const QPointer<QWebSocket> &s : std::as_const(m_sockets)) {
        if (s)
            s->abort();
    }
}

void RpcTestServer::onNewConnection()
{
    while (QWebSocket *socket = m_server.nextPendingConnection()) {
        ++connectionCount;
        socket->setParent(this);
        lastAuthorization = socket->request().rawHeader("Authorization");
        connect(socket, &QWebSocket::disconnected, socket, &QObject::deleteLater);
        if (closeOnConnectCode != 0) {
            socket->close(QWebSocketProtocol::CloseCode(closeOnConnectCode),
                          QStringLiteral("unauthorized"));
            continue;
        }
        if (dropOnConnect > 0) {
            --dropOnConnect;
            socket->abort();
            continue;
        }
        m_sockets.append(socket);
        m_current = socket;
        connect(socket, &QWebSocket::textMessageReceived, this,
                [this, s = QPointer<QWebSocket>(socket)](const QString &text) {
                    const QJsonObject message = QJsonDocument::fromJson(text.toUtf8()).object();
                    received.append(message);
                    Q_EMIT messageReceived(message);
                    if (s && handler)
                        handler(s, message);
                });
        Q_EMIT clientConnected();
    }
}
