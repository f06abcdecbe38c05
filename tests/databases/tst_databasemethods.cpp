// The databases.* methods on a server (engine/databases/databasemethods.*) against a fake
// DatabaseBackend: cursors (the cap per database, idle expiry, the activity that keeps a database
// awake), statement timeouts and rpc.cancel, transactions. Milliseconds, no server.
#include "databases/databasebackend.h"
#include "databases/databasehost.h"
#include "databases/databasemethods.h"
#include "databases/sqlcommand.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QTest>
#include <QTimer>

#include <numeric>
#include <optional>

using namespace Sandbox;
using namespace Sandbox::Engine;

namespace {

const QString kDb = QStringLiteral("db_1");
const QString kKey = QStringLiteral("key_1");

// A server that answers as the test says: pages of `rows` rows with a cursor while more remain,
// or never (`hang`), cancelled or not.
class FakeBackend final : public DatabaseBackend
{
public:
    using DatabaseBackend::DatabaseBackend;

    void start(SupervisorChannel *, std::function<void(Result<bool>)> done) override { done(true); }
    void stop(std::function<void()> done) override { done(); }
    bool isAlive() const override { return alive; }
    void handOut(const QString &, const QString &, const QString &,
                 std::function<void(Result<bool>)> done) override
    {
        done(true);
    }
    const SqlDialect &dialect() const override { return m_dialect; }

    CancelFn query(const SqlRequest &request, PageDone done) override
    {
        requests.append(request);
        if (hang)
            return hung(std::move(done));
        if (!failWith.message.isEmpty())
            return done(failWith), CancelFn([] {});
        const QString cursor = rows > request.pageSize ? QStringLiteral("b%1").arg(++m_nextCursor)
                                                       : QString();
        if (!cursor.isEmpty())
            m_left.insert(cursor, rows - request.pageSize);
        done(Page(
            QJsonObject{{QStringLiteral("fields"),
                         QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("n")},
                                                {QStringLiteral("type"), QStringLiteral("int")}}}},
                        {QStringLiteral("rows"), page(qMin(rows, request.pageSize))},
                        {QStringLiteral("rowsAffected"), 0},
                        {QStringLiteral("cursor"), cursor.isEmpty() ? QJsonValue() : cursor}}));
        if (cancelHoldsCallback) // as PostgreSQL's: the cancel function keeps the query's state
            return [done] { (void)done; };
        return [] {};
    }
    CancelFn fetch(const QString &cursor, int pageSize, qint64, PageDone done) override
    {
        ++fetches;
        if (hang)
            return hung(std::move(done));
        const int left = m_left.value(cursor);
        const int n = qMin(left, pageSize);
        m_left.insert(cursor, left - n);
        done(Page(QJsonObject{{QStringLiteral("rows"), page(n, rows - left)},
                              {QStringLiteral("done"), left - n == 0}}));
        return [] {};
    }
    void closeCursor(const QString &cursor) override
    {
        closed.append(cursor);
        m_left.remove(cursor);
    }
    CancelFn transaction(const QJsonArray &, PageDone done) override
    {
        done(Page(QJsonObject{{QStringLiteral("results"), QJsonArray()}}));
        return [] {};
    }
    void begin(const QString &name, PageDone done) override
    {
        sessions.append(name);
        done(Page());
    }
    void finish(const QString &name, bool commit, PageDone done) override
    {
        sessions.removeAll(name);
        done(Page(QJsonObject{{QStringLiteral("committed"), commit}}));
    }

    int rows = 0;
    bool alive = true;
    bool hang = false;
    bool answersCancel = true; // a hung call answers Cancelled when cancelled
    bool cancelHoldsCallback = false;
    Error failWith;
    int cancels = 0;
    int fetches = 0; // the engine's and its read-aheads'
    QList<SqlRequest> requests;
    QStringList closed;
    QStringList sessions;

private:
    // Rows numbered from `first` in the order of the result.
    static QJsonArray page(int n, int first = 0)
    {
        QJsonArray rows;
        for (int i = 0; i < n; ++i)
            rows.append(QJsonArray{first + i});
        return rows;
    }
    CancelFn hung(PageDone done)
    {
        return [this, done] {
            ++cancels;
            if (answersCancel)
                done(Error{ErrorCode::Cancelled, QStringLiteral("canceling statement"), {}});
        };
    }

    SqlDialect m_dialect = [] {
        SqlDialect d;
        d.type = QStringLiteral("postgres");
        return d;
    }();
    int m_nextCursor = 0;
    QHash<QString, int> m_left;
};

