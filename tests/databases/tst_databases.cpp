// Database sandboxes through a real sandboxd: PostgreSQL, SQLite and DuckDB servers in real
// bubblewrap sandboxes, each test run for every engine.
#include "dbtestutil.h"
#include "enginefixture.h"
#include "procstat.h"
#include "sandboxprocesses.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QScopeGuard>
#include <QSet>
#include <QTest>
#include <QWebSocket>

#include <csignal>
#include <unistd.h>

namespace {

QJsonObject tagged(const char *tag, const QString &value)
{
    return QJsonObject{{QLatin1String(tag), value}};
}

// The CPU seconds the processes of sandbox `id` have spent so far (those alive now).
double cpuSecondsOf(const QString &id)
{
    double total = 0;
    for (const int pid : sandboxProcesses(id))
        total += qMax(0.0, ProcStat::cpuSeconds(ProcStat::statPath(QString::number(pid))));
    return total;
}

// PostgreSQL backends (other than the asking one) that run a pg_sleep now.
int activeSleeps(const DbCall &d)
{
    return d
        .query(QStringLiteral("SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                              "'%pg_sleep(%' AND state = 'active' AND pid <> pg_backend_pid()"))
        .value(QStringLiteral("rows"))
        .toArray()
        .at(0)
        .toArray()
        .at(0)
        .toInt();
}

// The threads of process `pid` now.
int threadCount(qint64 pid)
{
    return int(QDir(QStringLiteral("/proc/%1/task").arg(pid))
                   .entryList(QDir::Dirs | QDir::NoDotAndDotDot)
                   .size());
}

// The host pid of the PostgreSQL server's postmaster in sandbox `id` (the postgres process whose
// parent is not one), or 0.
int postmasterPid(const QString &id)
{
    const auto statOf = [](int pid) {
        QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    for (const int pid : sandboxProcesses(id)) {
        const QByteArray stat = statOf(pid);
        const qsizetype close = stat.lastIndexOf(')');
        if (!stat.contains("(postgres)") || close < 0)
            continue;
        const int parent = stat.mid(close + 2).split(' ').value(1).toInt();
        if (!statOf(parent).contains("(postgres)"))
            return pid;
    }
    return 0;
}

qint64 rssHighWaterKb(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').first().toLongLong();
    return -1;
}

} // namespace

class tst_Databases : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void createAnswersWhenReady_data();
    void createAnswersWhenReady();
    void typesRoundTrip_data();
    void typesRoundTrip();
    void bigAnswersAndSmallOnesArriveWhole_data();
    void bigAnswersAndSmallOnesArriveWhole();
    void parametersStayData_data();
    void parametersStayData();
    void commonTableExpressionsSayWhatTheyChanged_data();
    void commonTableExpressionsSayWhatTheyChanged();
    void aScriptSaysWhichStatementFailed_data();
    void aScriptSaysWhichStatementFailed();
    void transactionCommitsOrRollsBack_data();
    void transactionCommitsOrRollsBack();
    void interactiveTransaction_data();
    void interactiveTransaction();
    void duckdbRemoteFileSaysWhatIsMissing();
    void postgresKeepsAStatementPrepared();
    void metadata_data();
    void metadata();
    void pagingAMillionRows_data();
    void pagingAMillionRows();
    void cancelStopsTheQuery_data();
    void cancelStopsTheQuery();
    void aServerThatNeverTakesItsCancelsHoldsFewThreads();
    void aQueryTakesTheConnectionOfTheLeastRecentlyUsedCursor();
    void aHostThatAnswersGarbageFailsItsCallsAtOnce();
    void statementTimeout_data();
    void statementTimeout();
    void badSqlSaysWhere_data();
    void badSqlSaysWhere();
    void aNulInSqlIsRefusedNotCutShort_data();
    void aNulInSqlIsRefusedNotCutShort();
    void serverSideFileAccessIsRefused_data();
    void serverSideFileAccessIsRefused();
    void exportData_data();
    void exportData();
    void stopAndStartKeepData_data();
    void stopAndStartKeepData();
    void committedRowSurvivesKill9OfTheServer_data();
    void committedRowSurvivesKill9OfTheServer();
    void restRoutes();
    void committedRowSurvivesKill9OfSandboxd(); // last: it restarts the engine

private:
    void engines();
    DbCall db(const QString &type) { return DbCall{&m_engine.rpc(), m_ids.value(type)}; }

    EngineFixture m_engine;
    QHash<QString, QString> m_ids;
};

void tst_Databases::engines()
{
    addEngineRows();
}

void tst_Databases::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_ids = createOfEachEngine(m_engine);
    QVERIFY2(!m_ids.isEmpty(), dump(m_engine.rpc().lastError()).constData());
}

void tst_Databases::cleanupTestCase()
{
    m_engine.cleanup();
}

void tst_Databases::createAnswersWhenReady_data()
{
    engines();
}
void tst_Databases::createAnswersWhenReady()
{
    QFETCH(QString, type);
    QJsonObject params{{QStringLiteral("type"), type},
                       {QStringLiteral("size"), QStringLiteral("lite")}};
    if (type == QLatin1String("postgres")) {
        params.insert(QStringLiteral("database"), QStringLiteral("shop"));
        params.insert(QStringLiteral("username"), QStringLiteral("clerk"));
        params.insert(QStringLiteral("password"), QStringLiteral("s3cret'; DROP ROLE x; --"));
    } else {
        params.insert(QStringLiteral("database"), QStringLiteral("data/shop.db"));
    }
    const QJsonObject created = m_engine.create(QStringLiteral("databases.create"), params, 120000);
    QVERIFY2(!created.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QCOMPARE(created.value(QStringLiteral("kind")).toString(), QStringLiteral("database"));
    QCOMPARE(created.value(QStringLiteral("status")).toString(), QStringLiteral("running"));
    QVERIFY(created.value(QStringLiteral("startupTimeMs")).toDouble() > 0);
    // It answers queries at once: no retry needed.
    DbCall d{&m_engine.rpc(), created.value(QStringLiteral("id")).toString()};
    const QJsonObject one = d.query(QStringLiteral("SELECT 1 AS one"));
    QVERIFY2(!one.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(one.value(QStringLiteral("rows")).toArray(), (QJsonArray{QJsonArray{1}}));
    if (type == QLatin1String("postgres")) {
        const QJsonObject who = d.query(
            QStringLiteral("SELECT current_user::text, current_database()::text, "
                           "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"));
        QCOMPARE(who.value(QStringLiteral("rows")).toArray().first().toArray(),
                 (QJsonArray{QStringLiteral("clerk"), QStringLiteral("shop"), false}));
    } else {
        const QJsonObject files = d.method(QStringLiteral("listDatabases"));
        QVERIFY2(dump(files).contains("/workspace/data/shop.db"), dump(files).constData());
    }
    // Bad create params name the field.
    m_engine.create(QStringLiteral("databases.create"),
                    {{QStringLiteral("type"), QStringLiteral("oracle")}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32602);
    QCOMPARE(m_engine.rpc()
                 .lastError()
                 .value(QStringLiteral("data"))
                 .toObject()
                 .value(QStringLiteral("field"))
                 .toString(),
             QStringLiteral("type"));
    m_engine.create(QStringLiteral("databases.create"),
                    {{QStringLiteral("type"), type},
                     {QStringLiteral("database"), QStringLiteral("../../etc/x")}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32602);
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("databases.delete"), {{QStringLiteral("id"), d.id}})
                 .isEmpty());
}

void tst_Databases::typesRoundTrip_data()
{
    engines();
}
void tst_Databases::typesRoundTrip()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const Dialect q{type};
    QString ddl;
    if (type == QLatin1String("postgres"))
        ddl = QStringLiteral("CREATE TABLE types(i8 bigint, n numeric, b bytea, ts timestamptz, j "
                             "jsonb, a int[], t text, f float8, bo boolean)");
    else if (type == QLatin1String("sqlite"))
        ddl = QStringLiteral("CREATE TABLE types(i8 INTEGER, n TEXT, b BLOB, ts TEXT, j TEXT, a "
                             "TEXT, t TEXT, f REAL, bo INTEGER)");
    else
        ddl = QStringLiteral("CREATE TABLE types(i8 BIGINT, n DECIMAL(38,10), b BLOB, ts "
                             "TIMESTAMPTZ, j JSON, a INTEGER[], t VARCHAR, f DOUBLE, bo BOOLEAN)");
    QVERIFY2(!d.execute(ddl).isEmpty(), dump(d.lastError()).constData());

    QByteArray allBytes;
    for (int i = 0; i < 256; ++i)
        allBytes.append(char(i));
    const QString b64 = QString::fromLatin1(allBytes.toBase64());
    const QJsonObject json{{QStringLiteral("k"), QJsonArray{1, QStringLiteral("x")}}};
    const QJsonArray row1{tagged("$int", QStringLiteral("9007199254740993")),
                          QStringLiteral("12345678901234567890.0123456789"),
                          tagged("$bytes", b64),
                          QStringLiteral("2024-02-29T23:59:59.123456Z"),
                          json,
                          QJsonArray{1, 2, QJsonValue()},
                          QString(),
                          0.1,
                          true};
    QStringList marks;
    for (int i = 1; i <= 9; ++i)
        marks << q.p(i);
    const QString insert
        = QStringLiteral("INSERT INTO types VALUES (%1)").arg(marks.join(QStringLiteral(", ")));
    QVERIFY2(!d.execute(insert, row1).isEmpty(), dump(d.lastError()).constData());
    const QJsonArray row2{tagged("$int", QStringLiteral("-9223372036854775808")),
                          QJsonValue(),
                          QJsonValue(),
                          QJsonValue(),
                          QJsonValue(),
                          QJsonValue(),
                          QStringLiteral(""),
                          QJsonValue(),
                          QJsonValue()};
    QVERIFY2(!d.execute(insert, row2).isEmpty(), dump(d.lastError()).constData());

    const QJsonObject r = d.query(QStringLiteral("SELECT * FROM types ORDER BY i8 DESC"));
    QVERIFY2(!r.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(r.value(QStringLiteral("rowCount")).toInt(), 2);
    const QJsonArray got = r.value(QStringLiteral("rows")).toArray().at(0).toArray();
    QCOMPARE(got.at(0),
             QJsonValue(tagged("$int", QStringLiteral("9007199254740993")))); // beyond 2^53, exact
    QCOMPARE(got.at(1).toString().toDouble(), 12345678901234567890.0123456789); // exact digits:
    QVERIFY(got.at(1).toString().startsWith(QLatin1String("12345678901234567890.0123456789")));
    QCOMPARE(got.at(2), QJsonValue(tagged("$bytes", b64))); // every byte value
    QCOMPARE(got.at(3).toString(),
             QStringLiteral("2024-02-29T23:59:59.123456Z")); // UTC, microseconds
    QCOMPARE(QJsonDocument::fromJson(got.at(4).toString().toUtf8()).object(),
             json); // JSON as its text
    if (type == QLatin1String("sqlite"))
        QCOMPARE(QJsonDocument::fromJson(got.at(5).toString().toUtf8()).array(),
                 (QJsonArray{1, 2, QJsonValue()}));
    else
        QCOMPARE(got.at(5), QJsonValue(QJsonArray{1, 2, QJsonValue()})); // arrays stay arrays
    QCOMPARE(got.at(6), QJsonValue(QString()));                          // "" is not NULL
    QVERIFY(got.at(6).isString());
    QCOMPARE(got.at(7).toDouble(), 0.1);
    QCOMPARE(got.at(8), type == QLatin1String("sqlite") ? QJsonValue(1) : QJsonValue(true));
    const QJsonArray nulls = r.value(QStringLiteral("rows")).toArray().at(1).toArray();
    QCOMPARE(nulls.at(0), QJsonValue(tagged("$int", QStringLiteral("-9223372036854775808"))));
    for (int i : {1, 2, 3, 4, 5, 7, 8})
        QVERIFY2(nulls.at(i).isNull(), qPrintable(QStringLiteral("column %1 should be NULL: %2")
                                                      .arg(i)
                                                      .arg(QString::fromUtf8(dump(nulls)))));
    QVERIFY(nulls.at(6).isString() && nulls.at(6).toString().isEmpty());

    // Fields carry names and the engine's type names; rows as objects by default.
    const QJsonArray fields = r.value(QStringLiteral("fields")).toArray();
    QCOMPARE(fields.size(), 9);
    QCOMPARE(fields.at(0).toObject().value(QStringLiteral("name")).toString(),
             QStringLiteral("i8"));
    QVERIFY(!fields.at(0).toObject().value(QStringLiteral("type")).toString().isEmpty());
    const QJsonObject objects = d.query(QStringLiteral("SELECT t, bo FROM types ORDER BY i8 DESC"),
                                        {},
                                        {{QStringLiteral("rowMode"), QStringLiteral("object")}});
    QCOMPARE(
        objects.value(QStringLiteral("rows")).toArray().at(0).toObject().value(QStringLiteral("t")),
        QJsonValue(QString()));
    QCOMPARE(objects.value(QStringLiteral("command")).toString(), QStringLiteral("SELECT"));
    // The default rowMode's objects are keyed in the order of the query's columns, as the text
    // of the answer lists them (a client that walks a row's keys, as JavaScript does, sees the
    // query's order); a repeated name keeps its first place and its last column's value, as
    // JavaScript's objects built column by column do.
    const auto answerText = [&d](const QString &method, QJsonObject params) {
        QByteArray text;
        const auto watch = QObject::connect(d.rpc->socket(), &QWebSocket::textMessageReceived,
                                            [&text](const QString &m) { text = m.toUtf8(); });
        params.insert(QStringLiteral("id"), d.id);
        const bool answered = !d.rpc->result(method, params).isEmpty();
        QObject::disconnect(watch);
        return answered ? text : QByteArray("no answer: ") + dump(d.lastError());
    };
    const QByteArray one
        = answerText(QStringLiteral("databases.query"),
                     {{QStringLiteral("sql"),
                       QStringLiteral("SELECT 1 AS zeta, 2 AS alpha, 3 AS mid, 4 AS alpha")}});
    QVERIFY2(one.contains(R"("rows":[{"zeta":1,"alpha":4,"mid":3}])"), one.constData());
    // So are a cursor's pages, those cut from a page read ahead too, and a transaction's rows.
    const QString five = QStringLiteral("WITH v(i) AS (VALUES (1), (2), (3), (4), (5)) "
                                        "SELECT i AS zeta, i + 1 AS alpha FROM v ORDER BY i");
    const QByteArray page1 = answerText(QStringLiteral("databases.query"),
                                        {{QStringLiteral("sql"), five},
                                         {QStringLiteral("pageSize"), 2}});
    QVERIFY2(page1.contains(R"("rows":[{"zeta":1,"alpha":2},{"zeta":2,"alpha":3}])"),
             page1.constData());
    const QString cursor = QJsonDocument::fromJson(page1)
                               .object()
                               .value(QStringLiteral("result"))
                               .toObject()
                               .value(QStringLiteral("cursor"))
                               .toString();
    for (int n = 3; n <= 5; ++n) {
        const QByteArray page = answerText(QStringLiteral("databases.fetch"),
                                           {{QStringLiteral("cursor"), cursor},
                                            {QStringLiteral("pageSize"), 1}});
        const QByteArray row
            = QStringLiteral(R"("rows":[{"zeta":%1,"alpha":%2}])").arg(n).arg(n + 1).toUtf8();
        QVERIFY2(page.contains(row), page.constData());
    }
    const QByteArray tx
        = answerText(QStringLiteral("databases.transaction"),
                     {{QStringLiteral("statements"),
                       QJsonArray{QStringLiteral("SELECT 1 AS zeta, 2 AS alpha")}}});
    QVERIFY2(tx.contains(R"("rows":[{"zeta":1,"alpha":2}])"), tx.constData());
    QByteArray batch;
    const auto watch = QObject::connect(d.rpc->socket(), &QWebSocket::textMessageReceived,
                                        [&batch](const QString &m) { batch = m.toUtf8(); });
    d.rpc->sendText(
        QJsonDocument(
            QJsonArray{
                QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                            {QStringLiteral("id"), QStringLiteral("in a batch")},
                            {QStringLiteral("method"), QStringLiteral("databases.query")},
                            {QStringLiteral("params"),
                             QJsonObject{{QStringLiteral("id"), d.id},
                                         {QStringLiteral("sql"),
                                          QStringLiteral("SELECT 1 AS zeta, 2 AS alpha")}}}}})
            .toJson());
    QVERIFY(d.rpc->nextMessage().isArray());
    QObject::disconnect(watch);
    QVERIFY2(batch.contains(R"("rows":[{"zeta":1,"alpha":2}])"), batch.constData());

    // Floats that JSON cannot carry, and numbers that JSON can.
    const QString special
        = type == QLatin1String("postgres")
              ? QStringLiteral("SELECT 'NaN'::float8, 'Infinity'::float8, 42::int4, 2.5::float8")
          : type == QLatin1String("duckdb")
              ? QStringLiteral("SELECT 'NaN'::DOUBLE, 'Infinity'::DOUBLE, 42, 2.5::DOUBLE")
              : QStringLiteral("SELECT NULL, 9e999, 42, 2.5");
    const QJsonArray s = d.query(special).value(QStringLiteral("rows")).toArray().at(0).toArray();
    if (type != QLatin1String("sqlite"))
        QCOMPARE(s.at(0), QJsonValue(tagged("$float", QStringLiteral("NaN"))));
    QCOMPARE(s.at(1), QJsonValue(tagged("$float", QStringLiteral("Infinity"))));
    QCOMPARE(s.at(2), QJsonValue(42));
    QCOMPARE(s.at(3), QJsonValue(2.5));
}

void tst_Databases::bigAnswersAndSmallOnesArriveWhole_data()
{
    addEngineRows();
}

// Answers of megabytes are queued on the connection as they are, small ones written at once
// (RpcSession::sendParts): sent together on one connection, every answer arrives whole, each
// frame after the other, the big values byte for byte.
void tst_Databases::bigAnswersAndSmallOnesArriveWhole()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    constexpr int kBytes = 6000000;
    const QString big = type == QLatin1String("sqlite")
                            ? QStringLiteral("SELECT printf('%.*c', %1, 'x') AS v").arg(kBytes)
                            : QStringLiteral("SELECT repeat('x', %1) AS v").arg(kBytes);
    d.rpc->messages.clear();
    constexpr int kCalls = 8;
    for (int i = 0; i < kCalls; ++i) {
        // Big ones as objects and as arrays, a small one after each.
        const QJsonObject params = i % 2 == 0 ? QJsonObject{{QStringLiteral("id"), d.id},
                                                            {QStringLiteral("sql"), big},
                                                            {QStringLiteral("rowMode"),
                                                             i % 4 == 0 ? QStringLiteral("object")
                                                                        : QStringLiteral("array")}}
                                              : QJsonObject{{QStringLiteral("id"), d.id}};
        d.rpc->sendText(
            QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                      {QStringLiteral("id"), i},
                                      {QStringLiteral("method"),
                                       i % 2 == 0 ? QStringLiteral("databases.query")
                                                  : QStringLiteral("databases.ping")},
                                      {QStringLiteral("params"), params}})
                .toJson(QJsonDocument::Compact));
    }
    QSet<int> answered;
    for (int n = 0; n < kCalls; ++n) {
        const QJsonObject answer = d.rpc->nextMessage(120000).toObject();
        QVERIFY2(answer.contains(QStringLiteral("result")), dump(answer).left(300).constData());
        const int i = answer.value(QStringLiteral("id")).toInt(-1);
        answered.insert(i);
        if (i % 2 != 0)
            continue;
        const QJsonValue row
            = answer.value(QStringLiteral("result")).toObject().value(QStringLiteral("rows"))[0];
        const QString v = (row.isObject() ? row[QStringLiteral("v")] : row[0]).toString();
        QCOMPARE(v.size(), kBytes);
        QCOMPARE(v.count(u'x'), kBytes);
    }
    QCOMPARE(answered.size(), kCalls);
    QVERIFY(d.rpc->isOpen());
}

