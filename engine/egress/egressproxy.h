#pragma once

#include "dnsresolver.h"
#include "egresstypes.h"

#include <QHash>
#include <QObject>
#include <QSet>

#include <functional>
#include <memory>

namespace Sandbox::Engine {

class FdPoller;
class ModelGateway;
class ProxyConnection;

// The sandboxes' only way out (docs/protocol.md, 3.5): accepts the connections on the listening
// sockets that the supervisors make inside each sandbox's network namespace and hand over.
// - Proxy listener: an HTTP proxy. `CONNECT host:port` opens a tunnel (TLS passes through
//   untouched); `GET http://host/...` (any method, absolute form) is forwarded, one request per
//   connection. Anything else is answered 400.
// - Forward listener: a plain TCP forward to the same port on the host's 127.0.0.1.
// - Gateway listener: handed to the ModelGateway.
// Every destination is checked twice, by name and then by each resolved address
// (EgressRules), against the sandbox's rules at that moment; a refusal is answered 403 and
// reported (denied()). Bytes are relayed with splice(2) on this object's thread, and every
// count, size and time is bounded (Limits). Lives on its own thread (see EgressService).
class EgressProxy final : public QObject
{
    Q_OBJECT

public:
    struct Limits
    {
        int maxConnections = 2048;          // all sandboxes (each holds 2 sockets + 2 pipes)
        int maxConnectionsPerSandbox = 128; // open at once, in any state
        int maxLookupsPerSandbox = 16;      // DNS lookups in flight
        int maxHeadBytes = 16 * 1024;       // a request or response head
        int headTimeoutMs = 15000;          // to send the request head
        int connectTimeoutMs = 10000;       // DNS and connect, in total
        int idleTimeoutMs = 30 * 60 * 1000; // no byte either way
        int pipeBytes = 256 * 1024;         // the splice buffer per direction
    };

    EgressProxy(std::shared_ptr<EgressPolicyStore> store, DnsResolver::Config dns, Limits limits,
                QObject *parent = nullptr);
    ~EgressProxy() override;

    static constexpr int MaxListenersPerSandbox = 64;
    static constexpr int AcceptsPerWakeup = 16; // per listener, then other sockets get a turn
    static constexpr int IdentifyTimeoutMs = 500;
    static constexpr int MaxIdentifyingPerSandbox = 16;

    // Takes ownership of `fd`, a listening socket inside the sandbox's network namespace (the
    // supervisor's `listen` made it): its connections are accepted here, on this thread, and
    // served as `listener`. A second listener on the same port replaces the first.
    void listen(const QString &sandboxId, int fd, EgressListener listener, quint16 port);
    // Closes the sandbox's listener on `port` (connections already accepted go on).
    void unlisten(const QString &sandboxId, quint16 port);
    // Takes ownership of `fd` (a connected TCP socket accepted inside the sandbox). Call on this
    // object's thread (EgressService queues it).
    void accept(int fd, EgressClient client, EgressListener listener, quint16 listenPort);
    // Closes every listener and connection of the sandbox (it stopped, or was deleted).
    void closeSandbox(const QString &sandboxId);

    // Finds the process behind `client` (asks the sandbox's supervisor through
    // identifyRequested), then calls `done` on this thread: with (-1, "") when it cannot tell
    // within IdentifyTimeoutMs. At once when the client is known already.
    using Identified = std::function<void(qint64 pid, const QString &process)>;
    void identify(const EgressClient &client, Identified done);
    // The answer to identifyRequested(token, ...).
    void identified(quint64 token, qint64 pid, const QString &process);

    int connectionCount() const { return int(m_connections.size()); }
    int connectionCount(const QString &sandboxId) const { return m_perSandbox.value(sandboxId); }
    const Limits &limits() const { return m_limits; }
    DnsResolver *resolver() const { return m_resolver; }
    ModelGateway *gateway() const { return m_gateway; }
    FdPoller *poller() const { return m_poller; }
    EgressPolicyStore *store() const { return m_store.get(); }

    // Used by the connections and the gateway: a refused attempt. Identical attempts within a
    // second are folded into one record with `count`; past 20 records per second per sandbox
    // the rest are counted and reported as one.
    void report(const QString &sandboxId, const DenyRecord &record);
    // report() once identify() knows the process behind `client` (pid and process filled in); then
    // `then`. Reported even when the caller is gone by then.
    void reportIdentified(const EgressClient &client, DenyRecord record,
                          std::function<void()> then = {});
    void release(ProxyConnection *connection);
    bool lookupSlot(const QString &sandboxId, bool take); // false: the sandbox's lookups are capped

Q_SIGNALS:
    void denied(const QString &sandboxId, const Sandbox::Engine::DenyRecord &record);
    // Who holds the client end of the connection from `peerPort` to `listenPort` in the
    // sandbox? Answered with identified(token, ...).
    void identifyRequested(quint64 token, const QString &sandboxId, quint16 peerPort,
                           quint16 listenPort);

private:
    struct DenyLimiter
    {
        int emitted = 0; // in the current second
        int suppressed = 0;
        DenyRecord last;
        bool hasLast = false;
        int folded = 0; // identical to `last`, not reported yet
    };
    struct ListenSocket
    {
        int fd = -1;
        EgressListener listener = EgressListener::Proxy;
    };
    struct Identifying
    {
        QString sandboxId;
        Identified done;
    };
    void sweep();
    void flushFolded(const QString &sandboxId, DenyLimiter &limiter);
    void acceptOn(const QString &sandboxId, quint16 port);
    void closeListener(ListenSocket &socket);

    std::shared_ptr<EgressPolicyStore> m_store;
    Limits m_limits;
    FdPoller *m_poller;                    // owned (child)
    DnsResolver *m_resolver;               // owned (child)
    ModelGateway *m_gateway;               // owned (child)
    QSet<ProxyConnection *> m_connections; // owned (children)
    QHash<QString, int> m_perSandbox;
    QHash<QString, int> m_lookups;
    QHash<QString, DenyLimiter> m_limiters;
    QHash<QString, QHash<quint16, ListenSocket>> m_listeners; // sandbox -> port -> socket
    QHash<quint64, Identifying> m_identifying;
    QHash<QString, int> m_identifyingPerSandbox;
    quint64 m_nextToken = 0;
};

} // namespace Sandbox::Engine