// The engine around the methods: one database of key kKey, and how many activities keep it awake.
class FakeHost final : public DatabaseHost
{
public:
    Result<const SqlDialect *> dialectOf(const QString &keyId, const QString &id) const override
    {
        if (keyId != kKey || id != kDb)
            return Error::notFound(QStringLiteral("sandbox %1").arg(id));
        return &backend.dialect();
    }
    void withBackend(const CallContext &, const QString &id, WithBackend then) override
    {
        if (id != kDb)
            return then(Error::notFound(QStringLiteral("sandbox %1").arg(id)), ActivityToken());
        ++awake;
        then(&backend, ActivityToken([this] { --awake; }));
    }
    DatabaseBackend *backendOf(const QString &id) const override
    {
        return id == kDb && running ? &backend : nullptr;
    }
    void call(const QString &, const QJsonObject &, const CallContext &,
              Methods::Reply reply) override
    {
        reply(Error{ErrorCode::NotImplemented, {}, {}});
    }

    mutable FakeBackend backend;
    bool running = true;
    int awake = 0; // activities begun and not ended
};

} // namespace

class tst_DatabaseMethods : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void aCursorKeepsTheDatabaseAwakeUntilReadToTheEnd();
    void theLeastRecentlyUsedCursorClosesBeyondTheCap();
    void anIdleCursorExpires();
    void theNextPageIsReadBeforeTheClientAsks();
    void fetchesOfAnySizeGetEveryRowInOrder();
    void aStatementPastItsTimeoutIsCancelled();
    void aServerThatIgnoresTheCancelStillAnswersTimeout();
    void aShortTimeoutAfterALongOneComesFirst();
    void callsInFlightHoldNoTimerEach();
    void rpcCancelCancelsTheStatement();
    void anAnsweredCallKeepsNothingAlive();
    void errorPositionsAreCharactersLinesAndColumns();
    void aFailedStatementEndsItsTransaction();
    void transactionsPerDatabaseAreCapped();
    void anotherKeysCursorIsNotFound();
    void aStatementsCommandLooksPastItsCommonTableExpressions_data();
    void aStatementsCommandLooksPastItsCommonTableExpressions();
    void aScriptSplitsAtItsSemicolons_data();
    void aScriptSplitsAtItsSemicolons();

private:
    Result<QJsonObject> call(const QString &method, QJsonObject params, const CallContext &ctx = {});
    QString openCursor(); // a query of 10 rows, pages of 2

    std::unique_ptr<FakeHost> m_host;
    std::unique_ptr<DatabaseMethods> m_methods;
    QHash<QString, Methods::Handler> m_handlers;
};

void tst_DatabaseMethods::init()
{
    m_host = std::make_unique<FakeHost>();
    DatabaseMethods::Limits limits;
    limits.cursors.perDatabase = 3;
    limits.cursors.idleMs = 60000;
    limits.cancelGraceMs = 50;
    limits.transactionsPerDatabase = 2;
    limits.sweepMs = 10;
    m_methods = std::make_unique<DatabaseMethods>(m_host.get(), limits);
    m_handlers.clear();
    for (const auto &[name, handler] : m_methods->handlers())
        m_handlers.insert(name, handler);
}

void tst_DatabaseMethods::cleanup()
{
    m_methods.reset();
    m_host.reset();
}

Result<QJsonObject> tst_DatabaseMethods::call(const QString &method, QJsonObject params,
                                              const CallContext &ctx)
{
    CallContext c = ctx;
    c.keyId = kKey;
    if (!params.contains(QStringLiteral("id")))
        params.insert(QStringLiteral("id"), kDb);
    std::optional<Result<QJsonValue>> out;
    m_handlers.value(QStringLiteral("databases.")
                     + method)(params, c, [&out](Result<QJsonValue> r) { out = std::move(r); });
    if (!QTest::qWaitFor([&out] { return out.has_value(); }, 5000))
        return Error{ErrorCode::InternalError, QStringLiteral("no answer"), {}};
    if (!*out)
        return out->error();
    return (*out)->toObject();
}

QString tst_DatabaseMethods::openCursor()
{
    m_host->backend.rows = 10;
    const auto r = call(QStringLiteral("query"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT n FROM t")},
                         {QStringLiteral("pageSize"), 2}});
    if (!r)
        return {};
    return r->value(QStringLiteral("cursor")).toString();
}