void tst_Databases::parametersStayData_data()
{
    engines();
}
void tst_Databases::parametersStayData()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const Dialect q{type};
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE inj(v TEXT)")).isEmpty());
    const QStringList payloads{QStringLiteral("'; DROP TABLE inj; --"),
                               QStringLiteral("1 OR 1=1"),
                               QStringLiteral("$1"),
                               QStringLiteral("?"),
                               QStringLiteral("\\'; SELECT 1; --"),
                               QStringLiteral("Robert'); DROP TABLE inj;--"),
                               QStringLiteral("\" OR \"\"=\""),
                               QStringLiteral("ünïcødé ✓ 🚀")};
    for (const QString &p : payloads)
        QVERIFY2(!d.execute(QStringLiteral("INSERT INTO inj(v) VALUES (%1)").arg(q.p(1)), {p})
                      .isEmpty(),
                 dump(d.lastError()).constData());
    for (const QString &p : payloads) {
        const QJsonObject r = d.query(QStringLiteral("SELECT v FROM inj WHERE v = %1").arg(q.p(1)),
                                      {p});
        QCOMPARE(r.value(QStringLiteral("rows")).toArray(), (QJsonArray{QJsonArray{p}}));
    }
    const QJsonObject count = d.query(QStringLiteral("SELECT count(*) FROM inj"));
    QCOMPARE(count.value(QStringLiteral("rows")).toArray().at(0).toArray().at(0).toInt(),
             int(payloads.size()));
    // A wrong number of parameters is the caller's mistake, said so before anything runs.
    d.query(QStringLiteral("SELECT v FROM inj WHERE v = %1").arg(q.p(1)),
            {QStringLiteral("a"), QStringLiteral("b")});
    QVERIFY2(d.lastError().value(QStringLiteral("code")).toInt() == -32602,
             dump(d.lastError()).constData());
    QCOMPARE(d.lastError()
                 .value(QStringLiteral("data"))
                 .toObject()
                 .value(QStringLiteral("field"))
                 .toString(),
             QStringLiteral("params"));
    // ... and the database goes on answering.
    QCOMPARE(d.query(QStringLiteral("SELECT count(*) FROM inj"))
                 .value(QStringLiteral("rows"))
                 .toArray()
                 .at(0)
                 .toArray()
                 .at(0)
                 .toInt(),
             int(payloads.size()));
}

