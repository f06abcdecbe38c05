// A console session against a real PostgreSQL database (offscreen): run all, one tab per
// statement, NULL apart from '', EXPLAIN as text, errors marked in the editor, the schema tree
// and completion, history kept across restarts, run under the cursor, cancel.
#include "testclient.h"
#include "uitest.h"

#include <client/client.h>
#include <common/uistyle.h>
#include <editor/findbar.h>
#include <sql/planview.h>
#include <sql/queryhistory.h>
#include <sql/resultview.h>
#include <sql/schemamodel.h>
#include <sql/sqlconsole.h>
#include <sql/sqleditor.h>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QHeaderView>
#include <QJsonArray>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QToolButton>

using namespace Sandbox;
using namespace Sandbox::Ui;

class tst_SqlConsole : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void anEmptyDatabaseSaysSo();
    void runAllMakesATabPerStatement();
    void errorIsMarkedWhereItHappened();
    void runStatementUnderCursor();
    void historyIsKeptAndSearchable();
    void cancelStopsARunningStatement();
    void findBarInTheEditor();
    void sortAndCountRunOnTheServer();
    void filterRunsOnTheServer();
    void onlyAWithThatSelectsIsRunAgain();
    void explainIsDrawnAsATree();

private:
    bool runAndWait(const QString &text, void (SqlConsole::*how)() = &SqlConsole::runAll,
                    int timeoutMs = 30000);

    UiTest::Engine m_engine;
    Client *m_client = nullptr; // not owned: m_engine's
    QString m_id;
    SqlConsole *m_console = nullptr;
};

void tst_SqlConsole::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_client = m_engine.client();
    DatabaseCreateOptions options;
    options.type = QStringLiteral("postgres");
    const auto created = m_engine.createDatabase(options);
    QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
    m_id = created->id;
    QFile::remove(QueryHistory(m_id).filePath());
    m_console = new SqlConsole(m_client, m_id);
    m_console->resize(1200, 800);
    m_console->show();
    QTRY_COMPARE_WITH_TIMEOUT(m_console->editor()->dialect(), QStringLiteral("postgres"), 20000);
    QVERIFY(m_console->editor()->completionWords().contains(QStringLiteral("RETURNING")));
}

void tst_SqlConsole::cleanupTestCase()
{
    delete m_console;
}

bool tst_SqlConsole::runAndWait(const QString &text, void (SqlConsole::*how)(), int timeoutMs)
{
    QSignalSpy finished(m_console, &SqlConsole::runFinished);
    m_console->editor()->setText(text);
    (m_console->*how)();
    return finished.wait(timeoutMs);
}

void tst_SqlConsole::anEmptyDatabaseSaysSo()
{
    // A new database: the schema tree says it has no tables, instead of a blank pane.
    SchemaModel *schema = m_console->schema();
    QTRY_VERIFY_WITH_TIMEOUT(!schema->isLoading() && schema->rowCount() == 1, 20000);
    QCOMPARE(schema->index(0, 0).data().toString(), QStringLiteral("No tables yet"));
    QCOMPARE(schema->index(0, 0).data(SchemaModel::KindRole).toString(), QStringLiteral("empty"));
    QVERIFY(!(schema->flags(schema->index(0, 0)) & Qt::ItemIsSelectable));
    QVERIFY(schema->columnsByTable().isEmpty());
    QVERIFY(UiTest::shoot(m_console, QStringLiteral("sql-notables")));
}

