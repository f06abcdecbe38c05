#include "databasetypes.h"

#include "protocol/fieldreader.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <limits>

namespace Sandbox {

namespace SqlValue {

namespace {
bool tagged(const QJsonValue &v, const QString &tag, QString *payload)
{
    if (!v.isObject())
        return false;
    const QJsonObject o = v.toObject();
    if (o.size() != 1 || !o.contains(tag))
        return false;
    *payload = o.value(tag).toString();
    return true;
}
constexpr qint64 kMaxSafe = 9007199254740991LL;

// The number as a 64-bit integer when it is one (the smallest one too, which toInteger() also
// answers for a number that is not).
bool integerOf(const QJsonValue &v, qint64 *out)
{
    constexpr qint64 kMin = std::numeric_limits<qint64>::min();
    *out = v.toInteger(kMin);
    return *out != kMin || v.toInteger(0) == kMin;
}
} // namespace

bool isNull(const QJsonValue &value)
{
    return value.isNull() || value.isUndefined();
}

QVariant toVariant(const QJsonValue &value)
{
    QString payload;
    switch (value.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        return {};
    case QJsonValue::Bool:
        return value.toBool();
    case QJsonValue::String:
        return value.toString();
    case QJsonValue::Double: {
        qint64 i = 0;
        if (integerOf(value, &i))
            return qlonglong(i);
        return value.toDouble();
    }
    case QJsonValue::Array: {
        QVariantList out;
        for (const QJsonValue &v : value.toArray())
            out.append(toVariant(v));
        return out;
    }
    case QJsonValue::Object:
        if (tagged(value, QStringLiteral("$int"), &payload)) {
            bool ok = false;
            const qlonglong n = payload.toLongLong(&ok);
            return ok ? QVariant(n) : QVariant(payload);
        }
        if (tagged(value, QStringLiteral("$bytes"), &payload))
            return QByteArray::fromBase64(payload.toLatin1());
        if (tagged(value, QStringLiteral("$float"), &payload))
            return payload == QLatin1String("NaN") ? std::nan("")
                   : payload.startsWith(u'-')      ? -std::numeric_limits<double>::infinity()
                                                   : std::numeric_limits<double>::infinity();
        QVariantMap out;
        const QJsonObject o = value.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            out.insert(it.key(), toVariant(it.value()));
        return out;
    }
    return {};
}

QString toText(const QJsonValue &value, bool bytesAsHex)
{
    QString payload;
    switch (value.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        return {};
    case QJsonValue::Bool:
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::String:
        return value.toString();
    case QJsonValue::Double: {
        qint64 i = 0;
        return integerOf(value, &i) ? QString::number(i)
                                    : QString::number(value.toDouble(), 'g', 17);
    }
    case QJsonValue::Array:
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    case QJsonValue::Object:
        if (tagged(value, QStringLiteral("$int"), &payload)
            || tagged(value, QStringLiteral("$float"), &payload))
            return payload;
        if (tagged(value, QStringLiteral("$bytes"), &payload))
            return bytesAsHex ? QStringLiteral("\\x")
                                    + QString::fromLatin1(
                                        QByteArray::fromBase64(payload.toLatin1()).toHex())
                              : payload;
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    }
    return {};
}

QJsonValue bytes(const QByteArray &data)
{
    return QJsonObject{{QStringLiteral("$bytes"), QString::fromLatin1(data.toBase64())}};
}

QJsonValue bigInteger(qint64 value)
{
    if (value > kMaxSafe || value < -kMaxSafe)
        return QJsonObject{{QStringLiteral("$int"), QString::number(value)}};
    return QJsonValue(value);
}

QJsonValue fromVariant(const QVariant &value)
{
    if (!value.isValid() || value.isNull())
        return QJsonValue::Null;
    switch (value.typeId()) {
    case QMetaType::Bool:
        return value.toBool();
    case QMetaType::Int:
    case QMetaType::UInt:
    case QMetaType::LongLong:
    case QMetaType::Long:
    case QMetaType::Short:
        return bigInteger(value.toLongLong());
    case QMetaType::ULongLong: {
        const qulonglong u = value.toULongLong();
        return u > qulonglong(kMaxSafe)
                   ? QJsonValue(QJsonObject{{QStringLiteral("$int"), QString::number(u)}})
                   : QJsonValue(qint64(u));
    }
    case QMetaType::Double:
    case QMetaType::Float: {
        const double d = value.toDouble();
        if (std::isnan(d))
            return QJsonObject{{QStringLiteral("$float"), QStringLiteral("NaN")}};
        if (std::isinf(d))
            return QJsonObject{{QStringLiteral("$float"),
                                d > 0 ? QStringLiteral("Infinity") : QStringLiteral("-Infinity")}};
        return d;
    }
    case QMetaType::QByteArray:
        return bytes(value.toByteArray());
    case QMetaType::QVariantList: {
        QJsonArray out;
        for (const QVariant &v : value.toList())
            out.append(fromVariant(v));
        return out;
    }
    default:
        return QJsonValue::fromVariant(value);
    }
}

} // namespace SqlValue

SqlErrorLocation SqlErrorLocation::fromError(const Error &error)
{
    SqlErrorLocation l;
    const QJsonObject d = error.data.toObject();
    l.position = d.value(QStringLiteral("position")).toInt();
    l.line = d.value(QStringLiteral("line")).toInt();
    l.column = d.value(QStringLiteral("column")).toInt();
    l.statementIndex = d.value(QStringLiteral("statementIndex")).toInt(-1);
    l.sqlstate = d.value(QStringLiteral("sqlstate")).toString();
    l.detail = d.value(QStringLiteral("detail")).toString();
    l.hint = d.value(QStringLiteral("hint")).toString();
    return l;
}

Result<QueryPage> QueryPage::fromJson(const QJsonValue &value, const QByteArray &rowsText)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("QueryPage"));
    QueryPage p;
    const QJsonObject o = r.object();
    for (const QJsonValue &f : o.value(QStringLiteral("fields")).toArray()) {
        const QJsonObject fo = f.toObject();
        p.fields.append({fo.value(QStringLiteral("name")).toString(),
                         fo.value(QStringLiteral("type")).toString()});
    }
    Result<SqlRows> rows = !rowsText.isNull() ? SqlRows::fromJson(rowsText)
                                              : SqlRows::fromArray(r.array(QStringLiteral("rows")));
    if (rows)
        p.rows = *rows;
    else if (r.ok())
        r.fail(QStringLiteral("rows"),
               QStringLiteral("must hold arrays (rowMode array): ") + rows.error().message);
    p.command = r.optionalString(QStringLiteral("command"));
    p.rowsAffected = r.optionalInteger(QStringLiteral("rowsAffected"));
    p.cursor = r.optionalString(QStringLiteral("cursor"));
    p.done = p.cursor.isEmpty();
    if (!r.ok())
        return r.error();
    return p;
}

