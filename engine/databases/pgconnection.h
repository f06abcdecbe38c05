#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPair>

#include <atomic>
#include <functional>
#include <memory>
#include <sys/types.h>

struct pg_conn;
struct pg_result;

class QSocketNotifier;

namespace Sandbox::Engine {

class PgWireGuard;

// One libpq connection driven by the engine's event loop: non-blocking connect, send and read
// (QSocketNotifier on the libpq socket), never a blocking call on the engine's thread. libpq talks
// to the server through a PgWireGuard, which lets no message over its bound reach libpq. Reading
// can be paused: the server then blocks on a full socket, which bounds what a big result costs
// here.
class PgConnection final : public QObject
{
    Q_OBJECT

public:
    using Params = QList<QPair<QByteArray, QByteArray>>; // libpq keywords and values
    explicit PgConnection(QObject *parent = nullptr);
    ~PgConnection() override;

    // Connects; `done` runs once.
    void open(const Params &params, std::function<void(Result<bool>)> done);

    struct Sink
    {
        // Each PGresult the query produces (single rows in single-row mode, then the final
        // status). The connection frees it after the call.
        std::function<void(pg_result *)> result;
        // The query is over (libpq returned no more results).
        std::function<void()> finished;
        // The connection broke while the query ran: neither more results nor finished() follow.
        std::function<void(const QString &why)> failed;
    };

    // Sends a query: with params (extended protocol, one statement) or, when `simple`, the
    // simple protocol (scripts, no params). `binary` marks params given as raw bytes.
    bool send(const QByteArray &sql, const QList<QByteArray> &values, const QList<bool> &isNull,
              const QList<bool> &binary, bool simple, bool singleRow, Sink sink);
    // Sends one statement with params as send() does (extended protocol), on a connection in no
    // transaction block. A statement this connection ran before, by the same text and count of
    // params, runs as the server prepared it then, so that the server parses and plans it no
    // more: a text seen once is prepared on its second run (a round trip more, once), up to
    // kKeptStatements per connection (the first that ran twice; the rest run as send() runs them).
    // A kept statement the server lost (DEALLOCATE or DISCARD by the caller's SQL) or can no longer
    // run as prepared (its result's columns changed) runs again unprepared: it failed before
    // anything of it ran.
    bool sendKept(const QByteArray &sql, const QList<QByteArray> &values, const QList<bool> &isNull,
                  const QList<bool> &binary, bool singleRow, Sink sink);
    static constexpr int kKeptStatements = 16;
    static constexpr int kSeenStatements = 32;
    static constexpr qsizetype kMaxKeptText = 2048; // longer ones run as send() runs them
    // Pauses or resumes delivery of results (back-pressure for cursors).
    void setReading(bool on);
    bool isReading() const { return m_reading; }
    // Asks the server to cancel the running query (PQcancel runs on a thread of its own).
    void cancel();
    // A cancel went out for this connection: it may reach the server after the statement it was
    // for has ended, and stop the next one, so the connection is not used again.
    bool cancelSent() const { return m_cancelSent; }
    // The connection failed because the server sent a row over the bound (PgServerFrames).
    bool refusedRow() const { return m_refusedRow; }
    // The count of cancels waiting for this connection's server, shared by the connections of
    // one database (at most kMaxCancelling at a time).
    void setCancelCount(std::shared_ptr<std::atomic_int> cancelling);
    static constexpr int kMaxCancelling = 4;
    // What a server may send while no statement runs (notices, notifications of a LISTEN that a
    // caller's SQL left on a pooled session): past it the connection is closed. A server that
    // keeps sending then (a hostile one in the sandbox) made the engine read and drop its
    // messages for as long as it liked, one turn of the event loop after the other.
    static constexpr qint64 kMaxIdleBytes = 1024 * 1024;

    bool isOpen() const;
    bool isBusy() const { return m_busy; }
    bool inTransaction() const;
    QString errorMessage() const;
    pg_conn *handle() const { return m_conn; }

Q_SIGNALS:
    // The connection broke (server gone); pending work has been finished with an error result.
    void broken(const QString &why);

private:
    void pollConnect();
    void onReadable();
    void onWritable();
    void processInput();
    void flush();
    void fail(const QString &why);
    struct Statement;
    void start(Sink sink);
    // A statement's next step could not be sent: the connection broke; `sink` hears so.
    void failStep(Sink sink);
    // Runs `st` as the kept statement `name`; runs it again unprepared if the server lost it.
    bool runKept(const QByteArray &name, const std::shared_ptr<Statement> &st);

    pg_conn *m_conn = nullptr;          // owned
    QSocketNotifier *m_read = nullptr;  // owned (child)
    QSocketNotifier *m_write = nullptr; // owned (child)
    PgWireGuard *m_guard = nullptr;     // owned (child)
    std::function<void(Result<bool>)> m_onOpen;
    bool m_connecting = false;
    bool m_busy = false;
    qint64 m_idleFrom = 0; // the guard's bytesIn() when the last statement ended
    bool m_reading = true;
    Sink m_sink;
    // Kept statements by text and count of params (Statement::key): their names on the server.
    QHash<QByteArray, QByteArray> m_kept;
    QList<size_t> m_seen; // hashes of keys run once, not kept: the most recent last
    quint64 m_nextKept = 0;
    bool m_cancelled = false; // cancel() since the last sendKept()
    bool m_cancelSent = false;
    bool m_refusedRow = false;
    std::shared_ptr<std::atomic_int> m_cancelling = std::make_shared<std::atomic_int>(0);
};

} // namespace Sandbox::Engine