void tst_SqlConsole::runAllMakesATabPerStatement()
{
    QVERIFY(runAndWait(QStringLiteral(
        "CREATE TABLE people(id serial PRIMARY KEY, name text NOT NULL, note text);\n"
        "INSERT INTO people(name, note) VALUES ('ada', NULL), ('bob', '');\n"
        "SELECT id, name, note FROM people ORDER BY id;\n"
        "EXPLAIN SELECT * FROM people WHERE id = 1;")));
    QTabWidget *tabs = m_console->results();
    QCOMPARE(tabs->count(), 4);
    QVERIFY2(m_console->resultAt(0)->text().startsWith(QLatin1String("CREATE")),
             qPrintable(m_console->resultAt(0)->text()));
    QVERIFY2(m_console->resultAt(1)->text().contains(QLatin1String("2 rows affected")),
             qPrintable(m_console->resultAt(1)->text()));
    ResultView *select = m_console->resultAt(2);
    QVERIFY(!select->isTextShown());
    QCOMPARE(select->model()->rowCount(), 2);
    QCOMPARE(select->model()->index(0, 1).data().toString(), QStringLiteral("ada"));
    QCOMPARE(select->model()->index(0, 2).data(ResultModel::IsNullRole).toBool(), true);
    QCOMPARE(select->model()->index(1, 2).data(ResultModel::IsNullRole).toBool(), false);
    QVERIFY(select->status().contains(QLatin1String("2 rows")));
    // The plan is a tree (EXPLAIN is sent as FORMAT JSON on PostgreSQL).
    auto *plan = qobject_cast<PlanView *>(m_console->resultAt(3)->shownWidget());
    QVERIFY(plan);
    QVERIFY2(plan->outline().join(u'|').contains(QLatin1String("Scan")),
             qPrintable(plan->outline().join(u'|')));
    QVERIFY(m_console->elapsedText().startsWith(QLatin1String("Done in")));
    // The CREATE refreshed the schema: tree and completion know the table and its columns.
    QTRY_VERIFY_WITH_TIMEOUT(m_console->schema()->columnsByTable().contains(
                                 QStringLiteral("people")),
                             20000);
    QCOMPARE(m_console->schema()->columnsByTable().value(QStringLiteral("people")),
             (QStringList{QStringLiteral("id"), QStringLiteral("name"), QStringLiteral("note")}));
    QTRY_VERIFY(m_console->editor()->completionWords().contains(QStringLiteral("people.name")));
    QVERIFY(!m_console->schema()->findItems(QStringLiteral("people")).isEmpty());
}

void tst_SqlConsole::errorIsMarkedWhereItHappened()
{
    QVERIFY(runAndWait(QStringLiteral("SELECT 1;\nSELECT name\n  FROM peeple;\nSELECT 3;")));
    QCOMPARE(m_console->results()->count(), 2); // the run stops at the error
    // The run says it failed, not "Done".
    QVERIFY2(m_console->elapsedText().startsWith(QLatin1String("Failed after")),
             qPrintable(m_console->elapsedText()));
    ResultView *error = m_console->resultAt(1);
    QVERIFY(error->isTextShown());
    QVERIFY2(error->text().contains(QLatin1String("peeple")), qPrintable(error->text()));
    SqlEditor *editor = m_console->editor();
    QVERIFY(editor->hasErrorMark());
    QCOMPARE(editor->errorLine(), 2);
    const QByteArray bytes = editor->text().toUtf8();
    QVERIFY2(bytes.mid(editor->errorByteStart()).startsWith("peeple"),
             bytes.mid(editor->errorByteStart()).constData());
    // Editing clears the mark.
    editor->append(QStringLiteral(" "));
    QVERIFY(!editor->hasErrorMark());
}

