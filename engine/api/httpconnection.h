#pragma once

#include "bytebudget.h"
#include "httpmessage.h"

#include <QDeadlineTimer>
#include <QObject>
#include <QTimer>

#include <functional>
#include <optional>

class QTcpSocket;

namespace Sandbox::Engine {

// Every time and size one HTTP connection is held to (docs/protocol.md 2.2).
struct HttpLimits
{
    int headTimeoutMs = 10000;      // a request head, from its first byte (or the connection's)
    int keepAliveTimeoutMs = 15000; // between requests on a kept-alive connection
    int bodyIdleTimeoutMs = 10000;  // between two bytes of a body
    int bodyTimeoutMs = 120000;     // a whole body
    int writeIdleTimeoutMs = 30000; // a client that reads nothing of its answer
    int lingerMs = 2000;            // reading and dropping what still comes after a refusal
    qint64 maxBodyBytes = 16 * 1024 * 1024 + 64 * 1024;
    qint64 maxBodyBytesInFlight = 256 * 1024 * 1024; // request bodies held at once, in total
};

// What an HTTP connection asks of the API.
class HttpHandler
{
public:
    using Respond = std::function<void(HttpResponse)>;

    virtual ~HttpHandler() = default;
    // Decides a request from its head alone, before any byte of its body is read: a response
    // refuses it (its body is never read); nothing lets it in. `keyId` is the key it proved.
    virtual std::optional<HttpResponse> admit(const HttpRequestHead &head, QString *keyId) = 0;
    // A whole request that admit() let in; `respond` once, now or later. `guard` lives as long as
    // the connection.
    virtual void handle(const HttpRequestHead &head, const QByteArray &body, const QString &keyId,
                        QObject *guard, Respond respond)
        = 0;
    // A WebSocket upgrade admit() let in: the socket is the handler's now, with the head unread.
    virtual void upgrade(QTcpSocket *socket, const HttpRequestHead &head, const QString &keyId) = 0;
};

// One client connection speaking HTTP/1.1, one request at a time: the head is read and decided
// first, then the body (Content-Length or chunked), bounded in size and time, then the answer.
// Deletes itself (and the socket) when the connection ends.
class HttpConnection final : public QObject
{
    Q_OBJECT

public:
    HttpConnection(QTcpSocket *socket, HttpHandler *handler, const HttpLimits &limits,
                   ByteBudget *budget, QObject *parent);
    ~HttpConnection() override;

private:
    enum class State {
        Head,      // waiting for (the rest of) a request head
        Body,      // reading a body
        Handling,  // the handler has the request
        Writing,   // the answer is going out
        Refusing,  // a refusal is going out; then Lingering
        Lingering, // write side shut, reading and dropping for a moment, then closed
    };
    enum class Chunk { Size, Data, DataEnd, Trailer };

    void onReadyRead();
    void onBytesWritten();
    // The answer has left: lingers, or waits for the next request (readNow: reads it at once).
    void answered(bool readNow);
    void onTimeout();
    void readHead();
    void readBody();
    bool readChunked();
    void keepBody(QByteArray data); // a piece of a chunked body's data
    void dispatch();
    void respond(HttpResponse response);
    void refuse(HttpResponse response);
    void linger();
    void end();
    void armBodyTimer();

    QTcpSocket *m_socket;   // owned (a child) until an upgrade hands it over
    HttpHandler *m_handler; // not owned
    HttpLimits m_limits;
    ByteBudget *m_budget; // not owned
    QTimer m_timer;
    State m_state = State::Head;
    bool m_headStarted = false;
    bool m_keepAlive = true;
    bool m_ended = false;

    HttpRequestHead m_head;
    QString m_keyId;
    QByteArray m_body;       // a Content-Length body, allocated once
    QByteArrayList m_chunks; // a chunked body, joined once it is whole
    qint64 m_bodySize = 0;
    qint64 m_reserved = 0;  // of the body budget
    qint64 m_remaining = 0; // Content-Length bytes still to come
    bool m_chunked = false;
    Chunk m_chunk = Chunk::Size;
    qint64 m_chunkRemaining = 0;
    qint64 m_trailerBytes = 0;
    QDeadlineTimer m_bodyDeadline;
    qint64 m_dropped = 0; // bytes read and dropped while lingering
};

} // namespace Sandbox::Engine
