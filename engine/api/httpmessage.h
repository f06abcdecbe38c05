#pragma once

#include "protocol/error.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QUrlQuery>

#include <utility>
#include <variant>

namespace Sandbox::Engine {

using HttpHeaders = QList<std::pair<QByteArray, QByteArray>>;

// An answer to an HTTP request, written by HttpConnection.
struct HttpResponse
{
    int status = 200;
    QByteArray body;
    QByteArray contentType = "application/json";
    HttpHeaders headers; // more headers (WWW-Authenticate, Retry-After, ...)
    bool close = false;  // close the connection after this response

    // {"error":{...}} with the status of its code (docs/protocol.md 2.1), or `status` if given.
    static HttpResponse error(const Error &e, int status = 0);
    // The bytes on the wire: status line, headers (with Content-Length) and body.
    QByteArray serialize(bool keepAlive, int keepAliveSeconds) const;
};

// The head of an HTTP/1.1 request (RFC 9112), parsed strictly: everything the engine decides
// before it reads a body byte comes from here.
struct HttpRequestHead
{
    static constexpr qsizetype MaxBytes = 16 * 1024;
    static constexpr int MaxHeaders = 100;

    QByteArray method; // "GET"
    QByteArray target; // "/api/agents?x=1" (origin form only)
    int minorVersion = 1;
    HttpHeaders headers; // names lower-case, values trimmed

    // The first value of a header (name in lower case), or empty.
    QByteArray header(QByteArrayView lowerName) const;
    int headerCount(QByteArrayView lowerName) const;
    QString path() const;
    QUrlQuery query() const;
    bool isWebSocketUpgrade() const;
    bool keepAlive() const;

    // How the body is framed, from Content-Length / Transfer-Encoding (checked by parse()).
    bool chunked() const;
    qint64 contentLength() const; // 0 when there is none

    // `bytes` is the head without its final empty line. A malformed head answers the response
    // that refuses it (400, 431, 501, 505).
    static std::variant<HttpRequestHead, HttpResponse> parse(QByteArrayView bytes);
};

} // namespace Sandbox::Engine
