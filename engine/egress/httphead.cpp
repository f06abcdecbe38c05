#include "httphead.h"

namespace Sandbox::Engine {

namespace Http {

namespace {

// RFC 9110 5.6.2: tchar.
bool isTokenChar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
}

} // namespace

bool isToken(QByteArrayView s)
{
    return !s.isEmpty() && std::all_of(s.begin(), s.end(), isTokenChar);
}

bool isFieldValue(QByteArrayView s)
{
    return std::all_of(s.begin(), s.end(), [](char c) {
        const auto u = quint8(c);
        return u == '\t' || (u >= 0x20 && u != 0x7f);
    });
}

QByteArray reasonPhrase(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Status";
    }
}

} // namespace Http

namespace {

using Http::isFieldValue;
using Http::isToken;

std::optional<HttpHead> parseLines(QByteArrayView head, QByteArray *error, QList<QByteArray> &lines)
{
    auto fail = [error](const char *why) -> std::optional<HttpHead> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    if (!head.endsWith("\r\n\r\n"))
        return fail("incomplete head");
    const QByteArrayView body = head.first(head.size() - 4);
    qsizetype start = 0;
    while (start <= body.size()) {
        qsizetype end = body.indexOf("\r\n", start);
        if (end < 0)
            end = body.size();
        const QByteArrayView line = body.sliced(start, end - start);
        if (line.contains('\r') || line.contains('\n') || line.contains('\0'))
            return fail("a bare CR, LF or NUL in the head");
        lines.append(line.toByteArray());
        start = end + 2;
    }
    if (lines.size() - 1 > HttpHead::MaxHeaders)
        return fail("too many header lines");
    HttpHead h;
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray &l = lines.at(i);
        if (l.startsWith(' ') || l.startsWith('\t'))
            return fail("obsolete line folding");
        const qsizetype colon = l.indexOf(':');
        if (colon <= 0 || !isToken(QByteArrayView(l).first(colon)))
            return fail("a malformed header line");
        const QByteArray value = l.mid(colon + 1).trimmed();
        if (!isFieldValue(value))
            return fail("a control character in a header value");
        h.headers.append({l.left(colon), value});
    }
    return h;
}

} // namespace

qsizetype HttpHead::headLength(QByteArrayView buffer)
{
    const qsizetype end = buffer.indexOf("\r\n\r\n");
    return end < 0 ? -1 : end + 4;
}

std::optional<HttpHead> HttpHead::parseRequest(QByteArrayView head, QByteArray *error)
{
    QList<QByteArray> lines;
    auto h = parseLines(head, error, lines);
    if (!h)
        return h;
    const QList<QByteArray> parts = lines.first().split(' ');
    if (parts.size() != 3 || !isToken(parts.at(0)) || parts.at(1).isEmpty()
        || (parts.at(2) != "HTTP/1.1" && parts.at(2) != "HTTP/1.0")
        || !std::all_of(parts.at(1).begin(), parts.at(1).end(),
                        [](char c) { return quint8(c) > 0x20 && quint8(c) < 0x7f; })) {
        if (error)
            *error = "a malformed request line";
        return std::nullopt;
    }
    h->first = parts.at(0);
    h->second = parts.at(1);
    h->third = parts.at(2);
    return h;
}

std::optional<HttpHead> HttpHead::parseResponse(QByteArrayView head, QByteArray *error)
{
    QList<QByteArray> lines;
    auto h = parseLines(head, error, lines);
    if (!h)
        return h;
    const QByteArray &status = lines.first();
    const qsizetype sp1 = status.indexOf(' ');
    const QByteArray version = status.left(sp1);
    const QByteArray rest = sp1 < 0 ? QByteArray() : status.mid(sp1 + 1);
    const QByteArray code = rest.left(3);
    if (sp1 < 0 || (version != "HTTP/1.1" && version != "HTTP/1.0") || code.size() != 3
        || !std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; })
        || (rest.size() > 3 && rest.at(3) != ' ') || !isFieldValue(rest)) {
        if (error)
            *error = "a malformed status line";
        return std::nullopt;
    }
    h->first = version;
    h->second = code;
    h->third = rest.mid(4);
    return h;
}

QByteArray HttpHead::value(QByteArrayView name) const
{
    for (const auto &[n, v] : headers) {
        if (n.compare(name, Qt::CaseInsensitive) == 0)
            return v;
    }
    return {};
}

bool HttpHead::has(QByteArrayView name) const
{
    return std::any_of(headers.begin(), headers.end(), [name](const auto &h) {
        return h.first.compare(name, Qt::CaseInsensitive) == 0;
    });
}

void HttpHead::remove(QByteArrayView name)
{
    headers.removeIf(
        [name](const auto &h) { return h.first.compare(name, Qt::CaseInsensitive) == 0; });
}

void HttpHead::set(const QByteArray &name, const QByteArray &v)
{
    remove(name);
    headers.append({name, v});
}

void HttpHead::dropHopByHop()
{
    // Every Connection header's tokens name more hop-by-hop headers.
    QList<QByteArray> listed;
    for (const auto &[n, v] : std::as_const(headers)) {
        if (n.compare("connection", Qt::CaseInsensitive) != 0)
            continue;
        for (const QByteArray &t : v.split(',')) {
            const QByteArray token = t.trimmed();
            if (!token.isEmpty())
                listed.append(token);
        }
    }
    for (const QByteArray &t : std::as_const(listed))
        remove(t);
    for (const char *n : {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                          "proxy-authenticate", "te", "trailer", "upgrade"})
        remove(n);
    headers.append({QByteArrayLiteral("Connection"), QByteArrayLiteral("close")});
}

QByteArray HttpHead::serializeRequest() const
{
    QByteArray out = first + ' ' + second + ' ' + third + "\r\n";
    for (const auto &[n, v] : headers)
        out += n + ": " + v + "\r\n";
    out += "\r\n";
    return out;
}

QByteArray HttpHead::serializeResponse() const
{
    QByteArray out = first + ' ' + second + (third.isEmpty() ? QByteArray() : ' ' + third) + "\r\n";
    for (const auto &[n, v] : headers)
        out += n + ": " + v + "\r\n";
    out += "\r\n";
    return out;
}

} // namespace Sandbox::Engine
