#include "secretredactor.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QRegularExpression>

namespace Sandbox::Engine {

namespace {
constexpr qsizetype kMinSecretLength = 8;
}

bool SecretRedactor::isSecretName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral(
                                           "(KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL)"),
                                       QRegularExpression::CaseInsensitiveOption);
    return re.match(name).hasMatch();
}

void SecretRedactor::addFromEnvironment(const QMap<QString, QString> &env)
{
    for (auto it = env.cbegin(); it != env.cend(); ++it) {
        if (isSecretName(it.key()))
            addSecret(it.value());
    }
}

void SecretRedactor::addSecret(const QString &value)
{
    if (value.size() < kMinSecretLength || m_secrets.contains(value))
        return;
    m_secrets.append(value);
    std::sort(m_secrets.begin(), m_secrets.end(),
              [](const QString &a, const QString &b) { return a.size() > b.size(); });
}

QString SecretRedactor::apply(const QString &text) const
{
    QString out = text;
    for (const QString &s : m_secrets)
        out.replace(s, QLatin1String(Mask));
    return out;
}

QJsonValue SecretRedactor::apply(const QJsonValue &value) const
{
    if (m_secrets.isEmpty())
        return value;
    if (value.isString())
        return apply(value.toString());
    if (value.isArray()) {
        QJsonArray out;
        for (const QJsonValue &v : value.toArray())
            out.append(apply(v));
        return out;
    }
    if (value.isObject()) {
        QJsonObject out;
        const QJsonObject o = value.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            out.insert(apply(it.key()), apply(it.value()));
        return out;
    }
    return value;
}

} // namespace Sandbox::Engine
