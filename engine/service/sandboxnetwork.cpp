#include "sandboxnetwork.h"

#include "egress/egressservice.h"
#include "egress/modelprovider.h"
#include "protocol/sandboxenums.h"
#include "runtime/sandboxprocess.h"
#include "runtime/supervisorchannel.h"
#include "runtime/uniquefd.h"

#include <QJsonArray>
#include <QLoggingCategory>

Q_LOGGING_CATEGORY(lcNetwork, "sandboxd.network")

namespace Sandbox::Engine {

namespace {

NetworkPolicy policyOf(const SandboxRecord &record)
{
    auto p = NetworkPolicy::fromJson(record.network);
    return p ? p.value() : NetworkPolicy::off(); // stored canonical: never fails
}

std::optional<ModelProvider> providerOf(const SandboxRecord &record, const QString &runProvider = {})
{
    if (fromWire<SandboxKind>(record.kind) != SandboxKind::Agent)
        return std::nullopt;
    return ModelProvider::forAgentType(record.type, runProvider);
}

} // namespace

SandboxNetwork::SandboxNetwork(EgressService *egress, QObject *parent)
    : QObject(parent)
    , m_egress(egress)
{
    connect(m_egress, &EgressService::denied, this, &SandboxNetwork::denied);
    QPointer<SandboxNetwork> self(this);
    m_egress->setIdentifier([self](const QString &id, quint16 peerPort, quint16 listenPort,
                                   EgressService::Answer answer) {
        if (!self)
            return answer(-1, {});
        self->identify(id, peerPort, listenPort, std::move(answer));
    });
}

Result<bool> SandboxNetwork::checkPolicy(const NetworkPolicy &policy, bool admin,
                                         const QString &field)
{
    const QStringList privileged = policy.entriesNeedingAdmin();
    if (!admin && !privileged.isEmpty())
        return Error{ErrorCode::Unauthorized,
                     QStringLiteral("only an admin key may open this computer's loopback or "
                                    "non-public networks to a sandbox: %1")
                         .arg(privileged.join(QStringLiteral(", "))),
                     QJsonObject{{QStringLiteral("field"), field},
                                 {QStringLiteral("entries"),
                                  QJsonArray::fromStringList(privileged)}}};
    return true;
}

bool SandboxNetwork::hasGateway(const SandboxRecord &record) const
{
    return record.gateway && providerOf(record).has_value();
}

void SandboxNetwork::applyRules(const SandboxRecord &record)
{
    QList<PolicyEntry> implicit;
    // Without the gateway the CLI calls its provider itself: its API host may be reached.
    if (const auto provider = providerOf(record); provider && !hasGateway(record)) {
        const QUrl base = provider->base(record.env);
        const bool tls = base.scheme() == QLatin1String("https");
        if (auto e = PolicyEntry::parse(base.host() + u':'
                                        + QString::number(base.port(tls ? 443 : 80))))
            implicit.append(e.value());
    }
    m_egress->setPolicy(record.id, policyOf(record), implicit);
}

void SandboxNetwork::applyGateway(const SandboxRecord &record, const QMap<QString, QString> &runEnv,
                                  const QString &baseUrl, const QString &runProvider)
{
    const auto provider = providerOf(record, runProvider);
    if (!provider || !hasGateway(record)) {
        m_egress->setGateway(record.id, std::nullopt);
        return;
    }
    QMap<QString, QString> env = record.env;
    for (auto it = runEnv.cbegin(); it != runEnv.cend(); ++it)
        env.insert(it.key(), it.value());
    m_egress->setGateway(record.id, provider->route(env, baseUrl));
}

void SandboxNetwork::prepare(SandboxSpec &spec, const SandboxRecord &record)
{
    const QMap<QString, QString> proxy = EgressService::proxyEnvironment();
    for (auto it = proxy.cbegin(); it != proxy.cend(); ++it)
        spec.env.insert(it.key(), it.value());
    const auto provider = providerOf(record);
    if (!provider || !hasGateway(record))
        return;
    // The keys stay with the engine (every provider's: a run may pick another provider); the CLI
    // finds the gateway and a stand-in key.
    for (const ModelProvider &any : ModelProvider::all()) {
        for (const QString &name : any.keyVariables)
            spec.env.remove(name);
    }
    spec.env.insert(provider->keyVariables.first(), ModelProvider::placeholderKey());
    spec.env.insert(provider->baseVariable,
                    provider->sandboxBase(provider->base(record.env), EgressService::GatewayPort));
}

void SandboxNetwork::listen(const QString &id, SupervisorChannel *channel, quint16 port,
                            int listener, std::function<void(Result<bool>)> failed)
{
    const QJsonObject request{{QStringLiteral("op"), QStringLiteral("listen")},
                              {QStringLiteral("host"), QStringLiteral("127.0.0.1")},
                              {QStringLiteral("port"), port}};
    QPointer<SandboxNetwork> self(this);
    const auto onReply = [self, id, port, failed](Result<SupervisorChannel::Reply> r) {
        // Answered right after the EVENT that brought the socket, or with why it could not listen.
        if (!self || r)
            return;
        qCWarning(lcNetwork).noquote()
            << id << QStringLiteral("cannot listen on 127.0.0.1:%1:").arg(port)
            << r.error().message;
        if (failed)
            failed(r.error());
    };
    const QPointer<SupervisorChannel> asked(channel);
    const auto onEvent = [self, id, port, listener, asked](const QJsonObject &,
                                                           std::shared_ptr<UniqueFd> fd) {
        if (!self || !fd || !fd->isValid())
            return;
        // Still wanted from this supervisor? (The sandbox may have stopped, or the port gone
        // from the policy, while the socket was on its way.)
        const auto it = self->m_attached.constFind(id);
        const bool wanted = it != self->m_attached.constEnd() && it->channel == asked
                            && (EgressListener(listener) != EgressListener::Forward
                                || it->forwards.contains(port));
        if (wanted)
            self->m_egress->listen(id, fd->release(), EgressListener(listener), port);
    };
    channel->request(request, {}, onReply, {}, onEvent);
}

void SandboxNetwork::identify(const QString &id, quint16 peerPort, quint16 listenPort,
                              std::function<void(qint64 pid, const QString &process)> answer)
{
    const auto it = m_attached.constFind(id);
    if (it == m_attached.constEnd() || !it->channel)
        return answer(-1, {});
    const QJsonObject request{{QStringLiteral("op"), QStringLiteral("peer")},
                              {QStringLiteral("port"), listenPort},
                              {QStringLiteral("peerPort"), peerPort}};
    it->channel->request(request, {}, [answer](Result<SupervisorChannel::Reply> r) {
        if (!r)
            return answer(-1, {});
        // From the sandbox: a pid in range and a short name, or nothing.
        const QJsonObject body = r.value().json;
        const QJsonValue pid = body.value(QStringLiteral("pid"));
        answer(pid.isDouble() && pid.toDouble() > 0 && pid.toDouble() < 1e9 ? qint64(pid.toDouble())
                                                                            : -1,
               body.value(QStringLiteral("comm")).toString().left(15));
    });
}

void SandboxNetwork::attach(const SandboxRecord &record, SupervisorChannel *channel,
                            std::function<void(Result<bool>)> done)
{
    applyRules(record);
    applyGateway(record, {}, {});
    Attached &a = m_attached[record.id];
    a = Attached{};
    a.channel = channel;
    // The supervisor handles requests in order: these listen before any later request runs.
    listen(record.id, channel, EgressService::ProxyPort, int(EgressListener::Proxy), {});
    if (hasGateway(record))
        listen(record.id, channel, EgressService::GatewayPort, int(EgressListener::Gateway), {});
    syncForwards(record);
    done(true);
}

void SandboxNetwork::syncForwards(const SandboxRecord &record)
{
    const auto it = m_attached.find(record.id);
    if (it == m_attached.end() || !it->channel)
        return;
    const QList<quint16> wanted = policyOf(record).loopbackPorts();
    for (auto f = it->forwards.begin(); f != it->forwards.end();) {
        if (wanted.contains(*f)) {
            ++f;
            continue;
        }
        m_egress->unlisten(record.id, *f);
        f = it->forwards.erase(f);
    }
    for (const quint16 port : wanted) {
        if (it->forwards.contains(port) || port == EgressService::ProxyPort
            || port == EgressService::GatewayPort)
            continue;
        it->forwards.insert(port);
        listen(record.id, it->channel, port, int(EgressListener::Forward), {});
    }
}

void SandboxNetwork::update(const SandboxRecord &record, SupervisorChannel *channel)
{
    applyRules(record);
    applyGateway(record, {}, {});
    if (channel && m_attached.contains(record.id))
        syncForwards(record);
}

void SandboxNetwork::detach(const QString &id)
{
    m_attached.remove(id);
    m_egress->closeConnections(id); // its listeners too
}

void SandboxNetwork::remove(const QString &id)
{
    m_attached.remove(id);
    m_egress->forget(id);
}

SandboxNetwork::RunEndpoint SandboxNetwork::beginRun(const SandboxRecord &record,
                                                     const QMap<QString, QString> &runEnv,
                                                     const QString &baseUrl,
                                                     const QString &runProvider)
{
    RunEndpoint out;
    out.env = runEnv;
    out.baseUrl = baseUrl;
    const auto provider = providerOf(record, runProvider);
    if (!provider || !hasGateway(record))
        return out;
    applyGateway(record, runEnv, baseUrl, runProvider);
    // What the CLI sees: the gateway, never the keys or the real endpoint of this run.
    for (const ModelProvider &any : ModelProvider::all()) {
        for (const QString &name : any.keyVariables)
            out.env.remove(name);
    }
    out.env.insert(provider->keyVariables.first(), ModelProvider::placeholderKey());
    out.env.remove(provider->baseVariable);
    QMap<QString, QString> env = record.env;
    for (auto it = runEnv.cbegin(); it != runEnv.cend(); ++it)
        env.insert(it.key(), it.value());
    out.baseUrl = provider->sandboxBase(provider->base(env, baseUrl), EgressService::GatewayPort);
    return out;
}

void SandboxNetwork::endRun(const SandboxRecord &record)
{
    applyGateway(record, {}, {});
}

QJsonArray SandboxNetwork::log(const QString &id) const
{
    return m_egress->log(id);
}

} // namespace Sandbox::Engine