void tst_Databases::commonTableExpressionsSayWhatTheyChanged_data()
{
    engines();
}
void tst_Databases::commonTableExpressionsSayWhatTheyChanged()
{
    // WITH ... INSERT is an INSERT, as PostgreSQL's command tag says: its rows are rowsAffected
    // on every engine (SQLite's answered "WITH" and 0 rows). The same answers on all three.
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE cte(a INTEGER)")).isEmpty());
    const auto says = [](const QJsonObject &r, const char *command, int rows) {
        return r.value(QStringLiteral("command")).toString() == QLatin1String(command)
               && r.value(QStringLiteral("rowsAffected")).toInt() == rows;
    };
    const QString insert = QStringLiteral(
        "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 3) "
        "INSERT INTO cte SELECT v FROM n");
    QJsonObject r = d.execute(insert);
    QVERIFY2(says(r, "INSERT", 3), dump(r).constData());
    r = d.query(insert);
    QVERIFY2(says(r, "INSERT", 3), dump(r).constData());
    r = d.query(QStringLiteral("/* ( */ WITH \"big)\" AS (SELECT ')' AS s) "
                               "UPDATE cte SET a = a + 10 WHERE a > 1"));
    QVERIFY2(says(r, "UPDATE", 4), dump(r).constData());
    r = d.query(QStringLiteral("WITH x AS (SELECT 1 AS v), y AS (SELECT v FROM x) "
                               "SELECT count(*) FROM cte, y"),
                {}, {{QStringLiteral("rowMode"), QStringLiteral("array")}});
    QVERIFY2(says(r, "SELECT", 0), dump(r).constData());
    QCOMPARE(r.value(QStringLiteral("rows")).toArray(), (QJsonArray{QJsonArray{6}}));
    const QJsonObject t = d.method(QStringLiteral("transaction"),
                                   {{QStringLiteral("statements"),
                                     QJsonArray{QStringLiteral(
                                         "WITH d AS (SELECT 12 AS v) DELETE FROM cte WHERE a IN "
                                         "(SELECT v FROM d)")}}});
    QVERIFY2(!t.isEmpty(), dump(d.lastError()).constData());
    r = t.value(QStringLiteral("results")).toArray().at(0).toObject();
    QVERIFY2(says(r, "DELETE", 2), dump(t).constData());
    // The rows a RETURNING clause gives back are the rows changed (DuckDB's counted none), and
    // VALUES is a SELECT (SQLite's said "VALUES").
    r = d.query(QStringLiteral("INSERT INTO cte VALUES (7), (8), (9) RETURNING a"));
    QVERIFY2(says(r, "INSERT", 3), dump(r).constData());
    r = d.query(QStringLiteral("UPDATE cte SET a = a + 1 WHERE a BETWEEN 8 AND 9 RETURNING a"));
    QVERIFY2(says(r, "UPDATE", 2), dump(r).constData());
    const QJsonObject returning
        = d.method(QStringLiteral("transaction"),
                   {{QStringLiteral("statements"),
                     QJsonArray{
                         QStringLiteral("DELETE FROM cte WHERE a IN (9, 10) RETURNING a")}}});
    QVERIFY2(!returning.isEmpty(), dump(d.lastError()).constData());
    r = returning.value(QStringLiteral("results")).toArray().at(0).toObject();
    QVERIFY2(says(r, "DELETE", 2), dump(returning).constData());
    r = d.query(QStringLiteral("VALUES (1), (2)"));
    QVERIFY2(says(r, "SELECT", 0), dump(r).constData());
    // A script is named by its last statement (DuckDB's was "" past the first statement).
    r = d.execute(QStringLiteral("CREATE TABLE cte1(x INTEGER); CREATE TABLE cte2(y INTEGER)"));
    QVERIFY2(says(r, "CREATE", 0), dump(r).constData());
    r = d.execute(QStringLiteral("BEGIN; INSERT INTO cte1 VALUES (1), (2); COMMIT"));
    QVERIFY2(says(r, "COMMIT", 2), dump(r).constData());
}

void tst_Databases::aScriptSaysWhichStatementFailed_data()
{
    engines();
}
void tst_Databases::aScriptSaysWhichStatementFailed()
{
    // SQLite and DuckDB run a script's statements each in its own transaction, as their shells
    // do: those before the failing one stay, and the error says which one failed. PostgreSQL runs
    // a script as one transaction: nothing of it stays.
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE script(a INTEGER PRIMARY KEY)")).isEmpty());
    QVERIFY(d.execute(QStringLiteral("INSERT INTO script VALUES (1); INSERT INTO script VALUES "
                                     "(2); INSERT INTO script VALUES (1); INSERT INTO script "
                                     "VALUES (4)"))
                .isEmpty());
    const QJsonObject error = d.lastError();
    QCOMPARE(error.value(QStringLiteral("code")).toInt(), -32014);
    const QJsonArray rows = d.query(QStringLiteral("SELECT a FROM script ORDER BY a"), {},
                                    {{QStringLiteral("rowMode"), QStringLiteral("array")}})
                                .value(QStringLiteral("rows"))
                                .toArray();
    if (type == QLatin1String("postgres")) {
        QCOMPARE(rows, QJsonArray());
        return;
    }
    QCOMPARE(rows, (QJsonArray{QJsonArray{1}, QJsonArray{2}}));
    QCOMPARE(error.value(QStringLiteral("data"))
                 .toObject()
                 .value(QStringLiteral("statementIndex"))
                 .toInt(-1),
             2);
    QVERIFY2(error.value(QStringLiteral("message"))
                 .toString()
                 .startsWith(QLatin1String("statement 2: ")),
             dump(error).constData());
}

