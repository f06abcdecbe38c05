#include "dbhostbackend.h"

#include "api/socketwrite.h"
#include "pagetext.h"
#include "protocol/json.h"
#include "protocol/sandboxenums.h"
#include "runtime/supervisorchannel.h"
#include "serverprocess.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QLocalSocket>
#include <QLoggingCategory>
#include <QTimer>

#include <cerrno>
#include <cmath>
#include <fcntl.h>
#include <limits>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcDbHost, "sandboxd.databases.dbhost")

namespace Sandbox::Engine {

namespace {

constexpr int kReadyTimeoutMs = 20000;
constexpr int kReadyPollMs = 2;
constexpr int kStopTimeoutMs = 5000;
constexpr qsizetype kMaxLine = 64 * 1024 * 1024;
constexpr double kMaxSafeInteger = 9007199254740991.0; // 2^53 - 1: the ids the engine sends

const QByteArray kSocketName = "dbhost.sock";

// An answer line, checked as strict JSON first (the database host is the sandbox's). A page's
// rows stay the text the host wrote (Page::rowsText) when they are an array of arrays, which the
// same pass over the line finds and checks.
Page pageOf(QByteArrayView line)
{
    Json::Member rows;
    if (Json::validate(line, {"rows"}, &rows))
        return {};
    return PageText::fromLine(line, rows);
}

} // namespace

// One connection to sandbox-dbhost: requests out as lines, answers dispatched by id.
class DbHostBackend::Connection final : public QObject
{
public:
    using Handler = std::function<void(Result<Page>)>;

    Connection(int fd, QObject *parent)
        : QObject(parent)
        , m_socket(new QLocalSocket(this))
    {
        m_socket->setSocketDescriptor(fd, QLocalSocket::ConnectedState, QIODevice::ReadWrite);
        QObject::connect(m_socket, &QLocalSocket::readyRead, this, [this] { onReadyRead(); });
        QObject::connect(m_socket, &QLocalSocket::disconnected, this, [this] {
            failAll(QStringLiteral("the database host closed the connection"));
        });
    }

    bool isOpen() const { return !m_broken && m_socket->state() == QLocalSocket::ConnectedState; }
    int inFlight() const { return int(m_handlers.size()); }

    void send(quint64 id, QJsonObject request, Handler handler)
    {
        request.insert(QStringLiteral("id"), double(id));
        if (handler)
            m_handlers.emplace(id, std::move(handler));
        else
            ++m_unhandled;
        // Sent at once where the socket takes it (a request nearly always fits).
        writeNow(m_socket, QJsonDocument(request).toJson(QJsonDocument::Compact) + '\n');
    }

    void failAll(const QString &why)
    {
        const auto handlers = std::exchange(m_handlers, {});
        for (const auto &h : handlers)
            h(Error{ErrorCode::SandboxError, why, {}});
    }

private:
    void onReadyRead()
    {
        m_buffer += m_socket->readAll();
        // A page arrives in many reads: each looks for the line's end only in what is new.
        qsizetype start = 0, nl;
        while ((nl = m_buffer.indexOf('\n', qMax(start, m_scanned))) >= 0) {
            const QByteArrayView line(m_buffer.constData() + start, nl - start);
            start = nl + 1;
            m_scanned = start;
            const Page o = pageOf(line);
            // Every answer the host writes is a JSON object with its request's id (the engine's
            // ids are integers below 2^53), and it answers each request once. A line that is not
            // such an answer is a violation (the host is the sandbox's): the connection ends, and
            // its calls fail now instead of waiting for their timeouts.
            const double id = o.value(QStringLiteral("id")).toDouble(-1);
            if (!(id >= 0 && id <= kMaxSafeInteger && id == std::floor(id)))
                return breakOff(QStringLiteral("the database host sent a malformed answer"), line);
            if (const auto handler = m_handlers.take(quint64(id)))
                handler(o);
            else if (m_unhandled > 0)
                --m_unhandled; // the answer to a request sent without a handler (cancel, close)
            else
                return breakOff(QStringLiteral("the database host answered no request"), line);
        }
        m_buffer.remove(0, start);
        m_scanned = m_buffer.size();
        if (m_buffer.size() > kMaxLine)
            breakOff(QStringLiteral("the database host sent an answer over 64 MiB"), m_buffer);
    }

