#include "jsonreader.h"

#include <cmath>

namespace Sandbox::Internal {

JsonReader::JsonReader(const QJsonValue &value, const QString &what)
    : m_what(what)
{
    if (!value.isObject())
        fail(QString(), QStringLiteral("expected an object"));
    else
        m_object = value.toObject();
}

Error JsonReader::error() const
{
    return m_error.value_or(Error{ErrorCode::InternalError, QString(), {}});
}

void JsonReader::fail(const QString &field, const QString &why)
{
    if (m_error)
        return;
    const QString message
        = field.isEmpty()
              ? QStringLiteral("malformed %1 from server: %2").arg(m_what, why)
              : QStringLiteral("malformed %1 from server: \"%2\" %3").arg(m_what, field, why);
    QJsonObject data{{QStringLiteral("object"), m_what}};
    if (!field.isEmpty())
        data.insert(QStringLiteral("field"), field);
    m_error = Error{ErrorCode::InternalError, message, data};
}

void JsonReader::failWith(const Error &nested)
{
    if (!m_error)
        m_error = nested;
}

QJsonValue JsonReader::field(const QString &key, const char *type)
{
    const QJsonValue v = m_object.value(key);
    if (v.isUndefined())
        fail(key, QStringLiteral("is missing (%1 expected)").arg(QLatin1StringView(type)));
    return v;
}

QString JsonReader::string(const QString &key)
{
    const QJsonValue v = field(key, "string");
    if (!v.isUndefined() && !v.isString())
        fail(key, QStringLiteral("must be a string"));
    return v.toString();
}

QString JsonReader::optionalString(const QString &key, const QString &fallback)
{
    const QJsonValue v = m_object.value(key);
    if (v.isUndefined() || v.isNull())
        return fallback;
    if (!v.isString())
        fail(key, QStringLiteral("must be a string"));
    return v.toString();
}

qint64 JsonReader::integer(const QString &key)
{
    const QJsonValue v = field(key, "integer");
    if (v.isUndefined())
        return 0;
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || std::floor(d) != d || std::abs(d) > 9007199254740992.0) {
        fail(key, QStringLiteral("must be an integer"));
        return 0;
    }
    return qint64(d);
}

qint64 JsonReader::optionalInteger(const QString &key, qint64 fallback)
{
    const QJsonValue v = m_object.value(key);
    if (v.isUndefined() || v.isNull())
        return fallback;
    return integer(key);
}

double JsonReader::number(const QString &key)
{
    const QJsonValue v = field(key, "number");
    if (!v.isUndefined() && !v.isDouble())
        fail(key, QStringLiteral("must be a number"));
    return v.toDouble();
}

bool JsonReader::boolean(const QString &key)
{
    const QJsonValue v = field(key, "boolean");
    if (!v.isUndefined() && !v.isBool())
        fail(key, QStringLiteral("must be a boolean"));
    return v.toBool();
}

bool JsonReader::optionalBoolean(const QString &key, bool fallback)
{
    const QJsonValue v = m_object.value(key);
    if (v.isUndefined() || v.isNull())
        return fallback;
    return boolean(key);
}

QDateTime JsonReader::dateTime(const QString &key)
{
    const QString s = string(key);
    if (!ok())
        return {};
    QDateTime t = QDateTime::fromString(s, Qt::ISODateWithMs);
    if (!t.isValid())
        fail(key, QStringLiteral("must be an ISO 8601 time"));
    return t;
}

QDateTime JsonReader::optionalDateTime(const QString &key)
{
    const QJsonValue v = m_object.value(key);
    if (v.isUndefined() || v.isNull())
        return {};
    return dateTime(key);
}

QJsonObject JsonReader::object(const QString &key)
{
    const QJsonValue v = field(key, "object");
    if (!v.isUndefined() && !v.isObject())
        fail(key, QStringLiteral("must be an object"));
    return v.toObject();
}

QJsonArray JsonReader::array(const QString &key)
{
    const QJsonValue v = field(key, "array");
    if (!v.isUndefined() && !v.isArray())
        fail(key, QStringLiteral("must be an array"));
    return v.toArray();
}

QStringList JsonReader::stringList(const QString &key, bool optional)
{
    const QJsonValue v = m_object.value(key);
    if (optional && (v.isUndefined() || v.isNull()))
        return {};
    const QJsonArray a = array(key);
    QStringList out;
    out.reserve(a.size());
    for (const QJsonValue &item : a) {
        if (!item.isString()) {
            fail(key, QStringLiteral("must be an array of strings"));
            return {};
        }
        out.append(item.toString());
    }
    return out;
}

QString JsonReader::oneOf(const QString &key, const QStringList &allowed)
{
    const QString s = string(key);
    if (ok() && !allowed.contains(s))
        fail(key, QStringLiteral("must be one of %1, not \"%2\"")
                      .arg(allowed.join(QStringLiteral(", ")), s));
    return s;
}

} // namespace Sandbox::Internal
