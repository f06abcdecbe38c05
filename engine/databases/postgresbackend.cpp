#include "postgresbackend.h"

#include "pagetext.h"
#include "pgconnection.h"
#include "pgsocketlink.h"
#include "pgvalues.h"
#include "runtime/supervisorchannel.h"
#include "serverprocess.h"
#include "sqlcommand.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QTimer>

#include <libpq-fe.h>

#include <algorithm>

Q_DECLARE_LOGGING_CATEGORY(lcPg)

namespace Sandbox::Engine {

namespace {

constexpr int kReadyTimeoutMs = 30000;
constexpr int kReadyPollMs = 5;
constexpr int kStopTimeoutMs = 10000;
const QString kDataDir = QStringLiteral("/workspace/pgdata");

QString quoteIdent(const QString &name)
{
    QString q = name;
    q.replace(u'"', QStringLiteral("\"\""));
    return u'"' + q + u'"';
}

QString quoteLiteral(const QString &text)
{
    QString q = text;
    q.replace(u'\'', QStringLiteral("''"));
    return QStringLiteral("E'") + q.replace(u'\\', QStringLiteral("\\\\")) + u'\'';
}

Error pgError(const PGresult *r)
{
    // The server is in the sandbox: its texts are cut to clippedErrorText's bound, and a state
    // that is not one (five digits or capitals) is none.
    auto field = [r](int code) { return clippedErrorText(PQresultErrorField(r, code)); };
    QString sqlstate = field(PG_DIAG_SQLSTATE);
    const auto stateChar = [](QChar c) {
        return (c >= u'0' && c <= u'9') || (c >= u'A' && c <= u'Z');
    };
    if (sqlstate.size() != 5 || !std::all_of(sqlstate.cbegin(), sqlstate.cend(), stateChar))
        sqlstate.clear();
    QString message = field(PG_DIAG_MESSAGE_PRIMARY);
    if (message.isEmpty())
        message = clippedErrorText(QByteArrayView(PQresultErrorMessage(r)).trimmed());
    if (sqlstate == QLatin1String("57014"))
        return Error{ErrorCode::Cancelled, QStringLiteral("the query was cancelled"),
                     QJsonObject{{QStringLiteral("sqlstate"), sqlstate}}};
    QJsonObject data{{QStringLiteral("sqlstate"), sqlstate}};
    // "bind message supplies 2 parameters, but prepared statement requires 1": the caller's
    // params do not fit the SQL, which docs/protocol.md 4.3.2 answers as invalid params.
    if (sqlstate == QLatin1String("08P01")
        && message.startsWith(QLatin1String("bind message supplies"))) {
        data.insert(QStringLiteral("field"), QStringLiteral("params"));
        return Error{ErrorCode::InvalidParams, QStringLiteral("params: ") + message, data};
    }
    if (const QString pos = field(PG_DIAG_STATEMENT_POSITION); !pos.isEmpty())
        data.insert(QStringLiteral("position"), pos.toInt());
    if (const QString detail = field(PG_DIAG_MESSAGE_DETAIL); !detail.isEmpty())
        data.insert(QStringLiteral("detail"), detail);
    if (const QString hint = field(PG_DIAG_MESSAGE_HINT); !hint.isEmpty())
        data.insert(QStringLiteral("hint"), hint);
    return Error{ErrorCode::QueryError, message, data};
}

bool isDml(const QString &command)
{
    return SqlCommand::changesRows(command.toStdString());
}

qint64 approximateSize(const QJsonValue &v)
{
    switch (v.type()) {
    case QJsonValue::String:
        return v.toString().size() + 2;
    case QJsonValue::Array: {
        qint64 n = 2;
        for (const QJsonValue &e : v.toArray())
            n += approximateSize(e) + 1;
        return n;
    }
    case QJsonValue::Object:
        return 64;
    default:
        return 8;
    }
}

} // namespace

// One query in flight, and its cursor while rows remain: the connection stays with it.
struct PostgresBackend::Query
{
    PgConnection *conn = nullptr;
    QJsonArray fields;
    QList<unsigned> oids;
    bool haveFields = false;
    QJsonArray rows;
    // A page's rows as text instead (rowsAsText, outside transactions): "[[...],[...]" so far.
    bool textRows = false;
    QByteArray rowsText;
    qsizetype textCount = 0;
    qint64 bytes = 0;
    int pageSize = PageLimits::kDefaultRows;
    qint64 pageBytes = PageLimits::kDefaultBytes;
    QString command;
    qint64 rowsAffected = 0;
    std::optional<Error> error;
    PageDone pending;
    bool firstPage = true;
    bool finished = false;
    bool execute = false;
    QString cursor;
    bool transaction = false;
    QJsonArray results; // transaction: one entry per statement
    int statementCount = 0;
    bool holdConnection = false; // a transaction's statement: the connection stays with it
    bool truncated = false;
    bool noCursor = false; // in an interactive transaction: one page, the rest left out
    quint64 lastUse = 0;   // a cursor's: PostgresBackend::m_uses when it opened or was last fetched