void tst_SqlConsole::runStatementUnderCursor()
{
    m_console->editor()->setText(
        QStringLiteral("SELECT 'first';\nSELECT 'second' AS s;\nSELECT 'third';"));
    m_console->editor()->setCursorPosition(1, 3);
    QSignalSpy finished(m_console, &SqlConsole::runFinished);
    QTest::keyClick(m_console->editor()->viewport(), Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(finished.wait(20000));
    QCOMPARE(m_console->results()->count(), 1);
    QCOMPARE(m_console->resultAt(0)->model()->index(0, 0).data().toString(),
             QStringLiteral("second"));
}

void tst_SqlConsole::historyIsKeptAndSearchable()
{
    QueryHistory *history = m_console->history();
    QVERIFY(history->entries().size() >= 7);
    // Kept across restarts: a new history for the same database reads them back.
    QueryHistory reopened(m_id);
    QCOMPARE(reopened.entries().size(), history->entries().size());
    QCOMPARE(reopened.entries().last().sql, QStringLiteral("SELECT 'second' AS s"));
    QVERIFY(!reopened.entries().at(reopened.entries().size() - 2).ok); // the error before it
    reopened.setSearch(QStringLiteral("explain"));
    QCOMPARE(reopened.filtered()->rowCount(), 1);
    reopened.setSearch(QStringLiteral("peeple"));
    QCOMPARE(reopened.filtered()->rowCount(), 1);
}

void tst_SqlConsole::cancelStopsARunningStatement()
{
    // The server's view, from a connection of its own: backends that run the sleep now.
    RpcTestClient server;
    QVERIFY(server.open(m_engine.process().wsUrl(), m_engine.process().key()));
    const auto activeSleeps = [&server, this] {
        return server
            .result(QStringLiteral("databases.query"),
                    {{QStringLiteral("id"), m_id},
                     {QStringLiteral("rowMode"), QStringLiteral("array")},
                     {QStringLiteral("sql"),
                      QStringLiteral("SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                                     "'%pg_sleep(30)%' AND state = 'active' AND pid <> "
                                     "pg_backend_pid()")}})
            .value(QStringLiteral("rows"))
            .toArray()
            .at(0)
            .toArray()
            .at(0)
            .toInt(-1);
    };
    QSignalSpy finished(m_console, &SqlConsole::runFinished);
    m_console->editor()->setText(QStringLiteral("SELECT pg_sleep(30)"));
    m_console->runAll();
    QTRY_COMPARE_WITH_TIMEOUT(activeSleeps(), 1, 10000);
    QVERIFY(m_console->isRunning());
    QTRY_VERIFY2(m_console->elapsedText().startsWith(QLatin1String("Running")),
                 qPrintable(m_console->elapsedText()));
    QElapsedTimer clock;
    clock.start();
    m_console->cancel();
    QVERIFY(finished.size() == 1 || finished.wait(5000));
    QVERIFY(clock.elapsed() < 2000);
    QVERIFY(m_console->resultAt(0)->text().startsWith(QLatin1String("Cancelled")));
    QVERIFY2(!m_console->elapsedText().startsWith(QLatin1String("Done")),
             qPrintable(m_console->elapsedText()));
    // The server stopped it, and the console's next statement answers at once.
    QTRY_COMPARE_WITH_TIMEOUT(activeSleeps(), 0, 3000);
    clock.restart();
    QVERIFY(runAndWait(QStringLiteral("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT "
                                      "pg_sleep(30)' AND state = 'active'"),
                       &SqlConsole::runAll, 10000));
    QVERIFY(clock.elapsed() < 5000);
    QCOMPARE(m_console->resultAt(0)->model()->index(0, 0).data().toString(), QStringLiteral("0"));
}

void tst_SqlConsole::findBarInTheEditor()
{
    // The SQL editor is the app's CodeEditor: Ctrl+F opens the same find bar as the file editor.
    m_console->editor()->setText(QStringLiteral("SELECT 1;\nSELECT name FROM people;\n"));
    m_console->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_console));
    m_console->editor()->setFocus();
    auto *bar = m_console->findChild<FindBar *>();
    QVERIFY(bar);
    QVERIFY(bar->isHidden());
    QTest::keySequence(m_console->editor(), QKeySequence::Find);
    QVERIFY(bar->isVisible());
    bar->setFindText(QStringLiteral("name"));
    QVERIFY(bar->findNext());
    QCOMPARE(m_console->editor()->selectedText(), QStringLiteral("name"));
    QTest::keyClick(bar, Qt::Key_Escape);
    QVERIFY(bar->isHidden());
}

