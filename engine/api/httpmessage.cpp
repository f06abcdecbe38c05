#include "httpmessage.h"

#include "egress/httphead.h"

#include <QJsonDocument>
#include <QUrl>

namespace Sandbox::Engine {

namespace {

using Http::isFieldValue;
using Http::isToken;

HttpResponse badRequest(const QString &why, int status = 400)
{
    HttpResponse r = HttpResponse::error(Error{ErrorCode::InvalidRequest, why, {}}, status);
    r.close = true;
    return r;
}

} // namespace

HttpResponse HttpResponse::error(const Error &e, int status)
{
    HttpResponse r;
    r.status = status ? status : httpStatusFor(e.code);
    r.body = QJsonDocument(QJsonObject{{QStringLiteral("error"), e.toJson()}})
                 .toJson(QJsonDocument::Compact);
    if (e.code == ErrorCode::Unauthorized)
        r.headers.emplaceBack("WWW-Authenticate", "Bearer");
    return r;
}

QByteArray HttpResponse::serialize(bool keepAlive, int keepAliveSeconds) const
{
    QByteArray out = "HTTP/1.1 " + QByteArray::number(status) + ' ' + Http::reasonPhrase(status)
                     + "\r\nContent-Type: " + contentType
                     + "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
    for (const auto &[name, value] : headers)
        out += name + ": " + value + "\r\n";
    if (keepAlive)
        out += "Keep-Alive: timeout=" + QByteArray::number(keepAliveSeconds) + "\r\n";
    else
        out += "Connection: close\r\n";
    out += "\r\n";
    out += body;
    return out;
}

QByteArray HttpRequestHead::header(QByteArrayView lowerName) const
{
    for (const auto &[name, value] : headers) {
        if (name == lowerName)
            return value;
    }
    return {};
}

int HttpRequestHead::headerCount(QByteArrayView lowerName) const
{
    return int(std::count_if(headers.begin(), headers.end(),
                             [lowerName](const auto &h) { return h.first == lowerName; }));
}

QString HttpRequestHead::path() const
{
    const qsizetype q = target.indexOf('?');
    return QUrl::fromPercentEncoding(q < 0 ? target : target.left(q));
}

QUrlQuery HttpRequestHead::query() const
{
    const qsizetype q = target.indexOf('?');
    return q < 0 ? QUrlQuery() : QUrlQuery(QString::fromLatin1(target.mid(q + 1)));
}

bool HttpRequestHead::isWebSocketUpgrade() const
{
    return method == "GET" && header("upgrade").compare("websocket", Qt::CaseInsensitive) == 0;
}

bool HttpRequestHead::keepAlive() const
{
    const QByteArray connection = header("connection").toLower();
    const auto has = [&connection](QByteArrayView option) {
        for (const QByteArray &o : connection.split(','))
            if (o.trimmed() == option)
                return true;
        return false;
    };
    if (minorVersion == 0)
        return has("keep-alive");
    return !has("close");
}

bool HttpRequestHead::chunked() const
{
    return !header("transfer-encoding").isEmpty();
}

qint64 HttpRequestHead::contentLength() const
{
    return header("content-length").toLongLong();
}

std::variant<HttpRequestHead, HttpResponse> HttpRequestHead::parse(QByteArrayView bytes)
{
    if (bytes.size() > MaxBytes) {
        HttpResponse r
            = badRequest(QStringLiteral("the request head is over %1 bytes").arg(MaxBytes), 431);
        return r;
    }
    HttpRequestHead head;
    qsizetype lineStart = 0;
    bool first = true;
    while (lineStart < bytes.size()) {
        const qsizetype crlf = bytes.indexOf("\r\n", lineStart);
        const qsizetype end = crlf < 0 ? bytes.size() : crlf;
        const QByteArrayView line = bytes.sliced(lineStart, end - lineStart);
        lineStart = end + 2;
        // Every line ends in CRLF: a bare CR or LF is how requests get smuggled.
        if (line.contains('\r') || line.contains('\n'))
            return badRequest(QStringLiteral("the request head has a line not ended by CRLF"));
        if (first) {
            first = false;
            const qsizetype sp1 = line.indexOf(' ');
            const qsizetype sp2 = sp1 < 0 ? -1 : line.indexOf(' ', sp1 + 1);
            if (sp1 <= 0 || sp2 < 0 || line.indexOf(' ', sp2 + 1) >= 0)
                return badRequest(QStringLiteral("the request line is not METHOD TARGET VERSION"));
            head.method = line.first(sp1).toByteArray();
            head.target = line.sliced(sp1 + 1, sp2 - sp1 - 1).toByteArray();
            const QByteArrayView version = line.sliced(sp2 + 1);
            if (!isToken(head.method))
                return badRequest(QStringLiteral("the method is not a token"));
            if (!head.target.startsWith('/')
                || !std::all_of(head.target.begin(), head.target.end(),
                                [](char c) { return uchar(c) > 0x20 && uchar(c) < 0x7f; }))
                return badRequest(QStringLiteral("the target is not an absolute path"));
            if (version == "HTTP/1.1")
                head.minorVersion = 1;
            else if (version == "HTTP/1.0")
                head.minorVersion = 0;
            else
                return badRequest(QStringLiteral("only HTTP/1.1 is spoken here"), 505);
            continue;
        }
        const qsizetype colon = line.indexOf(':');
        // No whitespace before the colon, no obsolete line folding (RFC 9112 5.1, 5.2).
        if (colon <= 0 || !isToken(line.first(colon)))
            return badRequest(QStringLiteral("a header line is malformed"));
        const QByteArrayView value = line.sliced(colon + 1).trimmed();
        if (!isFieldValue(value))
            return badRequest(QStringLiteral("a header value holds a control character"));
        if (head.headers.size() >= MaxHeaders)
            return badRequest(QStringLiteral("the request has over %1 headers").arg(MaxHeaders),
                              431);
        head.headers.append({line.first(colon).toByteArray().toLower(), value.toByteArray()});
    }
    if (first)
        return badRequest(QStringLiteral("the request line is missing"));

    // How the body is framed: exactly one of them, and nothing ambiguous (RFC 9112 6).
    const int lengths = head.headerCount("content-length");
    const int encodings = head.headerCount("transfer-encoding");
    if (lengths > 0 && encodings > 0)
        return badRequest(QStringLiteral("Content-Length and Transfer-Encoding together"));
    if (lengths > 1)
        return badRequest(QStringLiteral("more than one Content-Length"));
    if (lengths == 1) {
        const QByteArray length = head.header("content-length");
        if (length.isEmpty() || length.size() > 18
            || !std::all_of(length.begin(), length.end(),
                            [](char c) { return c >= '0' && c <= '9'; }))
            return badRequest(QStringLiteral("Content-Length is not a number"));
    }
    if (encodings > 1
        || (encodings == 1 && head.header("transfer-encoding").toLower() != "chunked")) {
        HttpResponse r
            = HttpResponse::error(Error{ErrorCode::NotImplemented,
                                        QStringLiteral(
                                            "only Transfer-Encoding: chunked is understood"),
                                        {}},
                                  501);
        r.close = true;
        return r;
    }
    return head;
}

} // namespace Sandbox::Engine