void tst_Databases::transactionCommitsOrRollsBack_data()
{
    engines();
}
void tst_Databases::transactionCommitsOrRollsBack()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const Dialect q{type};
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE acct(id INTEGER PRIMARY KEY, bal INTEGER)"))
                 .isEmpty());
    QVERIFY(!d.execute(QStringLiteral("INSERT INTO acct VALUES (1, 100), (2, 0)")).isEmpty());
    const QString move
        = QStringLiteral("UPDATE acct SET bal = bal + %1 WHERE id = %2").arg(q.p(1), q.p(2));
    const QJsonObject ok
        = d.method(QStringLiteral("transaction"),
                   {{QStringLiteral("statements"),
                     QJsonArray{QJsonObject{{QStringLiteral("sql"), move},
                                            {QStringLiteral("params"), QJsonArray{-30, 1}}},
                                QJsonObject{{QStringLiteral("sql"), move},
                                            {QStringLiteral("params"), QJsonArray{30, 2}}},
                                QStringLiteral("SELECT sum(bal) AS total FROM acct")}},
                    {QStringLiteral("rowMode"), QStringLiteral("array")}});
    QVERIFY2(!ok.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(ok.value(QStringLiteral("committed")).toBool(), true);
    const QJsonArray results = ok.value(QStringLiteral("results")).toArray();
    QCOMPARE(results.size(), 3);
    QCOMPARE(results.at(0).toObject().value(QStringLiteral("rowsAffected")).toInt(), 1);
    QCOMPARE(
        results.at(2).toObject().value(QStringLiteral("rows")).toArray().at(0).toArray().at(0).toInt(),
        100);

    // The second statement breaks the primary key: the first one's change must be gone too.
    d.method(QStringLiteral("transaction"),
             {{QStringLiteral("statements"),
               QJsonArray{QJsonObject{{QStringLiteral("sql"), move},
                                      {QStringLiteral("params"), QJsonArray{-1000, 1}}},
                          QJsonObject{{QStringLiteral("sql"),
                                       QStringLiteral("INSERT INTO acct VALUES (%1, 5)").arg(q.p(1))},
                                      {QStringLiteral("params"), QJsonArray{1}}}}}});
    const QJsonObject err = d.lastError();
    QCOMPARE(err.value(QStringLiteral("code")).toInt(), -32014);
    QCOMPARE(err.value(QStringLiteral("data"))
                 .toObject()
                 .value(QStringLiteral("statementIndex"))
                 .toInt(),
             1);
    QVERIFY2(err.value(QStringLiteral("message")).toString().contains(QLatin1String("rolled back")),
             dump(err).constData());
    const QJsonObject bal = d.query(QStringLiteral("SELECT id, bal FROM acct ORDER BY id"));
    QCOMPARE(bal.value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{1, 70}, QJsonArray{2, 30}}));
}

void tst_Databases::interactiveTransaction_data()
{
    engines();
}
// databases.begin / a statement at a time with `transaction` / commit or rollback: each statement
// answers its own result at once (the original API's transaction(async (execute) => ...)).
void tst_Databases::interactiveTransaction()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const Dialect q{type};
    QVERIFY(
        !d.execute(QStringLiteral("CREATE TABLE itx(id INTEGER PRIMARY KEY, v TEXT)")).isEmpty());
    auto begin = [&] {
        const QJsonObject b = d.method(QStringLiteral("begin"));
        return b.value(QStringLiteral("transaction")).toString();
    };
    auto count = [&](const QJsonObject &extra = {}) {
        const QJsonObject r = d.query(QStringLiteral("SELECT count(*) AS n FROM itx"), {}, extra);
        const QJsonValue n = r.value(QStringLiteral("rows")).toArray().at(0).toArray().at(0);
        return n.isString() ? n.toString().toInt() : n.toInt(-1);
    };

    const QString tx = begin();
    QVERIFY2(tx.startsWith(QLatin1String("tx_")), dump(d.lastError()).constData());
    const QJsonObject inserted
        = d.method(QStringLiteral("execute"),
                   {{QStringLiteral("sql"),
                     QStringLiteral("INSERT INTO itx VALUES (%1, %2)").arg(q.p(1), q.p(2))},
                    {QStringLiteral("params"), QJsonArray{1, QStringLiteral("a")}},
                    {QStringLiteral("transaction"), tx}});
    QVERIFY2(!inserted.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(inserted.value(QStringLiteral("rowsAffected")).toInt(), 1);
    // Its own statements see the row; other sessions do not, until the commit.
    QCOMPARE(count({{QStringLiteral("transaction"), tx}}), 1);
    QCOMPARE(count(), 0);
    QCOMPARE(d.method(QStringLiteral("commit"), {{QStringLiteral("transaction"), tx}})
                 .value(QStringLiteral("committed"))
                 .toBool(),
             true);
    QCOMPARE(count(), 1);
    // Committed means ended.
    d.method(QStringLiteral("commit"), {{QStringLiteral("transaction"), tx}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);

    // Rolled back: gone.
    const QString tx2 = begin();
    QVERIFY(!d.method(QStringLiteral("execute"),
                      {{QStringLiteral("sql"), QStringLiteral("INSERT INTO itx VALUES (2, 'b')")},
                       {QStringLiteral("transaction"), tx2}})
                 .isEmpty());
    QCOMPARE(d.method(QStringLiteral("rollback"), {{QStringLiteral("transaction"), tx2}})
                 .value(QStringLiteral("rolledBack"))
                 .toBool(),
             true);
    QCOMPARE(count(), 1);

    // A failing statement ends the transaction, rolled back, with what it did before.
    const QString tx3 = begin();
    QVERIFY(!d.method(QStringLiteral("execute"),
                      {{QStringLiteral("sql"), QStringLiteral("INSERT INTO itx VALUES (3, 'c')")},
                       {QStringLiteral("transaction"), tx3}})
                 .isEmpty());
    d.method(QStringLiteral("execute"),
             {{QStringLiteral("sql"), QStringLiteral("INSERT INTO itx VALUES (1, 'dup')")},
              {QStringLiteral("transaction"), tx3}});
    const QJsonObject err = d.lastError();
    QCOMPARE(err.value(QStringLiteral("code")).toInt(), -32014);
    QVERIFY2(err.value(QStringLiteral("message")).toString().contains(QLatin1String("rolled back")),
             dump(err).constData());
    d.method(QStringLiteral("commit"), {{QStringLiteral("transaction"), tx3}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);
    QCOMPARE(count(), 1);

    // Another key's (or a made-up) transaction id is not found; a query in a transaction keeps
    // no cursor: one page, `truncated` beyond.
    d.query(QStringLiteral("SELECT 1"), {},
            {{QStringLiteral("transaction"), QStringLiteral("tx_nope")}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);
    const QString tx4 = begin();
    const QJsonObject page = d.query(QStringLiteral("SELECT * FROM itx UNION ALL SELECT * FROM itx "
                                                    "UNION ALL SELECT * FROM itx"),
                                     {},
                                     {{QStringLiteral("transaction"), tx4},
                                      {QStringLiteral("pageSize"), 2}});
    QVERIFY2(!page.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(page.value(QStringLiteral("rowCount")).toInt(), 2);
    QCOMPARE(page.value(QStringLiteral("cursor")), QJsonValue());
    QCOMPARE(page.value(QStringLiteral("truncated")).toBool(), true);
    QVERIFY(!d.method(QStringLiteral("rollback"), {{QStringLiteral("transaction"), tx4}}).isEmpty());
}

// The original design's read_parquet('https://...'): a database without network, and a libduckdb
// without httpfs: the error names both, and the host.
void tst_Databases::duckdbRemoteFileSaysWhatIsMissing()
{
    const DbCall d = db(QStringLiteral("duckdb"));
    d.query(QStringLiteral("SELECT * FROM read_parquet('https://example.com/data.parquet')"));
    const QJsonObject err = d.lastError();
    QCOMPARE(err.value(QStringLiteral("code")).toInt(), -32014);
    const QString message = err.value(QStringLiteral("message")).toString();
    QVERIFY2(message.contains(QLatin1String("httpfs extension is not available")),
             qPrintable(message));
    QVERIFY2(message.contains(QLatin1String("network policy does not allow example.com")),
             qPrintable(message));
    // A local file of the workspace is still read.
    QVERIFY(
        !d.method(QStringLiteral("execute"),
                  {{QStringLiteral("sql"),
                    QStringLiteral(
                        "COPY (SELECT 7 AS n) TO '/workspace/seven.parquet' (FORMAT parquet)")}})
             .isEmpty());
    const QJsonObject seven = d.query(
        QStringLiteral("SELECT n FROM read_parquet('/workspace/seven.parquet')"));
    QCOMPARE(seven.value(QStringLiteral("rows")).toArray(), (QJsonArray{QJsonArray{7}}));
}

// PostgreSQL: a statement run again on a pooled connection runs as that connection prepared it
// on its second run (the server parses and plans it no more), with the same answers; one whose
// table's columns changed under it, or that the caller's own SQL deallocated, answers as it
// would unprepared.
void tst_Databases::postgresKeepsAStatementPrepared()
{
    const DbCall d = db(QStringLiteral("postgres"));
    const QJsonObject arrays{{QStringLiteral("rowMode"), QStringLiteral("array")}};
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE kept_pg(a int, b text); INSERT INTO kept_pg "
                                      "VALUES (1, 'one'), (2, 'two')"))
                 .isEmpty());
    const QString select = QStringLiteral("SELECT * FROM kept_pg WHERE a = $1");
    for (int i = 0; i < 3; ++i)
        QCOMPARE(d.query(select, {2}, arrays).value(QStringLiteral("rows")).toArray(),
                 (QJsonArray{QJsonArray{2, QStringLiteral("two")}}));
    // Calls one after the other take the same pooled connection: the server's own list of it.
    const QJsonArray kept = d.query(QStringLiteral("SELECT statement FROM pg_prepared_statements"),
                                    {}, arrays)
                                .value(QStringLiteral("rows"))
                                .toArray();
    QVERIFY2(kept.contains(QJsonArray{select}), QJsonDocument(kept).toJson().constData());
    // Its table changes: the kept plan would answer other columns; it runs afresh.
    QVERIFY(!d.execute(QStringLiteral("ALTER TABLE kept_pg ADD COLUMN c int DEFAULT 3")).isEmpty());
    const QJsonObject wider = d.query(select, {2}, arrays);
    QVERIFY2(!wider.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(wider.value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{2, QStringLiteral("two"), 3}}));
    QCOMPARE(wider.value(QStringLiteral("fields")).toArray().size(), 3);
    // The caller's SQL drops every prepared statement of the connection: it still answers.
    QVERIFY(!d.query(QStringLiteral("DEALLOCATE ALL")).isEmpty());
    for (int i = 0; i < 3; ++i)
        QCOMPARE(d.query(select, {1}, arrays).value(QStringLiteral("rows")).toArray(),
                 (QJsonArray{QJsonArray{1, QStringLiteral("one"), 3}}));
}