void tst_SqlConsole::sortAndCountRunOnTheServer()
{
    // More rows than a page: sorting what was fetched would be wrong, the server sorts.
    QVERIFY(runAndWait(QStringLiteral(
        "SELECT g AS n, 'row ' || g AS label FROM generate_series(1, 3000) g; -- numbers")));
    ResultView *view = m_console->resultAt(0);
    QHeaderView *header = view->table()->horizontalHeader();
    QCOMPARE(view->model()->index(0, 0).data().toString(), QStringLiteral("1"));
    const QPoint n(header->sectionViewportPosition(0) + 10, header->height() / 2);
    QSignalSpy resorted(view->model(), &ResultModel::started);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, n); // ascending
    QVERIFY(resorted.wait(20000));                                // the query ran again
    QTRY_COMPARE(header->count(), 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, n); // descending
    QTRY_COMPARE_WITH_TIMEOUT(view->model()->index(0, 0).data().toString(), QStringLiteral("3000"),
                              20000);
    QCOMPARE(header->sortIndicatorOrder(), Qt::DescendingOrder);
    QVERIFY(view->model()->canFetchMore({})); // still paged
    // Count on demand.
    auto *count = view->findChild<QToolButton *>(QStringLiteral("count"));
    QVERIFY(count && count->text() == QLatin1String("Count"));
    QTest::mouseClick(count, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(count->text(), QStringLiteral("3000 rows in all"), 20000);
}

