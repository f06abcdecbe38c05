#include "egresstypes.h"

#include <QMutexLocker>

namespace Sandbox::Engine {

QJsonObject DenyRecord::toJson() const
{
    QJsonObject o{
        {QStringLiteral("time"), time.toUTC().toString(Qt::ISODateWithMs)},
        {QStringLiteral("host"), host},
        {QStringLiteral("port"), port},
        {QStringLiteral("reason"), reason},
        {QStringLiteral("via"), via},
        {QStringLiteral("pid"), pid >= 0 ? QJsonValue(double(pid)) : QJsonValue()},
        {QStringLiteral("process"), process.isEmpty() ? QJsonValue() : QJsonValue(process)},
        {QStringLiteral("count"), count},
    };
    o.insert(QStringLiteral("address"), address.isEmpty() ? QJsonValue() : QJsonValue(address));
    o.insert(QStringLiteral("allowWith"),
             allowWith.isEmpty() ? QJsonValue() : QJsonValue(allowWith));
    return o;
}

void EgressPolicyStore::setRules(const QString &sandboxId, EgressRules rules)
{
    auto shared = std::make_shared<const EgressRules>(std::move(rules));
    QMutexLocker lock(&m_mutex);
    m_rules.emplace(sandboxId, std::move(shared));
}

std::shared_ptr<const EgressRules> EgressPolicyStore::rules(const QString &sandboxId) const
{
    QMutexLocker lock(&m_mutex);
    return m_rules.value(sandboxId);
}

void EgressPolicyStore::setGateway(const QString &sandboxId, std::optional<GatewayRoute> route)
{
    QMutexLocker lock(&m_mutex);
    if (route)
        m_gateways.insert(sandboxId, *route);
    else
        m_gateways.remove(sandboxId);
}

std::optional<GatewayRoute> EgressPolicyStore::gateway(const QString &sandboxId) const
{
    QMutexLocker lock(&m_mutex);
    const auto it = m_gateways.constFind(sandboxId);
    if (it == m_gateways.constEnd())
        return std::nullopt;
    return *it;
}

void EgressPolicyStore::remove(const QString &sandboxId)
{
    QMutexLocker lock(&m_mutex);
    m_rules.remove(sandboxId);
    m_gateways.remove(sandboxId);
}

} // namespace Sandbox::Engine
