#include "httpconnection.h"

#include "socketwrite.h"

#include <QPointer>
#include <QTcpSocket>

#include <algorithm>
#include <cctype>

#include <sys/socket.h>

namespace Sandbox::Engine {

namespace {

// Qt reads at most this much ahead of the parser; the rest waits in the kernel (back pressure).
constexpr qint64 kReadAhead = 64 * 1024;
// A chunk-size line with its extensions.
constexpr qint64 kMaxChunkLine = 1024;
// What a refused client may still push before the connection is cut.
constexpr qint64 kMaxLingerBytes = 1024 * 1024;

HttpResponse timeoutResponse(const QString &what)
{
    HttpResponse r = HttpResponse::error(Error{ErrorCode::Timeout, what, {}}, 408);
    r.close = true;
    return r;
}

HttpResponse invalid(const QString &why)
{
    HttpResponse r = HttpResponse::error(Error{ErrorCode::InvalidRequest, why, {}});
    r.close = true;
    return r;
}

HttpResponse tooLarge(qint64 limit)
{
    HttpResponse r = HttpResponse::error(
        Error{ErrorCode::PayloadTooLarge,
              QStringLiteral("the body is over the limit of %1 MiB").arg(limit / (1024 * 1024)),
              QJsonObject{{QStringLiteral("limit"), double(limit)}}});
    r.close = true;
    return r;
}

HttpResponse busy()
{
    HttpResponse r = HttpResponse::error(
        Error{ErrorCode::QuotaExceeded,
              QStringLiteral("the engine is receiving too many request bodies at once; retry"),
              {}});
    r.headers.emplaceBack("Retry-After", "1");
    r.close = true;
    return r;
}

} // namespace

HttpConnection::HttpConnection(QTcpSocket *socket, HttpHandler *handler, const HttpLimits &limits,
                               ByteBudget *budget, QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_handler(handler)
    , m_limits(limits)
    , m_budget(budget)
{
    m_socket->setParent(this);
    m_socket->setReadBufferSize(kReadAhead);
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &HttpConnection::onTimeout);
    connect(m_socket, &QTcpSocket::readyRead, this, &HttpConnection::onReadyRead);
    connect(m_socket, &QTcpSocket::bytesWritten, this, &HttpConnection::onBytesWritten);
    connect(m_socket, &QTcpSocket::disconnected, this, &HttpConnection::end);
    m_timer.start(m_limits.headTimeoutMs);
    if (m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::onReadyRead, Qt::QueuedConnection);
}

HttpConnection::~HttpConnection()
{
    m_budget->give(m_reserved);
}

void HttpConnection::end()
{
    if (m_ended)
        return;
    m_ended = true;
    m_timer.stop();
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
    }
    deleteLater();
}

void HttpConnection::onReadyRead()
{
    switch (m_state) {
    case State::Head:
        readHead();
        break;
    case State::Body:
        readBody();
        break;
    case State::Lingering:
        m_dropped += m_socket->skip(m_socket->bytesAvailable());
        if (m_dropped > kMaxLingerBytes)
            end();
        break;
    case State::Handling:
    case State::Writing:
    case State::Refusing:
        break; // a pipelined request waits, bounded by the read buffer
    }
}

void HttpConnection::readHead()
{
    // Empty lines before a request are allowed (RFC 9112 2.2).
    while (m_socket->peek(2) == "\r\n")
        m_socket->skip(2);
    const QByteArray peeked = m_socket->peek(HttpRequestHead::MaxBytes + 4);
    if (peeked.isEmpty())
        return;
    if (!m_headStarted) {
        // From its first byte a head has headTimeoutMs, however long the connection was idle.
        m_headStarted = true;
        if (m_timer.remainingTime() > m_limits.headTimeoutMs)
            m_timer.start(m_limits.headTimeoutMs);
    }
    const qsizetype end = peeked.indexOf("\r\n\r\n");
    if (end < 0) {
        if (peeked.size() > HttpRequestHead::MaxBytes)
            refuse(std::get<HttpResponse>(HttpRequestHead::parse(peeked)));
        return;
    }
    auto parsed = HttpRequestHead::parse(QByteArrayView(peeked).first(end));
    if (auto *refusal = std::get_if<HttpResponse>(&parsed))
        return refuse(std::move(*refusal));
    m_head = std::move(std::get<HttpRequestHead>(parsed));
    m_headStarted = false;
    m_keyId.clear();
    if (auto refusal = m_handler->admit(m_head, &m_keyId)) {
        refusal->close = true;
        return refuse(std::move(*refusal));
    }
    if (m_head.isWebSocketUpgrade()) {
        // The WebSocket server reads the head itself; from here on the socket is the handler's.
        m_ended = true;
        m_timer.stop();
        QTcpSocket *socket = m_socket;
        m_socket = nullptr;
        socket->disconnect(this);
        socket->setReadBufferSize(0);
        socket->setParent(parent());
        m_handler->upgrade(socket, m_head, m_keyId);
        deleteLater();
        return;
    }
    m_socket->skip(end + 4);
    m_keepAlive = m_head.keepAlive();
    m_body.clear();
    m_chunks.clear();
    m_bodySize = 0;
    m_chunked = m_head.chunked();
    m_chunk = Chunk::Size;
    m_trailerBytes = 0;
    m_remaining = m_chunked ? 0 : m_head.contentLength();
    if (m_remaining > m_limits.maxBodyBytes)
        return refuse(tooLarge(m_limits.maxBodyBytes));
    if (!m_budget->take(m_remaining))
        return refuse(busy());
    m_reserved = m_remaining;
    m_body.reserve(m_remaining);
    if ((m_chunked || m_remaining > 0)
        && m_head.header("expect").compare("100-continue", Qt::CaseInsensitive) == 0)
        m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    m_state = State::Body;
    m_bodyDeadline.setRemainingTime(m_limits.bodyTimeoutMs);
    armBodyTimer();
    readBody();
}