    // Closes the connection after a violation: it takes no more calls (isOpen), its calls fail
    // with `why`, and the log shows the start of what came, escaped (it is the sandbox's text).
    void breakOff(const QString &why, QByteArrayView what)
    {
        qCWarning(lcDbHost).noquote()
            << why << "- closing the connection; it began:"
            << QString::fromLatin1(what.first(qMin(what.size(), qsizetype(80)))
                                       .toByteArray()
                                       .toPercentEncoding(" {}[]\":,"));
        m_broken = true;
        m_buffer.clear();
        m_scanned = 0;
        failAll(why);
        m_socket->abort();
    }

    QLocalSocket *m_socket; // owned (child)
    QByteArray m_buffer;
    qsizetype m_scanned = 0; // bytes of m_buffer known to hold no line end
    QHash<quint64, Handler> m_handlers;
    qint64 m_unhandled = 0; // requests sent without a handler whose answers may still come
    bool m_broken = false;  // after a violation (breakOff)
};

DbHostBackend::DbHostBackend(Settings settings, QObject *parent)
    : DatabaseBackend(parent)
    , m_settings(std::move(settings))
    , m_server(new ServerProcess(QStringLiteral("the database host"), 2, this))
{
    connect(m_server, &ServerProcess::exited, this, &DbHostBackend::serverGone);
}

DbHostBackend::~DbHostBackend() = default;

void DbHostBackend::start(SupervisorChannel *channel, std::function<void(Result<bool>)> done)
{
    m_channel = channel;
    m_stopping = false;
    QJsonArray argv{fromWire<SandboxType>(m_settings.engine) == SandboxType::DuckDb
                        ? QStringLiteral("/run/sandbox/dbhost/sandbox-dbhost-duckdb")
                        : QStringLiteral("/run/sandbox/dbhost/sandbox-dbhost"),
                    QStringLiteral("--engine"),
                    m_settings.engine,
                    QStringLiteral("--database"),
                    m_settings.databaseFile,
                    QStringLiteral("--socket"),
                    QStringLiteral("/run/db/dbhost.sock"),
                    QStringLiteral("--memory-limit-mb"),
                    QString::number(m_settings.memoryLimitMb),
                    QStringLiteral("--threads"),
                    QString::number(m_settings.threads)};
    if (m_settings.spare)
        argv.append(QStringLiteral("--spare"));
    m_alive = true;
    m_server->start(channel, {{QStringLiteral("argv"), argv},
                              {QStringLiteral("cwd"), QStringLiteral("/workspace")}});
    connectOnce(QDateTime::currentMSecsSinceEpoch() + kReadyTimeoutMs, std::move(done));
}

void DbHostBackend::handOut(const QString &database, const QString &, const QString &,
                            std::function<void(Result<bool>)> done)
{
    const QString file = QStringLiteral("/workspace/") + database;
    const bool spare = std::exchange(m_settings.spare, false);
    const QString had = std::exchange(m_settings.databaseFile, file);
    if (!m_alive) {
        if (!m_channel)
            return done(Error{ErrorCode::SandboxError,
                              QStringLiteral("the database's sandbox went away"),
                              {}});
        return start(m_channel, std::move(done));
    }
    if (file == had)
        return done(true);
    if (!spare || !m_control || !m_control->isOpen())
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("the database host cannot take the file %1").arg(file),
                          {}});
    // Its first request: no other connection is open yet (nothing was handed out).
    QPointer<DbHostBackend> self(this);
    m_control->send(m_nextId++,
                    {{QStringLiteral("op"), QStringLiteral("adopt")},
                     {QStringLiteral("database"), file}},
                    [self, done](Result<Page> answer) {
                        if (!self)
                            return;
                        if (answer)
                            answer = self->answerOf(*answer);
                        done(answer ? Result<bool>(true) : Result<bool>(answer.error()));
                    });
}