void tst_DatabaseMethods::aCursorKeepsTheDatabaseAwakeUntilReadToTheEnd()
{
    const QString cursor = openCursor();
    QVERIFY(!cursor.isEmpty());
    QCOMPARE(m_host->awake, 1);
    int rows = 2;
    for (;;) {
        const auto r = call(QStringLiteral("fetch"),
                            {{QStringLiteral("cursor"), cursor}, {QStringLiteral("pageSize"), 3}});
        QVERIFY2(r, qPrintable(r ? QString() : r.error().message));
        rows += r->value(QStringLiteral("rowCount")).toInt();
        QCOMPARE(r->value(QStringLiteral("rows"))
                     .toArray()
                     .first()
                     .toObject()
                     .contains(QStringLiteral("n")),
                 true);
        if (r->value(QStringLiteral("done")).toBool())
            break;
        QCOMPARE(m_host->awake, 1);
    }
    QCOMPARE(rows, 10);
    QCOMPARE(m_host->awake, 0);
    QCOMPARE(m_host->backend.closed, QStringList{QStringLiteral("b1")});
    const auto again = call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), cursor}});
    QVERIFY(!again);
    QCOMPARE(again.error().code, ErrorCode::NotFound);
}

void tst_DatabaseMethods::theLeastRecentlyUsedCursorClosesBeyondTheCap()
{
    // The qWait(2)s let time pass on purpose: each cursor gets a use time of its own for the LRU.
    const QString first = openCursor();
    QTest::qWait(2);
    const QString second = openCursor();
    QTest::qWait(2);
    const QString third = openCursor();
    QTest::qWait(2);
    // The first is used again: the second is now the least recently used.
    QVERIFY(call(QStringLiteral("fetch"),
                 {{QStringLiteral("cursor"), first}, {QStringLiteral("pageSize"), 1}}));
    QTest::qWait(2);
    QCOMPARE(m_host->awake, 3);
    const QString fourth = openCursor();
    QVERIFY(!fourth.isEmpty());
    QCOMPARE(m_host->awake, 3);
    QCOMPARE(m_host->backend.closed, QStringList{QStringLiteral("b2")});
    const auto gone = call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), second}});
    QVERIFY(!gone);
    QCOMPARE(gone.error().code, ErrorCode::NotFound);
    for (const QString &open : {first, third, fourth})
        QVERIFY(call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), open}}));
}

void tst_DatabaseMethods::theNextPageIsReadBeforeTheClientAsks()
{
    const QString cursor = openCursor();
    QVERIFY(!cursor.isEmpty());
    // The server was asked for the second page while the client had the first.
    QCOMPARE(m_host->backend.fetches, 1);
    const auto r = call(QStringLiteral("fetch"),
                        {{QStringLiteral("cursor"), cursor},
                         {QStringLiteral("pageSize"), 2},
                         {QStringLiteral("rowMode"), QStringLiteral("array")}});
    QVERIFY(r);
    QCOMPARE(r->value(QStringLiteral("rowCount")).toInt(), 2);
    QCOMPARE(m_host->backend.fetches, 2); // and the third while the client has the second
}

void tst_DatabaseMethods::fetchesOfAnySizeGetEveryRowInOrder()
{
    m_host->backend.rows = 10;
    const auto first = call(QStringLiteral("query"),
                            {{QStringLiteral("sql"), QStringLiteral("SELECT n FROM t")},
                             {QStringLiteral("pageSize"), 4},
                             {QStringLiteral("rowMode"), QStringLiteral("array")}});
    QVERIFY(first);
    QList<int> seen;
    for (const QJsonValue &row : first->value(QStringLiteral("rows")).toArray())
        seen.append(row.toArray().at(0).toInt());
    QString cursor = first->value(QStringLiteral("cursor")).toString();
    // Smaller than the page read ahead, then bigger: at most pageSize rows each time, none lost.
    for (int pageSize : {3, 3, 5, 5}) {
        if (cursor.isEmpty())
            break;
        const auto r = call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), cursor},
                                                      {QStringLiteral("pageSize"), pageSize}});
        QVERIFY2(r, qPrintable(r ? QString() : r.error().message));
        const QJsonArray rows = r->value(QStringLiteral("rows")).toArray();
        QVERIFY(rows.size() <= pageSize);
        for (const QJsonValue &row : rows)
            seen.append(row.toArray().at(0).toInt());
        cursor = r->value(QStringLiteral("cursor")).toString();
    }
    QVERIFY(cursor.isEmpty());
    QList<int> all(10);
    std::iota(all.begin(), all.end(), 0);
    QCOMPARE(seen, all);
    QCOMPARE(m_host->awake, 0);
}

