// core's DatabasesService and RowFeed against a real sandboxd: typed calls, paging, errors.
#include "enginefixture.h"

#include <client/client.h>
#include <client/rowfeed.h>

#include <QSignalSpy>

#include <QTest>
#include <cmath>
#include <optional>

using namespace Sandbox;

namespace {

// Waits for a callback-style call and hands back its result.
template<typename T, typename Start>
Result<T> wait(Start start, int timeoutMs = 60000)
{
    std::optional<Result<T>> out;
    QObject context;
    RpcCall call = start(&context, [&out](Result<T> r) { out = std::move(r); });
    if (!QTest::qWaitFor([&out] { return out.has_value(); }, timeoutMs))
        return Error{ErrorCode::Timeout, QStringLiteral("no answer"), {}};
    return *out;
}

} // namespace

class tst_DatabasesService : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void typedCalls();
    void rowFeedPagesThroughAResult();
    void rowFeedCancelClosesTheCursor();
    void errorsSayWhere();
    void valuesConvert();

private:
    EngineFixture m_engine;
    Client *m_client = nullptr;
    QString m_id;
};

void tst_DatabasesService::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_client = new Client(ConnectionProfile::remote(m_engine.process().url(),
                                                    m_engine.process().key()),
                          this);
    m_client->open();
    DatabaseCreateOptions options;
    options.type = QStringLiteral("sqlite");
    options.size = QStringLiteral("lite");
    const auto created = wait<DatabaseInfo>(
        [&](QObject *ctx, auto cb) { return m_client->databases().createInfo(options, ctx, cb); });
    QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
    QCOMPARE(created->engine, QStringLiteral("sqlite"));
    QVERIFY(created->startupTimeMs > 0);
    m_id = created->sandbox.id;
    m_engine.deleteAtCleanup(m_id);
}

void tst_DatabasesService::cleanupTestCase()
{
    delete m_client;
    m_engine.cleanup();
}

void tst_DatabasesService::typedCalls()
{
    DatabasesService &db = m_client->databases();
    const auto script = wait<ExecuteResult>([&](QObject *ctx, auto cb) {
        return db.executeScript(
            m_id,
            QStringLiteral(
                "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, data BLOB);"
                "CREATE INDEX items_name ON items(name);"),
            {}, 10000, ctx, cb);
    });
    QVERIFY2(script, qPrintable(script ? QString() : script.error().message));
    const auto inserted = wait<QList<QueryPage>>([&](QObject *ctx, auto cb) {
        return db.transaction(m_id,
                              {{QStringLiteral("INSERT INTO items(name, data) VALUES (?, ?)"),
                                {QStringLiteral("a"), SqlValue::bytes(QByteArray("\x00\x01", 2))}},
                               {QStringLiteral("INSERT INTO items(name) VALUES (?)"),
                                {QStringLiteral("b")}}},
                              10000, ctx, cb);
    });
    QVERIFY(inserted);
    QCOMPARE(inserted->size(), 2);
    QCOMPARE(inserted->at(1).rowsAffected, 1);
    const auto page = wait<QueryPage>([&](QObject *ctx, auto cb) {
        return db.queryPage(m_id, QStringLiteral("SELECT id, name, data FROM items ORDER BY id"),
                            {}, QueryOptions{}, ctx, cb);
    });
    QVERIFY(page);
    QCOMPARE(page->fields.size(), 3);
    QCOMPARE(page->fields.at(1).name, QStringLiteral("name"));
    QCOMPARE(page->rows.size(), 2);
    QCOMPARE(page->rows.variant(0, 2).toByteArray(), QByteArray("\x00\x01", 2));
    QVERIFY(page->rows.isNull(1, 2));
    QVERIFY(page->done);

    const auto tables = wait<QList<TableInfo>>(
        [&](QObject *ctx, auto cb) { return db.listTables(m_id, ctx, cb); });
    QVERIFY(tables && tables->size() == 1 && tables->first().name == QLatin1String("items"));
    const auto desc = wait<TableDescription>([&](QObject *ctx, auto cb) {
        return db.describeTable(m_id, QStringLiteral("items"), {}, ctx, cb);
    });
    QVERIFY(desc);
    QCOMPARE(desc->columns.size(), 3);
    QVERIFY(desc->columns.first().primaryKey);
    QVERIFY(!desc->columns.at(1).nullable);
    QCOMPARE(desc->indexes.first().name, QStringLiteral("items_name"));
    QCOMPARE(desc->indexes.first().columns, QStringList{QStringLiteral("name")});
    const auto version = wait<QString>(
        [&](QObject *ctx, auto cb) { return db.version(m_id, ctx, cb); });
    QVERIFY(version && version->startsWith(QLatin1String("SQLite 3.")));
    const auto ping = wait<double>([&](QObject *ctx, auto cb) { return db.ping(m_id, ctx, cb); });
    QVERIFY(ping && *ping >= 0);
    const auto csv = wait<ExportResult>([&](QObject *ctx, auto cb) {
        return db.exportData(m_id, QStringLiteral("items"), QStringLiteral("csv"), ctx, cb);
    });
    QVERIFY(csv);
    QCOMPARE(csv->rowCount, 2);
    QVERIFY(csv->content.startsWith("id,name,data\r\n1,a,"));
}