void DbHostBackend::connectOnce(qint64 deadline, std::function<void(Result<bool>)> done)
{
    if (!m_alive)
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("the database did not start: ") + m_server->logTail(2),
                          {}});
    const Result<int> fd = SandboxSocket::connect(m_settings.socket, kSocketName);
    if (!fd) {
        if (QDateTime::currentMSecsSinceEpoch() > deadline)
            return done(Error{ErrorCode::SandboxError,
                              QStringLiteral("the database host did not become ready: ")
                                  + fd.error().message,
                              {}});
        QPointer<DbHostBackend> self(this);
        QTimer::singleShot(kReadyPollMs, this, [self, deadline, done] {
            if (self)
                self->connectOnce(deadline, done);
        });
        return;
    }
    delete m_control;
    m_control = new Connection(*fd, this);
    // The first call's connection, opened now: the host's thread for it is waiting when the first
    // query comes (a create's first result), instead of being connected and started then.
    if (m_idle.isEmpty() && m_open < m_settings.maxConnections) {
        if (const Result<int> query = SandboxSocket::connect(m_settings.socket, kSocketName)) {
            ++m_open;
            m_idle.append(new Connection(*query, this));
        }
    }
    done(true);
}

void DbHostBackend::acquire(std::function<void(Result<Connection *>)> then)
{
    if (!m_alive)
        return then(Error{ErrorCode::SandboxNotRunning,
                          QStringLiteral("the database host is not running"),
                          {}});
    while (!m_idle.isEmpty()) {
        Connection *c = m_idle.takeLast();
        if (c->isOpen())
            return then(c);
        c->deleteLater();
        --m_open;
    }
    if (m_open >= m_settings.maxConnections) {
        m_waiters.append(std::move(then));
        return;
    }
    const Result<int> fd = SandboxSocket::connect(m_settings.socket, kSocketName);
    if (!fd)
        return then(Error{ErrorCode::SandboxError,
                          QStringLiteral("cannot reach the database host: ") + fd.error().message,
                          fd.error().data});
    ++m_open;
    then(new Connection(*fd, this));
}

void DbHostBackend::release(Connection *c)
{
    if (!c->isOpen() || !m_alive) {
        c->deleteLater();
        --m_open;
        if (!m_waiters.isEmpty() && m_alive)
            acquire(m_waiters.takeFirst());
        return;
    }
    if (!m_waiters.isEmpty())
        return m_waiters.takeFirst()(c);
    m_idle.append(c);
}

Result<Page> DbHostBackend::answerOf(const Page &line) const
{
    const QJsonValue err = line.value(QStringLiteral("error"));
    if (!err.isObject()) {
        Page out = line;
        out.members.remove(QStringLiteral("id"));
        return out;
    }
    const QJsonObject e = err.toObject();
    const QString code = e.value(QStringLiteral("code")).toString();
    const QString message = clippedErrorText(e.value(QStringLiteral("message")).toString().toUtf8());
    // Where the error is: what the host says is passed on only as the whole numbers these are.
    QJsonObject data;
    for (const char *key : {"offset", "line", "column", "statementIndex"}) {
        const QString k = QLatin1String(key);
        const QJsonValue v = e.value(k);
        const double n = v.toDouble(-1);
        if (v.isDouble() && n >= 0 && n <= std::numeric_limits<int>::max() && n == std::floor(n))
            data.insert(k, qint64(n));
    }
    if (code == QLatin1String("sql"))
        return Error{ErrorCode::QueryError, message, data};
    if (code == QLatin1String("cancelled"))
        return Error{ErrorCode::Cancelled, message, data};
    if (code == QLatin1String("not_found"))
        return Error{ErrorCode::NotFound, message, data};
    if (code == QLatin1String("too_large"))
        return Error{ErrorCode::PayloadTooLarge, message, data};
    if (code == QLatin1String("bad_request")) {
        data.insert(QStringLiteral("field"), message.contains(QLatin1String("parameter"))
                                                 ? QStringLiteral("params")
                                                 : QStringLiteral("sql"));
        return Error{ErrorCode::InvalidParams, message, data};
    }
    return Error{ErrorCode::InternalError, message, data};
}

