#pragma once

#include "httpconnection.h"
#include "logthrottle.h"

#include <QHash>
#include <QHostAddress>
#include <QTcpServer>

namespace Sandbox::Engine {

// The listening socket: every accepted connection is counted (in total and per peer address) and
// becomes an HttpConnection; one over a cap is answered 429 at once and closed (docs/protocol.md
// 2.2). A connection counts until its socket is gone, WebSockets included.
class ConnectionGate final : public QTcpServer
{
    Q_OBJECT

public:
    struct Limits
    {
        HttpLimits http;
        int maxConnections = 1024;
        int maxConnectionsPerPeer = 128;
    };

    ConnectionGate(HttpHandler *handler, const Limits &limits, QObject *parent = nullptr);

    int connectionCount() const { return m_open; }
    const Limits &limits() const { return m_limits; }
    // The address a connection is counted under: IPv4 as is, IPv6 by its /64 (one host's share).
    static QByteArray peerKey(const QHostAddress &address);

protected:
    void incomingConnection(qintptr handle) override;

private:
    void release(const QByteArray &peer);

    HttpHandler *m_handler; // not owned
    Limits m_limits;
    ByteBudget m_budget;
    int m_open = 0;
    QHash<QByteArray, int> m_perPeer;
    LogThrottle m_refusedLog{10000};
};

} // namespace Sandbox::Engine