void tst_Databases::metadata_data()
{
    engines();
}
void tst_Databases::metadata()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE meta(id INTEGER PRIMARY KEY, name VARCHAR(40) "
                                      "NOT NULL, note TEXT DEFAULT 'x')"))
                 .isEmpty());
    QVERIFY2(!d.execute(QStringLiteral("CREATE INDEX meta_name ON meta(name)")).isEmpty(),
             dump(d.lastError()).constData());
    QVERIFY2(!d.execute(QStringLiteral("CREATE UNIQUE INDEX \"meta two\" ON meta(note, name)"))
                  .isEmpty(),
             dump(d.lastError()).constData());

    const QJsonObject tables = d.method(QStringLiteral("listTables"));
    QVERIFY2(dump(tables).contains("\"name\":\"meta\""), dump(tables).constData());
    const QJsonObject t = d.method(QStringLiteral("describeTable"),
                                   {{QStringLiteral("table"), QStringLiteral("meta")}});
    QVERIFY2(!t.isEmpty(), dump(d.lastError()).constData());
    const QJsonArray columns = t.value(QStringLiteral("columns")).toArray();
    QCOMPARE(columns.size(), 3);
    QCOMPARE(columns.at(0).toObject().value(QStringLiteral("name")).toString(),
             QStringLiteral("id"));
    QCOMPARE(columns.at(0).toObject().value(QStringLiteral("primaryKey")).toBool(), true);
    QCOMPARE(columns.at(1).toObject().value(QStringLiteral("nullable")).toBool(), false);
    if (type != QLatin1String("duckdb")) // DuckDB keeps no VARCHAR length
        QVERIFY(columns.at(1)
                    .toObject()
                    .value(QStringLiteral("type"))
                    .toString()
                    .contains(QLatin1String("40")));
    // Each index with its columns by name (DuckDB's were one text, "[name]").
    const auto index = [&t](const QString &name) {
        for (const QJsonValue &i : t.value(QStringLiteral("indexes")).toArray())
            if (i[QStringLiteral("name")].toString() == name)
                return i.toObject();
        return QJsonObject();
    };
    QCOMPARE(index(QStringLiteral("meta_name")).value(QStringLiteral("columns")).toArray(),
             QJsonArray{QStringLiteral("name")});
    QCOMPARE(index(QStringLiteral("meta two")).value(QStringLiteral("columns")).toArray(),
             (QJsonArray{QStringLiteral("note"), QStringLiteral("name")}));
    QCOMPARE(index(QStringLiteral("meta two")).value(QStringLiteral("unique")).toBool(), true);
    // The primary key's index, which SQLite keeps none of for an INTEGER PRIMARY KEY (the rowid).
    if (type != QLatin1String("sqlite")) {
        bool primary = false;
        for (const QJsonValue &i : t.value(QStringLiteral("indexes")).toArray())
            primary = primary
                      || (i[QStringLiteral("primary")].toBool()
                          && i[QStringLiteral("columns")].toArray()
                                 == QJsonArray{QStringLiteral("id")});
        QVERIFY2(primary, dump(t).constData());
    }
    d.method(QStringLiteral("describeTable"),
             {{QStringLiteral("table"), QStringLiteral("no_such_table")}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);

    const QJsonObject v = d.method(QStringLiteral("version"));
    const QString expected = type == QLatin1String("postgres") ? QStringLiteral("PostgreSQL 15")
                             : type == QLatin1String("sqlite") ? QStringLiteral("SQLite 3")
                                                               : QStringLiteral("DuckDB v1.4");
    QVERIFY2(v.value(QStringLiteral("version")).toString().startsWith(expected),
             dump(v).constData());
    QCOMPARE(d.method(QStringLiteral("ping")).value(QStringLiteral("ok")).toBool(), true);
    QVERIFY(!d.method(QStringLiteral("listDatabases"))
                 .value(QStringLiteral("databases"))
                 .toArray()
                 .isEmpty());

    const QJsonObject created = d.method(QStringLiteral("createDatabase"),
                                         {{QStringLiteral("name"), QStringLiteral("second")}});
    if (type == QLatin1String("postgres")) {
        QVERIFY2(!created.isEmpty(), dump(d.lastError()).constData());
        QVERIFY(dump(d.method(QStringLiteral("listDatabases"))).contains("\"second\""));
        d.method(QStringLiteral("createDatabase"),
                 {{QStringLiteral("name"), QStringLiteral("second")}});
        QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32008);
    } else {
        QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32010);
    }
    const QJsonObject info = m_engine.rpc().result(QStringLiteral("databases.get"),
                                                   {{QStringLiteral("id"), d.id}});
    QCOMPARE(info.value(QStringLiteral("database"))
                 .toObject()
                 .value(QStringLiteral("type"))
                 .toString(),
             type);
}

void tst_Databases::pagingAMillionRows_data()
{
    engines();
}
void tst_Databases::pagingAMillionRows()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const QString pad = QStringLiteral("'%1'").arg(QString(100, u'x'));
    const QString sql
        = type == QLatin1String("postgres")
              ? QStringLiteral("SELECT g, %1 AS pad FROM generate_series(1, 1000000) g").arg(pad)
          : type == QLatin1String("sqlite")
              ? QStringLiteral("WITH RECURSIVE c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c "
                               "WHERE g < 1000000) SELECT g, %1 AS pad FROM c")
                    .arg(pad)
              : QStringLiteral("SELECT range + 1 AS g, %1 AS pad FROM range(1000000)").arg(pad);
    QElapsedTimer clock;
    clock.start();
    QJsonObject page = d.query(sql, {}, {{QStringLiteral("pageSize"), 10000}});
    QVERIFY2(!page.isEmpty(), dump(d.lastError()).constData());
    QVERIFY(page.value(QStringLiteral("hasMore")).toBool());
    QString cursor = page.value(QStringLiteral("cursor")).toString();
    qint64 count = 0, sum = 0, last = 0;
    int pages = 0;
    while (true) {
        const QJsonArray rows = page.value(QStringLiteral("rows")).toArray();
        QVERIFY(rows.size() <= 10000);
        for (const QJsonValue &row : rows) {
            const qint64 g = row.toArray().at(0).toInteger();
            QVERIFY(g == last + 1); // in order, none lost, none twice
            last = g;
            sum += g;
            ++count;
        }
        ++pages;
        if (cursor.isEmpty())
            break;
        page = d.method(QStringLiteral("fetch"),
                        {{QStringLiteral("cursor"), cursor}, {QStringLiteral("pageSize"), 10000}});
        QVERIFY2(!page.isEmpty(), dump(d.lastError()).constData());
        cursor = page.value(QStringLiteral("cursor")).toString();
        QCOMPARE(cursor.isEmpty(), page.value(QStringLiteral("done")).toBool());
    }
    QCOMPARE(count, 1000000);
    QCOMPARE(sum, qint64(1000000) * 1000001 / 2);
    QVERIFY(pages >= 100);
    qInfo("%s: 1,000,000 rows in %d pages, %.0f rows/s", qPrintable(type), pages,
          count * 1000.0 / clock.elapsed());
    // The engine streamed: its memory never held the ~130 MB the result weighs as JSON.
    const qint64 hwm = rssHighWaterKb(m_engine.process().pid());
    QVERIFY2(hwm > 0 && hwm < 200 * 1024,
             qPrintable(QStringLiteral("sandboxd peaked at %1 KiB").arg(hwm)));

    // A cursor read to the end is gone; an abandoned one can be closed.
    d.method(QStringLiteral("fetch"), {{QStringLiteral("cursor"), QStringLiteral("cur_0000")}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);
    const QJsonObject open = d.query(sql, {}, {{QStringLiteral("pageSize"), 10}});
    const QString abandoned = open.value(QStringLiteral("cursor")).toString();
    QVERIFY(!abandoned.isEmpty());
    QCOMPARE(d.method(QStringLiteral("closeCursor"), {{QStringLiteral("cursor"), abandoned}})
                 .value(QStringLiteral("closed"))
                 .toBool(),
             true);
    d.method(QStringLiteral("fetch"), {{QStringLiteral("cursor"), abandoned}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32002);
    QCOMPARE(d.query(QStringLiteral("SELECT 2")).value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{2}}));
}

void tst_Databases::cancelStopsTheQuery_data()
{
    engines();
}
void tst_Databases::cancelStopsTheQuery()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                              {QStringLiteral("id"), 4711},
                              {QStringLiteral("method"), QStringLiteral("databases.query")},
                              {QStringLiteral("params"),
                               QJsonObject{{QStringLiteral("id"), d.id},
                                           {QStringLiteral("sql"), Dialect{type}.endless()}}}};
    const double cpuBefore = cpuSecondsOf(d.id);
    m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
    // The cancel comes once the server runs the statement: PostgreSQL's pg_sleep shows in
    // pg_stat_activity (seen from a second connection); SQLite's and DuckDB's counting burns the
    // sandbox's CPU.
    if (type == QLatin1String("postgres")) {
        RpcTestClient other;
        QVERIFY(other.open(m_engine.process().wsUrl(), m_engine.process().key()));
        const DbCall watcher{&other, d.id};
        QTRY_VERIFY_WITH_TIMEOUT(activeSleeps(watcher) >= 1, 10000);
    } else if (!sandboxProcesses(d.id).isEmpty()) {
        QTRY_VERIFY_WITH_TIMEOUT(cpuSecondsOf(d.id) - cpuBefore >= 0.2, 10000);
    } else {
        QTest::qWait(500); // no cgroup shows the sandbox's processes (not root): time instead
    }
    QElapsedTimer clock;
    clock.start();
    m_engine.rpc().sendText(R"({"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":4711}})");
    QJsonObject answer;
    while (clock.elapsed() < 10000) {
        const QJsonObject m = m_engine.rpc().nextMessage(10000).toObject();
        if (m.value(QStringLiteral("id")).toInt() == 4711) {
            answer = m;
            break;
        }
    }
    QCOMPARE(answer.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32012);
    QVERIFY(clock.elapsed() < 3000);
    // The query really stopped: the database answers at once.
    clock.restart();
    QCOMPARE(d.query(QStringLiteral("SELECT 3")).value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{3}}));
    QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
    if (type == QLatin1String("postgres")) {
        // ...and the server let go of it (its backend leaves the state 'active').
        QTRY_COMPARE_WITH_TIMEOUT(activeSleeps(d), 0, 3000);
    }
}

