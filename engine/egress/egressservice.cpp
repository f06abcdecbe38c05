#include "egressservice.h"

#include "modelgateway.h"

#include <QJsonArray>
#include <QLoggingCategory>
#include <QNetworkInterface>
#include <QPointer>
#include <QTimer>

#include <unistd.h>

Q_LOGGING_CATEGORY(lcEgressService, "sandboxd.egress")

namespace Sandbox::Engine {

namespace {
constexpr int kFactsRefreshMs = 30000;

bool sameAttempt(const DenyRecord &a, const DenyRecord &b)
{
    return a.host == b.host && a.port == b.port && a.reason == b.reason && a.via == b.via
           && a.pid == b.pid && a.address == b.address;
}
} // namespace

EgressService::EgressService(Config config, QObject *parent)
    : QObject(parent)
    , m_store(std::make_shared<EgressPolicyStore>())
{
    qRegisterMetaType<Sandbox::Engine::DenyRecord>();
    m_facts.enginePorts = config.enginePorts;
    refreshFacts();
    m_proxy = new EgressProxy(m_store, std::move(config.dns), config.limits);
    m_proxy->gateway()->setExtraCaCertificates(config.extraCaCertificates);
    m_thread.setObjectName(QStringLiteral("egress"));
    m_proxy->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_proxy, &QObject::deleteLater);
    connect(m_proxy, &EgressProxy::denied, this, &EgressService::onDenied);
    connect(m_proxy, &EgressProxy::identifyRequested, this, &EgressService::onIdentifyRequested);
    m_thread.start();

    auto *timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, [this] {
        const QList<QHostAddress> before = m_facts.hostAddresses;
        refreshFacts();
        if (m_facts.hostAddresses != before) {
            for (auto it = m_sandboxes.cbegin(); it != m_sandboxes.cend(); ++it)
                apply(it.key(), it.value());
        }
    });
    timer->start(kFactsRefreshMs);
}

EgressService::~EgressService()
{
    m_thread.quit();
    m_thread.wait();
}

void EgressService::refreshFacts()
{
    QList<QHostAddress> addresses;
    for (const QHostAddress &a : QNetworkInterface::allAddresses()) {
        const ClassifiedAddress c = classifyAddress(a);
        if (c.cls != AddressClass::Loopback) {
            QHostAddress plain = c.effective;
            plain.setScopeId(QString());
            addresses.append(plain);
        }
    }
    m_facts.hostAddresses = addresses;
}

void EgressService::apply(const QString &sandboxId, const Entry &entry)
{
    m_store->setRules(sandboxId, EgressRules(entry.policy, entry.implicitAllow, m_facts));
    if (!entry.gateway) {
        m_store->setGateway(sandboxId, std::nullopt);
        return;
    }
    // The gateway's own rules: the upstream is allowed by name; the sandbox's explicit address
    // entries (an exact 127.0.0.1:PORT for a local model server) and its deny entries apply.
    GatewayRoute route = *entry.gateway;
    QJsonArray allow, deny;
    for (const PolicyEntry &e : entry.policy.allow()) {
        if (e.kind == PolicyEntry::Kind::Network)
            allow.append(e.text);
    }
    for (const PolicyEntry &e : entry.policy.deny())
        deny.append(e.text);
    const auto gatewayPolicy = NetworkPolicy::fromJson(
        QJsonObject{{QStringLiteral("allow"), allow}, {QStringLiteral("deny"), deny}});
    QList<PolicyEntry> upstream;
    const bool tls = route.upstream.scheme() == QLatin1String("https");
    if (auto e = PolicyEntry::parse(route.upstream.host() + u':'
                                    + QString::number(route.upstream.port(tls ? 443 : 80))))
        upstream.append(e.value());
    route.rules = std::make_shared<const EgressRules>(gatewayPolicy ? gatewayPolicy.value()
                                                                    : NetworkPolicy::off(),
                                                      upstream, m_facts);
    m_store->setGateway(sandboxId, route);
}

void EgressService::setEnginePorts(const QList<quint16> &ports)
{
    m_facts.enginePorts = ports;
    for (auto it = m_sandboxes.cbegin(); it != m_sandboxes.cend(); ++it)
        apply(it.key(), it.value());
}