void tst_DatabasesService::rowFeedPagesThroughAResult()
{
    RowFeed feed(&m_client->databases(), m_id,
                 QStringLiteral("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                                "WHERE x < 25000) SELECT x FROM c"),
                 {});
    feed.setPageSize(1000);
    QSignalSpy started(&feed, &RowFeed::started);
    QSignalSpy finished(&feed, &RowFeed::finished);
    qint64 sum = 0, rows = 0;
    int pages = 0;
    connect(&feed, &RowFeed::rowsArrived, this, [&](const SqlRows &page) {
        ++pages;
        QVERIFY(page.size() <= 1000);
        for (qsizetype r = 0; r < page.size(); ++r) {
            sum += page.variant(r, 0).toLongLong();
            ++rows;
        }
    });
    feed.start();
    QVERIFY(started.wait(20000));
    QCOMPARE(feed.fields().first().name, QStringLiteral("x"));
    QCOMPARE(feed.command(), QStringLiteral("SELECT")); // as PostgreSQL names it
    // Pages come only when asked for: a view that does not scroll costs nothing more.
    QSignalSpy more(&feed, &RowFeed::rowsArrived);
    QVERIFY(!more.wait(200));
    QCOMPARE(rows, 1000);
    QVERIFY(feed.canFetchMore());
    while (feed.canFetchMore()) {
        feed.fetchMore();
        QVERIFY(QTest::qWaitFor([&feed] { return !feed.isFetching(); }, 20000));
    }
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 20000);
    QCOMPARE(rows, 25000);
    QCOMPARE(sum, qint64(25000) * 25001 / 2);
    QVERIFY(pages >= 25);
    QVERIFY(feed.isFinished());
}

void tst_DatabasesService::rowFeedCancelClosesTheCursor()
{
    QString cursor;
    {
        RowFeed feed(&m_client->databases(), m_id,
                     QStringLiteral("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM "
                                    "c WHERE x < 100000) SELECT x FROM c"),
                     {});
        feed.setPageSize(10);
        QSignalSpy started(&feed, &RowFeed::started);
        feed.start();
        QVERIFY(started.wait(20000));
        QVERIFY(feed.canFetchMore());
    } // destroyed: its cursor is closed
    // With the cursor closed the engine keeps no cursor for this database: 16 fresh feeds all work.
    for (int i = 0; i < 20; ++i) {
        RowFeed feed(&m_client->databases(), m_id, QStringLiteral("SELECT 1 UNION ALL SELECT 2"),
                     {});
        feed.setPageSize(1);
        QSignalSpy started(&feed, &RowFeed::started);
        QSignalSpy failed(&feed, &RowFeed::failed);
        feed.start();
        QVERIFY(started.wait(20000));
        QCOMPARE(failed.size(), 0);
    }
}

void tst_DatabasesService::errorsSayWhere()
{
    RowFeed feed(&m_client->databases(), m_id, QStringLiteral("SELECT 1,\n  2 FROM FROM"), {});
    QSignalSpy failed(&feed, &RowFeed::failed);
    feed.start();
    QVERIFY(failed.wait(20000));
    const Error error = failed.first().first().value<Error>();
    QCOMPARE(error.code, ErrorCode::QueryError);
    const SqlErrorLocation at = SqlErrorLocation::fromError(error);
    QCOMPARE(at.line, 2);
    QCOMPARE(at.column, 10);
    QCOMPARE(at.position, 20);
}

void tst_DatabasesService::valuesConvert()
{
    QCOMPARE(SqlValue::toVariant(
                 QJsonObject{{QStringLiteral("$int"), QStringLiteral("9007199254740993")}})
                 .toLongLong(),
             9007199254740993LL);
    QCOMPARE(SqlValue::toText(QJsonObject{{QStringLiteral("$bytes"), QStringLiteral("AAEC")}}),
             QStringLiteral("\\x000102"));
    QCOMPARE(SqlValue::fromVariant(QVariant(qlonglong(9007199254740993LL))),
             QJsonValue(QJsonObject{{QStringLiteral("$int"), QStringLiteral("9007199254740993")}}));
    QVERIFY(SqlValue::isNull(QJsonValue()));
    QVERIFY(!SqlValue::isNull(QJsonValue(QString())));
    QVERIFY(std::isnan(
        SqlValue::toVariant(QJsonObject{{QStringLiteral("$float"), QStringLiteral("NaN")}})
            .toDouble()));
}

QTEST_GUILESS_MAIN(tst_DatabasesService)
#include "tst_databasesservice.moc"