void tst_Databases::aServerThatNeverTakesItsCancelsHoldsFewThreads()
{
    // A PostgreSQL server that never reads the cancels sent to it (a hostile one; here a stopped
    // postmaster) holds the engine's thread of each cancel until it does. The engine sends at most
    // 4 at a time per database, answers every call after its grace time, and serves others meanwhile.
    if (::geteuid() != 0)
        QSKIP("stopping the sandbox's server (another uid) takes root");
    const QJsonObject created = m_engine.create(QStringLiteral("databases.create"),
                                                {{QStringLiteral("type"),
                                                  QStringLiteral("postgres")},
                                                 {QStringLiteral("size"), QStringLiteral("basic")}},
                                                120000);
    QVERIFY2(!created.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const DbCall d{&m_engine.rpc(), created.value(QStringLiteral("id")).toString()};
    constexpr int calls = 8; // the database's connections (maxConnections)
    const auto sendAll = [&](int firstId, const QString &sql, int timeoutMs) {
        for (int i = 0; i < calls; ++i) {
            const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                      {QStringLiteral("id"), firstId + i},
                                      {QStringLiteral("method"), QStringLiteral("databases.query")},
                                      {QStringLiteral("params"),
                                       QJsonObject{{QStringLiteral("id"), d.id},
                                                   {QStringLiteral("sql"), sql},
                                                   {QStringLiteral("timeout"), timeoutMs}}}};
            m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
        }
    };
    const auto answers = [&](int firstId, int timeoutMs) {
        QList<QJsonObject> got;
        QElapsedTimer clock;
        clock.start();
        while (got.size() < calls && clock.elapsed() < timeoutMs) {
            const QJsonObject m = m_engine.rpc().nextMessage(timeoutMs).toObject();
            const int id = m.value(QStringLiteral("id")).toInt();
            if (id >= firstId && id < firstId + calls)
                got.append(m);
        }
        return got;
    };
    // Each call on a connection of its own, opened while the server still takes connections
    // (its backends keep serving them once the postmaster stops).
    sendAll(100, QStringLiteral("SELECT pg_sleep(0.5)"), 30000);
    const QList<QJsonObject> warm = answers(100, 30000);
    QCOMPARE(warm.size(), calls);
    for (const QJsonObject &m : warm)
        QVERIFY2(m.contains(QStringLiteral("result")), QJsonDocument(m).toJson().constData());

    const int postmaster = postmasterPid(d.id);
    QVERIFY(postmaster > 0);
    const qint64 engine = m_engine.process().pid();
    const int threadsBefore = threadCount(engine);
    QCOMPARE(::kill(postmaster, SIGSTOP), 0);
    auto resume = qScopeGuard([postmaster] { ::kill(postmaster, SIGCONT); });

    sendAll(200, QStringLiteral("SELECT pg_sleep(60)"), 300);
    // Each answers with its timeout once the grace time after its cancel has passed.
    const QList<QJsonObject> timedOut = answers(200, 30000);
    QCOMPARE(timedOut.size(), calls);
    for (const QJsonObject &m : timedOut)
        QCOMPARE(m.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
                 -32004);
    // The cancels wait for the stopped server: a few threads, not one per call.
    const int held = threadCount(engine) - threadsBefore;
    QVERIFY2(held >= 1 && held <= 4, qPrintable(QStringLiteral("%1 threads held").arg(held)));
    // The engine serves other calls meanwhile.
    RpcTestClient other;
    QVERIFY(other.open(m_engine.process().wsUrl(), m_engine.process().key()));
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!other.result(QStringLiteral("databases.list"), {}).isEmpty());
    QVERIFY2(clock.elapsed() < 2000, qPrintable(QString::number(clock.elapsed())));

    // Once the server reads its cancels, their threads end.
    resume.dismiss();
    QCOMPARE(::kill(postmaster, SIGCONT), 0);
    QTRY_VERIFY_WITH_TIMEOUT(threadCount(engine) <= threadsBefore, 15000);
    QTRY_COMPARE_WITH_TIMEOUT(d.query(QStringLiteral("SELECT 5"))
                                  .value(QStringLiteral("rows"))
                                  .toArray(),
                              (QJsonArray{QJsonArray{5}}), 15000);
    m_engine.rpc().result(QStringLiteral("databases.delete"), {{QStringLiteral("id"), d.id}});
}

void tst_Databases::aQueryTakesTheConnectionOfTheLeastRecentlyUsedCursor()
{
    // Eight open cursors hold the database's eight connections (each paused on its next page)
    // when a query comes: one of them gives its connection up. It was whichever came first in a
    // hash (the one the user was reading on, as likely as not), or one whose rows were all read
    // already, which gave up no connection and left the query waiting for one. Now it is the
    // cursor least recently fetched from, of those that hold a connection.
    const DbCall d = db(QStringLiteral("postgres"));
    constexpr int connections = 8; // maxConnections
    const QString sql = QStringLiteral("SELECT g, repeat('x', 20000) AS pad "
                                       "FROM generate_series(1, 1000) g");
    QStringList cursors;
    for (int i = 0; i < connections; ++i) {
        const QJsonObject page = d.query(sql, {}, {{QStringLiteral("pageSize"), 1}});
        QVERIFY2(!page.isEmpty(), dump(d.lastError()).constData());
        cursors.append(page.value(QStringLiteral("cursor")).toString());
        QVERIFY(!cursors.last().isEmpty());
    }
    const auto fetch = [&](const QString &cursor) {
        return d.method(QStringLiteral("fetch"),
                        {{QStringLiteral("cursor"), cursor}, {QStringLiteral("pageSize"), 1}});
    };
    // The first is read on, so the second is the least recently used: each new cursor takes the
    // connection of the next one (a plain query would give its connection back to the pool).
    QCOMPARE(fetch(cursors.first()).value(QStringLiteral("rows")).toArray().size(), 1);
    for (int round = 1; round <= 3; ++round) {
        const QJsonObject page = d.query(sql, {}, {{QStringLiteral("pageSize"), 1}});
        QVERIFY2(!page.isEmpty(), dump(d.lastError()).constData());
        cursors.append(page.value(QStringLiteral("cursor")).toString());
        // The page the engine had read ahead comes first; then the cursor is gone.
        fetch(cursors.at(round));
        fetch(cursors.at(round));
        QVERIFY2(d.lastError().value(QStringLiteral("code")).toInt() == -32002,
                 qPrintable(QStringLiteral("round %1: cursor %1 is still open").arg(round)));
    }
    for (int i : {0, 4, 5, 6, 7, 8, 9, 10}) {
        for (int twice = 0; twice < 2; ++twice)
            QVERIFY2(!fetch(cursors.at(i)).isEmpty(),
                     qPrintable(QStringLiteral("cursor %1: ").arg(i)
                                + QString::fromUtf8(dump(d.lastError()))));
    }
    for (const QString &cursor : std::as_const(cursors))
        d.method(QStringLiteral("closeCursor"), {{QStringLiteral("cursor"), cursor}});
}