void EgressService::setPolicy(const QString &sandboxId, const NetworkPolicy &policy,
                              const QList<PolicyEntry> &implicitAllow)
{
    Entry &e = m_sandboxes[sandboxId];
    e.policy = policy;
    e.implicitAllow = implicitAllow;
    apply(sandboxId, e);
}

void EgressService::setGateway(const QString &sandboxId, std::optional<GatewayRoute> route)
{
    Entry &e = m_sandboxes[sandboxId];
    e.gateway = std::move(route);
    apply(sandboxId, e);
}

void EgressService::closeConnections(const QString &sandboxId)
{
    QMetaObject::invokeMethod(m_proxy,
                              [proxy = m_proxy, sandboxId] { proxy->closeSandbox(sandboxId); });
}

void EgressService::forget(const QString &sandboxId)
{
    closeConnections(sandboxId);
    m_store->remove(sandboxId);
    m_sandboxes.remove(sandboxId);
}

void EgressService::listen(const QString &sandboxId, int fd, EgressListener listener, quint16 port)
{
    // Queued to the egress thread: after every earlier setPolicy (they are in the store already).
    QMetaObject::invokeMethod(m_proxy, [proxy = m_proxy, sandboxId, fd, listener, port] {
        proxy->listen(sandboxId, fd, listener, port);
    });
}

void EgressService::unlisten(const QString &sandboxId, quint16 port)
{
    QMetaObject::invokeMethod(m_proxy, [proxy = m_proxy, sandboxId, port] {
        proxy->unlisten(sandboxId, port);
    });
}

void EgressService::onIdentifyRequested(quint64 token, const QString &sandboxId, quint16 peerPort,
                                        quint16 listenPort)
{
    QPointer<EgressService> self(this);
    const Answer answer = [self, token](qint64 pid, const QString &process) {
        if (!self)
            return;
        QMetaObject::invokeMethod(self->m_proxy, [proxy = self->m_proxy, token, pid, process] {
            proxy->identified(token, pid, process);
        });
    };
    if (!m_identifier)
        return answer(-1, {});
    m_identifier(sandboxId, peerPort, listenPort, answer);
}

void EgressService::accept(int fd, const EgressClient &client, EgressListener listener,
                           quint16 listenPort)
{
    // Queued to the egress thread: after every earlier setPolicy (they are in the store already).
    QMetaObject::invokeMethod(m_proxy, [proxy = m_proxy, fd, client, listener, listenPort] {
        proxy->accept(fd, client, listener, listenPort);
    });
}

QJsonArray EgressService::log(const QString &sandboxId) const
{
    QJsonArray out;
    const auto it = m_sandboxes.constFind(sandboxId);
    if (it == m_sandboxes.constEnd())
        return out;
    for (const DenyRecord &r : it->log)
        out.append(r.toJson());
    return out;
}

void EgressService::onDenied(const QString &sandboxId, const DenyRecord &record)
{
    const auto it = m_sandboxes.find(sandboxId);
    if (it == m_sandboxes.end())
        return; // deleted meanwhile
    std::deque<DenyRecord> &log = it->log;
    if (!log.empty() && record.count > 1 && sameAttempt(log.back(), record)) {
        log.back().count += record.count;
        log.back().time = record.time;
    } else {
        log.push_back(record);
        while (log.size() > size_t(LogEntries))
            log.pop_front();
    }
    qCInfo(lcEgressService).noquote()
        << sandboxId << "denied" << record.host + u':' + QString::number(record.port)
        << (record.pid >= 0 ? QStringLiteral("(pid %1 %2)").arg(record.pid).arg(record.process)
                            : QString())
        << record.reason;
    Q_EMIT denied(sandboxId, record.toJson());
}

QMap<QString, QString> EgressService::proxyEnvironment()
{
    const QString proxy = QStringLiteral("http://127.0.0.1:%1").arg(ProxyPort);
    const QString local = QStringLiteral("localhost,127.0.0.1,::1");
    QMap<QString, QString> env;
    for (const char *name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
        env.insert(QLatin1String(name), proxy);
    env.insert(QStringLiteral("NO_PROXY"), local);
    env.insert(QStringLiteral("no_proxy"), local);
    return env;
}

} // namespace Sandbox::Engine