void HttpConnection::armBodyTimer()
{
    m_timer.start(int(qMin<qint64>(m_limits.bodyIdleTimeoutMs, m_bodyDeadline.remainingTime())));
}

void HttpConnection::readBody()
{
    bool progress = false;
    while (m_state == State::Body) {
        if (m_chunked) {
            const qint64 before = m_socket->bytesAvailable();
            if (!readChunked())
                break;
            progress = progress || m_socket->bytesAvailable() != before;
            continue;
        }
        if (m_remaining == 0)
            return dispatch();
        const QByteArray data = m_socket->read(qMin(m_remaining, kReadAhead));
        if (data.isEmpty())
            break;
        m_body += data;
        m_remaining -= data.size();
        progress = true;
    }
    if (m_state == State::Body && progress)
        armBodyTimer();
}

// One step of chunked decoding (RFC 9112 7.1); false when it needs more bytes or ended the state.
bool HttpConnection::readChunked()
{
    if (m_chunk == Chunk::Data) {
        QByteArray data = m_socket->read(qMin(m_chunkRemaining, kReadAhead));
        if (data.isEmpty())
            return false;
        m_chunkRemaining -= data.size();
        m_bodySize += data.size();
        keepBody(std::move(data));
        if (m_chunkRemaining == 0)
            m_chunk = Chunk::DataEnd;
        return true;
    }
    const QByteArray peeked = m_socket->peek(kMaxChunkLine);
    const qsizetype newline = peeked.indexOf('\n');
    if (newline < 0) {
        if (peeked.size() >= kMaxChunkLine) {
            refuse(invalid(QStringLiteral("a chunk-size line is over %1 bytes").arg(kMaxChunkLine)));
            return false;
        }
        return false;
    }
    QByteArray line = m_socket->read(newline + 1);
    if (!line.endsWith("\r\n")) {
        refuse(invalid(QStringLiteral("a line of the chunked body is not ended by CRLF")));
        return false;
    }
    line.chop(2);
    switch (m_chunk) {
    case Chunk::Size: {
        const qsizetype semicolon = line.indexOf(';');
        const QByteArray digits = (semicolon < 0 ? line : line.left(semicolon)).trimmed();
        bool ok = digits.size() <= 15 && !digits.isEmpty()
                  && std::all_of(digits.begin(), digits.end(),
                                 [](char c) { return std::isxdigit(uchar(c)); });
        const qint64 size = ok ? digits.toLongLong(&ok, 16) : 0;
        if (!ok) {
            refuse(invalid(QStringLiteral("a chunk size is not a hexadecimal number")));
            return false;
        }
        if (size > m_limits.maxBodyBytes - m_bodySize) {
            refuse(tooLarge(m_limits.maxBodyBytes));
            return false;
        }
        if (!m_budget->take(size)) {
            refuse(busy());
            return false;
        }
        m_reserved += size;
        m_chunkRemaining = size;
        m_chunk = size == 0 ? Chunk::Trailer : Chunk::Data;
        return true;
    }
    case Chunk::DataEnd:
        if (!line.isEmpty()) {
            refuse(invalid(QStringLiteral("a chunk is longer than its size says")));
            return false;
        }
        m_chunk = Chunk::Size;
        return true;
    case Chunk::Trailer:
        if (line.isEmpty()) {
            dispatch();
            return false;
        }
        m_trailerBytes += line.size() + 2;
        if (m_trailerBytes > HttpRequestHead::MaxBytes) {
            refuse(invalid(
                QStringLiteral("the trailer is over %1 bytes").arg(HttpRequestHead::MaxBytes)));
            return false;
        }
        return true; // trailer fields are read and ignored
    case Chunk::Data:
        break;
    }
    return false;
}

