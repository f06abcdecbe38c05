#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QPair>

#include <optional>

namespace Sandbox::Engine {

// RFC 9110's lexical rules for heads, shared by the egress proxy and the engine's HTTP reader.
namespace Http {
// 5.6.2 token: a method or a header name.
bool isToken(QByteArrayView s);
// 5.5 field value: visible characters, spaces, tabs and obs-text; never CR, LF, NUL or DEL.
bool isFieldValue(QByteArrayView s);
// 15: the reason phrase of a status line, for the statuses the engine, the egress proxy and the
// model gateway answer with ("Status" for any other).
QByteArray reasonPhrase(int status);
} // namespace Http

// The head of an HTTP/1.x message (request or response) as the egress proxy and the model
// gateway read it from a sandbox or an upstream server: strict, bounded, no obs-fold, no bare
// CR, no NUL, header names as tokens. Bodies are never parsed here.
struct HttpHead
{
    static constexpr int MaxHeaders = 100;

    // Request: method, target, version. Response: version, status code, reason.
    QByteArray first, second, third;
    QList<QPair<QByteArray, QByteArray>> headers; // names as sent; values trimmed

    // Finds the end of a head ("\r\n\r\n") in `buffer`: the head's length including it, or -1.
    static qsizetype headLength(QByteArrayView buffer);
    // Parses a complete head (as found by headLength). nullopt with `error` on malformed input.
    static std::optional<HttpHead> parseRequest(QByteArrayView head, QByteArray *error = nullptr);
    static std::optional<HttpHead> parseResponse(QByteArrayView head, QByteArray *error = nullptr);

    QByteArray value(QByteArrayView name) const; // the first header of that name (any case)
    bool has(QByteArrayView name) const;
    void remove(QByteArrayView name);
    void set(const QByteArray &name, const QByteArray &value); // replaces every header of that name
    // Removes the hop-by-hop headers (RFC 9110 7.6.1): Connection and what it lists, Keep-Alive,
    // Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, Upgrade, and adds
    // `Connection: close` (one request per connection).
    void dropHopByHop();

    QByteArray serializeRequest() const;
    QByteArray serializeResponse() const;
};

} // namespace Sandbox::Engine
