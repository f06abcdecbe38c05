// The console's result model under QAbstractItemModelTester, fed by a real database: lazy pages,
// bounded memory, NULL apart from '', copy, and export without running the query again.
#include "uitest.h"

#include <client/client.h>
#include <client/rowfeed.h>
#include <sql/resultmodel.h>
#include <sql/resultview.h>

#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QPlainTextEdit>
#include <QTableView>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace Sandbox;
using namespace Sandbox::Ui;

class tst_ResultModel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void pagesOnDemandUnderTheTester();
    void nullIsShownApart();
    void boundedMemoryAndScrollBack();
    void exportWithoutRunningAgain();
    void errorsAreReported();
    void copyAsCsvJsonAndInsert();
    void cellViewerShowsTheWholeValue();
    void fetchAllIsBounded();

private:
    RowFeed *feed(const QString &sql, int pageSize = 100)
    {
        auto *f = new RowFeed(&m_client->databases(), m_id, sql, {});
        f->setPageSize(pageSize);
        return f;
    }

    UiTest::Engine m_engine;
    Client *m_client = nullptr; // not owned: m_engine's
    QString m_id;
};

void tst_ResultModel::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_client = m_engine.client();
    const auto created = m_engine.createDatabase(DatabaseCreateOptions{});
    QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
    m_id = created->id;
}

static const char kNumbers[]
    = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %1) "
      "SELECT x, 'row ' || x AS label, CASE WHEN x % 10 = 0 THEN NULL WHEN x % 10 = 1 THEN '' ELSE "
      "x * 2 END AS v FROM c";

void tst_ResultModel::pagesOnDemandUnderTheTester()
{
    ResultModel model;
    QSignalSpy started(&model, &ResultModel::started);
    model.setFeed(feed(QString::fromLatin1(kNumbers).arg(1050)));
    QVERIFY(started.wait(20000));
    QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 100, 20000);
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("label"));
    QVERIFY(model.canFetchMore({}));
    // Nothing more arrives unless a view asks: no count(*), no read-ahead.
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QVERIFY(!inserted.wait(300));
    QCOMPARE(model.rowCount(), 100);
    // The tester asks (it calls fetchMore as views do) and checks every insertion.
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    while (model.canFetchMore({})) {
        const int before = model.rowCount();
        model.fetchMore({});
        QTRY_VERIFY_WITH_TIMEOUT(model.rowCount() > before || !model.canFetchMore({}), 20000);
    }
    QCOMPARE(model.rowCount(), 1050);
    QCOMPARE(model.index(1049, 0).data().toString(), QStringLiteral("1050"));
    QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("row 1"));
    QTRY_VERIFY(model.isComplete());
}

void tst_ResultModel::nullIsShownApart()
{
    ResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy finished(&model, &ResultModel::finished);
    model.setFeed(feed(QString::fromLatin1(kNumbers).arg(20)));
    QVERIFY(finished.wait(20000));
    const QModelIndex null = model.index(9, 2);   // x = 10
    const QModelIndex empty = model.index(10, 2); // x = 11
    QCOMPARE(null.data(ResultModel::IsNullRole).toBool(), true);
    QCOMPARE(empty.data(ResultModel::IsNullRole).toBool(), false);
    QCOMPARE(null.data().toString(), QStringLiteral("NULL"));
    QCOMPARE(empty.data().toString(), QString());
    QVERIFY(null.data(Qt::FontRole).value<QFont>().italic());
    QVERIFY(!empty.data(Qt::FontRole).isValid());
    QCOMPARE(model.index(1, 2).data(Qt::TextAlignmentRole).toInt() & Qt::AlignRight,
             int(Qt::AlignRight));
    // Copy: tab-separated, NULL as an empty field, with the header on request.
    const QString copied = model.copyText({model.index(8, 0), model.index(8, 2), model.index(9, 0),
                                           model.index(9, 2), model.index(9, 1), model.index(8, 1)},
                                          true);
    QCOMPARE(copied, QStringLiteral("x\tlabel\tv\n9\trow 9\t18\n10\trow 10\t"));
}

