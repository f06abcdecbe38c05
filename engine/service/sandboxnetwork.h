#pragma once

#include "egress/networkpolicy.h"
#include "protocol/result.h"
#include "state/registry.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMap>
#include <QObject>
#include <QPointer>
#include <QSet>

#include <functional>

namespace Sandbox::Engine {

class EgressService;
class SupervisorChannel;
struct SandboxSpec;

// Each sandbox's network as its lifecycle sees it (docs/protocol.md 3.5, 4.7, 4.9): the policy
// and gateway route it hands the EgressService, the environment its processes get, and the
// supervisor's `listen` requests that make the proxy (3128), the model gateway (3129) and every
// forwarded loopback port reachable inside the sandbox. Lives on the engine's thread.
class SandboxNetwork final : public QObject
{
    Q_OBJECT

public:
    explicit SandboxNetwork(EgressService *egress, QObject *parent = nullptr);

    // Whether a key may give a sandbox this policy (read by NetworkPolicy::read):
    // -32001 for entries that need an admin key (loopback, non-public networks) when `admin` is
    // false.
    static Result<bool> checkPolicy(const NetworkPolicy &policy, bool admin,
                                    const QString &field = QStringLiteral("network"));

    // Before each start: the proxy's environment for every process; for an agent sandbox with
    // the gateway, its model endpoint inside and placeholders instead of the keys it keeps.
    void prepare(SandboxSpec &spec, const SandboxRecord &record);
    // Once the supervisor answers: the rules, then the listeners. `done` gets an error when one
    // cannot be opened (the start fails).
    void attach(const SandboxRecord &record, SupervisorChannel *channel,
                std::function<void(Result<bool>)> done);
    // The policy changed (sandbox.setNetwork): the rules now, and the forwarded loopback ports of
    // a running sandbox (`channel`, null when it is not running) follow.
    void update(const SandboxRecord &record, SupervisorChannel *channel);
    // The sandbox stopped (or failed): its connections end, its listeners are gone.
    void detach(const QString &id);
    // The sandbox was deleted.
    void remove(const QString &id);

    // An agent run's own endpoint and credentials (its `options.env`, `baseUrl`) for the gateway,
    // until endRun(). Returns the environment and base URL the CLI gets inside the sandbox.
    struct RunEndpoint
    {
        QString baseUrl;            // for the adapter (empty: the adapter's own choice)
        QMap<QString, QString> env; // the run's env as the sandbox may see it
    };
    // `runProvider`: the run's `provider` option (OpenCode's "anthropic" goes to Anthropic).
    RunEndpoint beginRun(const SandboxRecord &record, const QMap<QString, QString> &runEnv,
                         const QString &baseUrl, const QString &runProvider = {});
    void endRun(const SandboxRecord &record);

    QJsonArray log(const QString &id) const;
    bool hasGateway(const SandboxRecord &record) const;

Q_SIGNALS:
    void denied(const QString &sandboxId, const QJsonObject &denial);

private:
    struct Attached
    {
        QPointer<SupervisorChannel> channel;
        QSet<quint16> forwards; // forwarded loopback ports listened on (or asked for)
    };
    void applyRules(const SandboxRecord &record);
    void applyGateway(const SandboxRecord &record, const QMap<QString, QString> &runEnv,
                      const QString &baseUrl, const QString &runProvider = {});
    void syncForwards(const SandboxRecord &record);
    // One `listen` request; the listening socket it brings goes to the egress service, which
    // accepts on it as `listener`.
    void listen(const QString &id, SupervisorChannel *channel, quint16 port, int listener,
                std::function<void(Result<bool>)> failed);
    // Asks the sandbox's supervisor who holds the client end of a connection (`peer`), for a
    // denial record.
    void identify(const QString &id, quint16 peerPort, quint16 listenPort,
                  std::function<void(qint64 pid, const QString &process)> answer);

    EgressService *m_egress; // not owned
    QHash<QString, Attached> m_attached;
};

} // namespace Sandbox::Engine
