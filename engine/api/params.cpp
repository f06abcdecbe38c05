#include "params.h"

#include <QRegularExpression>

#include <algorithm>

namespace Sandbox::Engine {

void Params::fail(const QString &name, const QString &why)
{
    if (!m_error)
        m_error = Error::invalidParams(field(name), why);
}

void Params::merge(const Params &nested)
{
    if (!m_error && nested.m_error)
        m_error = nested.m_error;
}

QString Params::requiredString(const QString &name)
{
    const QJsonValue v = m_object.value(name);
    if (!v.isString() || v.toString().isEmpty()) {
        fail(name, v.isUndefined() ? QStringLiteral("is required")
                                   : QStringLiteral("must be a non-empty string"));
        return {};
    }
    return v.toString();
}

QString Params::optionalString(const QString &name, const QString &fallback)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return fallback;
    if (!v.isString()) {
        fail(name, QStringLiteral("must be a string"));
        return fallback;
    }
    return v.toString();
}

qint64 Params::optionalInteger(const QString &name, qint64 fallback, qint64 min, qint64 max)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return fallback;
    const double d = v.toDouble();
    if (!v.isDouble() || d != double(qint64(d))) {
        fail(name, QStringLiteral("must be an integer"));
        return fallback;
    }
    if (d < double(min) || d > double(max)) {
        fail(name, QStringLiteral("must be between %1 and %2").arg(min).arg(max));
        return fallback;
    }
    return qint64(d);
}

bool Params::optionalBool(const QString &name, bool fallback)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return fallback;
    if (!v.isBool()) {
        fail(name, QStringLiteral("must be true or false"));
        return fallback;
    }
    return v.toBool();
}

bool Params::isRefusedEnvName(QStringView name)
{
    // glibc's UNSECURE_ENVVARS (sysdeps/generic/unsecvars.h), but TMPDIR.
    static const QStringList unsecure{
        QStringLiteral("GCONV_PATH"),       QStringLiteral("GETCONF_DIR"),
        QStringLiteral("HOSTALIASES"),      QStringLiteral("LOCALDOMAIN"),
        QStringLiteral("LOCPATH"),          QStringLiteral("MALLOC_TRACE"),
        QStringLiteral("NIS_PATH"),         QStringLiteral("NLSPATH"),
        QStringLiteral("RESOLV_HOST_CONF"), QStringLiteral("RES_OPTIONS"),
    };
    return name.startsWith(QLatin1String("LD_")) || unsecure.contains(name);
}

QMap<QString, QString> Params::optionalEnv(const QString &name)
{
    QMap<QString, QString> out;
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return out;
    if (!v.isObject()) {
        fail(name, QStringLiteral("must be an object of strings"));
        return out;
    }
    const QJsonObject o = v.toObject();
    if (o.size() > MaxEnvVariables) {
        fail(name, QStringLiteral("must hold at most %1 variables").arg(MaxEnvVariables));
        return {};
    }
    static const QRegularExpression validName(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    qsizetype total = 0;
    for (auto it = o.begin(); it != o.end(); ++it) {
        const QString &key = it.key();
        const QString field = name + u'.' + key;
        if (!validName.match(key).hasMatch()) {
            fail(field, QStringLiteral("a variable's name is letters, digits and '_', not "
                                       "starting with a digit"));
            return {};
        }
        if (isRefusedEnvName(key)) {
            fail(field, QStringLiteral("is refused: LD_* and the variables glibc ignores for "
                                       "setuid programs cannot be set"));
            return {};
        }
        if (!it.value().isString() || it.value().toString().contains(QChar(0))) {
            fail(field, QStringLiteral("must be a string without NUL"));
            return {};
        }
        const QString value = it.value().toString();
        const qsizetype bytes = key.size() + 1 + value.toUtf8().size();
        if (bytes > MaxArgumentBytes) {
            fail(field, QStringLiteral("NAME=VALUE must be at most %1 bytes").arg(MaxArgumentBytes));
            return {};
        }
        total += bytes + 1;
        out.insert(key, value);
    }
    if (total > MaxEnvBytes) {
        fail(name, QStringLiteral("must be at most %1 KiB in all").arg(MaxEnvBytes / 1024));
        return {};
    }
    return out;
}

QString Params::requiredPath(const QString &name)
{
    const QString path = requiredString(name);
    if (!failed() && (path.toUtf8().size() > MaxPathBytes || path.contains(QChar(0))))
        fail(name, QStringLiteral("must be a path of at most %1 bytes").arg(MaxPathBytes));
    return path;
}

QString Params::optionalPath(const QString &name, const QString &fallback)
{
    const QString path = optionalString(name, fallback);
    if (!failed() && (path.toUtf8().size() > MaxPathBytes || path.contains(QChar(0))))
        fail(name, QStringLiteral("must be a path of at most %1 bytes").arg(MaxPathBytes));
    return path;
}

QString Params::optionalName(const QString &name, const QString &fallback)
{
    const QString s = optionalString(name, fallback);
    const bool control = std::any_of(s.begin(), s.end(),
                                     [](QChar c) { return c.category() == QChar::Other_Control; });
    if (!failed() && (s.toUtf8().size() > MaxNameBytes || control))
        fail(name, QStringLiteral("must be at most %1 bytes, without control characters")
                       .arg(MaxNameBytes));
    return s;
}

NetworkPolicy Params::optionalNetworkPolicy(const QString &name)
{
    auto policy = NetworkPolicy::fromJson(m_object.value(name), field(name));
    if (!policy) {
        if (!m_error)
            m_error = policy.error();
        return NetworkPolicy::off();
    }
    return policy.value();
}

QJsonObject Params::optionalObject(const QString &name)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return {};
    if (!v.isObject()) {
        fail(name, QStringLiteral("must be an object"));
        return {};
    }
    return v.toObject();
}

QString Params::optionalChoice(const QString &name, const QStringList &choices,
                               const QString &fallback)
{
    const QString s = optionalString(name, fallback);
    if (!failed() && !choices.contains(s))
        fail(name, QStringLiteral("must be one of: %1").arg(choices.join(QStringLiteral(", "))));
    return s;
}

} // namespace Sandbox::Engine