CancelFn DbHostBackend::call(QJsonObject request, PageDone done)
{
    const quint64 id = m_nextId++;
    QPointer<DbHostBackend> self(this);
    auto cancelled = std::make_shared<bool>(false);
    acquire([self, id, request, done, cancelled](Result<Connection *> r) {
        if (!self)
            return;
        if (!r)
            return done(r.error());
        if (*cancelled) {
            self->release(*r);
            return done(Error{ErrorCode::Cancelled, QStringLiteral("the query was cancelled"), {}});
        }
        Connection *c = *r;
        c->send(id, request, [self, c, done](Result<Page> answer) {
            if (!self)
                return;
            self->release(c);
            if (!answer)
                return done(answer.error());
            done(self->answerOf(*answer));
        });
    });
    return [self, id, cancelled] {
        *cancelled = true;
        if (self)
            self->control({{QStringLiteral("op"), QStringLiteral("cancel")},
                           {QStringLiteral("target"), double(id)}});
    };
}

void DbHostBackend::control(const QJsonObject &request)
{
    if (m_control && m_control->isOpen())
        m_control->send(m_nextId++, request, {});
}

CancelFn DbHostBackend::query(const SqlRequest &request, PageDone done)
{
    QJsonObject r{{QStringLiteral("op"),
                   request.execute ? QStringLiteral("execute") : QStringLiteral("query")},
                  {QStringLiteral("sql"), request.sql},
                  {QStringLiteral("params"), request.params},
                  {QStringLiteral("pageSize"), request.pageSize},
                  {QStringLiteral("pageBytes"), double(request.pageBytes)}};
    if (!request.transaction.isEmpty())
        r.insert(QStringLiteral("transaction"), request.transaction);
    return call(r, std::move(done));
}

void DbHostBackend::begin(const QString &name, PageDone done)
{
    call({{QStringLiteral("op"), QStringLiteral("begin")}, {QStringLiteral("transaction"), name}},
         std::move(done));
}

void DbHostBackend::finish(const QString &name, bool commit, PageDone done)
{
    call({{QStringLiteral("op"), commit ? QStringLiteral("commit") : QStringLiteral("rollback")},
          {QStringLiteral("transaction"), name}},
         std::move(done));
}

CancelFn DbHostBackend::fetch(const QString &cursor, int pageSize, qint64 pageBytes, PageDone done)
{
    return call({{QStringLiteral("op"), QStringLiteral("fetch")},
                 {QStringLiteral("cursor"), cursor},
                 {QStringLiteral("pageSize"), pageSize},
                 {QStringLiteral("pageBytes"), double(pageBytes)}},
                std::move(done));
}

void DbHostBackend::closeCursor(const QString &cursor)
{
    control({{QStringLiteral("op"), QStringLiteral("close")}, {QStringLiteral("cursor"), cursor}});
}

CancelFn DbHostBackend::transaction(const QJsonArray &statements, PageDone done)
{
    return call({{QStringLiteral("op"), QStringLiteral("transaction")},
                 {QStringLiteral("statements"), statements},
                 {QStringLiteral("maxRows"), PageLimits::kTransactionRows},
                 {QStringLiteral("maxBytes"), double(PageLimits::kMaxBytes)}},
                std::move(done));
}

CancelFn DbHostBackend::exportFile(const QString &sql, const QString &format, const QString &path,
                                   PageDone done)
{
    return call({{QStringLiteral("op"), QStringLiteral("export")},
                 {QStringLiteral("sql"), sql},
                 {QStringLiteral("format"), format},
                 {QStringLiteral("path"), path}},
                std::move(done));
}

void DbHostBackend::stop(std::function<void()> done)
{
    m_stopping = true;
    if (!m_alive)
        return done();
    m_onStopped = std::move(done);
    control({{QStringLiteral("op"), QStringLiteral("shutdown")}});
    QPointer<DbHostBackend> self(this);
    QTimer::singleShot(kStopTimeoutMs, this, [self] {
        if (self && self->m_onStopped)
            std::exchange(self->m_onStopped, {})();
    });
}

