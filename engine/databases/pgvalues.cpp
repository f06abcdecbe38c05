#include "pgvalues.h"

#include "jsontext.h"
#include "protocol/utf8.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>

namespace Sandbox::Engine::PgValues {

namespace {

constexpr qint64 kMaxSafe = 9007199254740991LL;

struct TypeRow
{
    unsigned oid;
    const char *name;
    unsigned element; // for arrays: the element type's oid
};

// pg_type.dat of PostgreSQL 15 (the common built-in types).
const TypeRow kTypes[] = {
    {16, "bool", 0},
    {17, "bytea", 0},
    {18, "char", 0},
    {19, "name", 0},
    {20, "int8", 0},
    {21, "int2", 0},
    {23, "int4", 0},
    {24, "regproc", 0},
    {25, "text", 0},
    {26, "oid", 0},
    {28, "xid", 0},
    {114, "json", 0},
    {142, "xml", 0},
    {194, "pg_node_tree", 0},
    {600, "point", 0},
    {650, "cidr", 0},
    {700, "float4", 0},
    {701, "float8", 0},
    {705, "unknown", 0},
    {790, "money", 0},
    {829, "macaddr", 0},
    {869, "inet", 0},
    {1042, "bpchar", 0},
    {1043, "varchar", 0},
    {1082, "date", 0},
    {1083, "time", 0},
    {1114, "timestamp", 0},
    {1184, "timestamptz", 0},
    {1186, "interval", 0},
    {1266, "timetz", 0},
    {1560, "bit", 0},
    {1562, "varbit", 0},
    {1700, "numeric", 0},
    {2205, "regclass", 0},
    {2206, "regtype", 0},
    {2249, "record", 0},
    {2278, "void", 0},
    {2950, "uuid", 0},
    {3220, "pg_lsn", 0},
    {3614, "tsvector", 0},
    {3615, "tsquery", 0},
    {3802, "jsonb", 0},
    {3904, "int4range", 0},
    {3906, "numrange", 0},
    {3910, "tstzrange", 0},
    {3912, "daterange", 0},
    {3926, "int8range", 0},
    {4072, "jsonpath", 0},
    {1000, "_bool", 16},
    {1001, "_bytea", 17},
    {1002, "_char", 18},
    {1003, "_name", 19},
    {1005, "_int2", 21},
    {1007, "_int4", 23},
    {1009, "_text", 25},
    {1014, "_bpchar", 1042},
    {1015, "_varchar", 1043},
    {1016, "_int8", 20},
    {1021, "_float4", 700},
    {1022, "_float8", 701},
    {1028, "_oid", 26},
    {1115, "_timestamp", 1114},
    {1182, "_date", 1082},
    {1183, "_time", 1083},
    {1185, "_timestamptz", 1184},
    {1187, "_interval", 1186},
    {1231, "_numeric", 1700},
    {199, "_json", 114},
    {3807, "_jsonb", 3802},
    {2951, "_uuid", 2950},
    {1041, "_inet", 869},
    {143, "_xml", 142},
    {1270, "_timetz", 1266},
};

const TypeRow *find(unsigned oid)
{
    for (const TypeRow &t : kTypes)
        if (t.oid == oid)
            return &t;
    return nullptr;
}

QJsonValue bigInt(const QByteArray &text)
{
    bool ok = false;
    const qint64 v = text.toLongLong(&ok);
    if (ok && v <= kMaxSafe && v >= -kMaxSafe)
        return QJsonValue(v);
    return QJsonObject{{QStringLiteral("$int"), QString::fromLatin1(text)}};
}

QJsonValue floatValue(const QByteArray &text)
{
    if (text == "NaN" || text == "Infinity" || text == "-Infinity")
        return QJsonObject{{QStringLiteral("$float"), QString::fromLatin1(text)}};
    return QJsonValue(text.toDouble());
}

QJsonValue byteaValue(const QByteArray &text)
{
    // Output format "hex" (the default since PostgreSQL 9.0): \x0a0b...
    const QByteArray bytes = text.startsWith("\\x") ? QByteArray::fromHex(text.mid(2)) : text;
    return QJsonObject{{QStringLiteral("$bytes"), QString::fromLatin1(bytes.toBase64())}};
}

// "2024-01-02 03:04:05.5+00" (TimeZone=UTC, DateStyle=ISO) -> "2024-01-02T03:04:05.5Z".
QJsonValue timestampValue(const QByteArray &text, bool withZone)
{
    QString s = QString::fromLatin1(text);
    if (s.size() < 19 || s.endsWith(QLatin1String(" BC")) || s[10] != u' ')
        return s; // infinity, -infinity, BC dates, years past 9999: as PostgreSQL wrote them
    s[10] = u'T';
    if (withZone && s.endsWith(QLatin1String("+00")))
        s = s.left(s.size() - 3) + u'Z';
    return s;
}

QJsonValue scalar(unsigned oid, const QByteArray &text)
{
    switch (oid) {
    case 16:
        return QJsonValue(text == "t");
    case 21:
    case 23:
    case 26:
    case 28:
        return QJsonValue(text.toLongLong());
    case 20:
        return bigInt(text);
    case 700:
    case 701:
        return floatValue(text);
    case 17:
        return byteaValue(text);
    case 1114:
        return timestampValue(text, false);
    case 1184:
        return timestampValue(text, true);
    default:
        return QString::fromUtf8(text);
    }
}

// Parses an array literal such as {1,2,NULL} or {{"a b","c\"d"},{e,f}} into nested JSON arrays.
class ArrayParser
{
public:
    ArrayParser(const char *text, int length, unsigned element)
        : m_s(text)
        , m_n(length)
        , m_element(element)
    {}

