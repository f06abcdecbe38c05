#include "fieldreader.h"

#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace Sandbox {

FieldReader::FieldReader(const QJsonObject &params, const QString &prefix)
    : m_side(Side::Params)
    , m_object(params)
    , m_name(prefix)
{}

FieldReader::FieldReader(Side side, const QString &name)
    : m_side(side)
    , m_name(name)
{}

FieldReader FieldReader::answer(const QJsonValue &value, const QString &what)
{
    FieldReader r(Side::Answer, what);
    if (!value.isObject())
        r.fail(QString(), QStringLiteral("expected an object"));
    else
        r.m_object = value.toObject();
    return r;
}

Error FieldReader::error() const
{
    return m_error.value_or(Error{ErrorCode::InternalError, QString(), {}});
}

QString FieldReader::fieldName(const QString &name) const
{
    return m_side == Side::Answer || m_name.isEmpty() ? name : m_name + u'.' + name;
}

void FieldReader::fail(const QString &name, const QString &why)
{
    if (m_error)
        return;
    if (m_side == Side::Params) {
        m_error = Error::invalidParams(fieldName(name), why);
        return;
    }
    const QString message
        = name.isEmpty()
              ? QStringLiteral("malformed %1 from server: %2").arg(m_name, why)
              : QStringLiteral("malformed %1 from server: \"%2\" %3").arg(m_name, name, why);
    QJsonObject data{{QStringLiteral("object"), m_name}};
    if (!name.isEmpty())
        data.insert(QStringLiteral("field"), name);
    m_error = Error{ErrorCode::InternalError, message, data};
}

void FieldReader::failWith(const Error &error)
{
    if (!m_error)
        m_error = error;
}

void FieldReader::merge(const FieldReader &nested)
{
    if (nested.m_error)
        failWith(*nested.m_error);
}

QJsonValue FieldReader::required(const QString &name, const char *type)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined())
        fail(name, m_side == Side::Params
                       ? QStringLiteral("is required")
                       : QStringLiteral("is missing (%1 expected)").arg(QLatin1StringView(type)));
    return v;
}

QString FieldReader::string(const QString &name)
{
    const QJsonValue v = required(name, "string");
    if (!v.isUndefined() && !v.isString())
        fail(name, QStringLiteral("must be a string"));
    return v.toString();
}

QString FieldReader::requiredString(const QString &name)
{
    const QJsonValue v = required(name, "string");
    if (v.isUndefined())
        return {};
    if (!v.isString() || v.toString().isEmpty()) {
        fail(name, QStringLiteral("must be a non-empty string"));
        return {};
    }
    return v.toString();
}

QString FieldReader::optionalString(const QString &name, const QString &fallback)
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

qint64 FieldReader::integer(const QString &name, qint64 min, qint64 max)
{
    const QJsonValue v = required(name, "integer");
    if (v.isUndefined())
        return 0;
    return optionalInteger(name, 0, min, max);
}

qint64 FieldReader::optionalInteger(const QString &name, qint64 fallback, qint64 min, qint64 max)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return fallback;
    const double d = v.toDouble(std::nan(""));
    // 2^63 is where qint64 ends.
    if (!v.isDouble() || std::floor(d) != d || std::abs(d) >= 9223372036854775808.0) {
        fail(name, QStringLiteral("must be an integer"));
        return fallback;
    }
    if (d < double(min) || d > double(max)) {
        fail(name, QStringLiteral("must be between %1 and %2").arg(min).arg(max));
        return fallback;
    }
    return v.toInteger(qint64(d));
}

double FieldReader::number(const QString &name)
{
    const QJsonValue v = required(name, "number");
    if (!v.isUndefined() && !v.isDouble())
        fail(name, QStringLiteral("must be a number"));
    return v.toDouble();
}

bool FieldReader::boolean(const QString &name)
{
    const QJsonValue v = required(name, "boolean");
    if (!v.isUndefined() && !v.isBool())
        fail(name, QStringLiteral("must be true or false"));
    return v.toBool();
}

bool FieldReader::optionalBool(const QString &name, bool fallback)
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