void HttpConnection::keepBody(QByteArray data)
{
    // Whole reads are kept as they are; smaller ones fill blocks of kReadAhead in turn. A read
    // keeps the array it was read into, whatever it holds: a body trickled a KiB at a time held
    // 64 KiB for each KiB it sent (a key holder's 4 MiB, 37 MiB of the engine).
    if (data.size() == kReadAhead && (m_chunks.isEmpty() || m_chunks.last().size() == kReadAhead)) {
        m_chunks.append(std::move(data));
        return;
    }
    for (qsizetype at = 0; at < data.size();) {
        if (m_chunks.isEmpty() || m_chunks.last().size() >= kReadAhead) {
            m_chunks.append(QByteArray());
            m_chunks.last().reserve(kReadAhead);
        }
        QByteArray &block = m_chunks.last();
        const qsizetype n = qMin(kReadAhead - block.size(), data.size() - at);
        block.append(data.constData() + at, n);
        at += n;
    }
}

void HttpConnection::dispatch()
{
    m_state = State::Handling;
    m_timer.stop();
    QByteArray body = std::exchange(m_body, {});
    if (m_chunked) {
        body.reserve(m_bodySize);
        for (const QByteArray &chunk : std::as_const(m_chunks))
            body += chunk;
        m_chunks.clear();
    }
    QPointer<HttpConnection> self(this);
    m_handler->handle(m_head, body, m_keyId, this, [self](HttpResponse response) {
        if (self)
            self->respond(std::move(response));
    });
    // The handler has made what it needs of the body by now.
    if (self) {
        m_budget->give(m_reserved);
        m_reserved = 0;
    }
}

void HttpConnection::respond(HttpResponse response)
{
    if (m_state != State::Handling || !m_socket)
        return;
    m_keepAlive = m_keepAlive && !response.close;
    m_state = State::Writing;
    // Straight to the socket when it takes the whole answer, as /rpc answers go (writeNow): not
    // through the socket's buffer, which writes on the next turn of the event loop after a wait
    // for writability. What it took at once emits no bytesWritten(): the answer is done here.
    writeNow(m_socket, response.serialize(m_keepAlive, m_limits.keepAliveTimeoutMs / 1000));
    if (m_socket->bytesToWrite() > 0)
        m_timer.start(m_limits.writeIdleTimeoutMs); // the rest leaves as the client reads
    else
        answered(false);
}

void HttpConnection::onBytesWritten()
{
    if (m_socket->bytesToWrite() > 0) {
        if (m_state == State::Writing || m_state == State::Refusing)
            m_timer.start(m_limits.writeIdleTimeoutMs);
        return;
    }
    answered(true);
}

void HttpConnection::answered(bool readNow)
{
    if (m_state == State::Refusing)
        return linger();
    if (m_state != State::Writing)
        return;
    if (!m_keepAlive)
        return linger();
    m_state = State::Head;
    m_headStarted = false;
    m_timer.start(m_limits.keepAliveTimeoutMs);
    // A pipelined request may be waiting: read now, or — inside respond(), which may run inside
    // dispatch() for a handler that answers at once — on the next turn, once dispatch() is done.
    if (readNow)
        readHead();
    else if (m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::onReadyRead, Qt::QueuedConnection);
}

void HttpConnection::refuse(HttpResponse response)
{
    // The body (if any) is never read: answer, then close.
    m_budget->give(m_reserved);
    m_reserved = 0;
    m_body.clear();
    m_chunks.clear();
    m_keepAlive = false;
    m_state = State::Refusing;
    m_socket->write(response.serialize(false, 0));
    m_timer.start(m_limits.writeIdleTimeoutMs);
}

void HttpConnection::linger()
{
    // Closing at once with unread bytes would reset the connection, and the client could lose the
    // answer. Shut the write side instead, drop what still comes for a moment, then close.
    m_state = State::Lingering;
    ::shutdown(int(m_socket->socketDescriptor()), SHUT_WR);
    m_timer.start(m_limits.lingerMs);
    onReadyRead();
}

void HttpConnection::onTimeout()
{
    switch (m_state) {
    case State::Head:
        if (m_headStarted)
            return refuse(
                timeoutResponse(QStringLiteral("the request head did not arrive within %1 s")
                                    .arg(m_limits.headTimeoutMs / 1000)));
        return end(); // an idle connection: closed without a word
    case State::Body:
        return refuse(timeoutResponse(m_bodyDeadline.hasExpired()
                                          ? QStringLiteral("the body did not arrive within %1 s")
                                                .arg(m_limits.bodyTimeoutMs / 1000)
                                          : QStringLiteral("the body stalled for %1 s")
                                                .arg(m_limits.bodyIdleTimeoutMs / 1000)));
    case State::Writing:
    case State::Refusing:
    case State::Lingering:
        return end(); // the client reads nothing, or has had its moment
    case State::Handling:
        return;
    }
}

} // namespace Sandbox::Engine
