#include "databasemethods.h"

#include "databasebackend.h"
#include "databasecatalog.h"
#include "databasehost.h"
#include "pagetext.h"
#include "protocol/fieldreader.h"
#include "sqlcommand.h"
#include "tableexport.h"
#include "timedcall.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QPointer>
#include <QTimer>

Q_DECLARE_LOGGING_CATEGORY(lcDatabases)

namespace Sandbox::Engine {

namespace {

constexpr qint64 kDefaultTransactionIdleMs = 60000;
constexpr qint64 kMaxTransactionIdleMs = 600000;
constexpr int kMaxStatements = 1000;

qint64 now()
{
    return QDateTime::currentMSecsSinceEpoch();
}

// The reply of a call that keeps its database awake: the activity ends as it answers (unless a
// cursor took it over first).
Methods::Reply ending(const SharedActivity &activity, const Methods::Reply &reply)
{
    return [activity, reply](Result<QJsonValue> r) {
        activity->end();
        reply(std::move(r));
    };
}

// Positions in errors: 1-based, in characters (code points) of the SQL text, plus line and
// column (1-based). Engines report a byte offset (SQLite), a character position (PostgreSQL)
// or a line and column (DuckDB); all three come out the same.
void locate(const QString &sql, Error &error)
{
    QJsonObject data = error.data.toObject();
    const QList<uint> cps = sql.toUcs4();
    qint64 position = -1;
    if (data.contains(QStringLiteral("offset"))) {
        const QByteArray utf8 = sql.toUtf8();
        const qint64 offset = qBound<qint64>(0, data.take(QStringLiteral("offset")).toInteger(),
                                             utf8.size());
        position = QString::fromUtf8(utf8.left(offset)).toUcs4().size() + 1;
    } else if (data.contains(QStringLiteral("position"))) {
        position = data.value(QStringLiteral("position")).toInteger();
    } else if (data.contains(QStringLiteral("line"))) {
        const qint64 line = data.value(QStringLiteral("line")).toInteger();
        const qint64 column = data.value(QStringLiteral("column")).toInteger(1);
        qint64 l = 1, i = 0;
        for (; i < cps.size() && l < line; ++i)
            if (cps[i] == '\n')
                ++l;
        if (l == line)
            position = i + qMax<qint64>(column, 1);
    }
    if (position >= 1) {
        qint64 line = 1, column = 1;
        for (qint64 i = 0; i < position - 1 && i < cps.size(); ++i) {
            if (cps[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        data.insert(QStringLiteral("position"), position);
        data.insert(QStringLiteral("line"), line);
        data.insert(QStringLiteral("column"), column);
    }
    error.data = data;
}

// The most an answer's rows may take as objects: each row repeats the column names, and a page
// of short values under long names (a name may be megabytes long) is many times its arrays' text,
// which the page's bounds count.
constexpr qsizetype kMaxObjectRowsBytes = 2 * PageLimits::kMaxRowBytes;

Error objectRowsTooLarge()
{
    return Error{ErrorCode::PayloadTooLarge,
                 QStringLiteral("the rows as objects would take over %1 MiB (each row repeats the "
                                "column names): ask for fewer rows (pageSize), or for rowMode "
                                "\"array\"")
                     .arg(kMaxObjectRowsBytes >> 20),
                 {}};
}

// The text of `members` with "rows" set to `arrays`, the text of `count` rows as arrays: as they
// are, or as objects keyed by the names of `objectFields` (at most `maxBytes` of them, else
// tooLarge). In three parts, for a RawReply.
struct RowsAnswer
{
    QByteArray head;
    QByteArray rows;
    bool tooLarge = false;

    RowsAnswer(const QJsonObject &members, const QByteArray &arrays, qsizetype count,
               const QJsonArray *objectFields, qsizetype maxBytes = kMaxObjectRowsBytes)
        : head(PageText::rowsHead(members))
    {
        if (!objectFields) {
            rows = arrays;
            return;
        }
        std::optional<QByteArray> objects = PageText::objectRows(arrays, count, *objectFields,
                                                                 maxBytes);
        tooLarge = !objects;
        rows = std::move(objects).value_or(QByteArray());
    }
    QList<QByteArray> parts() const { return {head, rows, QByteArrayLiteral("}")}; }
};

// A fetched page's members but its rows.
QJsonObject pageMembers(const QString &cursorId, qsizetype rowCount, bool done)
{
    return {{QStringLiteral("rowCount"), rowCount},
            {QStringLiteral("done"), done},
            {QStringLiteral("cursor"), done ? QJsonValue() : QJsonValue(cursorId)}};
}

QByteArray textOf(const QJsonArray &rows)
{
    return QJsonDocument(rows).toJson(QJsonDocument::Compact);
}

QJsonArray toObjects(const QJsonArray &fields, const QJsonArray &rows)
{
    QStringList names;
    for (const QJsonValue &f : fields)
        names.append(f.toObject().value(QStringLiteral("name")).toString());
    QJsonArray out;
    for (const QJsonValue &row : rows) {
        const QJsonArray r = row.toArray();
        QJsonObject o;
        for (qsizetype i = 0; i < r.size() && i < names.size(); ++i)
            o.insert(names[i], r[i]);
        out.append(o);
    }
    return out;
}

// A paged result's command tag is only known at its end: name it by its statement.
QString statementCommand(const QString &sql)
{
    return QString::fromStdString(SqlCommand::statementCommand(sql.toStdString()));
}

QJsonArray slice(const QJsonArray &rows, qsizetype from, qsizetype count)
{
    QJsonArray out;
    for (qsizetype i = from; i < from + count; ++i)
        out.append(rows.at(i));
    return out;
}

bool objectRowMode(FieldReader &p)
{
    return p.optionalChoice(QStringLiteral("rowMode"),
                            {QStringLiteral("object"), QStringLiteral("array")},
                            QStringLiteral("object"))
           == QLatin1String("object");
}

qint64 timeoutOf(FieldReader &p)
{
    return p.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1, kMaxTimeoutMs);
}

int pageSizeOf(FieldReader &p)
{
    return int(p.optionalInteger(QStringLiteral("pageSize"), PageLimits::kDefaultRows, 1,
                                 PageLimits::kMaxRows));
}

} // namespace

// databases.query, queryWithMetadata and execute, read.
struct DatabaseMethods::QueryCall
{
    QString id;
    SqlRequest request;
    qint64 timeoutMs = kDefaultTimeoutMs;
    bool objectRows = true;
};

struct DatabaseMethods::OpenTransaction
{
    QString id;
    QString keyId;
    QString databaseId;
    qint64 idleMs = kDefaultTransactionIdleMs;
    qint64 lastUsed = 0;
    bool running = false; // a statement or the end is on its way
    ActivityToken activity;
};

DatabaseMethods::DatabaseMethods(DatabaseHost *host, QObject *parent)
    : DatabaseMethods(host, Limits{}, parent)
{}

DatabaseMethods::DatabaseMethods(DatabaseHost *host, Limits limits, QObject *parent)
    : QObject(parent)
    , m_host(host)
    , m_limits(limits)
    , m_cursors(limits.cursors, [host](const QString &id) { return host->backendOf(id); })
    , m_sweep(new QTimer(this))
{
    m_sweep->setInterval(m_limits.sweepMs);
    connect(m_sweep, &QTimer::timeout, this, &DatabaseMethods::sweep);
    m_sweep->start();
}

DatabaseMethods::~DatabaseMethods() = default;

QList<std::pair<QString, Methods::Handler>> DatabaseMethods::handlers()
{
    QList<std::pair<QString, Methods::Handler>> out;
    auto add = [&out](const QString &name, Methods::Handler h) {
        out.append({QStringLiteral("databases.") + name, std::move(h)});
    };
    for (const QString &m :
         {QStringLiteral("query"), QStringLiteral("queryWithMetadata"), QStringLiteral("execute")})
        add(m, [this, m](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            query(m, p, ctx, reply);
        });
    add(QStringLiteral("fetch"), [this](const QJsonObject &p, const CallContext &ctx,
                                        const Reply &reply) { fetch(p, ctx, reply); });
    add(QStringLiteral("closeCursor"), [this](const QJsonObject &p, const CallContext &ctx,
                                              const Reply &reply) { closeCursor(p, ctx, reply); });
    add(QStringLiteral("transaction"), [this](const QJsonObject &p, const CallContext &ctx,
                                              const Reply &reply) { transaction(p, ctx, reply); });
    add(QStringLiteral("begin"), [this](const QJsonObject &p, const CallContext &ctx,
                                        const Reply &reply) { begin(p, ctx, reply); });
    add(QStringLiteral("commit"), [this](const QJsonObject &p, const CallContext &ctx,
                                         const Reply &reply) { finish(true, p, ctx, reply); });
    add(QStringLiteral("rollback"), [this](const QJsonObject &p, const CallContext &ctx,
                                           const Reply &reply) { finish(false, p, ctx, reply); });
    for (const QString &m : {QStringLiteral("version"), QStringLiteral("ping"),
                             QStringLiteral("listTables"), QStringLiteral("describeTable"),
                             QStringLiteral("listDatabases"), QStringLiteral("createDatabase")})
        add(m, [this, m](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            catalogCall(m_host, &m_deadlines, m, p, ctx, reply);
        });
    add(QStringLiteral("exportData"),
        [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            exportTable(m_host, &m_deadlines, p, ctx, reply);
        });
    return out;
}

void DatabaseMethods::serverGone(const QString &databaseId)
{
    for (const auto &t : m_transactions.values())
        if (t->databaseId == databaseId)
            forgetTransaction(t->id); // its session ended with the server
    // Closed from the event loop: the server may be telling this from inside one of its calls.
    for (const QString &id : m_cursors.idsOf(databaseId))
        QTimer::singleShot(0, this, [this, id] { m_cursors.close(id); });
}

void DatabaseMethods::removed(const QString &databaseId)
{
    for (const auto &t : m_transactions.values())
        if (t->databaseId == databaseId)
            forgetTransaction(t->id);
    m_cursors.drop(databaseId);
}

void DatabaseMethods::sweep()
{
    m_cursors.expire();
    expireTransactions();
}

DatabaseMethods::OpenTransaction *DatabaseMethods::transactionOf(const QString &txId,
                                                                 const CallContext &ctx,
                                                                 const QString &databaseId) const
{
    OpenTransaction *t = m_transactions.value(txId).get();
    return t && t->keyId == ctx.keyId && t->databaseId == databaseId ? t : nullptr;
}

void DatabaseMethods::query(const QString &method, const QJsonObject &params,
                            const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    QueryCall call;
    call.id = p.requiredString(QStringLiteral("id"));
    SqlRequest &req = call.request;
    req.sql = p.requiredSqlText(QStringLiteral("sql"));
    const QJsonValue rawParams = p.raw(QStringLiteral("params"));
    if (rawParams.isArray())
        req.params = rawParams.toArray();
    else if (!rawParams.isUndefined() && !rawParams.isNull() && !p.failed())
        p.fail(QStringLiteral("params"), QStringLiteral("must be an array"));
    req.execute = method == QLatin1String("execute");
    req.pageSize = pageSizeOf(p);
    req.pageBytes = PageLimits::kMaxBytes;
    call.timeoutMs = timeoutOf(p);
    call.objectRows = objectRowMode(p);
    // Rows go to the client as the text a backend wrote (PageText), or as objects written from it.
    req.rowsAsText = ctx.replyRaw && !req.execute;
    if (!p.failed() && req.sql.trimmed().isEmpty())
        p.fail(QStringLiteral("sql"), QStringLiteral("must not be empty"));
    req.transaction = p.optionalString(QStringLiteral("transaction"));
    OpenTransaction *tx = nullptr;
    if (!p.failed() && !req.transaction.isEmpty()) {
        tx = transactionOf(req.transaction, ctx, call.id);
        if (!tx)
            return reply(Error::notFound(
                QStringLiteral("transaction %1 (it ended, or is not this database's)")
                    .arg(req.transaction)));
        if (tx->running)
            p.fail(QStringLiteral("transaction"),
                   QStringLiteral("is running a statement: wait for its answer"));
    }
    if (p.failed())
        return reply(p.error());
    if (tx) {
        tx->running = true;
        tx->lastUsed = now();
    }
    runQuery(call, ctx, reply);
}

void DatabaseMethods::runQuery(const QueryCall &call, const CallContext &ctx, const Reply &reply)
{
    const CallContext c = ctx;
    m_host->withBackend(
        ctx, call.id, [this, call, c, reply](Result<DatabaseBackend *> b, ActivityToken token) {
            const SqlRequest &req = call.request;
            if (OpenTransaction *t = m_transactions.value(req.transaction).get())
                t->running = false;
            if (!b)
                return reply(b.error());
            QPointer<DatabaseBackend> backend = *b;
            const SharedActivity activity = share(std::move(token));
            runTimed(
                &m_deadlines, call.timeoutMs, m_limits.cancelGraceMs, c,
                [backend, req](PageDone done) { return backend->query(req, std::move(done)); },
                [this, call, c, backend, activity,
                 answer = ending(activity, reply)](Result<Page> r) {
                    const SqlRequest &req = call.request;
                    if (!r) {
                        Error e = r.error();
                        if (e.code == ErrorCode::QueryError || e.code == ErrorCode::InvalidParams)
                            locate(req.sql, e);
                        // The statement of a script that failed (SQLite, DuckDB: the ones
                        // before it stay), said as a transaction's failed statement is.
                        const int index
                            = e.data.toObject().value(QStringLiteral("statementIndex")).toInt(-1);
                        if (req.execute && index >= 0)
                            e.message = QStringLiteral("statement %1: ").arg(index) + e.message;
                        // A failed statement ends its transaction (the backend rolled it back).
                        if (!req.transaction.isEmpty()) {
                            forgetTransaction(req.transaction);
                            if (!e.message.contains(QLatin1String("rolled back")))
                                e.message += QStringLiteral(" (the transaction was rolled back)");
                        }
                        return answer(e);
                    }
                    const Page &page = *r;
                    if (OpenTransaction *t = m_transactions.value(req.transaction).get())
                        t->lastUsed = now();
                    if (req.execute)
                        return answer(
                            QJsonValue(QJsonObject{{QStringLiteral("rowsAffected"),
                                                    page.value(QStringLiteral("rowsAffected"))},
                                                   {QStringLiteral("command"),
                                                    page.value(QStringLiteral("command"))}}));
                    const QJsonArray fields = page.value(QStringLiteral("fields")).toArray();
                    const bool rowsAsText = page.hasRowsText();
                    const QJsonArray rows = rowsAsText && c.replyRaw ? QJsonArray()
                                                                     : PageText::rowsOf(page);
                    const QString backendCursor = page.value(QStringLiteral("cursor")).toString();
                    QJsonValue cursor;
                    if (!backendCursor.isEmpty() && backend) {
                        // The database stays awake until the cursor closes: it takes the activity.
                        CursorRegistry::Cursor opened;
                        opened.keyId = c.keyId;
                        opened.databaseId = call.id;
                        opened.backendCursor = backendCursor;
                        opened.fields = fields;
                        opened.objectRows = call.objectRows;
                        opened.activity = std::move(*activity);
                        opened.pageSize = req.pageSize;
                        const QString cursorId = m_cursors.open(std::move(opened));
                        cursor = cursorId;
                        readAhead(cursorId);
                    }
                    QString command = page.value(QStringLiteral("command")).toString();
                    if (command.isEmpty())
                        command = statementCommand(req.sql);
                    QJsonObject out{
                        {QStringLiteral("rowCount"), rowsAsText ? page.rowsTextCount : rows.size()},
                        {QStringLiteral("fields"), fields},
                        {QStringLiteral("command"), command},
                        {QStringLiteral("rowsAffected"),
                         page.value(QStringLiteral("rowsAffected"))},
                        {QStringLiteral("cursor"), cursor},
                        {QStringLiteral("hasMore"), !cursor.isNull()},
                    };
                    if (!req.transaction.isEmpty())
                        out.insert(QStringLiteral("truncated"),
                                   page.value(QStringLiteral("truncated")).toBool());
                    if (c.replyRaw) {
                        // Rows as text: the server's as it came (checked on arrival), or as
                        // objects written from that text, which is not parsed.
                        const RowsAnswer text(out, rowsAsText ? page.rowsText : textOf(rows),
                                              rowsAsText ? page.rowsTextCount : rows.size(),
                                              call.objectRows ? &fields : nullptr);
                        if (text.tooLarge) {
                            if (cursor.isString())
                                m_cursors.close(cursor.toString());
                            return answer(objectRowsTooLarge());
                        }
                        activity->end();
                        return c.replyRaw(text.parts());
                    }
                    out.insert(QStringLiteral("rows"),
                               call.objectRows ? toObjects(fields, rows) : rows);
                    out.insert(QStringLiteral("rowCount"), rows.size());
                    answer(QJsonValue(out));
                });
        });
}

void DatabaseMethods::fetch(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString cursorId = p.requiredString(QStringLiteral("cursor"));
    const int pageSize = pageSizeOf(p);
    const qint64 timeoutMs = timeoutOf(p);
    if (p.failed())
        return reply(p.error());
    CursorRegistry::Cursor *c = m_cursors.find(cursorId, ctx.keyId, id);
    if (!c)
        return reply(Error::notFound(
            QStringLiteral("cursor %1 (it was closed, read to the end or expired)").arg(cursorId)));
    if (c->fetching)
        return reply(
            Error::invalidParams(QStringLiteral("cursor"),
                                 QStringLiteral("a fetch on this cursor is already running")));
    DatabaseBackend *backend = m_host->backendOf(id);
    if (!backend || !backend->isAlive()) {
        m_cursors.close(cursorId);
        return reply(Error{ErrorCode::SandboxNotRunning,
                           QStringLiteral("the database server stopped; the cursor is gone"),
                           {}});
    }
    c->fetching = true;
    c->pageSize = pageSize;
    m_cursors.touch(c);
    runTimed(
        &m_deadlines, timeoutMs, m_limits.cancelGraceMs, ctx,
        [this, cursorId, pageSize](PageDone done) {
            return nextPage(cursorId, pageSize, std::move(done));
        },
        [this, cursorId, pageSize, reply, raw = ctx.replyRaw](Result<Page> r) {
            CursorRegistry::Cursor *c = m_cursors.get(cursorId);
            if (!c)
                return reply(
                    r ? Error{ErrorCode::Cancelled, QStringLiteral("the cursor was closed"), {}}
                      : r.error());
            c->fetching = false;
            m_cursors.touch(c);
            if (!r) {
                m_cursors.close(cursorId);
                return reply(r.error());
            }
            bool done = r->value(QStringLiteral("done")).toBool();
            if (r->hasRowsText() && raw && r->rowsTextCount <= pageSize) {
                // The server's text goes to the client as it came (checked on arrival), or
                // written as objects.
                const RowsAnswer text(pageMembers(cursorId, r->rowsTextCount, done), r->rowsText,
                                      r->rowsTextCount, c->objectRows ? &c->fields : nullptr);
                if (done || text.tooLarge)
                    m_cursors.close(cursorId);
                else
                    readAhead(cursorId);
                return text.tooLarge ? reply(objectRowsTooLarge()) : raw(text.parts());
            }
            QJsonArray rows = PageText::rowsOf(*r);
            if (rows.size() > pageSize) {
                // A page read ahead for a bigger fetch: the rest waits for the next one.
                c->carry = slice(rows, pageSize, rows.size() - pageSize);
                rows = slice(rows, 0, pageSize);
                c->serverDone = done;
                done = false;
            }
            const QJsonArray fields = c->fields;
            const bool objects = c->objectRows;
            if (done)
                m_cursors.close(cursorId);
            else if (c->carry.isEmpty())
                readAhead(cursorId);
            if (raw) {
                const RowsAnswer text(pageMembers(cursorId, rows.size(), done), textOf(rows),
                                      rows.size(), objects ? &fields : nullptr);
                if (!text.tooLarge)
                    return raw(text.parts());
                m_cursors.close(cursorId);
                return reply(objectRowsTooLarge());
            }
            QJsonObject page = pageMembers(cursorId, rows.size(), done);
            page.insert(QStringLiteral("rows"), objects ? toObjects(fields, rows) : rows);
            reply(QJsonValue(page));
        });
}

CancelFn DatabaseMethods::nextPage(const QString &cursorId, int pageSize, PageDone done)
{
    CursorRegistry::Cursor *c = m_cursors.get(cursorId);
    if (!c) {
        done(Error{ErrorCode::Cancelled, QStringLiteral("the cursor was closed"), {}});
        return [] {};
    }
    if (!c->carry.isEmpty() || c->serverDone) {
        const QJsonArray rows = slice(c->carry, 0, qMin<qsizetype>(pageSize, c->carry.size()));
        c->carry = slice(c->carry, rows.size(), c->carry.size() - rows.size());
        done(Page(QJsonObject{{QStringLiteral("rows"), rows},
                              {QStringLiteral("done"), c->carry.isEmpty() && c->serverDone}}));
        return [] {};
    }
    QPointer<DatabaseBackend> backend(m_host->backendOf(c->databaseId));
    if (const std::shared_ptr<CursorRegistry::ReadAhead> ahead = std::exchange(c->ahead, {})) {
        // A fetch bigger than the page read ahead gets the rest of its rows from the server in
        // the same answer (each of the two reads within half the bytes of a page).
        auto topUp = std::make_shared<CancelFn>();
        const QString serverCursor = c->backendCursor;
        PageDone complete = [backend, serverCursor, pageSize, done, topUp](Result<Page> first) {
            const qsizetype got = first ? PageText::rowCountOf(*first) : 0;
            if (!first || first->value(QStringLiteral("done")).toBool() || got >= pageSize
                || !backend || !backend->isAlive())
                return done(std::move(first));
            *topUp = backend->fetch(serverCursor, int(pageSize - got), PageLimits::kMaxBytes / 2,
                                    [first = *first, done](Result<Page> more) {
                                        if (!more)
                                            return done(std::move(more));
                                        done(PageText::concat(first, *more));
                                    });
        };
        auto cancel = [ahead, topUp] {
            if (const CancelFn c = ahead->cancel)
                c();
            if (const CancelFn c = *topUp)
                c();
        };
        if (ahead->page)
            complete(std::move(*ahead->page));
        else
            ahead->waiter = std::move(complete);
        return cancel;
    }
    if (!backend || !backend->isAlive()) {
        done(Error{ErrorCode::SandboxNotRunning, QStringLiteral("the database server stopped"), {}});
        return [] {};
    }
    return backend->fetch(c->backendCursor, pageSize, PageLimits::kMaxBytes, std::move(done));
}

void DatabaseMethods::readAhead(const QString &cursorId)
{
    CursorRegistry::Cursor *c = m_cursors.get(cursorId);
    if (!c || c->ahead || c->serverDone || !c->carry.isEmpty())
        return;
    DatabaseBackend *backend = m_host->backendOf(c->databaseId);
    if (!backend || !backend->isAlive())
        return;
    auto ahead = std::make_shared<CursorRegistry::ReadAhead>();
    c->ahead = ahead;
    // The cursor owns its read-ahead; the server's answer finds it through a weak reference (a
    // cursor closed meanwhile drops it).
    CancelFn cancel
        = backend->fetch(c->backendCursor, c->pageSize, PageLimits::kMaxBytes / 2,
                         [weak = std::weak_ptr<CursorRegistry::ReadAhead>(ahead)](Result<Page> r) {
                             const std::shared_ptr<CursorRegistry::ReadAhead> a = weak.lock();
                             if (!a)
                                 return;
                             a->running = false;
                             a->cancel = {};
                             if (PageDone waiter = std::exchange(a->waiter, {}))
                                 return waiter(std::move(r));
                             a->page = std::move(r);
                         });
    if (ahead->running)
        ahead->cancel = std::move(cancel);
}

void DatabaseMethods::closeCursor(const QJsonObject &params, const CallContext &ctx,
                                  const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString cursor = p.requiredString(QStringLiteral("cursor"));
    if (p.failed())
        return reply(p.error());
    const bool mine = m_cursors.find(cursor, ctx.keyId, id) != nullptr;
    if (mine)
        m_cursors.close(cursor);
    reply(QJsonValue(
        QJsonObject{{QStringLiteral("cursor"), cursor}, {QStringLiteral("closed"), mine}}));
}

void DatabaseMethods::transaction(const QJsonObject &params, const CallContext &ctx,
                                  const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 timeoutMs = timeoutOf(p);
    const bool objectRows = objectRowMode(p);
    QJsonArray statements;
    const QJsonArray given = p.raw(QStringLiteral("statements")).toArray();
    for (qsizetype i = 0; i < given.size() && !p.failed(); ++i) {
        const QJsonValue s = given[i];
        QJsonObject st = s.isString() ? QJsonObject{{QStringLiteral("sql"), s.toString()}}
                                      : s.toObject();
        FieldReader statement(st, QStringLiteral("statements[%1]").arg(i));
        (void)statement.requiredSqlText(QStringLiteral("sql")); // checked for a NUL
        if (st.value(QStringLiteral("sql")).toString().trimmed().isEmpty())
            p.fail(QStringLiteral("statements[%1].sql").arg(i),
                   QStringLiteral("must be a non-empty string"));
        else if (statement.failed())
            p.merge(statement);
        else if (st.contains(QStringLiteral("params"))
                 && !st.value(QStringLiteral("params")).isArray())
            p.fail(QStringLiteral("statements[%1].params").arg(i),
                   QStringLiteral("must be an array"));
        statements.append(st);
    }
    if (!p.failed() && (statements.isEmpty() || statements.size() > kMaxStatements))
        p.fail(QStringLiteral("statements"),
               QStringLiteral("must be 1 to %1 statements").arg(kMaxStatements));
    if (p.failed())
        return reply(p.error());
    m_host->withBackend(
        ctx, id,
        [this, statements, timeoutMs, objectRows, c = ctx, reply](Result<DatabaseBackend *> b,
                                                                  ActivityToken token) {
            if (!b)
                return reply(b.error());
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                &m_deadlines, timeoutMs, m_limits.cancelGraceMs, c,
                [backend, statements](PageDone done) {
                    return backend->transaction(statements, std::move(done));
                },
                [statements, objectRows, raw = c.replyRaw, activity = share(std::move(token)),
                 reply](Result<Page> r) {
                    const Methods::Reply answer = ending(activity, reply);
                    if (!r) {
                        Error e = r.error();
                        const int index
                            = e.data.toObject().value(QStringLiteral("statementIndex")).toInt(-1);
                        if (index >= 0 && index < statements.size()
                            && e.code == ErrorCode::QueryError)
                            locate(statements[index]
                                       .toObject()
                                       .value(QStringLiteral("sql"))
                                       .toString(),
                                   e);
                        e.message = (index >= 0 ? QStringLiteral("statement %1: ").arg(index)
                                                : QString())
                                    + e.message
                                    + QStringLiteral(" (the transaction was rolled back)");
                        return answer(e);
                    }
                    if (raw) {
                        // As a query's rows: text, objects keyed in column order (all of them
                        // within the bound of one page's).
                        QList<RowsAnswer> results;
                        qsizetype budget = kMaxObjectRowsBytes;
                        for (const QJsonValue &v : r->value(QStringLiteral("results")).toArray()) {
                            QJsonObject o = v.toObject();
                            const QJsonArray rows = o.take(QStringLiteral("rows")).toArray();
                            o.insert(QStringLiteral("rowCount"), rows.size());
                            const QJsonArray fields = o.value(QStringLiteral("fields")).toArray();
                            results.append(RowsAnswer(o, textOf(rows), rows.size(),
                                                      objectRows ? &fields : nullptr, budget));
                            if (results.last().tooLarge)
                                return answer(objectRowsTooLarge());
                            budget -= results.last().rows.size();
                        }
                        activity->end();
                        QList<QByteArray> parts{
                            QByteArrayLiteral(R"({"committed":true,"results":[)")};
                        for (const RowsAnswer &one : std::as_const(results)) {
                            if (parts.size() > 1)
                                parts += QByteArrayLiteral(",");
                            parts += one.parts();
                        }
                        parts += QByteArrayLiteral("]}");
                        return raw(parts);
                    }
                    QJsonArray results;
                    for (const QJsonValue &v : r->value(QStringLiteral("results")).toArray()) {
                        QJsonObject o = v.toObject();
                        const QJsonArray rows = o.value(QStringLiteral("rows")).toArray();
                        if (objectRows)
                            o.insert(QStringLiteral("rows"),
                                     toObjects(o.value(QStringLiteral("fields")).toArray(), rows));
                        o.insert(QStringLiteral("rowCount"), rows.size());
                        results.append(o);
                    }
                    answer(QJsonValue(QJsonObject{{QStringLiteral("results"), results},
                                                  {QStringLiteral("committed"), true}}));
                });
        });
}

void DatabaseMethods::begin(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 idleMs = p.optionalInteger(QStringLiteral("timeout"), kDefaultTransactionIdleMs,
                                            1000, kMaxTransactionIdleMs);
    if (p.failed())
        return reply(p.error());
    int open = 0;
    for (const auto &t : std::as_const(m_transactions))
        open += t->databaseId == id ? 1 : 0;
    if (open >= m_limits.transactionsPerDatabase)
        return reply(Error{ErrorCode::QuotaExceeded,
                           QStringLiteral("at most %1 open transactions per database: commit or "
                                          "roll one back first")
                               .arg(m_limits.transactionsPerDatabase),
                           QJsonObject{{QStringLiteral("limit"), QStringLiteral("transactions")}}});
    const QString keyId = ctx.keyId;
    m_host->withBackend(ctx, id,
                        [this, id, keyId, idleMs, reply](Result<DatabaseBackend *> b,
                                                         ActivityToken token) {
                            if (!b)
                                return reply(b.error());
                            const QString txId = newHandleId(QStringLiteral("tx_"));
                            const SharedActivity activity = share(std::move(token));
                            (*b)->begin(txId, [this, id, keyId, idleMs, txId, activity,
                                               answer = ending(activity, reply)](Result<Page> r) {
                                if (!r)
                                    return answer(r.error());
                                // The database stays awake until the transaction ends: it takes the activity.
                                auto t = std::make_shared<OpenTransaction>();
                                t->id = txId;
                                t->keyId = keyId;
                                t->databaseId = id;
                                t->idleMs = idleMs;
                                t->lastUsed = now();
                                t->activity = std::move(*activity);
                                m_transactions.insert(txId, t);
                                answer(QJsonValue(
                                    QJsonObject{{QStringLiteral("transaction"), txId},
                                                {QStringLiteral("timeout"), double(idleMs)}}));
                            });
                        });
}

void DatabaseMethods::finish(bool commit, const QJsonObject &params, const CallContext &ctx,
                             const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString txId = p.requiredString(QStringLiteral("transaction"));
    if (p.failed())
        return reply(p.error());
    OpenTransaction *t = transactionOf(txId, ctx, id);
    if (!t)
        return reply(Error::notFound(
            QStringLiteral("transaction %1 (it ended, or is not this database's)").arg(txId)));
    if (t->running)
        return reply(Error::invalidParams(QStringLiteral("transaction"),
                                          QStringLiteral("is running a statement: wait for its "
                                                         "answer")));
    DatabaseBackend *backend = m_host->backendOf(id);
    if (!backend) {
        forgetTransaction(txId);
        return reply(Error::notFound(QStringLiteral("transaction %1 (it ended)").arg(txId)));
    }
    t->running = true;
    QPointer<QObject> guard(ctx.guard ? ctx.guard.data() : this);
    backend->finish(txId, commit, [this, txId, guard, reply](Result<Page> r) {
        forgetTransaction(txId);
        if (!guard)
            return;
        if (!r)
            return reply(r.error());
        reply(QJsonValue(r->members));
    });
}

void DatabaseMethods::forgetTransaction(const QString &txId)
{
    if (const std::shared_ptr<OpenTransaction> t = m_transactions.take(txId))
        t->activity.end();
}

void DatabaseMethods::expireTransactions()
{
    const qint64 t0 = now();
    for (const auto &t : m_transactions.values()) {
        if (t->running || t0 - t->lastUsed <= t->idleMs)
            continue;
        qCInfo(lcDatabases) << "rolling back idle transaction" << t->id << "of" << t->databaseId;
        const QString txId = t->id;
        if (DatabaseBackend *backend = m_host->backendOf(t->databaseId)) {
            t->running = true;
            backend->finish(txId, false, [this, txId](Result<Page>) { forgetTransaction(txId); });
        } else {
            forgetTransaction(txId);
        }
    }
}

} // namespace Sandbox::Engine
