#pragma once

#include "networkpolicy.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QMetaType>
#include <QMutex>
#include <QString>
#include <QUrl>

#include <memory>
#include <optional>

namespace Sandbox::Engine {

// Where an accepted connection came from inside a sandbox (on a listener the supervisor made).
struct EgressClient
{
    QString sandboxId;
    qint64 pid = -1; // the connecting process (inside the sandbox's PID namespace), -1: unknown
    QString process; // its name (comm), when known
    quint16 peerPort = 0;
    quint16 listenPort = 0; // the port inside the sandbox it connected to
};

// What kind of listener inside the sandbox a connection arrived on.
enum class EgressListener {
    Proxy,   // the HTTP(S) proxy (HTTP_PROXY / HTTPS_PROXY)
    Forward, // a loopback port forwarded to the same port on the host (exact allow entry)
    Gateway, // the model gateway
};

// One refused connection attempt (docs/protocol.md, 4.9: sandbox.networkLog, network.denied).
struct DenyRecord
{
    QDateTime time;
    QString host; // as the sandbox asked for it
    quint16 port = 0;
    QString address; // the resolved address that was refused, when the refusal came after DNS
    QString reason;
    qint64 pid = -1;
    QString process;
    QString via;       // proxy | forward | gateway
    QString allowWith; // the allow entry that would let it through (empty: none can)
    int count = 1;     // identical attempts folded into this one (within a second)

    QJsonObject toJson() const;
};

// The model gateway's route for one sandbox: where its CLI's requests go, with which key.
struct GatewayRoute
{
    QString provider;        // anthropic | openai
    QUrl upstream;           // e.g. https://api.anthropic.com, http://127.0.0.1:PORT/v1
    QString sandboxBasePath; // the path prefix the CLI uses inside (e.g. "/v1" for OpenAI)
    QByteArray authHeader;   // "x-api-key" or "Authorization"
    QByteArray authValue;    // the secret (never leaves the engine's memory but upstream)
    // The upstream's own check: the provider host allowed; loopback and private addresses only
    // through the sandbox's explicit entries; deny entries win.
    std::shared_ptr<const EgressRules> rules;
};

// The rules and gateway routes of every sandbox, shared by the API thread (writes) and the
// egress thread (reads at each decision, so a change applies to the next connection).
class EgressPolicyStore final
{
public:
    void setRules(const QString &sandboxId, EgressRules rules);
    std::shared_ptr<const EgressRules> rules(const QString &sandboxId) const;
    void setGateway(const QString &sandboxId, std::optional<GatewayRoute> route);
    std::optional<GatewayRoute> gateway(const QString &sandboxId) const;
    void remove(const QString &sandboxId);

private:
    mutable QMutex m_mutex;
    QHash<QString, std::shared_ptr<const EgressRules>> m_rules;
    QHash<QString, GatewayRoute> m_gateways;
};

} // namespace Sandbox::Engine

Q_DECLARE_METATYPE(Sandbox::Engine::DenyRecord)
