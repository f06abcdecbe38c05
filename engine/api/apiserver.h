#pragma once

#include "connectiongate.h"
#include "logthrottle.h"
#include "protocol/result.h"

#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QPointer>
#include <QTcpSocket>
#include <QUrl>
#include <QWebSocketServer>

namespace Sandbox::Engine {

class KeyStore;
class Methods;
class RpcSession;
class StreamHub;

// REST and JSON-RPC over WebSocket on one port (docs/protocol.md, sections 1 and 5). Every
// request is decided from its head (admit(): the key, the route, the per-key WebSocket cap)
// before the connection reads any of its body.
class ApiServer final : public QObject, private HttpHandler
{
    Q_OBJECT

public:
    static constexpr int MaxWebSocketsPerKey = 64;

    ApiServer(Methods *methods, StreamHub *streams, KeyStore *keys, QObject *parent = nullptr);
    ~ApiServer() override;

    // Starts listening; answers the URL (with the real port when `port` was 0).
    Result<QUrl> listen(const QHostAddress &address, quint16 port,
                        const ConnectionGate::Limits &limits = {});

    // Closes the WebSockets of a revoked key.
    void disconnectKey(const QString &keyId);
    // Sends a notification to every WebSocket of a key (docs/protocol.md 4.9: network.denied).
    void notifyKey(const QString &keyId, const QByteArray &notification);
    int sessionCount() const;

private:
    std::optional<HttpResponse> admit(const HttpRequestHead &head, QString *keyId) override;
    void handle(const HttpRequestHead &head, const QByteArray &body, const QString &keyId,
                QObject *guard, Respond respond) override;
    void upgrade(QTcpSocket *socket, const HttpRequestHead &head, const QString &keyId) override;

    std::optional<HttpResponse> admitUpgrade(const HttpRequestHead &head, QString *keyId);
    Result<QString> authenticate(QByteArrayView authorization);
    int webSocketsOf(const QString &keyId) const;
    void onWebSocket();

    Methods *m_methods;   // not owned
    StreamHub *m_streams; // not owned
    KeyStore *m_keys;     // not owned
    QWebSocketServer m_wsServer;
    // Upgrades that passed authentication, by peer, until the WebSocket handshake completes.
    struct Upgrade
    {
        QString keyId;
        QPointer<QTcpSocket> socket;
    };
    QHash<QString, Upgrade> m_upgrades;
    QList<QPointer<RpcSession>> m_sessions;
    LogThrottle m_refusedLog{10000};
    ByteBudget m_queueBudget{256 * 1024 * 1024}; // messages waiting in every RpcSession
    LogThrottle m_sessionLog{10000};
};

} // namespace Sandbox::Engine
