#include "pgwireguard.h"

#include <QSocketNotifier>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace Sandbox::Engine {

namespace {

constexpr qsizetype kChunk = 64 * 1024; // read from either side at a time

// send() without SIGPIPE: the bytes written, 0 when the other side is full, -1 when it is gone.
ssize_t sendSome(int fd, const char *data, qsizetype n)
{
    for (;;) {
        const ssize_t w = ::send(fd, data, size_t(n), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0)
            return w;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

// recv(): the bytes read, 0 at the end of the stream, -1 with errno (EAGAIN when there are none).
ssize_t receiveSome(int fd, char *data, qsizetype n)
{
    for (;;) {
        const ssize_t r = ::recv(fd, data, size_t(n), MSG_DONTWAIT);
        if (r >= 0 || errno != EINTR)
            return r;
    }
}

QString typeName(char type)
{
    const auto c = static_cast<unsigned char>(type);
    return c >= 0x20 && c < 0x7f ? QStringLiteral("'%1'").arg(QLatin1Char(type))
                                 : QStringLiteral("0x%1").arg(uint(c), 2, 16, QLatin1Char('0'));
}

} // namespace

PgServerFrames::Verdict PgServerFrames::feed(const char *data, qsizetype n)
{
    while (n > 0 && m_verdict == Verdict::Ok) {
        if (m_bodyLeft > 0) {
            const qint64 take = std::min<qint64>(m_bodyLeft, n);
            m_bodyLeft -= take;
            data += take;
            n -= qsizetype(take);
            continue;
        }
        m_header[m_have++] = static_cast<unsigned char>(*data++);
        --n;
        if (m_have < int(sizeof m_header))
            continue;
        m_have = 0;
        // The length counts its own 4 bytes; libpq takes it as a signed 32-bit number.
        const qint64 length = qint32((quint32(m_header[1]) << 24) | (quint32(m_header[2]) << 16)
                                     | (quint32(m_header[3]) << 8) | quint32(m_header[4]));
        if (length < 4 || length > kMaxMessageBytes) {
            m_verdict = length < 4 ? Verdict::Malformed : Verdict::TooLong;
            m_refusedType = char(m_header[0]);
            m_refusedLength = length;
            break;
        }
        m_bodyLeft = length - 4;
    }
    return m_verdict;
}

PgWireGuard::PgWireGuard(QObject *parent)
    : QObject(parent)
{}

PgWireGuard::~PgWireGuard()
{
    delete m_serverIn;
    delete m_serverOut;
    delete m_relayOut;
    if (m_server >= 0)
        ::close(m_server);
    if (m_relay >= 0)
        ::close(m_relay);
}

Result<bool> PgWireGuard::interpose(int fd)
{
    const auto failed = [](const char *what) {
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot guard the connection to the database server (%1): %2")
                         .arg(QLatin1String(what), QString::fromLocal8Bit(strerror(errno))),
                     {}};
    };
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0)
        return failed("socketpair");
    m_relay = pair[1];
    m_server = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (m_server < 0) {
        ::close(pair[0]);
        return failed("dup");
    }
    // libpq's number now names its end of the pair; the server's connection is the guard's alone.
    const int flags = ::fcntl(fd, F_GETFD);
    if (::dup3(pair[0], fd, (flags & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0) < 0) {
        ::close(pair[0]);
        return failed("dup3");
    }
    ::close(pair[0]);
    m_chunk = std::make_unique<char[]>(size_t(kChunk));
    m_serverIn = new QSocketNotifier(m_server, QSocketNotifier::Read);
    m_serverOut = new QSocketNotifier(m_server, QSocketNotifier::Write);
    m_relayOut = new QSocketNotifier(m_relay, QSocketNotifier::Write);
    connect(m_serverIn, &QSocketNotifier::activated, this, [this] { pumpIn(); });
    connect(m_serverOut, &QSocketNotifier::activated, this, [this] { pumpOut(); });
    connect(m_relayOut, &QSocketNotifier::activated, this, [this] { writeToLibpq(); });
    updateNotifiers();
    return true;
}

void PgWireGuard::setReading(bool on)
{
    m_reading = on;
    updateNotifiers();
}

void PgWireGuard::stop()
{
    m_stopped = true;
    updateNotifiers();
}

void PgWireGuard::updateNotifiers()
{
    if (!m_serverIn)
        return;
    m_serverIn->setEnabled(!m_stopped && m_reading && !m_serverEof && m_in.isEmpty());
    m_relayOut->setEnabled(!m_stopped && !m_in.isEmpty());
    m_serverOut->setEnabled(!m_stopped && !m_out.isEmpty());
}

void PgWireGuard::pumpIn()
{
    if (m_stopped || !m_in.isEmpty() || m_serverEof)
        return;
    const ssize_t n = receiveSome(m_server, m_chunk.get(), kChunk);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0)
        return serverGone();
    if (m_frames.feed(m_chunk.get(), n) != PgServerFrames::Verdict::Ok) {
        const QString type = typeName(m_frames.refusedType());
        const qint64 length = m_frames.refusedLength();
        const bool row = m_frames.refusedType() == 'D';
        QString why;
        if (m_frames.verdict() == PgServerFrames::Verdict::Malformed)
            why = QStringLiteral("the database server sent a message (%1) with a length of %2: "
                                 "not PostgreSQL's protocol")
                      .arg(type)
                      .arg(length);
        else if (row)
            why = QStringLiteral("the database server sent a row of %1 bytes: over 16 MiB, the "
                                 "most one row may take")
                      .arg(length);
        else
            why = QStringLiteral("the database server sent a message (%1) of %2 bytes: over the "
                                 "%3 bytes one message may take")
                      .arg(type)
                      .arg(length)
                      .arg(PgServerFrames::kMaxMessageBytes);
        stop();
        // libpq reads the end of the stream, not the rest of what was sent.
        ::shutdown(m_relay, SHUT_RDWR);
        if (refused)
            refused(why, row);
        return;
    }
    m_bytesIn += n;
    const ssize_t w = sendSome(m_relay, m_chunk.get(), n);
    if (w < 0) // libpq's end is closed: the connection is being finished
        return stop();
    if (w < n)
        m_in = QByteArray(m_chunk.get() + w, n - w);
    updateNotifiers();
    if (w > 0 && arrived)
        arrived();
}