    QJsonValue parse()
    {
        // An optional dimension decoration: [1:2]={...}
        if (m_i < m_n && m_s[m_i] == '[') {
            while (m_i < m_n && m_s[m_i] != '=')
                ++m_i;
            ++m_i;
        }
        return parseArray();
    }

private:
    QJsonValue parseArray()
    {
        QJsonArray out;
        if (m_i >= m_n || m_s[m_i] != '{')
            return QString::fromUtf8(m_s, m_n);
        ++m_i;
        if (m_i < m_n && m_s[m_i] == '}') {
            ++m_i;
            return out;
        }
        while (m_i < m_n) {
            if (m_s[m_i] == '{') {
                out.append(parseArray());
            } else {
                bool quoted = false;
                const QByteArray item = parseItem(&quoted);
                if (!quoted && item == "NULL")
                    out.append(QJsonValue::Null);
                else
                    out.append(scalar(m_element, item));
            }
            if (m_i < m_n && m_s[m_i] == ',') {
                ++m_i;
                continue;
            }
            if (m_i < m_n && m_s[m_i] == '}') {
                ++m_i;
                break;
            }
            break; // malformed: stop here
        }
        return out;
    }

    QByteArray parseItem(bool *quoted)
    {
        QByteArray item;
        if (m_i < m_n && m_s[m_i] == '"') {
            *quoted = true;
            ++m_i;
            while (m_i < m_n && m_s[m_i] != '"') {
                if (m_s[m_i] == '\\' && m_i + 1 < m_n)
                    ++m_i;
                item.append(m_s[m_i++]);
            }
            ++m_i; // closing quote
            return item;
        }
        while (m_i < m_n && m_s[m_i] != ',' && m_s[m_i] != '}')
            item.append(m_s[m_i++]);
        return item.trimmed();
    }