    void takeFields(const PGresult *r)
    {
        haveFields = true;
        fields = {};
        oids.clear();
        for (int i = 0; i < PQnfields(r); ++i) {
            const unsigned oid = PQftype(r, i);
            oids.append(oid);
            const QString name = PgValues::typeName(oid);
            fields.append(QJsonObject{{QStringLiteral("name"), QString::fromUtf8(PQfname(r, i))},
                                      {QStringLiteral("type"),
                                       name.isEmpty() ? QStringLiteral("oid:%1").arg(oid) : name},
                                      {QStringLiteral("typeOid"), double(oid)}});
        }
    }
};

QString PostgresBackend::binDir()
{
    return QStringLiteral("/usr/lib/postgresql/15/bin");
}

PostgresBackend::PostgresBackend(Settings settings, QObject *parent)
    : DatabaseBackend(parent)
    , m_settings(std::move(settings))
    , m_server(new ServerProcess(QStringLiteral("the PostgreSQL server"), 3, this))
{
    connect(m_server, &ServerProcess::exited, this, &PostgresBackend::serverGone);
}

PostgresBackend::~PostgresBackend()
{
    m_waiters.clear();
    m_cursors.clear();
}

void PostgresBackend::setOwner(const QString &database, const QString &username,
                               const QString &password, bool initialize)
{
    m_settings.database = database;
    m_settings.username = username;
    m_settings.password = password;
    m_settings.initialize = initialize;
}

void PostgresBackend::handOut(const QString &database, const QString &username,
                              const QString &password, std::function<void(Result<bool>)> done)
{
    setOwner(database, username, password, true);
    m_settings.standby = false;
    QPointer<PgConnection> admin = std::exchange(m_standbyAdmin, nullptr);
    if (m_alive && admin && admin->isOpen() && !admin->property("sandboxDropped").toBool())
        return initialize(admin, std::move(done));
    if (admin)
        drop(admin);
    if (m_alive) // the connection broke, the server may still be there
        return waitUntilReady(QDateTime::currentMSecsSinceEpoch() + kReadyTimeoutMs,
                              std::move(done));
    if (!m_channel)
        return done(
            Error{ErrorCode::SandboxError, QStringLiteral("the database's sandbox went away"), {}});
    start(m_channel, std::move(done));
}

void PostgresBackend::start(SupervisorChannel *channel, std::function<void(Result<bool>)> done)
{
    m_channel = channel;
    m_stopping = false;
    if (!m_link) {
        auto link = std::make_unique<PgSocketLink>(m_settings.server);
        if (const auto created = link->create(m_settings.socketDir); !created)
            return done(created.error());
        m_link = std::move(link);
    }
    // The template's contents ("/."): in a container /run/sandbox/pg-template is a link, and
    // cp -a would copy the link, chmod then following it to the engine's template.
    QString script = QStringLiteral("set -e; D=%1; if [ ! -d \"$D\" ]; then rm -rf \"$D.new\"; cp "
                                    "-a /run/sandbox/pg-template/. \"$D.new\"; "
                                    "chmod 700 \"$D.new\"; mv \"$D.new\" \"$D\"; fi; ")
                         .arg(kDataDir);
    // A lock file left by a kill -9 names a PID that may belong to another process now (PIDs of a
    // sandbox's namespace repeat from start to start): PostgreSQL would take it for a live server.
    // Only a live process named postgres keeps the lock file.
    script += QStringLiteral(
        "if [ -f \"$D/postmaster.pid\" ]; then P=$(head -n1 \"$D/postmaster.pid\"); "
        "[ \"$(cat /proc/$P/comm 2>/dev/null)\" = postgres ] || rm -f \"$D/postmaster.pid\"; fi; ");
    script
        += QStringLiteral(
               "exec %1/postgres -D \"$D\" -c listen_addresses= -c unix_socket_directories=/run/db "
               "-c unix_socket_permissions=0700 -c max_connections=20 -c shared_buffers=32MB "
               "-c dynamic_shared_memory_type=posix -c huge_pages=off -c logging_collector=off "
               "-c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_wal_size=256MB "
               "-c min_wal_size=8MB -c log_min_messages=warning -c TimeZone=UTC")
               .arg(binDir());
    m_alive = true;
    m_server->start(channel, {{QStringLiteral("shell"), script},
                              {QStringLiteral("cwd"), QStringLiteral("/workspace")}});
    waitUntilReady(QDateTime::currentMSecsSinceEpoch() + kReadyTimeoutMs, std::move(done));
}

void PostgresBackend::waitUntilReady(qint64 deadline, std::function<void(Result<bool>)> done)
{
    if (!m_alive)
        return done(
            Error{ErrorCode::SandboxError,
                  QStringLiteral("the PostgreSQL server did not start: ") + m_server->logTail(3),
                  {}});
    const bool admin = m_settings.initialize;
    const QString db = admin ? QStringLiteral("template1") : m_settings.database;
    QPointer<PostgresBackend> self(this);
    openConnection(admin, db, [self, deadline, done, admin](Result<PgConnection *> r) {
        if (!self)
            return;
        if (!r) {
            if (QDateTime::currentMSecsSinceEpoch() > deadline || !self->m_alive) {
                const QString log = self->m_server->logTail(2);
                return done(
                    Error{ErrorCode::SandboxError,
                          QStringLiteral("the PostgreSQL server did not become ready: %1%2")
                              .arg(r.error().message,
                                   log.isEmpty() ? QString() : QStringLiteral(" (") + log + u')'),
                          {}});
            }
            QTimer::singleShot(kReadyPollMs, self, [self, deadline, done] {
                if (self)
                    self->waitUntilReady(deadline, done);
            });
            return;
        }
        if (admin && self->m_settings.standby) {
            // Up and nobody's: the admin connection waits for handOut(). One connection of the
            // template's role to its database first builds that database's catalog cache file
            // (pg_internal.init, kept by the rename), not the owner's first connection.
            self->m_standbyAdmin = *r;
            return self->openClient(false, done);
        }
        if (admin)
            return self->initialize(*r, done);
        self->release(*r);
        done(true);
    });
}

void PostgresBackend::initialize(PgConnection *admin, std::function<void(Result<bool>)> done)
{
    QStringList sql;
    const QString role = m_settings.username;
    if (m_settings.database != QLatin1String(kTemplateDatabase))
        sql << QStringLiteral("ALTER DATABASE %1 RENAME TO %2")
                   .arg(QLatin1String(kTemplateDatabase), quoteIdent(m_settings.database));
    if (role != QLatin1String(kTemplateRole))
        sql << QStringLiteral("ALTER ROLE %1 RENAME TO %2")
                   .arg(QLatin1String(kTemplateRole), quoteIdent(role));
    if (!m_settings.password.isEmpty())
        sql << QStringLiteral("ALTER ROLE %1 PASSWORD %2")
                   .arg(quoteIdent(role), quoteLiteral(m_settings.password));
    sql << QStringLiteral("SELECT 1");
    auto failure = std::make_shared<std::optional<Error>>();
    QPointer<PostgresBackend> self(this);
    PgConnection::Sink sink;
    sink.result = [failure](PGresult *r) {
        if (PQresultStatus(r) == PGRES_FATAL_ERROR && !*failure)
            *failure = pgError(r);
    };
    sink.finished = [self, admin, failure, done] {
        admin->deleteLater();
        if (!self)
            return;
        --self->m_open;
        if (*failure)
            return done(Error{ErrorCode::SandboxError,
                              QStringLiteral("cannot set up the database: ") + (*failure)->message,
                              {}});
        self->m_settings.initialize = false;
        self->m_settings.password.clear();
        if (self->onInitialized)
            self->onInitialized();
        // The client role's first connection proves the set-up and seeds the pool.
        self->openClient(true, done);
    };
    sink.failed = [self, admin, done](const QString &why) {
        admin->deleteLater();
        if (self)
            --self->m_open;
        done(Error{ErrorCode::SandboxError,
                   QStringLiteral("cannot set up the database: ") + why,
                   {}});
    };
    if (!admin->send(sql.join(QStringLiteral("; ")).toUtf8(), {}, {}, {}, true, false, sink)) {
        admin->deleteLater();
        --m_open;
        done(Error{ErrorCode::SandboxError,
                   QStringLiteral("cannot set up the database: ") + admin->errorMessage(),
                   {}});
    }
}

void PostgresBackend::openConnection(bool admin, const QString &database, ConnDone done)
{
    ++m_open;
    QPointer<PostgresBackend> self(this);
    // The server's socket as it is now (a restarted server has a new one).
    if (const auto pinned = m_link->pin(); !pinned) {
        QTimer::singleShot(0, this, [self, done, e = pinned.error()] {
            if (self)
                --self->m_open;
            done(e);
        });
        return;
    }
    auto *conn = new PgConnection(this);
    conn->setCancelCount(m_cancelling);
    PgConnection::Params params{
        {"host", QFile::encodeName(m_link->directory())},
        {"port", "5432"},
        {"dbname", database.toUtf8()},
        {"user", admin ? QByteArray(kAdminRole) : m_settings.username.toUtf8()},
        {"application_name", "sandboxd"},
        {"client_encoding", "UTF8"},
        {"sslmode", "disable"},
        {"gssencmode", "disable"},
        {"options", "-c DateStyle=ISO,YMD -c IntervalStyle=iso_8601 -c TimeZone=UTC"},
    };
    conn->open(params, [self, conn, done](Result<bool> r) {
        if (!r) {
            conn->deleteLater();
            if (self)
                --self->m_open;
            return done(r.error());
        }
        if (!self)
            return;
        QObject::connect(conn, &PgConnection::broken, self, [self, conn](const QString &why) {
            qCInfo(lcPg) << "connection broken:" << why;
            if (self)
                self->drop(conn);
        });
        done(conn);
    });
}

void PostgresBackend::openClient(bool keep, std::function<void(Result<bool>)> done)
{
    QPointer<PostgresBackend> self(this);
    openConnection(false, m_settings.database, [self, keep, done](Result<PgConnection *> r) {
        if (!self)
            return;
        if (!r)
            return done(r.error());
        if (keep)
            self->release(*r);
        else
            self->drop(*r);
        done(true);
    });
}

void PostgresBackend::acquire(ConnDone then)
{
    if (!m_alive)
        return then(Error{ErrorCode::SandboxNotRunning,
                          QStringLiteral("the PostgreSQL server is not running"),
                          {}});
    while (!m_idle.isEmpty()) {
        PgConnection *c = m_idle.takeLast();
        if (c->isOpen())
            return then(c);
        drop(c);
    }
    if (m_open >= m_settings.maxConnections) {
        // Every connection is busy: the idle cursor least recently fetched from, of those that
        // hold a connection, gives it up (one whose rows were all read holds none).
        std::shared_ptr<Query> lru;
        for (const std::shared_ptr<Query> &q : std::as_const(m_cursors)) {
            if (q->conn && !q->finished && !q->pending && (!lru || q->lastUse < lru->lastUse))
                lru = q;
        }
        if (lru)
            closeCursor(lru->cursor);
    }
    if (m_open >= m_settings.maxConnections) {
        m_waiters.append(std::move(then));
        return;
    }
    openConnection(false, m_settings.database, std::move(then));
}

void PostgresBackend::release(PgConnection *conn)
{
    if (!conn->isOpen() || !m_alive || conn->cancelSent())
        return drop(conn);
    if (conn->inTransaction()) {
        // A transaction a statement left open ends with its call.
        PgConnection::Sink sink;
        QPointer<PostgresBackend> self(this);
        sink.finished = [self, conn] {
            if (self)
                self->release(conn);
        };
        if (conn->send("ROLLBACK", {}, {}, {}, true, false, sink))
            return;
        return drop(conn);
    }
    if (!m_waiters.isEmpty())
        return m_waiters.takeFirst()(conn);
    m_idle.append(conn);
}

void PostgresBackend::drop(PgConnection *conn)
{
    // Dropped once, whether through release(), broken() or both.
    if (conn->property("sandboxDropped").toBool())
        return;
    conn->setProperty("sandboxDropped", true);
    m_idle.removeAll(conn);
    for (auto it = m_transactions.begin(); it != m_transactions.end();) {
        if (it.value() == conn) {
            m_transactionsBusy.remove(it.key());
            it = m_transactions.erase(it);
        } else {
            ++it;
        }
    }
    conn->disconnect(this);
    conn->deleteLater();
    --m_open;
    for (auto it = m_cursors.begin(); it != m_cursors.end(); ++it) {
        const auto q = it.value();
        if (q->conn == conn && !q->finished) {
            q->conn = nullptr;
            q->finished = true;
            if (!q->error)
                q->error = Error{ErrorCode::SandboxError,
                                 QStringLiteral("the connection to the database server was lost"),
                                 {}};
            if (q->pending)
                deliver(q, true);
        }
    }
    if (!m_waiters.isEmpty() && m_alive) {
        auto then = m_waiters.takeFirst();
        acquire(std::move(then));
    }
}

void PostgresBackend::deliver(const std::shared_ptr<Query> &q, bool done)
{
    PageDone pending = std::exchange(q->pending, {});
    if (!pending)
        return;
    if (done && !q->cursor.isEmpty())
        m_cursors.remove(q->cursor);
    if (q->error) {
        if (!q->cursor.isEmpty())
            m_cursors.remove(q->cursor);
        return pending(*q->error);
    }
    Page page;
    if (q->transaction) {
        page.members.insert(QStringLiteral("results"), q->results);
    } else if (q->firstPage) {
        if (!done) {
            q->cursor = QStringLiteral("pg%1").arg(m_nextCursor++);
            q->lastUse = ++m_uses;
            m_cursors.insert(q->cursor, q);
        }
        page.members = {{QStringLiteral("fields"), q->fields},
                        {QStringLiteral("command"), q->command},
                        {QStringLiteral("rowsAffected"), double(q->rowsAffected)},
                        {QStringLiteral("cursor"), done ? QJsonValue() : QJsonValue(q->cursor)}};
        if (q->noCursor && q->truncated)
            page.members.insert(QStringLiteral("truncated"), true);
    } else {
        page.members = {{QStringLiteral("done"), done}};
    }
    if (!q->transaction) {
        if (q->textRows) {
            q->rowsText += q->textCount ? "]" : "[]";
            page.rowsText = std::exchange(q->rowsText, {});
            page.rowsTextCount = q->textCount;
        } else {
            page.members.insert(QStringLiteral("rows"), q->rows);
        }
    }
    q->firstPage = false;
    q->rows = {};
    q->rowsText.clear();
    q->textCount = 0;
    q->bytes = 0;
    pending(page);
}

void PostgresBackend::runQuery(const std::shared_ptr<Query> &q, PgConnection *conn,
                               const QByteArray &sql, const QList<QByteArray> &values,
                               const QList<bool> &nulls, const QList<bool> &binary, bool simple)
{
    q->conn = conn;
    QPointer<PostgresBackend> self(this);
    PgConnection::Sink sink;
    sink.result = [self, q](PGresult *r) {
        if (!self)
            return;
        switch (PQresultStatus(r)) {
        case PGRES_SINGLE_TUPLE: {
            if (q->error)
                return; // a row over the bound ended the call: the rest is read and dropped
            qint64 rowBytes = 0;
            for (int i = 0; i < PQnfields(r); ++i)
                rowBytes += PQgetlength(r, 0, i);
            if (rowBytes > PageLimits::kMaxRowBytes) {
                // Answered when the statement ends, which the cancel brings about at once (the
                // connection is not used again: cancelSent()); the row is dropped before it is
                // converted (libpq has held it whole: left).
                q->error = rowTooLarge();
                if (q->conn)
                    q->conn->cancel();
                return;
            }
            if (q->execute)
                return; // a script answers no rows
            if (!q->haveFields)
                q->takeFields(r);
            if ((q->transaction
                 && (q->rows.size() >= PageLimits::kTransactionRows || q->bytes >= q->pageBytes))
                || (q->noCursor && (q->rows.size() >= q->pageSize || q->bytes >= q->pageBytes))) {
                q->truncated = true;
                return;
            }
            if (q->textRows) {
                QByteArray &out = q->rowsText;
                out += q->textCount++ ? ",[" : "[[";
                for (int i = 0; i < q->oids.size(); ++i) {
                    if (i)
                        out += ',';
                    if (PQgetisnull(r, 0, i))
                        out += "null";
                    else
                        PgValues::appendJson(out, q->oids[i], PQgetvalue(r, 0, i),
                                             PQgetlength(r, 0, i));
                }
                out += ']';
                q->bytes = out.size();
                if (!q->noCursor && (q->textCount >= q->pageSize || q->bytes >= q->pageBytes)) {
                    q->conn->setReading(false);
                    self->deliver(q, false);
                }
                return;
            }
            QJsonArray row;
            for (int i = 0; i < q->oids.size(); ++i) {
                const QJsonValue v = PQgetisnull(r, 0, i)
                                         ? QJsonValue()
                                         : PgValues::toJson(q->oids[i], PQgetvalue(r, 0, i),
                                                            PQgetlength(r, 0, i));
                q->bytes += approximateSize(v);
                row.append(v);
            }
            q->rows.append(row);
            if (!q->transaction && !q->noCursor
                && (q->rows.size() >= q->pageSize || q->bytes >= q->pageBytes)) {
                q->conn->setReading(false);
                self->deliver(q, false);
            }
            return;
        }
        case PGRES_TUPLES_OK:
        case PGRES_COMMAND_OK: {
            if (!q->haveFields && PQresultStatus(r) == PGRES_TUPLES_OK)
                q->takeFields(r);
            q->command = QString::fromUtf8(PQcmdStatus(r)).section(u' ', 0, 0);
            const qint64 n = QByteArray(PQcmdTuples(r)).toLongLong();
            if (isDml(q->command))
                q->rowsAffected += n;
            if (q->transaction && q->statementCount > 0) {
                q->results.append(QJsonObject{{QStringLiteral("command"), q->command},
                                              {QStringLiteral("fields"), q->fields},
                                              {QStringLiteral("rows"), q->rows},
                                              {QStringLiteral("rowsAffected"),
                                               isDml(q->command) ? double(n) : 0.0},
                                              {QStringLiteral("truncated"), q->truncated}});
                q->rows = {};
                q->fields = {};
                q->haveFields = false;
            }
            return;
        }
        case PGRES_EMPTY_QUERY:
            if (!q->error && !q->transaction)
                q->error = Error{ErrorCode::InvalidParams,
                                 QStringLiteral("the SQL text holds no statement"),
                                 QJsonObject{{QStringLiteral("field"), QStringLiteral("sql")}}};
            return;
        default:
            if (!q->error)
                q->error = pgError(r);
        }
    };
    sink.finished = [self, q] {
        if (!self)
            return;
        q->finished = true;
        PgConnection *conn = std::exchange(q->conn, nullptr);
        if (conn && !q->holdConnection)
            self->release(conn);
        self->deliver(q, true);
    };
    sink.failed = [self, q](const QString &why) {
        if (!self)
            return;
        // The connection is dropped by its broken() signal.
        q->finished = true;
        const bool rowRefused = q->conn && q->conn->refusedRow();
        q->conn = nullptr;
        if (!q->error && rowRefused)
            q->error = rowTooLarge(); // refused before libpq read it (PgWireGuard)
        if (!q->error)
            q->error = Error{ErrorCode::SandboxError,
                             QStringLiteral("the connection to the database server was lost: ")
                                 + why,
                             {}};
        self->deliver(q, true);
    };
    // A statement on a pooled connection (no transaction of the caller's on it) may run as one
    // the connection keeps prepared.
    // Rows come one at a time, those of a script's statements too: in one result, libpq held a
    // script's whole SELECT (rows execute never answers) in the engine's memory.
    const bool singleRow = true;
    if (!(simple || q->holdConnection
              ? conn->send(sql, values, nulls, binary, simple, singleRow, sink)
              : conn->sendKept(sql, values, nulls, binary, singleRow, sink))) {
        q->error = Error{ErrorCode::SandboxError,
                         QStringLiteral("cannot send the query: ") + conn->errorMessage(),
                         {}};
        q->conn = nullptr;
        if (!q->holdConnection)
            release(conn);
        deliver(q, true);
    }
}

CancelFn PostgresBackend::query(const SqlRequest &request, PageDone done)
{
    auto q = std::make_shared<Query>();
    q->pageSize = request.pageSize;
    q->pageBytes = request.pageBytes;
    q->execute = request.execute;
    q->textRows = request.rowsAsText && request.transaction.isEmpty();
    q->pending = std::move(done);
    QList<QByteArray> values;
    QList<bool> nulls, binary;
    for (qsizetype i = 0; i < request.params.size(); ++i) {
        const auto p = PgValues::fromJson(request.params[i], int(i));
        if (!p) {
            q->error = p.error();
            QTimer::singleShot(0, this, [this, q] { deliver(q, true); });
            return [] {};
        }
        values.append(p->value);
        nulls.append(p->isNull);
        binary.append(p->binary);
    }
    // A script (execute without params) goes through the simple protocol, which takes several
    // statements; everything else is one statement with bound parameters.
    const bool simple = request.execute && request.params.isEmpty();
    const QByteArray sql = request.sql.toUtf8();
    QPointer<PostgresBackend> self(this);
    if (!request.transaction.isEmpty()) {
        const QString name = request.transaction;
        PgConnection *conn = m_transactions.value(name);
        if (!conn || m_transactionsBusy.contains(name)) {
            q->error = conn
                           ? Error::invalidParams(QStringLiteral("transaction"),
                                                  QStringLiteral("the transaction is running a "
                                                                 "statement"))
                           : Error::notFound(QStringLiteral("transaction %1 (it ended)").arg(name));
            QTimer::singleShot(0, this, [this, q] { deliver(q, true); });
            return [] {};
        }
        m_transactionsBusy.insert(name);
        q->holdConnection = true;
        q->noCursor = true;
        q->pending = [self, name, conn, done = std::move(q->pending)](Result<Page> r) {
            if (self) {
                self->m_transactionsBusy.remove(name);
                // A failed statement ends the transaction (PostgreSQL aborted it anyway), and so
                // does one of the caller's that committed or rolled back itself.
                if ((!r || !conn->inTransaction()) && self->m_transactions.value(name) == conn) {
                    self->m_transactions.remove(name);
                    self->release(conn);
                }
            }
            if (!r) {
                Error e = r.error();
                e.message += QStringLiteral(" (the transaction was rolled back)");
                return done(e);
            }
            done(std::move(r));
        };
        runQuery(q, conn, sql, values, nulls, binary, simple);
        return [q] {
            if (q->conn && !q->finished)
                q->conn->cancel();
        };
    }
    auto cancelled = std::make_shared<bool>(false);
    acquire([self, q, sql, values, nulls, binary, simple, cancelled](Result<PgConnection *> r) {
        if (!self)
            return;
        if (!r) {
            q->error = r.error();
            return self->deliver(q, true);
        }
        if (*cancelled) {
            self->release(*r);
            q->error = Error{ErrorCode::Cancelled, QStringLiteral("the query was cancelled"), {}};
            return self->deliver(q, true);
        }
        self->runQuery(q, *r, sql, values, nulls, binary, simple);
    });
    return [q, cancelled] {
        *cancelled = true;
        if (q->conn && !q->finished)
            q->conn->cancel();
    };
}

CancelFn PostgresBackend::fetch(const QString &cursor, int pageSize, qint64 pageBytes, PageDone done)
{
    const auto q = m_cursors.value(cursor);
    if (!q) {
        done(Error::notFound(
            QStringLiteral("cursor %1 (it was closed, finished or expired)").arg(cursor)));
        return [] {};
    }
    if (q->pending) {
        done(Error::invalidParams(QStringLiteral("cursor"),
                                  QStringLiteral("the cursor is already being fetched")));
        return [] {};
    }
    q->pending = std::move(done);
    q->lastUse = ++m_uses;
    q->pageSize = pageSize;
    q->pageBytes = pageBytes;
    if (q->finished || !q->conn) {
        deliver(q, true);
        return [] {};
    }
    q->conn->setReading(true);
    return [q] {
        if (q->conn && !q->finished)
            q->conn->cancel();
    };
}

void PostgresBackend::closeCursor(const QString &cursor)
{
    const auto q = m_cursors.take(cursor);
    if (!q)
        return;
    q->pending = {};
    if (PgConnection *conn = std::exchange(q->conn, nullptr); conn && !q->finished) {
        // The server is blocked sending the rest: closing the connection ends its query.
        q->finished = true;
        drop(conn);
    }
}

void PostgresBackend::begin(const QString &name, PageDone done)
{
    if (m_transactions.contains(name))
        return done(Error{ErrorCode::AlreadyExists,
                          QStringLiteral("transaction %1 exists already").arg(name),
                          {}});
    QPointer<PostgresBackend> self(this);
    acquire([self, name, done](Result<PgConnection *> r) {
        if (!self)
            return;
        if (!r)
            return done(r.error());
        PgConnection *conn = *r;
        auto failed = std::make_shared<std::optional<Error>>();
        PgConnection::Sink sink;
        sink.result = [failed](PGresult *res) {
            if (PQresultStatus(res) == PGRES_FATAL_ERROR)
                *failed = pgError(res);
        };
        sink.finished = [self, conn, name, failed, done] {
            if (!self)
                return;
            if (*failed) {
                self->release(conn);
                return done(**failed);
            }
            self->m_transactions.insert(name, conn);
            done(Page(QJsonObject{{QStringLiteral("transaction"), name}}));
        };
        sink.failed = [done](const QString &why) {
            done(Error{ErrorCode::SandboxError,
                       QStringLiteral("the connection to the database server was lost: ") + why,
                       {}});
        };
        if (!conn->send("BEGIN", {}, {}, {}, true, false, sink)) {
            self->release(conn);
            done(Error{ErrorCode::SandboxError, QStringLiteral("cannot start a transaction"), {}});
        }
    });
}

void PostgresBackend::finish(const QString &name, bool commit, PageDone done)
{
    PgConnection *conn = m_transactions.value(name);
    if (!conn)
        return done(Error::notFound(QStringLiteral("transaction %1 (it ended)").arg(name)));
    if (m_transactionsBusy.contains(name))
        return done(Error::invalidParams(QStringLiteral("transaction"),
                                         QStringLiteral("the transaction is running a statement")));
    m_transactions.remove(name);
    QPointer<PostgresBackend> self(this);
    auto failed = std::make_shared<std::optional<Error>>();
    auto status = std::make_shared<QByteArray>();
    PgConnection::Sink sink;
    sink.result = [failed, status](PGresult *res) {
        if (PQresultStatus(res) == PGRES_FATAL_ERROR)
            *failed = pgError(res);
        else
            *status = PQcmdStatus(res);
    };
    sink.finished = [self, conn, commit, failed, status, done] {
        if (self)
            self->release(conn); // rolls back whatever a failed COMMIT left open
        if (*failed) {
            Error e = **failed;
            e.message += QStringLiteral(" (the transaction was rolled back)");
            return done(e);
        }
        // COMMIT of a transaction that had failed answers ROLLBACK.
        if (commit && *status != "COMMIT")
            return done(Error{ErrorCode::QueryError,
                              QStringLiteral("the transaction had failed and was rolled back"),
                              {}});
        done(Page(commit ? QJsonObject{{QStringLiteral("committed"), true}}
                         : QJsonObject{{QStringLiteral("rolledBack"), true}}));
    };
    sink.failed = [done](const QString &why) {
        done(Error{ErrorCode::SandboxError,
                   QStringLiteral("the connection to the database server was lost: ") + why,
                   {}});
    };
    if (!conn->send(commit ? "COMMIT" : "ROLLBACK", {}, {}, {}, true, false, sink)) {
        release(conn);
        done(Error{ErrorCode::SandboxError, QStringLiteral("cannot end the transaction"), {}});
    }
}

CancelFn PostgresBackend::transaction(const QJsonArray &statements, PageDone done)
{
    // One round trip per statement, on one connection: BEGIN, each statement with its params,
    // COMMIT; the first error rolls everything back.
    struct Tx
    {
        std::shared_ptr<Query> q = std::make_shared<Query>();
        QJsonArray statements;
        int index = -1;
        PgConnection *conn = nullptr;
        PageDone done;
        bool cancelled = false;
        std::function<void()> step;
        // What the statements' kept rows may still take (a page's bytes, for all of them: each
        // keeps up to kTransactionRows, and there may be 1,000 statements).
        qint64 bytesLeft = PageLimits::kMaxBytes;
    };
    auto tx = std::make_shared<Tx>();
    tx->statements = statements;
    tx->done = std::move(done);
    QPointer<PostgresBackend> self(this);
    auto finish = std::make_shared<PageDone>();
    *finish = [self, tx](Result<Page> r) {
        if (!tx->done)
            return;
        auto done = std::exchange(tx->done, {});
        if (self && tx->conn)
            self->release(
                std::exchange(tx->conn, nullptr)); // release() rolls back an open transaction
        if (self) // tx -> step -> tx: broken once the step that called us has returned
            QTimer::singleShot(0, self, [tx] { tx->step = {}; });
        done(std::move(r));
    };
    tx->step = [self, tx, finish] {
        if (!self)
            return;
        ++tx->index;
        const bool commit = tx->index == tx->statements.size();
        QByteArray sql;
        QList<QByteArray> values;
        QList<bool> nulls, binary;
        if (commit) {
            sql = "COMMIT";
        } else {
            const QJsonObject s = tx->statements[tx->index].toObject();
            sql = s.value(QStringLiteral("sql")).toString().toUtf8();
            const QJsonArray params = s.value(QStringLiteral("params")).toArray();
            for (qsizetype i = 0; i < params.size(); ++i) {
                const auto p = PgValues::fromJson(params[i], int(i));
                if (!p) {
                    Error e = p.error();
                    e.data = QJsonObject{
                        {QStringLiteral("field"),
                         QStringLiteral("statements[%1].params[%2]").arg(tx->index).arg(i)}};
                    return (*finish)(e);
                }
                values.append(p->value);
                nulls.append(p->isNull);
                binary.append(p->binary);
            }
        }
        auto sq = std::make_shared<Query>();
        sq->transaction = true;
        sq->statementCount = 1;
        sq->pageBytes = tx->bytesLeft;
        sq->pending = [tx, finish, commit](Result<Page> r) {
            if (!r) {
                Error e = r.error();
                QJsonObject data = e.data.toObject();
                if (!commit)
                    data.insert(QStringLiteral("statementIndex"), tx->index);
                e.data = data;
                return (*finish)(e);
            }
            if (commit)
                return (*finish)(Page(QJsonObject{{QStringLiteral("results"), tx->q->results}}));
            const QJsonArray results = r->value(QStringLiteral("results")).toArray();
            tx->q->results.append(results.isEmpty() ? QJsonValue(QJsonObject{}) : results.first());
            if (!results.isEmpty())
                tx->bytesLeft -= approximateSize(results.first()[QStringLiteral("rows")]);
            if (tx->cancelled)
                return (*finish)(Error{ErrorCode::Cancelled,
                                       QStringLiteral("the transaction was cancelled"),
                                       {}});
            if (tx->step)
                tx->step();
        };
        // The transaction keeps its connection from statement to statement.
        sq->holdConnection = true;
        self->runQuery(sq, tx->conn, sql, values, nulls, binary, false);
    };
    acquire([self, tx, finish](Result<PgConnection *> r) {
        if (!self)
            return;
        if (!r)
            return (*finish)(r.error());
        tx->conn = *r;
        PgConnection::Sink sink;
        auto failed = std::make_shared<std::optional<Error>>();
        sink.result = [failed](PGresult *res) {
            if (PQresultStatus(res) == PGRES_FATAL_ERROR)
                *failed = pgError(res);
        };
        sink.finished = [failed, finish, tx] {
            if (*failed)
                return (*finish)(**failed);
            if (tx->step)
                tx->step();
        };
        sink.failed = [finish, tx](const QString &why) {
            tx->conn = nullptr; // dropped by its broken() signal
            (*finish)(Error{ErrorCode::SandboxError,
                            QStringLiteral("the connection to the database server was lost: ") + why,
                            {}});
        };
        if (!tx->conn->send("BEGIN", {}, {}, {}, true, false, sink))
            (*finish)(
                Error{ErrorCode::SandboxError, QStringLiteral("cannot start a transaction"), {}});
    });
    return [tx] {
        tx->cancelled = true;
        if (tx->conn)
            tx->conn->cancel();
    };
}

void PostgresBackend::closeIdle()
{
    for (const QString &c : m_cursors.keys())
        closeCursor(c);
    if (PgConnection *admin = std::exchange(m_standbyAdmin, nullptr))
        drop(admin);
    const auto idle = m_idle;
    for (PgConnection *c : idle)
        drop(c);
}

void PostgresBackend::stop(std::function<void()> done)
{
    m_stopping = true;
    closeIdle();
    if (!m_alive || !m_channel)
        return done();
    m_onStopped = std::move(done);
    // A fast shutdown: open transactions roll back, committed ones are already on disk.
    m_channel->request({{QStringLiteral("op"), QStringLiteral("exec")},
                        {QStringLiteral("shell"),
                         QStringLiteral("kill -INT \"$(head -n1 %1/postmaster.pid)\"").arg(kDataDir)},
                        {QStringLiteral("timeoutMs"), 5000}},
                       {}, [](Result<SupervisorChannel::Reply>) {});
    QPointer<PostgresBackend> self(this);
    QTimer::singleShot(kStopTimeoutMs, this, [self] {
        if (self && self->m_onStopped) {
            qCWarning(lcPg) << "the PostgreSQL server did not stop in time";
            std::exchange(self->m_onStopped, {})();
        }
    });
}

void PostgresBackend::serverGone(const QString &why)
{
    const bool expected = m_stopping;
    m_alive = false;
    closeIdle();
    const auto waiters = std::exchange(m_waiters, {});
    for (const auto &w : waiters)
        w(Error{ErrorCode::SandboxNotRunning, why, {}});
    if (auto stopped = std::exchange(m_onStopped, {}))
        stopped();
    if (!expected) {
        qCWarning(lcPg) << why;
        Q_EMIT serverExited(why);
    }
}

const SqlDialect &PostgresBackend::sqlDialect()
{
    static const SqlDialect d{
        QStringLiteral("postgres"),
        QStringLiteral("SELECT version()"),
        QStringLiteral("SELECT table_schema, table_name, CASE WHEN table_type = 'VIEW' THEN 'view' "
                       "ELSE 'table' END FROM information_schema.tables WHERE table_schema NOT IN "
                       "('pg_catalog', 'information_schema')  ORDER BY 1, 2"),
        QStringLiteral("SELECT datname, pg_get_userbyid(datdba), pg_database_size(oid) FROM "
                       "pg_database WHERE NOT datistemplate ORDER BY 1"),
        QStringLiteral(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid), "
            "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND "
            "a.attnum = ANY(i.indkey)) "
            "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON "
            "n.oid = c.relnamespace "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER "
            "BY a.attnum"),
        QStringLiteral(
            "SELECT i.relname, ix.indisunique, ix.indisprimary, pg_get_indexdef(ix.indexrelid), "
            // The key columns in the index's order (a join on unnest() keeps none), an
            // expression as its text.
            "array(SELECT CASE WHEN ix.indkey[k] = 0 THEN pg_get_indexdef(ix.indexrelid, k + 1, "
            "true) ELSE (SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = "
            "ix.indrelid AND a.attnum = ix.indkey[k]) END FROM generate_series(0, "
            "ix.indnkeyatts - 1) k ORDER BY k) "
            "FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = "
            "ix.indexrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 AND t.relname = $2 "
            "ORDER BY 1"),
        QStringLiteral("public"),
        /*databasesHaveOwners=*/true,
        /*createsDatabases=*/true,
        /*writesFiles=*/false,
    };
    return d;
}

} // namespace Sandbox::Engine