void PgWireGuard::writeToLibpq()
{
    if (m_stopped)
        return;
    const ssize_t w = sendSome(m_relay, m_in.constData(), m_in.size());
    if (w < 0)
        return stop();
    m_in.remove(0, w);
    if (m_in.isEmpty() && m_serverEof)
        ::shutdown(m_relay, SHUT_WR);
    updateNotifiers();
    if (w > 0 && arrived)
        arrived();
}

void PgWireGuard::serverGone()
{
    // libpq reads what came before the end, then the end itself.
    m_serverEof = true;
    if (m_in.isEmpty())
        ::shutdown(m_relay, SHUT_WR);
    updateNotifiers();
    if (arrived)
        arrived();
}

void PgWireGuard::writeToServer()
{
    const ssize_t w = sendSome(m_server, m_out.constData(), m_out.size());
    if (w < 0) {
        // The server is gone: what libpq sends is dropped, and it hears of the end when it reads.
        m_out.clear();
        return;
    }
    m_out.remove(0, w);
}

void PgWireGuard::pumpOut()
{
    if (m_stopped)
        return;
    if (!m_out.isEmpty())
        writeToServer();
    // While the server has not taken the last chunk, libpq's bytes wait in its side of the pair.
    while (m_out.isEmpty()) {
        const ssize_t n = receiveSome(m_relay, m_chunk.get(), kChunk);
        if (n <= 0)
            break; // none (EAGAIN), or libpq's end closed
        const ssize_t w = sendSome(m_server, m_chunk.get(), n);
        if (w < 0)
            continue; // the server is gone: dropped, as above
        if (w < n)
            m_out = QByteArray(m_chunk.get() + w, n - w);
        if (n < kChunk)
            break;
    }
    updateNotifiers();
}

} // namespace Sandbox::Engine