QDateTime FieldReader::dateTime(const QString &name)
{
    const QString s = string(name);
    if (failed())
        return {};
    QDateTime t = QDateTime::fromString(s, Qt::ISODateWithMs);
    if (!t.isValid())
        fail(name, QStringLiteral("must be an ISO 8601 time"));
    return t;
}

QDateTime FieldReader::optionalDateTime(const QString &name)
{
    const QJsonValue v = m_object.value(name);
    if (v.isUndefined() || v.isNull())
        return {};
    return dateTime(name);
}

QJsonObject FieldReader::object(const QString &name)
{
    const QJsonValue v = required(name, "object");
    if (!v.isUndefined() && !v.isObject())
        fail(name, QStringLiteral("must be an object"));
    return v.toObject();
}

QJsonObject FieldReader::optionalObject(const QString &name)
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

QJsonArray FieldReader::array(const QString &name)
{
    const QJsonValue v = required(name, "array");
    if (!v.isUndefined() && !v.isArray())
        fail(name, QStringLiteral("must be an array"));
    return v.toArray();
}

QStringList FieldReader::stringList(const QString &name, bool optional)
{
    const QJsonValue v = m_object.value(name);
    if (optional && (v.isUndefined() || v.isNull()))
        return {};
    const QJsonArray a = array(name);
    QStringList out;
    out.reserve(a.size());
    for (const QJsonValue &item : a) {
        if (!item.isString()) {
            fail(name, QStringLiteral("must be an array of strings"));
            return {};
        }
        out.append(item.toString());
    }
    return out;
}

QString FieldReader::oneOf(const QString &name, const QStringList &allowed)
{
    const QString s = string(name);
    if (ok() && !allowed.contains(s))
        fail(name, QStringLiteral("must be one of %1, not \"%2\"")
                       .arg(allowed.join(QStringLiteral(", ")), s));
    return s;
}

QString FieldReader::optionalChoice(const QString &name, const QStringList &choices,
                                    const QString &fallback)
{
    const QString s = optionalString(name, fallback);
    if (!failed() && !choices.contains(s))
        fail(name, QStringLiteral("must be one of: %1").arg(choices.join(QStringLiteral(", "))));
    return s;
}

namespace {
QString nulInSqlText()
{
    return QStringLiteral("must not contain a NUL character (U+0000): the database would read "
                          "the text only up to it");
}
} // namespace

QString FieldReader::requiredSqlText(const QString &name)
{
    const QString text = requiredString(name);
    if (!failed() && text.contains(QChar(0)))
        fail(name, nulInSqlText());
    return text;
}

QString FieldReader::optionalSqlText(const QString &name, const QString &fallback)
{
    const QString text = optionalString(name, fallback);
    if (!failed() && text.contains(QChar(0)))
        fail(name, nulInSqlText());
    return text;
}

void FieldReader::checkPath(const QString &name, const QString &path)
{
    if (failed())
        return;
    if (path.toUtf8().size() > MaxPathBytes)
        fail(name, QStringLiteral("must be a path of at most %1 bytes").arg(MaxPathBytes));
    else if (path.contains(QChar(0)))
        fail(name, QStringLiteral("must not contain a NUL character (U+0000)"));
}

QString FieldReader::requiredPath(const QString &name)
{
    const QString path = requiredString(name);
    checkPath(name, path);
    return path;
}

QString FieldReader::optionalPath(const QString &name, const QString &fallback)
{
    const QString path = optionalString(name, fallback);
    checkPath(name, path);
    return path;
}

QString FieldReader::optionalName(const QString &name, const QString &fallback)
{
    const QString s = optionalString(name, fallback);
    const bool control = std::any_of(s.begin(), s.end(),
                                     [](QChar c) { return c.category() == QChar::Other_Control; });
    if (!failed() && (s.toUtf8().size() > MaxNameBytes || control))
        fail(name, QStringLiteral("must be at most %1 bytes, without control characters")
                       .arg(MaxNameBytes));
    return s;
}

bool FieldReader::isRefusedEnvName(QStringView name)
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

QMap<QString, QString> FieldReader::optionalEnv(const QString &name)
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

} // namespace Sandbox
