#include "params.h"

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

QMap<QString, QString> Params::optionalStringMap(const QString &name)
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
    for (auto it = o.begin(); it != o.end(); ++it) {
        const QString &key = it.key();
        const bool validName = !key.isEmpty() && !key.contains(u'=') && !key.contains(QChar(0));
        if (!validName || !it.value().isString() || it.value().toString().contains(QChar(0))) {
            fail(name + u'.' + key, QStringLiteral("must be a string, named without '='"));
            return {};
        }
        out.insert(key, it.value().toString());
    }
    return out;
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