Result<ExecuteResult> ExecuteResult::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("ExecuteResult"));
    ExecuteResult e;
    e.rowsAffected = r.integer(QStringLiteral("rowsAffected"));
    e.command = r.optionalString(QStringLiteral("command"));
    if (!r.ok())
        return r.error();
    return e;
}

Result<TableDescription> TableDescription::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("TableDescription"));
    TableDescription t;
    t.schema = r.optionalString(QStringLiteral("schema"));
    t.table = r.string(QStringLiteral("table"));
    for (const QJsonValue &c : r.array(QStringLiteral("columns"))) {
        const QJsonObject o = c.toObject();
        t.columns.append(
            {o.value(QStringLiteral("name")).toString(), o.value(QStringLiteral("type")).toString(),
             o.value(QStringLiteral("nullable")).toBool(true), o.value(QStringLiteral("default")),
             o.value(QStringLiteral("primaryKey")).toBool()});
    }
    for (const QJsonValue &i : r.object().value(QStringLiteral("indexes")).toArray()) {
        const QJsonObject o = i.toObject();
        IndexInfo info;
        info.name = o.value(QStringLiteral("name")).toString();
        for (const QJsonValue &c : o.value(QStringLiteral("columns")).toArray())
            info.columns.append(SqlValue::toText(c));
        info.unique = o.value(QStringLiteral("unique")).toBool();
        info.primary = o.value(QStringLiteral("primary")).toBool();
        info.definition = o.value(QStringLiteral("definition")).toString();
        t.indexes.append(info);
    }
    if (!r.ok())
        return r.error();
    return t;
}

Result<DatabaseInfo> DatabaseInfo::fromJson(const QJsonValue &value)
{
    auto sandbox = SandboxInfo::fromJson(value);
    if (!sandbox)
        return sandbox.error();
    DatabaseInfo d;
    d.sandbox = *sandbox;
    const QJsonObject o = value.toObject();
    const QJsonObject db = o.value(QStringLiteral("database")).toObject();
    d.engine = db.value(QStringLiteral("type")).toString(d.sandbox.type);
    d.database = db.value(QStringLiteral("database")).toString();
    d.username = db.value(QStringLiteral("username")).toString();
    d.startupTimeMs = qint64(o.value(QStringLiteral("startupTimeMs")).toDouble(-1));
    return d;
}

} // namespace Sandbox
