#pragma once

#include "dnsresolver.h"
#include "egressproxy.h"
#include "egresstypes.h"

#include <QHash>
#include <QJsonArray>
#include <QObject>
#include <QSslCertificate>
#include <QThread>

#include <deque>
#include <functional>
#include <memory>
#include <optional>

namespace Sandbox::Engine {

// The engine's side of every sandbox's network (docs/protocol.md, 3.5 and 4.9), used from the
// API thread: keeps each sandbox's policy and gateway route, runs the EgressProxy on its own
// thread (the proxy's CPU never holds up the API), takes the connections the supervisors
// accept, and keeps the recent denials of each sandbox (a bounded log) and reports them.
class EgressService final : public QObject
{
    Q_OBJECT

public:
    // Where the sandbox finds the engine's listeners (inside its own network namespace).
    static constexpr quint16 ProxyPort = 3128;
    static constexpr quint16 GatewayPort = 3129;
    static constexpr int LogEntries = 200;

    struct Config
    {
        DnsResolver::Config dns;
        EgressProxy::Limits limits;
        QList<quint16> enginePorts; // the API's own port(s): never a destination
        QList<QSslCertificate> extraCaCertificates;
    };

    explicit EgressService(Config config, QObject *parent = nullptr);
    ~EgressService() override;

    // The rules of a sandbox from now on (the next connection sees them). `implicitAllow`:
    // entries the engine adds (an agent's model API host when it has no gateway).
    void setPolicy(const QString &sandboxId, const NetworkPolicy &policy,
                   const QList<PolicyEntry> &implicitAllow = {});
    // The gateway route of an agent sandbox (nullopt: none). Its own rules come from the
    // sandbox's policy: the upstream host is allowed, loopback and private addresses only through
    // the policy's explicit entries.
    void setGateway(const QString &sandboxId, std::optional<GatewayRoute> route);
    // The engine's API port(s), known once it listens: never a destination.
    void setEnginePorts(const QList<quint16> &ports);
    // Ends every open connection of the sandbox (it stopped).
    void closeConnections(const QString &sandboxId);
    // Forgets the sandbox (it was deleted): rules, route, log.
    void forget(const QString &sandboxId);

    // A listening socket the sandbox's supervisor made on `port` inside the sandbox; the service
    // owns `fd` from here on and accepts its connections on the egress thread.
    void listen(const QString &sandboxId, int fd, EgressListener listener, quint16 port);
    void unlisten(const QString &sandboxId, quint16 port);
    // A connection accepted elsewhere; the service owns `fd` from here on.
    void accept(int fd, const EgressClient &client, EgressListener listener, quint16 listenPort);

    // Finds the process inside a sandbox that holds the client end of the connection from
    // peerPort to listenPort, and calls `answer` (on this thread; pid -1: unknown). Set by
    // whoever can ask the sandbox (its supervisor); without one, denials name no process.
    using Answer = std::function<void(qint64 pid, const QString &process)>;
    using Identifier = std::function<void(const QString &sandboxId, quint16 peerPort,
                                          quint16 listenPort, Answer answer)>;
    void setIdentifier(Identifier identifier) { m_identifier = std::move(identifier); }

    // The sandbox's recent denials, oldest first (at most LogEntries).
    QJsonArray log(const QString &sandboxId) const;
    // Environment for the processes of a sandbox: HTTP(S)_PROXY, NO_PROXY (and lower case).
    static QMap<QString, QString> proxyEnvironment();

    const EgressFacts &facts() const { return m_facts; }
    EgressProxy *proxy() const { return m_proxy; } // lives on another thread: queue calls

Q_SIGNALS:
    // One denial (or several folded: `count`), as the log shows it.
    void denied(const QString &sandboxId, const QJsonObject &record);

private:
    struct Entry
    {
        NetworkPolicy policy;
        QList<PolicyEntry> implicitAllow;
        std::optional<GatewayRoute> gateway;
        std::deque<DenyRecord> log;
    };
    void refreshFacts();
    void apply(const QString &sandboxId, const Entry &entry);
    void onDenied(const QString &sandboxId, const DenyRecord &record);
    void onIdentifyRequested(quint64 token, const QString &sandboxId, quint16 peerPort,
                             quint16 listenPort);

    std::shared_ptr<EgressPolicyStore> m_store;
    QThread m_thread;
    EgressProxy *m_proxy; // owned; lives on m_thread (deleted when it finishes)
    EgressFacts m_facts;
    QHash<QString, Entry> m_sandboxes;
    Identifier m_identifier;
};

} // namespace Sandbox::Engine