void tst_DatabaseMethods::anIdleCursorExpires()
{
    m_methods.reset();
    DatabaseMethods::Limits limits;
    limits.cursors.idleMs = 40;
    limits.sweepMs = 10;
    m_methods = std::make_unique<DatabaseMethods>(m_host.get(), limits);
    m_handlers.clear();
    for (const auto &[name, handler] : m_methods->handlers())
        m_handlers.insert(name, handler);

    const QString cursor = openCursor();
    QVERIFY(!cursor.isEmpty());
    QCOMPARE(m_host->awake, 1);
    QTRY_COMPARE_WITH_TIMEOUT(m_host->awake, 0, 2000);
    QCOMPARE(m_host->backend.closed, QStringList{QStringLiteral("b1")});
    const auto r = call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), cursor}});
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::NotFound);
}

void tst_DatabaseMethods::aStatementPastItsTimeoutIsCancelled()
{
    m_host->backend.hang = true;
    const auto r = call(QStringLiteral("query"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT 1")},
                         {QStringLiteral("timeout"), 20}});
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::Timeout);
    QCOMPARE(r.error().data.toObject().value(QStringLiteral("timeoutMs")).toInt(), 20);
    QCOMPARE(m_host->backend.cancels, 1);
    QCOMPARE(m_host->awake, 0);
}

void tst_DatabaseMethods::anAnsweredCallKeepsNothingAlive()
{
    // What a call's answer holds (here: a token) is freed once it answered, even when the
    // backend's cancel function holds the call's callback: no reference cycle keeps the call.
    m_host->backend.cancelHoldsCallback = true;
    auto token = std::make_shared<int>(0);
    const std::weak_ptr<int> watch = token;
    bool answered = false;
    CallContext c;
    c.keyId = kKey;
    m_handlers.value(QStringLiteral(
        "databases.query"))({{QStringLiteral("id"), kDb},
                             {QStringLiteral("sql"), QStringLiteral("SELECT 1")}},
                            c, [&answered, token](Result<QJsonValue> r) { answered = bool(r); });
    token.reset();
    QVERIFY(answered);
    QTRY_VERIFY_WITH_TIMEOUT(watch.expired(), 2000);
    QCOMPARE(m_host->awake, 0);
}

void tst_DatabaseMethods::aServerThatIgnoresTheCancelStillAnswersTimeout()
{
    m_host->backend.hang = true;
    m_host->backend.answersCancel = false;
    const auto r = call(QStringLiteral("execute"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT pg_sleep(60)")},
                         {QStringLiteral("timeout"), 20}});
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::Timeout);
    QCOMPARE(m_host->backend.cancels, 1);
    QCOMPARE(m_host->awake, 0);
}

// The deadlines share one timer: one that comes due before those already waiting is kept too.
void tst_DatabaseMethods::aShortTimeoutAfterALongOneComesFirst()
{
    m_host->backend.hang = true;
    std::optional<Result<QJsonValue>> longCall;
    CallContext c;
    c.keyId = kKey;
    m_handlers.value(QStringLiteral(
        "databases.query"))({{QStringLiteral("id"), kDb},
                             {QStringLiteral("sql"), QStringLiteral("SELECT 1")},
                             {QStringLiteral("timeout"), 60000}},
                            c, [&longCall](Result<QJsonValue> r) { longCall = std::move(r); });
    QElapsedTimer t;
    t.start();
    const auto r = call(QStringLiteral("query"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT 2")},
                         {QStringLiteral("timeout"), 20}});
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::Timeout);
    QVERIFY2(t.elapsed() < 4000, qPrintable(QString::number(t.elapsed())));
    QVERIFY(!longCall);
    QCOMPARE(m_host->backend.cancels, 1);
}