void tst_ResultModel::boundedMemoryAndScrollBack()
{
    ResultModel model;
    model.setMaxCachedPages(4);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy started(&model, &ResultModel::started);
    model.setFeed(feed(QString::fromLatin1(kNumbers).arg(20000), 500));
    QVERIFY(started.wait(20000));
    while (model.canFetchMore({}) || model.isFetching()) {
        model.fetchMore({});
        QVERIFY(QTest::qWaitFor([&model] { return !model.isFetching(); }, 20000));
        QVERIFY(model.cachedPages() <= 4);
    }
    QCOMPARE(model.rowCount(), 20000);
    QVERIFY(model.spillBytes() > 200000);
    // Scrolling back reads the first rows from the spill, not from memory nor from the server.
    QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("row 1"));
    QCOMPARE(model.index(12345, 0).data().toString(), QStringLiteral("12346"));
    QVERIFY(model.cachedPages() <= 4);
    // Jumping about the whole result, each row is the right one however the cache turns over.
    model.setMaxCachedPages(2);
    for (int i = 0; i < 2000; ++i) {
        const int row = int((qint64(i) * 7919) % 20000);
        QCOMPARE(model.index(row, 0).data().toString(), QString::number(row + 1));
    }
    QVERIFY(model.cachedPages() <= 2);
}

void tst_ResultModel::exportWithoutRunningAgain()
{
    // random() differs on every run: an export that ran the query again would not match the grid.
    ResultModel model;
    QSignalSpy started(&model, &ResultModel::started);
    model.setFeed(
        feed(QStringLiteral(
                 "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) "
                 "SELECT x, random() AS r, NULL AS n FROM c"),
             250));
    QVERIFY(started.wait(20000));
    QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 250, 20000);
    const QString firstRandom = model.index(0, 1).data().toString();
    const QString lastShown = model.index(249, 1).data().toString();
    QTemporaryDir dir;
    bool exported = false;
    model.exportTo(dir.filePath(QStringLiteral("out.csv")), ResultModel::Format::Csv, this,
                   [&](Result<qint64> r) {
                       QVERIFY(r);
                       QCOMPARE(*r, 3000);
                       exported = true;
                   });
    QTRY_VERIFY_WITH_TIMEOUT(exported, 30000);
    QFile csv(dir.filePath(QStringLiteral("out.csv")));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().split('\n');
    QCOMPARE(lines.at(0).trimmed(), QByteArray("x,r,n"));
    QCOMPARE(lines.at(1).trimmed(), "1," + firstRandom.toLatin1() + ',');
    QCOMPARE(lines.at(250).trimmed(), "250," + lastShown.toLatin1() + ',');
    QCOMPARE(lines.at(3000).split(',').at(0), QByteArray("3000"));
    QCOMPARE(model.rowCount(), 3000);

    bool jsonDone = false;
    model.exportTo(dir.filePath(QStringLiteral("out.json")), ResultModel::Format::Json, this,
                   [&](Result<qint64> r) {
                       QVERIFY(r);
                       jsonDone = true;
                   });
    QTRY_VERIFY_WITH_TIMEOUT(jsonDone, 30000);
    QFile json(dir.filePath(QStringLiteral("out.json")));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const QJsonArray rows = QJsonDocument::fromJson(json.readAll()).array();
    QCOMPARE(rows.size(), 3000);
    QCOMPARE(SqlValue::toText(rows.first().toObject().value(QStringLiteral("r"))), firstRandom);
    QVERIFY(rows.first().toObject().value(QStringLiteral("n")).isNull());
}

void tst_ResultModel::errorsAreReported()
{
    ResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy failed(&model, &ResultModel::failed);
    model.setFeed(feed(QStringLiteral("SELECT * FROM nowhere")));
    QVERIFY(failed.wait(20000));
    QCOMPARE(failed.first().first().value<Error>().code, ErrorCode::QueryError);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.canFetchMore({}));
}

