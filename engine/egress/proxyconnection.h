#pragma once

#include "egresstypes.h"
#include "httphead.h"

#include <QByteArray>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QList>
#include <QObject>

#include <cstdint>
#include <functional>

namespace Sandbox::Engine {

class EgressProxy;

// One connection from a sandbox through the egress proxy: reads the request head, decides,
// resolves, connects, then relays both directions with splice(2) until both are done. Owned
// by the EgressProxy; releases itself through it. See EgressProxy for the protocol.
class ProxyConnection final : public QObject
{
    Q_OBJECT

public:
    ProxyConnection(EgressProxy *proxy, int fd, EgressClient client, EgressListener listener,
                    quint16 listenPort);
    ~ProxyConnection() override;

    void start();
    // Called about once a second: ends the connection when its current deadline passed.
    void checkDeadline();
    void close();

    const QString &sandboxId() const { return m_client.sandboxId; }

private:
    // Identifying: refused, its process being found (the client's end is held open meanwhile,
    // so that the process still has it) before the denial is reported and answered.
    enum class State { Head, Resolving, Connecting, Identifying, Relaying, Lingering, Closed };

    struct Direction
    {
        int pipe[2] = {-1, -1};
        size_t buffered = 0; // bytes in the pipe
        size_t capacity = 0; // the pipe's size as the kernel granted it
        bool eof = false;    // the source ended
        bool shut = false;   // the destination's write side was shut down
        QByteArray prefix;   // written to the destination before any spliced byte
        qsizetype prefixPos = 0;
        bool readHead = false; // plain HTTP: the response head is read and rewritten first
        QByteArray head;
    };

    void destinationGone(Direction &d, int src);
    void onClientEvents(uint32_t events);
    void onUpstreamEvents(uint32_t events);
    void readHead();
    void handleHead(const QByteArray &head, QByteArray leftover);
    void decideName();
    void resolved(const QList<QHostAddress> &addresses);
    void connectNext();
    void onConnected();
    void startRelay();
    bool pump(Direction &d, int src, int dst);
    void updateInterest();
    void refuse(int status, const QString &reason, const QString &address = {},
                const QString &remedy = {});
    void fail(int status, const QByteArray &message);
    // Reports the denial once its process is known (EgressProxy::identify), then calls `then`.
    void deny(const QString &reason, const QString &address, const QString &remedy,
              std::function<void()> then = {});
    void linger();
    bool wantsRead(const Direction &d) const;
    bool wantsWrite(const Direction &d) const;

    EgressProxy *m_proxy; // not owned
    EgressClient m_client;
    EgressListener m_listener;
    quint16 m_listenPort;
    int m_clientFd = -1;
    int m_upstreamFd = -1;
    bool m_clientWatched = false;
    bool m_upstreamWatched = false;
    State m_state = State::Head;
    QByteArray m_in;
    QByteArray m_leftover; // bytes after the request head, for the upstream
    bool m_tunnel = false; // CONNECT
    HttpHead m_request;    // plain HTTP: the request to forward
    QString m_host;        // as asked for (name or literal)
    quint16 m_port = 0;
    bool m_nameAllowed = false;
    QList<QHostAddress> m_candidates;
    QString m_firstRefusal, m_firstRefusedAddress, m_firstRemedy;
    qsizetype m_nextCandidate = 0;
    quint64 m_lookupId = 0;
    bool m_holdsLookup = false;
    QDeadlineTimer m_deadline;
    QElapsedTimer m_idle;
    Direction m_up;   // client -> upstream
    Direction m_down; // upstream -> client
    qsizetype m_lingered = 0;
};

} // namespace Sandbox::Engine
