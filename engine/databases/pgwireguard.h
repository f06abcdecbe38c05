#pragma once

#include "databasebackend.h"
#include "protocol/result.h"

#include <QByteArray>
#include <QObject>
#include <QString>

#include <functional>
#include <memory>

class QSocketNotifier;

namespace Sandbox::Engine {

// The messages of a PostgreSQL server's byte stream, read as they come: each message's header
// (a type byte and a 4-byte length that counts itself) is checked before a byte of its body is
// let through. Pure: no I/O.
class PgServerFrames
{
public:
    // The longest message let through: a row of PageLimits::kMaxRowBytes with the DataRow's own
    // framing (a 4-byte length per column, 1,664 columns at most) fits well within.
    static constexpr qint64 kMaxMessageBytes = PageLimits::kMaxRowBytes + 64 * 1024;

    enum class Verdict { Ok, TooLong, Malformed };

    // Reads `n` more bytes of the stream. Once a header is refused, every later call answers the
    // same verdict.
    Verdict feed(const char *data, qsizetype n);
    Verdict verdict() const { return m_verdict; }
    // The refused message's type byte and its length as its header gave it.
    char refusedType() const { return m_refusedType; }
    qint64 refusedLength() const { return m_refusedLength; }

private:
    unsigned char m_header[5] = {};
    int m_have = 0;        // bytes of the next header read so far
    qint64 m_bodyLeft = 0; // bytes of the current message's body still to come
    Verdict m_verdict = Verdict::Ok;
    char m_refusedType = 0;
    qint64 m_refusedLength = 0;
};

// Stands between libpq and a PostgreSQL server in a sandbox. libpq keeps the socket number it
// connected, but that number is made one end of a socket pair; the guard holds the other end and
// the server's socket, and passes the server's bytes on only as far as PgServerFrames lets them:
// libpq sizes its buffer from a message's length word and reads the message whole, so without the
// guard one row (or error) the server sends could take the engine's memory up to 1 GB, twice
// (libpq's buffer, then its result), for every query in flight. A message over the bound ends the
// connection before libpq sees a byte of it.
//
// No turn of the event loop is added to a query: what libpq writes is passed to the server from
// pumpOut(), which the connection calls after each call of libpq that writes (its flush() and its
// connect's polls: libpq writes nowhere else), and the server's bytes are passed to libpq as they
// come, `arrived` then calling the connection at once. Both ways go at most one chunk at a time,
// and stop while the other side is full (back-pressure).
class PgWireGuard final : public QObject
{
    Q_OBJECT

public:
    explicit PgWireGuard(QObject *parent = nullptr);
    ~PgWireGuard() override;

    // Takes libpq's socket `fd`, connected to the server and not yet read from or written to by
    // libpq: keeps the connection for itself and puts a socket pair's end in its place (dup3, the
    // same number), so that libpq talks to the guard from now on.
    Result<bool> interpose(int fd);

    // Bytes for libpq have been passed on: its socket is readable.
    std::function<void()> arrived;
    // The server sent what the guard does not let through; the connection is of no more use (the
    // guard passes nothing more either way). `row` when it was a row (DataRow).
    std::function<void(const QString &why, bool row)> refused;

    // Passes on to the server what libpq has written so far.
    void pumpOut();
    // Pauses or resumes reading from the server (back-pressure for cursors).
    void setReading(bool on);
    // Passes nothing more either way (the connection failed).
    void stop();
    // The server's bytes passed on so far (each message's header checked).
    qint64 bytesIn() const { return m_bytesIn; }

private:
    void pumpIn();
    void writeToLibpq();
    void writeToServer();
    void serverGone();
    void updateNotifiers();

    int m_server = -1; // the connection to the server (owned)
    int m_relay = -1;  // the guard's end of the pair; libpq has the other (owned)
    PgServerFrames m_frames;
    QByteArray m_in;  // the server's bytes libpq's side had no room for yet
    QByteArray m_out; // libpq's bytes the server had no room for yet
    std::unique_ptr<char[]> m_chunk;
    qint64 m_bytesIn = 0;
    bool m_reading = true;
    bool m_serverEof = false;
    bool m_stopped = false;
    QSocketNotifier *m_serverIn = nullptr;  // owned (child)
    QSocketNotifier *m_serverOut = nullptr; // owned (child)
    QSocketNotifier *m_relayOut = nullptr;  // owned (child): room again on libpq's side
};

} // namespace Sandbox::Engine
