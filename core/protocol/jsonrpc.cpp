#include "jsonrpc.h"

#include "json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

#include <cstring>

namespace Sandbox::JsonRpc {

namespace {

const QString kJsonrpc = QStringLiteral("jsonrpc");
const QString kId = QStringLiteral("id");
const QString kMethod = QStringLiteral("method");
const QString kParams = QStringLiteral("params");
const QString kResult = QStringLiteral("result");
const QString kError = QStringLiteral("error");
const QString kVersion = QStringLiteral("2.0");

bool isValidId(const QJsonValue &id)
{
    return id.isString() || id.isDouble() || id.isNull();
}

Message invalid(const QJsonValue &id, ErrorCode code, const QString &why)
{
    Message m;
    m.kind = Message::Kind::Invalid;
    m.id = id;
    m.error = Error{code, why, {}};
    return m;
}

} // namespace

Message parseMessage(const QJsonValue &value)
{
    if (!value.isObject())
        return invalid(QJsonValue::Null, ErrorCode::InvalidRequest,
                       QStringLiteral("Invalid Request: a message must be a JSON object"));
    const QJsonObject o = value.toObject();
    const QJsonValue rawId = o.value(kId);
    const QJsonValue id = isValidId(rawId) ? rawId : QJsonValue(QJsonValue::Null);

    if (o.value(kJsonrpc) != QJsonValue(kVersion))
        return invalid(id, ErrorCode::InvalidRequest,
                       QStringLiteral("Invalid Request: \"jsonrpc\" must be \"2.0\""));
    if (!rawId.isUndefined() && !isValidId(rawId))
        return invalid(QJsonValue::Null, ErrorCode::InvalidRequest,
                       QStringLiteral("Invalid Request: \"id\" must be a string, number or null"));

    if (!o.contains(kMethod)) {
        // A response (client side).
        const bool hasResult = o.contains(kResult);
        const bool hasError = o.contains(kError);
        if (hasResult == hasError || rawId.isUndefined())
            return invalid(id, ErrorCode::InvalidRequest,
                           QStringLiteral("Invalid Request: no \"method\""));
        Message m;
        m.kind = Message::Kind::Response;
        m.id = id;
        if (hasError)
            m.error = Error::fromJson(o.value(kError));
        else
            m.result = o.value(kResult);
        return m;
    }

    const QJsonValue method = o.value(kMethod);
    if (!method.isString())
        return invalid(id, ErrorCode::InvalidRequest,
                       QStringLiteral("Invalid Request: \"method\" must be a string"));
    const QJsonValue params = o.value(kParams);
    if (!params.isUndefined() && !params.isObject() && !params.isArray())
        return invalid(id, ErrorCode::InvalidRequest,
                       QStringLiteral("Invalid Request: \"params\" must be structured"));

    Message m;
    m.kind = rawId.isUndefined() ? Message::Kind::Notification : Message::Kind::Request;
    m.id = id;
    m.method = method.toString();
    if (params.isArray()) {
        // Structurally valid per the spec, but this protocol takes named params only.
        m.error = Error{ErrorCode::InvalidParams,
                        QStringLiteral("Invalid params: params must be a named object"),
                        {}};
    } else {
        m.params = params.toObject();
    }
    return m;
}

Incoming parse(const QByteArray &text)
{
    Incoming in;
    if (text.size() > MaxMessageBytes) {
        in.error = Error{ErrorCode::PayloadTooLarge,
                         QStringLiteral("message of %1 bytes is over the limit of %2 bytes")
                             .arg(text.size())
                             .arg(MaxMessageBytes),
                         {}};
        return in;
    }
    const Json::Parsed parsed = Json::parse(text);
    if (parsed.error) {
        in.error = Error{ErrorCode::ParseError,
                         QStringLiteral("Parse error: %1 at offset %2")
                             .arg(parsed.error->message)
                             .arg(parsed.error->offset),
                         {}};
        return in;
    }
    if (!parsed.value.isObject() && !parsed.value.isArray()) {
        in.error = Error{ErrorCode::InvalidRequest,
                         QStringLiteral("Invalid Request: a message must be a JSON object"),
                         {}};
        return in;
    }
    if (parsed.value.isObject()) {
        in.messages.append(parseMessage(parsed.value));
        return in;
    }
    const QJsonArray batch = parsed.value.toArray();
    in.batch = true;
    if (batch.isEmpty()) {
        in.error = Error{ErrorCode::InvalidRequest,
                         QStringLiteral("Invalid Request: empty batch"),
                         {}};
        return in;
    }
    if (batch.size() > MaxBatchSize) {
        in.error = Error{ErrorCode::PayloadTooLarge,
                         QStringLiteral("batch of %1 requests is over the limit of %2")
                             .arg(batch.size())
                             .arg(MaxBatchSize),
                         {}};
        return in;
    }
    in.messages.reserve(batch.size());
    for (const QJsonValue &v : batch)
        in.messages.append(parseMessage(v));
    return in;
}

QJsonObject requestObject(const QJsonValue &id, const QString &method, const QJsonObject &params)
{
    return {{kJsonrpc, kVersion}, {kId, id}, {kMethod, method}, {kParams, params}};
}

QJsonObject notificationObject(const QString &method, const QJsonObject &params)
{
    return {{kJsonrpc, kVersion}, {kMethod, method}, {kParams, params}};
}

QJsonObject resultObject(const QJsonValue &id, const QJsonValue &result)
{
    return {{kJsonrpc, kVersion}, {kId, id}, {kResult, result}};
}

QJsonObject errorObject(const QJsonValue &id, const Error &error)
{
    return {{kJsonrpc, kVersion}, {kId, id}, {kError, error.toJson()}};
}

QByteArray serialize(const QJsonObject &message)
{
    return QJsonDocument(message).toJson(QJsonDocument::Compact);
}

void appendJsonString(QByteArray &out, QByteArrayView utf8)
{
    static constexpr char hex[] = "0123456789abcdef";
    constexpr quint64 ones = 0x0101010101010101ULL;
    constexpr quint64 highs = 0x8080808080808080ULL;
    // Any byte below 0x20, or equal to '"' or '\\', in a 64-bit word (bit tricks: "hasless" and
    // "haszero" from Bit Twiddling Hacks); exact, so clean words are copied without a look.
    const auto needsEscape = [](quint64 w) {
        const quint64 control = (w - ones * 0x20) & ~w & highs;
        const quint64 q = w ^ (ones * '"');
        const quint64 b = w ^ (ones * '\\');
        return (control | ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs)) != 0;
    };
    out.reserve(out.size() + utf8.size() + 2);
    out.append('"');
    qsizetype runStart = 0;
    const qsizetype n = utf8.size();
    const char *p = utf8.data();
    qsizetype i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            quint64 w;
            memcpy(&w, p + i, 8);
            if (!needsEscape(w)) {
                i += 8;
                continue;
            }
        }
        const auto c = static_cast<unsigned char>(p[i]);
        if (c >= 0x20 && c != '"' && c != '\\') {
            ++i;
            continue;
        }
        out.append(p + runStart, i - runStart);
        runStart = i + 1;
        switch (c) {
        case '"':
            out.append("\\\"", 2);
            break;
        case '\\':
            out.append("\\\\", 2);
            break;
        case '\n':
            out.append("\\n", 2);
            break;
        case '\r':
            out.append("\\r", 2);
            break;
        case '\t':
            out.append("\\t", 2);
            break;
        case '\b':
            out.append("\\b", 2);
            break;
        case '\f':
            out.append("\\f", 2);
            break;
        default: {
            const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
            out.append(esc, 6);
        }
        }
        ++i;
    }
    out.append(p + runStart, n - runStart);
    out.append('"');
}

} // namespace Sandbox::JsonRpc