void DbHostBackend::serverGone(const QString &why)
{
    const bool expected = m_stopping;
    m_alive = false;
    const auto idle = std::exchange(m_idle, {});
    for (Connection *c : idle) {
        c->failAll(why);
        c->deleteLater();
        --m_open;
    }
    const auto waiters = std::exchange(m_waiters, {});
    for (const auto &w : waiters)
        w(Error{ErrorCode::SandboxNotRunning, why, {}});
    if (auto stopped = std::exchange(m_onStopped, {}))
        stopped();
    if (!expected) {
        qCWarning(lcDbHost) << why;
        Q_EMIT serverExited(why);
    }
}

const SqlDialect &DbHostBackend::dialectOf(const QString &engine)
{
    static const SqlDialect sqlite{
        QStringLiteral("sqlite"),
        QStringLiteral("SELECT 'SQLite ' || sqlite_version()"),
        QStringLiteral(
            "SELECT 'main', name, type FROM sqlite_schema WHERE type IN ('table','view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"),
        QStringLiteral("SELECT name, file, NULL FROM pragma_database_list ORDER BY seq"),
        QStringLiteral("SELECT name, type, NOT \"notnull\", dflt_value, pk > 0 FROM "
                       "pragma_table_info(?2, ?1) ORDER BY cid"),
        QStringLiteral(
            "SELECT il.name, il.\"unique\", il.origin = 'pk', s.sql, "
            "(SELECT json_group_array(ii.name) FROM pragma_index_info(il.name, ?1) ii) "
            "FROM pragma_index_list(?2, ?1) il LEFT JOIN sqlite_schema s ON s.name = il.name ORDER "
            "BY 1"),
        QStringLiteral("main"),
        /*databasesHaveOwners=*/false,
        /*createsDatabases=*/false,
        /*writesFiles=*/false,
    };
    static const SqlDialect duckdb{
        QStringLiteral("duckdb"),
        QStringLiteral("SELECT 'DuckDB ' || version()"),
        QStringLiteral("SELECT table_schema, table_name, CASE WHEN table_type = 'VIEW' THEN 'view' "
                       "ELSE 'table' END FROM information_schema.tables WHERE table_schema NOT IN "
                       "('pg_catalog', 'information_schema') AND table_catalog = "
                       "current_database() ORDER BY 1, 2"),
        QStringLiteral("SELECT database_name, path, NULL FROM duckdb_databases() WHERE NOT "
                       "internal ORDER BY 1"),
        QStringLiteral(
            "SELECT c.column_name, c.data_type, c.is_nullable = 'YES', c.column_default, "
            "coalesce((SELECT list_contains(k.constraint_column_names, c.column_name) FROM "
            "duckdb_constraints() k "
            "WHERE k.schema_name = $1 AND k.table_name = $2 AND k.constraint_type = 'PRIMARY KEY' "
            "LIMIT 1), false) "
            "FROM information_schema.columns c WHERE c.table_schema = $1 AND c.table_name = $2 "
            "AND c.table_catalog = current_database() ORDER BY c.ordinal_position"),
        // duckdb_indexes() names its columns in one text ("['\"na me\"', plain]": a list
        // of expressions, quoted as identifiers), and leaves out the indexes of PRIMARY KEY
        // and UNIQUE constraints, which PostgreSQL and SQLite list.
        QStringLiteral(
            "SELECT index_name, is_unique, is_primary, sql, [CASE WHEN e LIKE '\"%\"' THEN "
            "replace(e[2:-2], '\"\"', '\"') ELSE e END FOR e IN CAST(expressions AS "
            "VARCHAR[])] FROM duckdb_indexes() WHERE schema_name = $1 AND table_name = $2 "
            "UNION ALL SELECT constraint_name, true, constraint_type = 'PRIMARY KEY', "
            "constraint_text, constraint_column_names FROM duckdb_constraints() WHERE "
            "schema_name = $1 AND table_name = $2 AND constraint_type IN ('PRIMARY KEY', "
            "'UNIQUE') ORDER BY 1"),
        QStringLiteral("main"),
        /*databasesHaveOwners=*/false,
        /*createsDatabases=*/false,
        /*writesFiles=*/true,
    };
    return fromWire<SandboxType>(engine) == SandboxType::DuckDb ? duckdb : sqlite;
}

} // namespace Sandbox::Engine