// A call in flight costs no timer of its own (one QTimer made, started, stopped and deleted per
// call, with a wake-up of the event loop for its deletion): all of them wait on one.
void tst_DatabaseMethods::callsInFlightHoldNoTimerEach()
{
    m_host->backend.hang = true;
    const int before = int(m_methods->findChildren<QTimer *>().size());
    CallContext c;
    c.keyId = kKey;
    int answered = 0;
    for (int i = 0; i < 50; ++i)
        m_handlers.value(
            QStringLiteral("databases.query"))({{QStringLiteral("id"), kDb},
                                                {QStringLiteral("sql"), QStringLiteral("SELECT 1")},
                                                {QStringLiteral("timeout"), 60000}},
                                               c, [&answered](Result<QJsonValue>) { ++answered; });
    QCOMPARE(answered, 0);
    QCOMPARE(int(m_methods->findChildren<QTimer *>().size()), before);
}

void tst_DatabaseMethods::rpcCancelCancelsTheStatement()
{
    m_host->backend.hang = true;
    CallContext ctx;
    QTimer::singleShot(10, this, [&ctx] { (*ctx.onCancel)(); });
    const auto r = call(QStringLiteral("query"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT 1")}}, ctx);
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::Cancelled);
    QCOMPARE(m_host->backend.cancels, 1);
    QCOMPARE(m_host->awake, 0);
}

void tst_DatabaseMethods::errorPositionsAreCharactersLinesAndColumns()
{
    // A byte offset (SQLite) past a two-byte character on the second line.
    m_host->backend.failWith = Error{ErrorCode::QueryError, QStringLiteral("syntax error"),
                                     QJsonObject{{QStringLiteral("offset"), 12}}};
    const auto r = call(QStringLiteral("query"),
                        {{QStringLiteral("sql"), QStringLiteral("SELECT 1;\né FROM")}});
    QVERIFY(!r);
    const QJsonObject data = r.error().data.toObject();
    QCOMPARE(data.value(QStringLiteral("position")).toInt(), 12);
    QCOMPARE(data.value(QStringLiteral("line")).toInt(), 2);
    QCOMPARE(data.value(QStringLiteral("column")).toInt(), 2);
    QVERIFY(!data.contains(QStringLiteral("offset")));
}

void tst_DatabaseMethods::aFailedStatementEndsItsTransaction()
{
    const auto begun = call(QStringLiteral("begin"), {});
    QVERIFY(begun);
    const QString tx = begun->value(QStringLiteral("transaction")).toString();
    QCOMPARE(m_host->awake, 1);
    QVERIFY(call(QStringLiteral("execute"), {{QStringLiteral("sql"), QStringLiteral("INSERT 1")},
                                             {QStringLiteral("transaction"), tx}}));
    QCOMPARE(m_host->awake, 1);
    m_host->backend.failWith = Error{ErrorCode::QueryError, QStringLiteral("duplicate key"), {}};
    const auto failed = call(QStringLiteral("execute"),
                             {{QStringLiteral("sql"), QStringLiteral("INSERT 1")},
                              {QStringLiteral("transaction"), tx}});
    QVERIFY(!failed);
    QVERIFY(failed.error().message.contains(QLatin1String("rolled back")));
    QCOMPARE(m_host->awake, 0);
    const auto commit = call(QStringLiteral("commit"), {{QStringLiteral("transaction"), tx}});
    QVERIFY(!commit);
    QCOMPARE(commit.error().code, ErrorCode::NotFound);
}

void tst_DatabaseMethods::transactionsPerDatabaseAreCapped()
{
    const auto a = call(QStringLiteral("begin"), {});
    const auto b = call(QStringLiteral("begin"), {});
    QVERIFY(a && b);
    const auto c = call(QStringLiteral("begin"), {});
    QVERIFY(!c);
    QCOMPARE(c.error().code, ErrorCode::QuotaExceeded);
    QCOMPARE(m_host->awake, 2);
    QVERIFY(call(QStringLiteral("rollback"),
                 {{QStringLiteral("transaction"), a->value(QStringLiteral("transaction"))}}));
    QCOMPARE(m_host->awake, 1);
    QCOMPARE(m_host->backend.sessions.size(), 1);
    QVERIFY(call(QStringLiteral("begin"), {}));
}

void tst_DatabaseMethods::anotherKeysCursorIsNotFound()
{
    const QString cursor = openCursor();
    QVERIFY(!cursor.isEmpty());
    std::optional<Result<QJsonValue>> out;
    CallContext other;
    other.keyId = QStringLiteral("key_2");
    m_handlers.value(QStringLiteral(
        "databases.closeCursor"))({{QStringLiteral("id"), kDb}, {QStringLiteral("cursor"), cursor}},
                                  other, [&out](Result<QJsonValue> r) { out = std::move(r); });
    QVERIFY(out && *out);
    QCOMPARE((*out)->toObject().value(QStringLiteral("closed")).toBool(), false);
    QCOMPARE(m_host->awake, 1);
    QVERIFY(call(QStringLiteral("fetch"), {{QStringLiteral("cursor"), cursor}}));
}

void tst_DatabaseMethods::aStatementsCommandLooksPastItsCommonTableExpressions_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QString>("command");
    QTest::newRow("plain") << "  insert into t values (1)"
                           << "INSERT";
    QTest::newRow("comment first") << "-- x\n/* y */ update t set a = 1"
                                   << "UPDATE";
    QTest::newRow("with insert") << "WITH x(v) AS (SELECT 1) INSERT INTO t SELECT v FROM x"
                                 << "INSERT";
    QTest::newRow("recursive, two, update")
        << "with recursive a AS (SELECT 1), b(n) as (select 2) UPDATE t SET a = 2"
        << "UPDATE";
    QTest::newRow("materialized") << "WITH a AS MATERIALIZED (SELECT 1) DELETE FROM t"
                                  << "DELETE";
    QTest::newRow("not materialized") << "WITH a AS NOT MATERIALIZED (SELECT 1) SELECT * FROM a"
                                      << "SELECT";
    QTest::newRow("quoted names, brackets in strings and comments")
        << "WITH \"a)\"\"(\"(v) AS (SELECT ')(''' || \"x)\" -- )\n /* ( */ FROM [c)]), `d(` AS "
           "((SELECT (1))) REPLACE INTO t VALUES (1)"
        << "REPLACE";
    QTest::newRow("duckdb using key")
        << "WITH RECURSIVE r(k, v) USING KEY (k) AS (SELECT 1, 2) INSERT INTO t SELECT k FROM r"
        << "INSERT";
    QTest::newRow("values") << "VALUES (1), (2)"
                            << "SELECT";
    QTest::newRow("with values") << "WITH a AS (SELECT 1) VALUES (2)"
                                 << "SELECT";
    QTest::newRow("unclosed body") << "WITH a AS (SELECT ')' INSERT INTO t"
                                   << "WITH";
    QTest::newRow("no AS") << "WITH a (SELECT 1) INSERT INTO t"
                           << "WITH";
    QTest::newRow("nothing after") << "WITH a AS (SELECT 1)"
                                   << "WITH";
}