    const char *m_s;
    int m_n;
    int m_i = 0;
    unsigned m_element;
};

} // namespace

QString typeName(unsigned oid)
{
    const TypeRow *t = find(oid);
    return t ? QString::fromLatin1(t->name) : QString();
}

QJsonValue toJson(unsigned oid, const char *text, int length)
{
    const TypeRow *t = find(oid);
    if (t && t->element)
        return ArrayParser(text, length, t->element).parse();
    return scalar(oid, QByteArray::fromRawData(text, length));
}

void appendJson(QByteArray &out, unsigned oid, const char *text, int length)
{
    const std::string_view s(text, size_t(length));
    const char *end = text + length;
    char buf[32];
    switch (oid) {
    case 16: // bool
        if (s == "t" || s == "f") {
            out += s == "t" ? "true" : "false";
            return;
        }
        break;
    case 20: // int8, int2, int4, oid, xid
    case 21:
    case 23:
    case 26:
    case 28: {
        long long v = 0;
        const auto r = std::from_chars(text, end, v);
        if (r.ec != std::errc() || r.ptr != end)
            break;
        const bool safe = v <= kMaxSafe && v >= -kMaxSafe;
        if (!safe)
            out += "{\"$int\":\"";
        out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr - buf);
        if (!safe)
            out += "\"}";
        return;
    }
    case 700: // float4, float8: NaN and the infinities as toJson() writes them
    case 701: {
        double v = 0;
        const auto r = std::from_chars(text, end, v);
        if (r.ec != std::errc() || r.ptr != end || !std::isfinite(v))
            break;
        out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr - buf);
        return;
    }
    case 17: // bytea, timestamps: toJson()
    case 1114:
    case 1184:
        break;
    default: {
        // Text as PostgreSQL wrote it (numeric, uuid, dates, ...), unless an array or not UTF-8.
        const TypeRow *t = find(oid);
        if (!(t && t->element) && Utf8::isValid(QByteArrayView(text, length))) {
            JsonText::appendString(out, s);
            return;
        }
    }
    }
    QByteArray one
        = QJsonDocument(QJsonArray{toJson(oid, text, length)}).toJson(QJsonDocument::Compact);
    out += QByteArrayView(one).sliced(1, one.size() - 2); // without the array's brackets
}

Result<Param> fromJson(const QJsonValue &v, int index)
{
    Param p;
    switch (v.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        p.isNull = true;
        return p;
    case QJsonValue::Bool:
        p.value = v.toBool() ? "true" : "false";
        return p;
    case QJsonValue::Double: {
        // An integer (exact even beyond 2^53 when the JSON text was an integer) or a float.
        constexpr qint64 kNone = std::numeric_limits<qint64>::min();
        const qint64 i = v.toInteger(kNone);
        p.value = i != kNone ? QByteArray::number(i) : QByteArray::number(v.toDouble(), 'g', 17);
        return p;
    }
    case QJsonValue::String:
        p.value = v.toString().toUtf8();
        if (p.value.contains('\0'))
            return Error::invalidParams(
                QStringLiteral("params[%1]").arg(index),
                QStringLiteral("PostgreSQL text cannot hold a NUL character; use {\"$bytes\"}"));
        return p;
    case QJsonValue::Object: {
        const QJsonObject o = v.toObject();
        if (o.size() == 1 && o.contains(QStringLiteral("$bytes"))) {
            auto decoded = QByteArray::fromBase64Encoding(o.value(QStringLiteral("$bytes"))
                                                              .toString()
                                                              .toLatin1(),
                                                          QByteArray::AbortOnBase64DecodingErrors);
            if (!decoded)
                return Error::invalidParams(QStringLiteral("params[%1]").arg(index),
                                            QStringLiteral("$bytes is not valid base64"));
            p.value = *decoded;
            p.binary = true;
            return p;
        }
        if (o.size() == 1
            && (o.contains(QStringLiteral("$int")) || o.contains(QStringLiteral("$float")))) {
            p.value = o.begin().value().toString().toUtf8();
            return p;
        }
        p.value = QJsonDocument(o).toJson(QJsonDocument::Compact);
        return p;
    }
    case QJsonValue::Array: {
        // A PostgreSQL array literal: {1,2,"text with \"quotes\"",NULL}; nested arrays nest.
        std::function<QByteArray(const QJsonArray &)> literal =
            [&](const QJsonArray &a) -> QByteArray {
            QByteArray out = "{";
            for (qsizetype i = 0; i < a.size(); ++i) {
                if (i)
                    out += ',';
                const QJsonValue e = a[i];
                if (e.isArray()) {
                    out += literal(e.toArray());
                } else if (e.isNull()) {
                    out += "NULL";
                } else {
                    QByteArray s = e.isString() ? e.toString().toUtf8()
                                   : e.isBool() ? QByteArray(e.toBool() ? "true" : "false")
                                   : e.isObject()
                                       ? QJsonDocument(e.toObject()).toJson(QJsonDocument::Compact)
                                       : QByteArray::number(e.toDouble(), 'g', 17);
                    s.replace('\\', "\\\\").replace('"', "\\\"");
                    out += '"';
                    out += s;
                    out += '"';
                }
            }
            out += '}';
            return out;
        };
        p.value = literal(v.toArray());
        return p;
    }
    }
    return p;
}

} // namespace Sandbox::Engine::PgValues
