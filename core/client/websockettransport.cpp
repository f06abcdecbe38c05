#include "websockettransport.h"

#include <protocol/jsonrpc.h>

#include <QLoggingCategory>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QTimer>
#include <QWebSocket>

Q_LOGGING_CATEGORY(lcWsTransport, "sandbox.core.transport", QtWarningMsg)

namespace Sandbox {

WebSocketTransport::WebSocketTransport(const QUrl &url, const QString &apiKey, QObject *parent)
    : Transport(parent)
    , m_url(url)
    , m_apiKey(apiKey)
{}

WebSocketTransport::~WebSocketTransport()
{
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
    }
}

void WebSocketTransport::open()
{
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
        m_socket->deleteLater();
    }
    m_opened = false;
    auto *socket = new QWebSocket(QString(), QWebSocketProtocol::VersionLatest, this);
    m_socket = socket;
    socket->setMaxAllowedIncomingMessageSize(quint64(JsonRpc::MaxMessageBytes));
    socket->setMaxAllowedIncomingFrameSize(quint64(JsonRpc::MaxMessageBytes));

    connect(socket, &QWebSocket::connected, this, [this, socket] {
        if (socket != m_socket)
            return;
        m_opened = true;
        qCDebug(lcWsTransport) << "connected to" << m_url.toDisplayString();
        Q_EMIT opened();
    });
    connect(socket, &QWebSocket::textMessageReceived, this, [this, socket](const QString &text) {
        if (socket == m_socket)
            Q_EMIT textReceived(text.toUtf8());
    });
    connect(socket, &QWebSocket::binaryMessageReceived, this,
            [this, socket](const QByteArray &data) {
                if (socket == m_socket)
                    Q_EMIT binaryReceived(data);
            });
    connect(socket, &QWebSocket::disconnected, this, [this, socket] {
        if (socket != m_socket)
            return;
        int code = int(socket->closeCode());
        QString reason = socket->closeReason();
        if (!m_opened && code == int(QWebSocketProtocol::CloseCodeNormal))
            code = CloseAbnormal; // never got through: not a clean close
        finish(code, reason.isEmpty() ? socket->errorString() : reason);
    });
    connect(socket, qOverload<QAbstractSocket::SocketError>(&QWebSocket::error), this,
            [this, socket](QAbstractSocket::SocketError error) {
                if (socket != m_socket)
                    return;
                const QString why = socket->errorString();
                qCDebug(lcWsTransport) << "socket error" << error << why;
                if (m_opened)
                    return; // disconnected() follows and reports the close
                // QWebSocket reports a refused upgrade as "Unhandled http status code: 401 (...)".
                static const QRegularExpression unauthorized(QStringLiteral("\\b401\\b"));
                if (error == QAbstractSocket::ConnectionRefusedError && why.contains(unauthorized))
                    finish(CloseUnauthorized, QStringLiteral("unauthorized"));
                else
                    finish(CloseAbnormal, why);
            });

    QNetworkRequest request(m_url);
    if (!m_apiKey.isEmpty())
        request.setRawHeader("Authorization", "Bearer " + m_apiKey.toUtf8());
    qCDebug(lcWsTransport) << "connecting to" << m_url.toDisplayString();
    socket->open(request);
}

void WebSocketTransport::close()
{
    QWebSocket *socket = takeSocket();
    if (!socket)
        return;
    // Let the close handshake finish in the background, bounded in time.
    connect(socket, &QWebSocket::disconnected, socket, &QObject::deleteLater);
    QTimer::singleShot(5000, socket, &QObject::deleteLater);
    socket->close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("closed by client"));
    Q_EMIT closed(int(QWebSocketProtocol::CloseCodeNormal), QStringLiteral("closed by client"));
}

bool WebSocketTransport::sendText(const QByteArray &message)
{
    if (!isOpen())
        return false;
    m_socket->sendTextMessage(QString::fromUtf8(message));
    // On its way now: through QTcpSocket's buffer it would wait for the next turn of the event
    // loop, a wake-up and its system calls more per request (QWebSocket writes a message's frames
    // to the socket whole and in order, so flushing keeps the order).
    m_socket->flush();
    return true;
}

bool WebSocketTransport::isOpen() const
{
    return m_socket && m_opened && m_socket->state() == QAbstractSocket::ConnectedState;
}

QWebSocket *WebSocketTransport::takeSocket()
{
    QWebSocket *socket = m_socket;
    m_socket = nullptr;
    m_opened = false;
    if (socket)
        socket->disconnect(this);
    return socket;
}

void WebSocketTransport::finish(int closeCode, const QString &reason)
{
    QWebSocket *socket = takeSocket();
    if (!socket)
        return;
    socket->deleteLater();
    qCDebug(lcWsTransport) << "closed" << closeCode << reason;
    Q_EMIT closed(closeCode, reason);
}

} // namespace Sandbox