void tst_DatabaseMethods::aStatementsCommandLooksPastItsCommonTableExpressions()
{
    QFETCH(QString, sql);
    QFETCH(QString, command);
    QCOMPARE(QString::fromStdString(SqlCommand::statementCommand(sql.toStdString())), command);
}

void tst_DatabaseMethods::aScriptSplitsAtItsSemicolons_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<int>("index");
    QTest::addColumn<QString>("statement");
    const QString script = QStringLiteral(
        "BEGIN; INSERT INTO t VALUES (';', \"a;b\", $$x;y$$, $fn$ ; $$ ; $fn$, $1) -- c;d\n"
        "/* e;f */ ;; COMMIT ;");
    QTest::newRow("first") << script << 0 << "BEGIN";
    QTest::newRow("quoted, dollar-quoted, commented")
        << script << 1
        << " INSERT INTO t VALUES (';', \"a;b\", $$x;y$$, $fn$ ; $$ ; $fn$, $1) -- c;d\n"
           "/* e;f */ ";
    QTest::newRow("blank pieces not counted") << script << 2 << " COMMIT ";
    QTest::newRow("past the end") << script << 3 << "";
    QTest::newRow("no semicolon") << "SELECT 1" << 0 << "SELECT 1";
    QTest::newRow("unclosed string") << "SELECT 'a; SELECT 2" << 1 << "";
}

void tst_DatabaseMethods::aScriptSplitsAtItsSemicolons()
{
    QFETCH(QString, sql);
    QFETCH(int, index);
    QFETCH(QString, statement);
    const std::string text = sql.toStdString();
    QCOMPARE(QString::fromStdString(std::string(SqlCommand::statementAt(text, size_t(index)))),
             statement);
}

QTEST_GUILESS_MAIN(tst_DatabaseMethods)
#include "tst_databasemethods.moc"
