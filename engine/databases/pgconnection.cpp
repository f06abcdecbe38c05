#include "pgconnection.h"

#include "pgwireguard.h"

#include <QLoggingCategory>
#include <QPointer>
#include <QSocketNotifier>
#include <QTimer>

#include <libpq-fe.h>

#include <system_error>
#include <thread>

Q_LOGGING_CATEGORY(lcPg, "sandboxd.databases.pg")

namespace Sandbox::Engine {

namespace {
constexpr int kConnectTimeoutMs = 10000;

// Whether an error that came before any row says that the kept statement is not there any more
// (26000: DEALLOCATE or DISCARD in the caller's SQL) or cannot run as it was prepared: its
// result's columns changed (the server words it so; its locale is the engine's choice).
bool keptStatementGone(const PGresult *r)
{
    if (PQresultStatus(r) != PGRES_FATAL_ERROR)
        return false;
    const QByteArrayView state(PQresultErrorField(r, PG_DIAG_SQLSTATE));
    return state == "26000"
           || (state == "0A000"
               && QByteArrayView(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY))
                      .startsWith("cached plan must not change result type"));
}

bool cancelled(const PGresult *r)
{
    return QByteArrayView(PQresultErrorField(r, PG_DIAG_SQLSTATE)) == "57014";
}

// A statement's params as libpq takes them (text, or bytes where `binary`; null pointers NULL).
struct ParamArrays
{
    ParamArrays(const QList<QByteArray> &params, const QList<bool> &isNull,
                const QList<bool> &binary)
    {
        for (qsizetype i = 0; i < params.size(); ++i) {
            values.append(isNull.value(i) ? nullptr : params[i].constData());
            lengths.append(int(params[i].size()));
            formats.append(binary.value(i) ? 1 : 0);
        }
    }
    QList<const char *> values;
    QList<int> lengths;
    QList<int> formats;
};
} // namespace

// A statement sent with sendKept(), kept while it may go to the server once more: after its
// prepare, or unprepared when the server lost the kept one.
struct PgConnection::Statement
{
    QByteArray sql;
    QByteArray key; // the text and the count of params
    QList<QByteArray> values;
    QList<bool> isNull;
    QList<bool> binary;
    bool singleRow = false;
    Sink sink;
};

PgConnection::PgConnection(QObject *parent)
    : QObject(parent)
{}

PgConnection::~PgConnection()
{
    delete m_read;
    delete m_write;
    if (m_conn)
        PQfinish(m_conn);
}

bool PgConnection::isOpen() const
{
    return m_conn && !m_connecting && PQstatus(m_conn) == CONNECTION_OK;
}