void tst_Databases::aHostThatAnswersGarbageFailsItsCallsAtOnce()
{
    // Code in a SQLite database's sandbox (its uid, like the database host's) puts a host of its own
    // in place of sandbox-dbhost's socket. Each answer line it sends is a violation (not an object
    // with an id the engine could have sent, or an answer to no request): the engine's connection
    // to it ends and its calls fail at once, instead of waiting for their timeout (60 s here); the
    // engine and the database's other connections go on. Its last line is a well-formed error
    // that is still untrusted: what the engine passes on of it is bounded and typed.
    const QJsonObject created = m_engine.create(QStringLiteral("databases.create"),
                                                {{QStringLiteral("type"), QStringLiteral("sqlite")},
                                                 {QStringLiteral("size"), QStringLiteral("basic")}},
                                                120000);
    QVERIFY2(!created.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const DbCall d{&m_engine.rpc(), created.value(QStringLiteral("id")).toString()};
    auto remove = qScopeGuard([&] {
        m_engine.rpc().result(QStringLiteral("databases.delete"), {{QStringLiteral("id"), d.id}});
    });
    // Listens, takes the host's socket name, and answers every line it reads with ARGV[0].
    const QString fakeHost = QStringLiteral(R"(
        my $answer = shift;
        my $path = "/run/db/fake.sock";
        unlink $path;
        socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
        bind($s, pack_sockaddr_un($path)) or die "bind: $!";
        listen($s, 16) or die "listen: $!";
        rename($path, "/run/db/dbhost.sock") or die "rename: $!";
        pipe(my $ready, my $tell) or die "pipe: $!";
        if (fork) { close($tell); <$ready>; exit 0; } # once the server is on its own
        close($ready);
        setsid();
        open(STDIN, "<", "/dev/null"); open(STDOUT, ">", "/dev/null"); open(STDERR, ">", "/dev/null");
        close($tell);
        $SIG{CHLD} = "IGNORE";
        while (accept(my $c, $s)) {
            next if fork;
            while (defined(my $l = <$c>)) {
                my ($id) = $l =~ /"id":(\d+)/; # ID in an answer: the request's own id
                (my $out = $answer) =~ s/\bID\b/$id/;
                syswrite($c, "$out\n");
            }
            exit 0;
        }
    )");
    // Each line, and what the calls that get it say.
    const QString malformed = QStringLiteral("the database host sent a malformed answer");
    const QList<std::pair<QString, QString>> answers{
        {QStringLiteral("this is not JSON"), malformed},
        {QStringLiteral("[1]"), malformed},
        {QStringLiteral(R"({"rows":[[1]],"fields":[]})"), malformed},
        {QStringLiteral(R"({"id":"1","rows":[[1]]})"), malformed},
        {QStringLiteral(R"({"id":-1,"rows":[[1]]})"), malformed},
        {QStringLiteral(R"({"id":1.5,"rows":[[1]]})"), malformed},
        {QStringLiteral(R"({"id":1e300,"rows":[[1]]})"), malformed},
        {QStringLiteral(R"({"id":4000000000,"rows":[[1]]})"),
         QStringLiteral("the database host answered no request")},
        // Not a violation: an error as the host sends them, but with places that are not whole
        // numbers and a message of 100,000 bytes. Passed on without the places, the message cut.
        {QStringLiteral(R"({"id":ID,"error":{"code":"sql","message":"%1","offset":"7",)"
                        R"("line":{"a":1},"column":-3,"statementIndex":1.5}})")
             .arg(QString(100000, u'm')),
         QStringLiteral("(83680 bytes more)")},
    };
    int nextId = 500;
    for (const auto &[answer, saying] : answers) {
        const QJsonObject ran
            = m_engine.rpc().result(QStringLiteral("sandbox.exec"),
                                    {{QStringLiteral("id"), d.id},
                                     {QStringLiteral("command"),
                                      QJsonArray{QStringLiteral("perl"), QStringLiteral("-MSocket"),
                                                 QStringLiteral("-MPOSIX"), QStringLiteral("-e"),
                                                 fakeHost, answer}}});
        QVERIFY2(ran.value(QStringLiteral("exitCode")).toInt() == 0 && !ran.isEmpty(),
                 dump(ran.isEmpty() ? m_engine.rpc().lastError() : ran).constData());
        // A slow query holds the host's idle connection; the others need connections of their
        // own, which reach the fake.
        const QStringList
            sqls{QStringLiteral(
                     "WITH RECURSIVE c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c WHERE "
                     "g < 2000000) SELECT count(*) FROM c"),
                 QStringLiteral("SELECT 1"), QStringLiteral("SELECT 2"),
                 QStringLiteral("SELECT 3")};
        const int first = nextId;
        for (const QString &sql : sqls) {
            const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                      {QStringLiteral("id"), nextId++},
                                      {QStringLiteral("method"), QStringLiteral("databases.query")},
                                      {QStringLiteral("params"),
                                       QJsonObject{{QStringLiteral("id"), d.id},
                                                   {QStringLiteral("sql"), sql},
                                                   {QStringLiteral("rowMode"),
                                                    QStringLiteral("array")},
                                                   {QStringLiteral("timeout"), 60000}}}};
            m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
        }
        QHash<int, QJsonObject> got;
        QDeadlineTimer deadline(30000);
        while (got.size() < sqls.size() && !deadline.hasExpired()) {
            const QJsonObject m
                = m_engine.rpc().nextMessage(int(deadline.remainingTime())).toObject();
            const int id = m.value(QStringLiteral("id")).toInt();
            if (id >= first && id < first + sqls.size())
                got.insert(id - first, m);
        }
        QVERIFY2(got.size() == sqls.size(),
                 qPrintable(QStringLiteral("%1 of %2 calls answered within 30 s (answer %3)")
                                .arg(got.size())
                                .arg(sqls.size())
                                .arg(answer)));
        QCOMPARE(got.value(0).value(QStringLiteral("result"))[QStringLiteral("rows")],
                 (QJsonArray{QJsonArray{2000000}}));
        int refused = 0;
        for (int i = 1; i < sqls.size(); ++i) {
            const QJsonObject m = got.value(i);
            if (m.contains(QStringLiteral("result"))) {
                QCOMPARE(m.value(QStringLiteral("result"))[QStringLiteral("rows")],
                         (QJsonArray{QJsonArray{i}}));
                continue;
            }
            const QJsonObject e = m.value(QStringLiteral("error")).toObject();
            QVERIFY2(e.value(QStringLiteral("message")).toString().contains(saying),
                     dump(m).constData());
            QVERIFY2(e.value(QStringLiteral("message")).toString().size() <= 16 * 1024,
                     qPrintable(answer.left(200)));
            const QJsonObject data = e.value(QStringLiteral("data")).toObject();
            for (const char *place : {"offset", "position", "line", "column", "statementIndex"})
                QVERIFY2(!data.contains(QLatin1String(place)), dump(m).constData());
            ++refused;
        }
        QVERIFY2(refused > 0, qPrintable(answer));
        // The database goes on serving on its host's connection, and the engine everyone else.
        QCOMPARE(d.query(QStringLiteral("SELECT 42")).value(QStringLiteral("rows")).toArray(),
                 (QJsonArray{QJsonArray{42}}));
        QVERIFY(!db(QStringLiteral("duckdb")).query(QStringLiteral("SELECT 7")).isEmpty());
    }
}

void tst_Databases::statementTimeout_data()
{
    engines();
}
void tst_Databases::statementTimeout()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QElapsedTimer clock;
    clock.start();
    d.query(Dialect{type}.endless(), {}, {{QStringLiteral("timeout"), 400}});
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32004);
    QVERIFY2(d.lastError()
                 .value(QStringLiteral("message"))
                 .toString()
                 .contains(QLatin1String("400 ms")),
             dump(d.lastError()).constData());
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
    QCOMPARE(d.query(QStringLiteral("SELECT 4")).value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{4}}));
}

void tst_Databases::badSqlSaysWhere_data()
{
    engines();
}
void tst_Databases::badSqlSaysWhere()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    d.query(QStringLiteral("SELECT 1\nFROM FROM"));
    const QJsonObject err = d.lastError();
    QCOMPARE(err.value(QStringLiteral("code")).toInt(), -32014);
    QVERIFY2(err.value(QStringLiteral("message")).toString().contains(QLatin1String("FROM")),
             dump(err).constData());
    const QJsonObject data = err.value(QStringLiteral("data")).toObject();
    QCOMPARE(data.value(QStringLiteral("line")).toInt(), 2);
    QCOMPARE(data.value(QStringLiteral("column")).toInt(), 6);
    QCOMPARE(data.value(QStringLiteral("position")).toInt(), 15);
    // Positions count characters, not bytes.
    d.query(QStringLiteral("SELECT 'ü✓' FROM FROM"));
    QCOMPARE(d.lastError()
                 .value(QStringLiteral("data"))
                 .toObject()
                 .value(QStringLiteral("position"))
                 .toInt(),
             18);
    // An unknown table: a clear message naming it.
    d.query(QStringLiteral("SELECT * FROM no_such_table"));
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32014);
    QVERIFY2(d.lastError()
                 .value(QStringLiteral("message"))
                 .toString()
                 .contains(QLatin1String("no_such_table")),
             dump(d.lastError()).constData());
    // A query is one statement; a script goes through execute.
    d.query(QStringLiteral("SELECT 1; SELECT 2"));
    QVERIFY(d.lastError().value(QStringLiteral("code")).toInt() != 0);
    QVERIFY2(!d.execute(QStringLiteral("CREATE TABLE s1(a INTEGER); CREATE TABLE s2(a INTEGER); "
                                       "INSERT INTO s1 VALUES (1)"))
                  .isEmpty(),
             dump(d.lastError()).constData());
}

void tst_Databases::aNulInSqlIsRefusedNotCutShort_data()
{
    engines();
}
void tst_Databases::aNulInSqlIsRefusedNotCutShort()
{
    // Every database reads SQL text, and the names the engine puts into it, up to a NUL: what
    // follows one was left out without a word (a script's later statements, a query's WHERE).
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE nul(a INTEGER)")).isEmpty());
    const QString nul(QChar(0));
    const QString badTable = QStringLiteral("nul") + nul + QStringLiteral("x");
    const QString badStatement = QStringLiteral("INSERT INTO nul VALUES (4)") + nul
                                 + QStringLiteral("garbage");
    const auto refused = [&](const QString &field) {
        const QJsonObject e = d.lastError();
        return e.value(QStringLiteral("code")).toInt() == -32602
               && e.value(QStringLiteral("data")).toObject().value(QStringLiteral("field"))
                      == QJsonValue(field)
               && e.value(QStringLiteral("message")).toString().contains(QLatin1String("NUL"));
    };
    QVERIFY(d.execute(QStringLiteral("INSERT INTO nul VALUES (1);") + nul
                      + QStringLiteral(" INSERT INTO nul VALUES (2)"))
                .isEmpty());
    QVERIFY2(refused(QStringLiteral("sql")), dump(d.lastError()).constData());
    QVERIFY(
        d.query(QStringLiteral("SELECT count(*) FROM nul") + nul + QStringLiteral(" WHERE a = 99"))
            .isEmpty());
    QVERIFY2(refused(QStringLiteral("sql")), dump(d.lastError()).constData());
    QVERIFY(d.method(QStringLiteral("transaction"),
                     {{QStringLiteral("statements"),
                       QJsonArray{QStringLiteral("INSERT INTO nul VALUES (3)"),
                                  QJsonObject{{QStringLiteral("sql"), badStatement}}}}})
                .isEmpty());
    QVERIFY2(refused(QStringLiteral("statements[1].sql")), dump(d.lastError()).constData());
    QVERIFY(
        d.method(QStringLiteral("describeTable"), {{QStringLiteral("table"), badTable}}).isEmpty());
    QVERIFY2(refused(QStringLiteral("table")), dump(d.lastError()).constData());
    QVERIFY(d.method(QStringLiteral("exportData"), {{QStringLiteral("table"), badTable}}).isEmpty());
    QVERIFY2(refused(QStringLiteral("table")), dump(d.lastError()).constData());
    // Nothing of them ran.
    QCOMPARE(d.query(QStringLiteral("SELECT count(*) FROM nul"), {},
                     {{QStringLiteral("rowMode"), QStringLiteral("array")}})
                 .value(QStringLiteral("rows"))
                 .toArray(),
             (QJsonArray{QJsonArray{0}}));
}

