#pragma once

#include "protocol/result.h"

#include <QAbstractHttpServer>
#include <QHash>
#include <QHostAddress>
#include <QPointer>
#include <QUrl>
#include <QWebSocketServer>

namespace Sandbox::Engine {

class KeyStore;
class Methods;
class RpcSession;
class StreamHub;

// REST and JSON-RPC over WebSocket on one port (docs/protocol.md, sections 1 and 5).
class ApiServer final : public QAbstractHttpServer
{
    Q_OBJECT

public:
    ApiServer(Methods *methods, StreamHub *streams, KeyStore *keys, QObject *parent = nullptr);
    ~ApiServer() override;

    // Starts listening; answers the URL (with the real port when `port` was 0).
    Result<QUrl> listen(const QHostAddress &address, quint16 port);

    // Closes the WebSockets of a revoked key.
    void disconnectKey(const QString &keyId);
    int sessionCount() const;

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    void onUpgrade(QTcpSocket *socket, const QByteArray &head);
    void onWebSocket();
    Result<QString> authenticate(QByteArrayView authorization);

    Methods *m_methods;   // not owned
    StreamHub *m_streams; // not owned
    KeyStore *m_keys;     // not owned
    QWebSocketServer m_wsServer;
    // Upgrades that passed authentication, by peer, until the WebSocket handshake completes.
    QHash<QString, QString> m_upgradedKeys;
    QList<QPointer<RpcSession>> m_sessions;
};

} // namespace Sandbox::Engine