void tst_ResultModel::copyAsCsvJsonAndInsert()
{
    ResultModel model;
    QSignalSpy finished(&model, &ResultModel::finished);
    model.setFeed(feed(QStringLiteral(
        "SELECT 1 AS id, 'a, \"quoted\" word' AS \"Note\", NULL AS gone, 2.5 AS price "
        "UNION ALL SELECT 2, 'it''s', 'x', 3")));
    QVERIFY(finished.wait(20000));
    QModelIndexList all;
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 4; ++c)
            all.append(model.index(r, c));
    QCOMPARE(model.copyAs(all, ResultModel::CopyFormat::Csv),
             QStringLiteral("id,Note,gone,price\r\n1,\"a, \"\"quoted\"\" word\",,2.5\r\n"
                            "2,it's,x,3\r\n"));
    const QJsonArray json
        = QJsonDocument::fromJson(model.copyAs(all, ResultModel::CopyFormat::Json).toUtf8()).array();
    QCOMPARE(json.size(), 2);
    QCOMPARE(json.at(0).toObject().value(QStringLiteral("Note")).toString(),
             QStringLiteral("a, \"quoted\" word"));
    QVERIFY(json.at(0).toObject().value(QStringLiteral("gone")).isNull());
    QCOMPARE(json.at(1).toObject().value(QStringLiteral("id")).toInt(), 2);
    QCOMPARE(model.copyAs(all, ResultModel::CopyFormat::Insert, QStringLiteral("items")),
             QStringLiteral(
                 "INSERT INTO items (id, \"Note\", gone, price) VALUES (1, 'a, \"quoted\" "
                 "word', NULL, 2.5);\nINSERT INTO items (id, \"Note\", gone, price) "
                 "VALUES (2, 'it''s', 'x', 3);\n"));
    // The INSERTs run: they are valid SQL for the same database.
    ResultModel check;
    QSignalSpy done(&check, &ResultModel::finished);
    check.setFeed(feed(QStringLiteral("CREATE TABLE items (id int, \"Note\" text, gone text, "
                                      "price real)")));
    QVERIFY(done.wait(20000));
    for (const QString &insert :
         model.copyAs(all, ResultModel::CopyFormat::Insert, QStringLiteral("items"))
             .split(u'\n', Qt::SkipEmptyParts)) {
        ResultModel m;
        QSignalSpy ok(&m, &ResultModel::finished);
        m.setFeed(feed(insert));
        QVERIFY2(ok.wait(20000), qPrintable(insert));
    }
    ResultModel count;
    QSignalSpy counted(&count, &ResultModel::finished);
    count.setFeed(feed(QStringLiteral("SELECT count(*) FROM items WHERE \"Note\" = 'it''s'")));
    QVERIFY(counted.wait(20000));
    QCOMPARE(count.index(0, 0).data().toString(), QStringLiteral("1"));
}

void tst_ResultModel::cellViewerShowsTheWholeValue()
{
    ResultView view;
    view.resize(600, 400);
    view.show();
    QSignalSpy finished(view.model(), &ResultModel::finished);
    view.model()->setFeed(feed(QStringLiteral(
        "SELECT '{\"k\":[1,2],\"long\":\"' || printf('%.300c', 'x') || '\"}' AS doc, "
        "x'00414243ff' AS blob")));
    QVERIFY(finished.wait(20000));
    view.showRows();
    QString shown;
    connect(&view, &ResultView::cellViewerOpened, this, [&shown](QDialog *dialog) {
        QTimer::singleShot(0, dialog, [dialog, &shown] {
            shown = dialog->findChild<QPlainTextEdit *>()->toPlainText();
            dialog->reject();
        });
    });
    // Double-click on the JSON cell: the whole text, indented.
    view.table()->setCurrentIndex(view.model()->index(0, 0));
    view.viewCurrentCell();
    QVERIFY2(shown.contains(QStringLiteral("\n    \"k\": [")), qPrintable(shown.left(200)));
    QVERIFY(shown.contains(QString(300, u'x')));
    // Bytes as a hex dump; F3 opens the viewer too.
    view.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&view));
    view.table()->setFocus();
    view.table()->setCurrentIndex(view.model()->index(0, 1));
    QTest::keyClick(view.table(), Qt::Key_F3);
    QVERIFY2(shown.startsWith(QStringLiteral("00000000  00 41 42 43 ff")), qPrintable(shown));
    QVERIFY(shown.endsWith(QStringLiteral(".ABC.")));
}

void tst_ResultModel::fetchAllIsBounded()
{
    ResultView view;
    view.model()->setMaxCachedPages(2);
    QSignalSpy started(view.model(), &ResultModel::started);
    view.model()->setFeed(feed(QString::fromLatin1(kNumbers).arg(2500), 100));
    QVERIFY(started.wait(20000));
    QCOMPARE(view.model()->rowCount(), 100);
    view.fetchAll();
    QTRY_COMPARE_WITH_TIMEOUT(view.model()->rowCount(), 2500, 60000);
    QTRY_VERIFY(view.model()->isComplete());
    // Memory stays bounded: two pages decoded, the rest in the spill file.
    QVERIFY(view.model()->cachedPages() <= 2);
    QVERIFY(view.model()->spillBytes() > 0);
}

QTEST_MAIN(tst_ResultModel)
#include "tst_resultmodel.moc"