void tst_Databases::serverSideFileAccessIsRefused_data()
{
    engines();
}
void tst_Databases::serverSideFileAccessIsRefused()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QStringList attempts;
    if (type == QLatin1String("postgres"))
        attempts << QStringLiteral("COPY (SELECT 1) TO PROGRAM 'id'")
                 << QStringLiteral("SELECT pg_read_file('/etc/passwd')")
                 << QStringLiteral("COPY (SELECT 1) TO '/workspace/x.csv'")
                 << QStringLiteral("ALTER ROLE CURRENT_USER SUPERUSER");
    else if (type == QLatin1String("sqlite"))
        attempts << QStringLiteral("ATTACH '/etc/passwd' AS p")
                 << QStringLiteral("SELECT load_extension('/usr/lib/x')")
                 << QStringLiteral("ATTACH 'file:/etc/passwd?mode=ro' AS p");
    else
        attempts << QStringLiteral("SELECT * FROM read_csv('/etc/passwd')")
                 << QStringLiteral("SET enable_external_access = true")
                 << QStringLiteral("INSTALL httpfs") << QStringLiteral("ATTACH '/etc/passwd' AS p");
    for (const QString &sql : attempts) {
        d.execute(sql);
        QVERIFY2(d.lastError().value(QStringLiteral("code")).toInt() == -32014,
                 qPrintable(sql + u' ' + QString::fromUtf8(dump(d.lastError()))));
    }
}

void tst_Databases::exportData_data()
{
    engines();
}
void tst_Databases::exportData()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE ex(id INTEGER, name TEXT)")).isEmpty());
    QVERIFY(!d.execute(QStringLiteral("INSERT INTO ex VALUES (1, 'a,b'), (2, NULL)")).isEmpty());
    const QJsonObject csv = d.method(QStringLiteral("exportData"),
                                     {{QStringLiteral("table"), QStringLiteral("ex")},
                                      {QStringLiteral("format"), QStringLiteral("csv")}});
    QVERIFY2(!csv.isEmpty(), dump(d.lastError()).constData());
    QCOMPARE(csv.value(QStringLiteral("content")).toString(),
             QStringLiteral("id,name\r\n1,\"a,b\"\r\n2,\r\n"));
    const QJsonObject json = d.method(QStringLiteral("exportData"),
                                      {{QStringLiteral("table"), QStringLiteral("ex")},
                                       {QStringLiteral("format"), QStringLiteral("json")}});
    QCOMPARE(QJsonDocument::fromJson(json.value(QStringLiteral("content")).toString().toUtf8())
                 .array(),
             (QJsonArray{QJsonObject{{QStringLiteral("id"), 1},
                                     {QStringLiteral("name"), QStringLiteral("a,b")}},
                         QJsonObject{{QStringLiteral("id"), 2},
                                     {QStringLiteral("name"), QJsonValue()}}}));
    const QJsonObject parquet = d.method(QStringLiteral("exportData"),
                                         {{QStringLiteral("table"), QStringLiteral("ex")},
                                          {QStringLiteral("format"), QStringLiteral("parquet")}});
    if (type == QLatin1String("duckdb")) {
        const QByteArray bytes = QByteArray::fromBase64(
            parquet.value(QStringLiteral("contentBase64")).toString().toLatin1());
        QVERIFY2(bytes.startsWith("PAR1") && bytes.endsWith("PAR1"),
                 dump(d.lastError()).constData());
    } else {
        QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32010);
    }
}

void tst_Databases::stopAndStartKeepData_data()
{
    engines();
}
void tst_Databases::stopAndStartKeepData()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE kept(v TEXT)")).isEmpty());
    QVERIFY(!d.execute(QStringLiteral("INSERT INTO kept VALUES ('before stop')")).isEmpty());
    QCOMPARE(d.method(QStringLiteral("stop")).value(QStringLiteral("status")).toString(),
             QStringLiteral("stopped"));
    d.query(QStringLiteral("SELECT v FROM kept"));
    QCOMPARE(d.lastError().value(QStringLiteral("code")).toInt(), -32005);
    QCOMPARE(d.method(QStringLiteral("start")).value(QStringLiteral("status")).toString(),
             QStringLiteral("running"));
    QCOMPARE(d.query(QStringLiteral("SELECT v FROM kept")).value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{QStringLiteral("before stop")}}));
    const QJsonObject restarted = d.method(QStringLiteral("restart"));
    QVERIFY2(restarted.value(QStringLiteral("status")).toString() == QLatin1String("running"),
             dump(d.lastError()).constData());
    QVERIFY(restarted.value(QStringLiteral("startupTimeMs")).toDouble() > 0);
    QCOMPARE(d.query(QStringLiteral("SELECT v FROM kept")).value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonArray{QStringLiteral("before stop")}}));
}

void tst_Databases::committedRowSurvivesKill9OfTheServer_data()
{
    engines();
}
void tst_Databases::committedRowSurvivesKill9OfTheServer()
{
    QFETCH(QString, type);
    const DbCall d = db(type);
    QVERIFY(!d.execute(QStringLiteral("CREATE TABLE durable(v TEXT)")).isEmpty());
    QVERIFY(!d.execute(QStringLiteral("INSERT INTO durable VALUES ('committed')")).isEmpty());
    const QString kill = type == QLatin1String("postgres")
                             ? QStringLiteral(
                                 "kill -9 $(head -n1 /workspace/pgdata/postmaster.pid)")
                             : QStringLiteral("pkill -9 -f '^/run/sandbox/dbhost/sandbox-dbhost'");
    const QJsonObject killed = m_engine.rpc().result(QStringLiteral("sandbox.exec"),
                                                     {{QStringLiteral("id"), d.id},
                                                      {QStringLiteral("command"), kill}});
    QCOMPARE(killed.value(QStringLiteral("exitCode")).toInt(), 0);
    // The engine notices and starts the server again (crash recovery) on the next call.
    QJsonArray rows;
    const bool back = QTest::qWaitFor(
        [&] {
            rows = d.query(QStringLiteral("SELECT v FROM durable"))
                       .value(QStringLiteral("rows"))
                       .toArray();
            return !rows.isEmpty();
        },
        20000);
    QVERIFY2(back && rows == (QJsonArray{QJsonArray{QStringLiteral("committed")}}),
             dump(d.lastError()).constData());
}

void tst_Databases::committedRowSurvivesKill9OfSandboxd()
{
    for (const QString &type : m_ids.keys()) {
        const DbCall d = db(type);
        QVERIFY(!d.execute(QStringLiteral("CREATE TABLE crash(v TEXT)")).isEmpty());
        QVERIFY(!d.execute(QStringLiteral("INSERT INTO crash VALUES ('%1')").arg(type)).isEmpty());
    }
    m_engine.process().kill9();
    QVERIFY2(m_engine.start({}, m_engine.process().dataDir()), qPrintable(m_engine.process().log()));
    for (const QString &type : m_ids.keys()) {
        const DbCall d = db(type);
        const QJsonObject r = d.query(QStringLiteral("SELECT v FROM crash"));
        QVERIFY2(!r.isEmpty(), qPrintable(type + u' ' + QString::fromUtf8(dump(d.lastError()))));
        QCOMPARE(r.value(QStringLiteral("rows")).toArray(), (QJsonArray{QJsonArray{type}}));
    }
}

void tst_Databases::restRoutes()
{
    const QString id = m_ids.value(QStringLiteral("sqlite"));
    const QUrl base = m_engine.process().url();
    auto post = [&](const QString &action, const QJsonObject &body) {
        return httpRequest("POST",
                           base.resolved(
                               QUrl(QStringLiteral("/api/databases/%1/%2").arg(id, action))),
                           m_engine.process().key(), QJsonDocument(body).toJson());
    };
    const HttpAnswer q = post(QStringLiteral("query"),
                              {{QStringLiteral("sql"), QStringLiteral("SELECT ? AS a")},
                               {QStringLiteral("params"), QJsonArray{7}}});
    QCOMPARE(q.status, 200);
    QCOMPARE(q.json().toObject().value(QStringLiteral("rows")).toArray(),
             (QJsonArray{QJsonObject{{QStringLiteral("a"), 7}}}));
    const HttpAnswer bad = post(QStringLiteral("query"),
                                {{QStringLiteral("sql"), QStringLiteral("SELEC 1")}});
    QCOMPARE(bad.status, 422);
    QCOMPARE(bad.json()
                 .toObject()
                 .value(QStringLiteral("error"))
                 .toObject()
                 .value(QStringLiteral("code"))
                 .toInt(),
             -32014);
    // Rows are objects keyed in column order over REST too (as over /rpc: typesRoundTrip).
    for (const QString &action : {QStringLiteral("query"), QStringLiteral("transaction")}) {
        const QString sql = QStringLiteral("SELECT 1 AS zeta, 2 AS alpha");
        const HttpAnswer ordered = post(action, action == QLatin1String("query")
                                                    ? QJsonObject{{QStringLiteral("sql"), sql}}
                                                    : QJsonObject{{QStringLiteral("statements"),
                                                                   QJsonArray{sql}}});
        QCOMPARE(ordered.status, 200);
        QVERIFY2(ordered.body.contains(R"("rows":[{"zeta":1,"alpha":2}])"),
                 ordered.body.constData());
    }
    QCOMPARE(post(QStringLiteral("listTables"), {}).status, 200);
    const HttpAnswer list = httpRequest("GET",
                                        base.resolved(QUrl(QStringLiteral("/api/databases"))),
                                        m_engine.process().key());
    QCOMPARE(list.json().toObject().value(QStringLiteral("databases")).toArray().size(), 3);
}

QTEST_GUILESS_MAIN(tst_Databases)
#include "tst_databases.moc"