void tst_SqlConsole::filterRunsOnTheServer()
{
    // A condition on a result larger than a page: the server filters the whole result (rows
    // never fetched included), the grid says so, Count counts what passed, and clearing the
    // filter brings the whole result back.
    QVERIFY(runAndWait(
        QStringLiteral("SELECT g AS n, 'row ' || g AS label FROM generate_series(1, 3000) g")));
    ResultView *view = m_console->resultAt(0);
    QVERIFY(view->model()->canFetchMore({}));
    QLineEdit *filter = view->filterField();
    QVERIFY(filter && filter->isVisible());
    QSignalSpy requeried(view->model(), &ResultModel::started);
    QTest::keyClicks(filter, QStringLiteral("n % 1000 = 0 OR label = 'row 2999'"));
    QTest::keyClick(filter, Qt::Key_Return);
    QVERIFY(requeried.wait(20000));
    QTRY_COMPARE_WITH_TIMEOUT(view->model()->rowCount(), 4, 20000);
    QVERIFY(!view->model()->canFetchMore({}));
    QStringList ns;
    for (int r = 0; r < view->model()->rowCount(); ++r)
        ns.append(view->model()->index(r, 0).data().toString());
    ns.sort();
    QCOMPARE(ns.join(u','), QStringLiteral("1000,2000,2999,3000"));
    QVERIFY2(view->status().contains(QLatin1String("filtered on the server")),
             qPrintable(view->status()));
    // Sorting keeps the filter.
    QHeaderView *header = view->table()->horizontalHeader();
    const QPoint n(header->sectionViewportPosition(0) + 10, header->height() / 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, n); // ascending
    QTRY_VERIFY_WITH_TIMEOUT(view->status().contains(QStringLiteral("sorted by n ↑")), 20000);
    QTRY_COMPARE(view->model()->rowCount(), 4);
    QCOMPARE(view->model()->index(0, 0).data().toString(), QStringLiteral("1000"));
    QTest::qWait(QApplication::doubleClickInterval() + 50);       // two clicks, not a double-click
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, n); // descending
    QTRY_COMPARE_WITH_TIMEOUT(view->model()->index(0, 0).data().toString(), QStringLiteral("3000"),
                              20000);
    QTRY_COMPARE(view->model()->rowCount(), 4);
    QVERIFY2(view->status().contains(QLatin1String("filtered and sorted by n")),
             qPrintable(view->status()));
    QVERIFY(UiTest::shoot(m_console, QStringLiteral("sql-filter")));
    auto *count = view->findChild<QToolButton *>(QStringLiteral("count"));
    QVERIFY(count);
    QTest::mouseClick(count, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(count->text(), QStringLiteral("4 rows in all"), 20000);
    // A condition the server refuses: said on the result's line; the filter stays to be fixed.
    filter->selectAll();
    QTest::keyClicks(filter, QStringLiteral("nope > 1"));
    QTest::keyClick(filter, Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(view->status().contains(QLatin1String("nope")), 20000);
    QVERIFY(filter->isVisible());
    // Cleared: the whole result again, paged, still sorted.
    filter->clear();
    QTRY_VERIFY_WITH_TIMEOUT(view->model()->canFetchMore({}), 20000);
    QCOMPARE(view->model()->index(0, 0).data().toString(), QStringLiteral("3000"));
    QVERIFY2(!view->status().contains(QLatin1String("filtered")), qPrintable(view->status()));
}

void tst_SqlConsole::onlyAWithThatSelectsIsRunAgain()
{
    // Sorting and filtering run a result's statement again inside a SELECT: a WITH ... SELECT
    // can, a WITH ... INSERT ... RETURNING cannot (no engine takes it there, and it would insert
    // again): its grid offers no filter, and a click on its header sorts nothing on the server.
    QVERIFY(runAndWait(QStringLiteral(
        "CREATE TABLE wcount(n int);\n"
        "WITH x AS (SELECT g FROM generate_series(1, 3) g) INSERT INTO wcount SELECT g FROM x "
        "RETURNING n;\n"
        "WITH x AS (SELECT g FROM generate_series(1, 3) g) SELECT g FROM x;")));
    ResultView *selected = m_console->resultAt(2);
    QVERIFY(selected->filterField()->isVisible());
    ResultView *inserted = m_console->resultAt(1);
    m_console->results()->setCurrentIndex(1);
    QTRY_VERIFY(inserted->isVisible());
    QVERIFY2(inserted->status().contains(QLatin1String("3 rows")), qPrintable(inserted->status()));
    QVERIFY(!inserted->filterField()->isVisible());
    // A header click on the INSERT's grid sends nothing (PostgreSQL refused the SELECT around
    // it, and the grid showed the error), and its rows stay; still 3 rows in the table.
    QHeaderView *header = inserted->table()->horizontalHeader();
    QTRY_VERIFY(header->isVisible() && header->height() > 0);
    QSignalSpy again(inserted->model(), &ResultModel::started);
    QSignalSpy failed(inserted->model(), &ResultModel::failed);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
                      QPoint(header->sectionViewportPosition(0) + 10, header->height() / 2));
    QVERIFY(!again.wait(1000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(inserted->model()->rowCount(), 3);
    QVERIFY(runAndWait(QStringLiteral("SELECT count(*) FROM wcount")));
    QCOMPARE(m_console->resultAt(0)->model()->index(0, 0).data().toString(), QStringLiteral("3"));
}

void tst_SqlConsole::explainIsDrawnAsATree()
{
    QVERIFY(runAndWait(QStringLiteral("EXPLAIN ANALYZE SELECT g FROM generate_series(1, 1000) g "
                                      "WHERE g % 7 = 0 ORDER BY g DESC")));
    auto *plan = qobject_cast<PlanView *>(m_console->resultAt(0)->shownWidget());
    QVERIFY2(plan, "the plan is not a tree");
    const QStringList outline = plan->outline();
    QVERIFY2(outline.first().startsWith(QLatin1String("Sort")), qPrintable(outline.join(u'|')));
    QVERIFY2(outline.join(u'|').contains(QLatin1String("  Function Scan on generate_series")),
             qPrintable(outline.join(u'|')));
    // Analysed: times are shown, the root takes the whole time.
    QVERIFY(!plan->isColumnHidden(PlanView::TimeColumn));
    QCOMPARE(plan->topLevelItem(0)->data(PlanView::ShareColumn, PlanView::ShareRole).toDouble(),
             1.0);
    // A plan without ANALYZE: costs, no times; an error after EXPLAIN is still marked where it is.
    QVERIFY(runAndWait(QStringLiteral("EXPLAIN SELECT nope FROM generate_series(1, 3) g")));
    QVERIFY(m_console->editor()->hasErrorMark());
    const QByteArray bytes = m_console->editor()->text().toUtf8();
    QVERIFY2(bytes.mid(m_console->editor()->errorByteStart()).startsWith("nope"),
             bytes.mid(m_console->editor()->errorByteStart()).constData());
}

QTEST_MAIN(tst_SqlConsole)
#include "tst_sqlconsole.moc"
