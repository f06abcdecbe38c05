// Benchmark (label bench): a 10,000,000-row result in the console's grid — time to the first rows
// on screen, rows/s while scrolling to the end, and the memory it costs, against the memory of
// the same rows held as QJsonArrays (the "load everything" baseline, measured on a 1,000,000-row
// sample and scaled).
#include "uitest.h"

#include <client/client.h>
#include <client/rowfeed.h>
#include <sql/resultmodel.h>

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
qint64 rssKb()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').first().toLongLong();
    return -1;
}
} // namespace

class bench_SqlGrid : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void tenMillionRows();
};

void bench_SqlGrid::tenMillionRows()
{
    UiTest::Engine engine;
    QVERIFY2(engine.start(), qPrintable(engine.process().log()));
    Client &client = *engine.client();
    const auto created = engine.createDatabase(DatabaseCreateOptions{});
    QVERIFY(created);
    const QString id = created->id;
    const QString sql = QStringLiteral(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000) "
        "SELECT x, 'row ' || x AS label, x * 0.5 AS half FROM c");

    const qint64 rssBefore = rssKb();
    ResultModel model;
    QTableView view;
    view.setModel(&model);
    view.resize(1000, 700);
    view.show();
    QElapsedTimer clock;
    clock.start();
    auto *feed = new RowFeed(&client.databases(), id, sql, {});
    feed->setPageSize(10000);
    model.setFeed(feed);
    QTRY_VERIFY_WITH_TIMEOUT(model.rowCount() > 0, 20000);
    QCoreApplication::processEvents();
    const double firstRowsMs = clock.nsecsElapsed() / 1e6;
    QVERIFY(view.indexAt(QPoint(5, 5)).isValid()); // rows are on screen

    qint64 peakKb = rssKb();
    while (model.canFetchMore({}) || model.isFetching()) {
        view.scrollToBottom(); // as a user dragging the scroll bar down: the view asks for more
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        peakKb = qMax(peakKb, rssKb());
    }
    const double allMs = clock.nsecsElapsed() / 1e6;
    QCOMPARE(model.rowCount(), 10000000);
    QCOMPARE(model.index(9999999, 0).data().toString(), QStringLiteral("10000000"));
    view.scrollToTop();
    QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("row 1"));
    peakKb = qMax(peakKb, rssKb());

    // Baseline: what 1,000,000 of these rows cost held in memory as QJsonArrays, times ten.
    const qint64 baseBefore = rssKb();
    QList<QJsonArray> held;
    held.reserve(1000000);
    for (int x = 1; x <= 1000000; ++x)
        held.append(QJsonArray{x, QStringLiteral("row %1").arg(x), x * 0.5});
    const qint64 heldKb = (rssKb() - baseBefore) * 10;
    qInfo("BENCH grid 10,000,000 rows: first rows on screen %.0f ms; all rows scrolled through in "
          "%.1f s (%.0f rows/s); "
          "process memory +%lld MiB at peak (spill file %lld MiB on disk, %d pages decoded); "
          "holding them all as JSON would "
          "take ~%lld MiB: ratio %.3f",
          firstRowsMs, allMs / 1000, 10000000 / (allMs / 1000), (peakKb - rssBefore) / 1024,
          model.spillBytes() / 1048576, model.cachedPages(), heldKb / 1024,
          double(peakKb - rssBefore) / double(heldKb));
    QVERIFY(peakKb - rssBefore < 300 * 1024); // bounded: far below the rows' size in memory
}

QTEST_MAIN(bench_SqlGrid)
#include "bench_sqlgrid.moc"
