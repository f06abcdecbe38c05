#pragma once

#include <QByteArray>
#include <QTcpServer>

#include <functional>

namespace Sandbox::Engine {

// The listening socket in front of the HTTP server. It reads a new connection's request head
// first (peeking, so nothing is consumed) and sends WebSocket upgrades to `onUpgrade` — where
// authentication happens before the handshake, with a real 401 — and every other connection on
// to the HTTP server (QAbstractHttpServer::bind()), which then reads the same bytes.
class ConnectionGate final : public QTcpServer
{
    Q_OBJECT

public:
    static constexpr qsizetype MaxHeadBytes = 16 * 1024;
    static constexpr qint64 MaxBodyBytes = 16 * 1024 * 1024 + 64 * 1024; // docs/protocol.md 2.2

    using UpgradeHandler = std::function<void(QTcpSocket *socket, const QByteArray &head)>;

    explicit ConnectionGate(UpgradeHandler onUpgrade, QObject *parent = nullptr);

protected:
    void incomingConnection(qintptr handle) override;

private:
    void inspect(QTcpSocket *socket);

    UpgradeHandler m_onUpgrade;
};

// Small helpers over a raw HTTP/1.1 request head.
namespace HttpHead {
QByteArray header(const QByteArray &head, QByteArrayView name); // case-insensitive, trimmed
QByteArray target(const QByteArray &head);                      // "/rpc?x=1"
bool isWebSocketUpgrade(const QByteArray &head);
} // namespace HttpHead

} // namespace Sandbox::Engine
