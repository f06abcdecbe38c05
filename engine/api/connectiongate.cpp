#include "connectiongate.h"

#include <QLoggingCategory>
#include <QPointer>
#include <QTcpSocket>
#include <QTimer>

#include <functional>

Q_LOGGING_CATEGORY(lcGate, "sandboxd.gate")

namespace Sandbox::Engine {

namespace {

// A connection's place at the gate, held as a child of its socket: the place is freed when the
// socket goes, whoever deletes it. (A child, not a connection to destroyed(): QWebSocket
// disconnects every signal of the socket it upgrades.)
class Place final : public QObject
{
public:
    Place(QTcpSocket *socket, std::function<void()> release)
        : QObject(socket)
        , m_release(std::move(release))
    {}
    ~Place() override { m_release(); }

private:
    std::function<void()> m_release;
};

} // namespace

ConnectionGate::ConnectionGate(HttpHandler *handler, const Limits &limits, QObject *parent)
    : QTcpServer(parent)
    , m_handler(handler)
    , m_limits(limits)
    , m_budget(limits.http.maxBodyBytesInFlight)
{
    // A burst of connections waits in the kernel rather than being dropped (SYN retries take 1 s).
    setListenBacklogSize(1024);
}

QByteArray ConnectionGate::peerKey(const QHostAddress &address)
{
    bool isV4 = false;
    const quint32 v4 = address.toIPv4Address(&isV4);
    if (isV4)
        return QByteArray::number(v4);
    const Q_IPV6ADDR v6 = address.toIPv6Address();
    return QByteArray(reinterpret_cast<const char *>(v6.c), 8).toHex();
}

void ConnectionGate::incomingConnection(qintptr handle)
{
    auto *socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(handle)) {
        delete socket;
        return;
    }
    const QByteArray peer = peerKey(socket->peerAddress());
    const bool overTotal = m_open >= m_limits.maxConnections;
    if (overTotal || m_perPeer.value(peer) >= m_limits.maxConnectionsPerPeer) {
        // Refused before a byte is read: the answer and the close go out at once.
        HttpResponse r = HttpResponse::error(
            Error{ErrorCode::QuotaExceeded,
                  overTotal ? QStringLiteral("the engine holds %1 connections, its limit; retry")
                                  .arg(m_limits.maxConnections)
                            : QStringLiteral("%1 connections from this address, the limit; retry")
                                  .arg(m_limits.maxConnectionsPerPeer),
                  {}});
        r.headers.emplaceBack("Retry-After", "1");
        if (const int n = m_refusedLog.pass())
            qCInfo(lcGate).noquote() << "refused" << n << "connection(s) over the cap; latest from"
                                     << socket->peerAddress().toString() << "-" << r.body;
        socket->write(r.serialize(false, 0));
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        QTimer::singleShot(m_limits.http.lingerMs, socket, [socket] {
            socket->abort();
            socket->deleteLater();
        });
        socket->disconnectFromHost();
        return;
    }
    ++m_open;
    ++m_perPeer[peer];
    new Place(socket, [gate = QPointer<ConnectionGate>(this), peer] {
        if (gate)
            gate->release(peer);
    });
    new HttpConnection(socket, m_handler, m_limits.http, &m_budget, this);
}

void ConnectionGate::release(const QByteArray &peer)
{
    --m_open;
    if (--m_perPeer[peer] <= 0)
        m_perPeer.remove(peer);
}

} // namespace Sandbox::Engine