bool PgConnection::inTransaction() const
{
    if (!m_conn)
        return false;
    const PGTransactionStatusType t = PQtransactionStatus(m_conn);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

QString PgConnection::errorMessage() const
{
    return m_conn ? QString::fromUtf8(PQerrorMessage(m_conn)).trimmed() : QString();
}

void PgConnection::open(const Params &params, std::function<void(Result<bool>)> done)
{
    m_onOpen = std::move(done);
    QList<const char *> keys, values;
    for (const auto &[k, v] : params) {
        keys.append(k.constData());
        values.append(v.constData());
    }
    keys.append(nullptr);
    values.append(nullptr);
    m_conn = PQconnectStartParams(keys.constData(), values.constData(), 0);
    if (!m_conn || PQstatus(m_conn) == CONNECTION_BAD) {
        const QString why = m_conn ? errorMessage() : QStringLiteral("out of memory");
        QTimer::singleShot(0, this, [this, why] { fail(why); });
        return;
    }
    m_connecting = true;
    // Notices (RAISE NOTICE, warnings) are dropped: libpq's default printed each to the engine's
    // stderr, as many as a statement raised.
    PQsetNoticeReceiver(
        m_conn, [](void *, const PGresult *) {}, nullptr);
    QTimer::singleShot(kConnectTimeoutMs, this, [this] {
        if (m_connecting)
            fail(QStringLiteral("connecting to the database server timed out"));
    });
    // libpq has connected its socket and neither written to it nor read from it yet (it does so
    // only in CONNECTION_MADE's poll): from here on it talks to the server through the guard.
    const int fd = PQsocket(m_conn);
    if (PQstatus(m_conn) != CONNECTION_MADE) {
        QTimer::singleShot(0, this, [this] {
            fail(QStringLiteral("the database server is not accepting connections"));
        });
        return;
    }
    m_guard = new PgWireGuard(this);
    if (const auto guarded = m_guard->interpose(fd); !guarded) {
        QTimer::singleShot(0, this, [this, why = guarded.error().message] { fail(why); });
        return;
    }
    m_guard->arrived = [this] {
        if (m_read && m_read->isEnabled())
            onReadable();
    };
    m_guard->refused = [this](const QString &why, bool row) {
        m_refusedRow = row;
        fail(why);
    };
    // After PQconnectStart, libpq wants the socket to be writable first.
    m_read = new QSocketNotifier(fd, QSocketNotifier::Read);
    m_write = new QSocketNotifier(fd, QSocketNotifier::Write);
    m_read->setEnabled(false);
    connect(m_read, &QSocketNotifier::activated, this, [this] { onReadable(); });
    connect(m_write, &QSocketNotifier::activated, this, [this] { onWritable(); });
}

void PgConnection::pollConnect()
{
    const PostgresPollingStatusType st = PQconnectPoll(m_conn);
    m_guard->pumpOut();
    switch (st) {
    case PGRES_POLLING_READING:
        m_write->setEnabled(false);
        m_read->setEnabled(true);
        return;
    case PGRES_POLLING_WRITING:
        m_read->setEnabled(false);
        m_write->setEnabled(true);
        return;
    case PGRES_POLLING_OK: {
        m_connecting = false;
        m_write->setEnabled(false);
        m_read->setEnabled(false);
        PQsetnonblocking(m_conn, 1);
        if (auto done = std::exchange(m_onOpen, {}))
            done(true);
        return;
    }
    default:
        fail(errorMessage());
    }
}

void PgConnection::fail(const QString &why)
{
    const bool wasConnecting = m_connecting;
    const bool wasBusy = m_busy;
    m_connecting = false;
    m_busy = false;
    if (m_read)
        m_read->setEnabled(false);
    if (m_write)
        m_write->setEnabled(false);
    if (m_guard)
        m_guard->stop();
    if (wasConnecting || m_onOpen) {
        if (auto done = std::exchange(m_onOpen, {}))
            done(Error{ErrorCode::SandboxError, why, {}});
        return;
    }
    const Sink sink = std::exchange(m_sink, {});
    QPointer<PgConnection> self(this);
    if (wasBusy && sink.failed)
        sink.failed(why);
    if (self)
        Q_EMIT broken(why);
}

bool PgConnection::send(const QByteArray &sql, const QList<QByteArray> &values,
                        const QList<bool> &isNull, const QList<bool> &binary, bool simple,
                        bool singleRow, Sink sink)
{
    if (!isOpen() || m_busy)
        return false;
    int ok;
    if (simple) {
        ok = PQsendQuery(m_conn, sql.constData());
    } else {
        const ParamArrays p(values, isNull, binary);
        ok = PQsendQueryParams(m_conn, sql.constData(), int(values.size()), nullptr,
                               p.values.constData(), p.lengths.constData(), p.formats.constData(),
                               0);
    }
    if (!ok)
        return false;
    if (singleRow)
        PQsetSingleRowMode(m_conn);
    start(std::move(sink));
    return true;
}

void PgConnection::start(Sink sink)
{
    m_busy = true;
    m_sink = std::move(sink);
    m_reading = true;
    m_read->setEnabled(true);
    flush();
}

void PgConnection::failStep(Sink sink)
{
    // Sent before on this connection, so only a broken one refuses it: of no more use.
    m_busy = true;
    m_sink = std::move(sink);
    fail(errorMessage().isEmpty() ? QStringLiteral("cannot send to the database server")
                                  : errorMessage());
}

bool PgConnection::sendKept(const QByteArray &sql, const QList<QByteArray> &values,
                            const QList<bool> &isNull, const QList<bool> &binary, bool singleRow,
                            Sink sink)
{
    if (!isOpen() || m_busy)
        return false;
    m_cancelled = false;
    if (sql.size() > kMaxKeptText)
        return send(sql, values, isNull, binary, false, singleRow, std::move(sink));
    auto st = std::make_shared<Statement>(
        Statement{sql, sql + '\0' + QByteArray::number(values.size()), values, isNull, binary,
                  singleRow, std::move(sink)});
    if (const QByteArray name = m_kept.value(st->key); !name.isEmpty())
        return runKept(name, st);
    // Texts run once are known by a hash: one that two texts share only prepares one early.
    const size_t seen = qHash(st->key);
    if (m_kept.size() >= kKeptStatements || !m_seen.removeOne(seen)) {
        // Its first run (or no room to keep it): unprepared, and remembered while room is left.
        if (m_kept.size() < kKeptStatements) {
            m_seen.append(seen);
            if (m_seen.size() > kSeenStatements)
                m_seen.removeFirst();
        }
        return send(sql, values, isNull, binary, false, singleRow, std::move(st->sink));
    }
    // Its second run: prepared first, a round trip more this once.
    const QByteArray name = "sandboxd_" + QByteArray::number(++m_nextKept);
    if (!PQsendPrepare(m_conn, name.constData(), sql.constData(), int(values.size()), nullptr))
        return false;
    Sink prepare;
    auto prepared = std::make_shared<bool>(false);
    auto answered = std::make_shared<bool>(false);
    prepare.result = [st, prepared, answered](PGresult *r) {
        *prepared = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (cancelled(r) && st->sink.result) {
            *answered = true; // the cancel's answer: the statement does not run
            st->sink.result(r);
        }
    };
    prepare.finished = [this, name, st, prepared, answered] {
        if (*prepared)
            m_kept.insert(st->key, name);
        if (*answered || m_cancelled) { // cancelled: the statement does not run
            if (st->sink.finished)
                st->sink.finished();
            return;
        }
        if (*prepared) {
            if (!runKept(name, st))
                failStep(std::move(st->sink));
            return;
        }
        // Not prepared: it runs unprepared, which answers the statement's own error if it has
        // one (or runs it, where only the name was taken by the caller's own PREPARE).
        if (!send(st->sql, st->values, st->isNull, st->binary, false, st->singleRow, st->sink))
            failStep(std::move(st->sink));
    };
    prepare.failed = st->sink.failed;
    start(std::move(prepare));
    return true;
}

bool PgConnection::runKept(const QByteArray &name, const std::shared_ptr<Statement> &st)
{
    const ParamArrays p(st->values, st->isNull, st->binary);
    if (!PQsendQueryPrepared(m_conn, name.constData(), int(st->values.size()), p.values.constData(),
                             p.lengths.constData(), p.formats.constData(), 0))
        return false;
    if (st->singleRow)
        PQsetSingleRowMode(m_conn);
    Sink sink;
    // Set when the server answered that the kept statement is gone (26000) or stale (0A000).
    auto gone = std::make_shared<QByteArray>();
    auto delivered = std::make_shared<bool>(false);
    sink.result = [st, gone, delivered](PGresult *r) {
        if (!*delivered && keptStatementGone(r)) {
            *gone = PQresultErrorField(r, PG_DIAG_SQLSTATE); // it runs again, unprepared
            return;
        }
        *delivered = true;
        if (st->sink.result)
            st->sink.result(r);
    };
    sink.finished = [this, name, st, gone] {
        if (gone->isEmpty()) {
            if (st->sink.finished)
                st->sink.finished();
            return;
        }
        m_kept.remove(st->key);
        const auto again = [this, st] {
            if (m_cancelled) { // cancelled meanwhile: it does not run
                if (st->sink.finished)
                    st->sink.finished();
                return;
            }
            if (!send(st->sql, st->values, st->isNull, st->binary, false, st->singleRow, st->sink))
                failStep(std::move(st->sink));
        };
        if (*gone == "26000")
            return again();
        // A stale one the server still has goes first, or it would stay there unused.
        Sink deallocate;
        deallocate.finished = again;
        deallocate.failed = st->sink.failed;
        if (!send("DEALLOCATE " + name, {}, {}, {}, true, false, std::move(deallocate)))
            failStep(std::move(st->sink));
    };
    sink.failed = st->sink.failed;
    start(std::move(sink));
    return true;
}

void PgConnection::flush()
{
    const int r = PQflush(m_conn);
    if (r < 0)
        return fail(errorMessage());
    m_guard->pumpOut();
    m_write->setEnabled(r == 1);
}

void PgConnection::onWritable()
{
    if (m_connecting)
        return pollConnect();
    flush();
}

void PgConnection::onReadable()
{
    if (m_connecting)
        return pollConnect();
    if (!PQconsumeInput(m_conn))
        return fail(errorMessage().isEmpty()
                        ? QStringLiteral("the database server closed the connection")
                        : errorMessage());
    if (!m_busy) {
        // Nothing is expected: drain notices and notifications, up to a bound.
        if (const qint64 idle = m_guard ? m_guard->bytesIn() - m_idleFrom : 0; idle > kMaxIdleBytes)
            return fail(QStringLiteral("the database server sent %1 bytes while no statement ran: "
                                       "over the %2 an idle connection may take")
                            .arg(idle)
                            .arg(kMaxIdleBytes));
        while (PGnotify *n = PQnotifies(m_conn))
            PQfreemem(n);
        return;
    }
    processInput();
}

void PgConnection::setReading(bool on)
{
    m_reading = on;
    if (!m_read)
        return;
    m_guard->setReading(on);
    m_read->setEnabled(on && (m_busy || m_connecting));
    if (on && m_busy) {
        // Rows already buffered by libpq are delivered without waiting for the socket.
        QPointer<PgConnection> self(this);
        QTimer::singleShot(0, this, [self] {
            if (self && self->m_reading && self->m_busy)
                self->processInput();
        });
    }
}

void PgConnection::processInput()
{
    QPointer<PgConnection> self(this);
    while (self && m_busy && m_reading) {
        if (PQisBusy(m_conn))
            break;
        PGresult *r = PQgetResult(m_conn);
        if (!r) {
            m_busy = false;
            m_idleFrom = m_guard ? m_guard->bytesIn() : 0;
            m_read->setEnabled(true); // to notice a server that goes away while idle
            auto sink = std::exchange(m_sink, {});
            if (sink.finished)
                sink.finished();
            return;
        }
        const ExecStatusType status = PQresultStatus(r);
        if (status == PGRES_COPY_IN) {
            PQclear(r);
            PQputCopyEnd(m_conn, "COPY FROM STDIN is not supported by this API");
            flush();
            continue;
        }
        if (status == PGRES_COPY_OUT) {
            PQclear(r);
            char *buf = nullptr;
            int n;
            while ((n = PQgetCopyData(m_conn, &buf, 1)) > 0)
                PQfreemem(buf);
            if (n == 0)
                break; // more data to come: wait for the socket
            continue;
        }
        if (m_sink.result)
            m_sink.result(r);
        PQclear(r);
    }
    if (self && m_read)
        m_read->setEnabled(m_reading);
}

void PgConnection::cancel()
{
    if (!m_conn || !m_busy)
        return;
    m_cancelled = true;
    // PQcancel blocks until the server has read the request and closed the cancel's connection
    // (a new one to the server's socket). The server is the sandbox's: a hostile one may never
    // close it, and then holds that thread until the sandbox stops. So each cancel has a thread
    // of its own, and a database at most kMaxCancelling of them at a time (the call answers
    // anyway, kCancelGraceMs after its cancel): never a thread of the engine's event loop or of
    // another database's cancels.
    if (m_cancelling->fetch_add(1) >= kMaxCancelling) {
        m_cancelling->fetch_sub(1);
        qCWarning(lcPg) << "cancel not sent: the database has" << kMaxCancelling
                        << "cancels waiting for its server";
        return;
    }
    PGcancel *c = PQgetCancel(m_conn);
    if (!c) {
        m_cancelling->fetch_sub(1);
        return;
    }
    m_cancelSent = true;
    try {
        std::thread([c, cancelling = m_cancelling] {
            char err[256];
            if (!PQcancel(c, err, sizeof err))
                qCWarning(lcPg) << "cancel failed:" << err;
            PQfreeCancel(c);
            cancelling->fetch_sub(1);
        }).detach();
    } catch (const std::system_error &e) {
        // No thread to be had (the host's limit): the call still answers after its grace time.
        qCWarning(lcPg) << "cancel not sent:" << e.what();
        PQfreeCancel(c);
        m_cancelling->fetch_sub(1);
    }
}

void PgConnection::setCancelCount(std::shared_ptr<std::atomic_int> cancelling)
{
    m_cancelling = std::move(cancelling);
}

} // namespace Sandbox::Engine
