#include "sqlconsole.h"

#include "planview.h"
#include "queryhistory.h"
#include "resultview.h"
#include "schemamodel.h"
#include "sqleditor.h"

#include "../common/uistyle.h"
#include "../editor/codeeditorview.h"

#include <client/client.h>
#include <client/rowfeed.h>
#include <protocol/sandboxenums.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QLoggingCategory>
#include <QMenu>
#include <QPointer>
#include <QRegularExpression>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

Q_LOGGING_CATEGORY(lcSqlConsole, "sandbox.ui.sql")

namespace Sandbox::Ui {

namespace {

constexpr int kPageSize = 500;

QString firstWord(const QString &sql)
{
    static const QRegularExpression re(QStringLiteral(
                                           "^(?:\\s|--[^\\n]*\\n|/\\*.*?\\*/)*([A-Za-z]+)"),
                                       QRegularExpression::DotMatchesEverythingOption);
    return re.match(sql).captured(1).toUpper();
}

QString rows(qint64 n)
{
    return n == 1 ? SqlConsole::tr("1 row") : SqlConsole::tr("%1 rows").arg(n);
}

// "N rows" on the result's line, and whether more come as the view scrolls.
void showRowCount(ResultView *view)
{
    const ResultModel *model = view->model();
    const QString more = model->canFetchMore({}) ? SqlConsole::tr(", more as you scroll")
                                                 : QString();
    view->setStatus(rows(model->rowCount()) + more);
}

// EXPLAIN output as one readable text: PostgreSQL's "QUERY PLAN" lines, DuckDB's plan boxes,
// SQLite's EXPLAIN QUERY PLAN rows (id, parent, notused, detail) as an indented tree.
QString planText(ResultModel *model)
{
    const QList<SqlField> &fields = model->fields();
    QStringList lines;
    if (fields.size() == 4 && fields[3].name == QLatin1String("detail")) {
        QHash<qint64, int> depth;
        for (int r = 0; r < model->rowCount(); ++r) {
            const QJsonArray row = model->rowAt(r);
            const qint64 id = row.at(0).toInteger(), parent = row.at(1).toInteger();
            const int d = parent == 0 ? 0 : depth.value(parent, 0) + 1;
            depth.insert(id, d);
            lines.append(QString(d * 3, u' ') + QStringLiteral("└─ ") + row.at(3).toString());
        }
        return lines.join(u'\n');
    }
    const int column = int(fields.size()) - 1; // DuckDB: explain_key, explain_value
    for (int r = 0; r < model->rowCount(); ++r)
        lines.append(SqlValue::toText(model->rowAt(r).at(column)));
    return lines.join(u'\n');
}

} // namespace

namespace {
constexpr int kTopRows = 100;

bool isQuery(const QString &verb)
{
    return verb == QLatin1String("SELECT") || verb == QLatin1String("VALUES")
           || verb == QLatin1String("TABLE");
}

QString withoutSemicolon(QString sql)
{
    sql = sql.trimmed();
    while (sql.endsWith(u';'))
        sql.chop(1);
    return sql;
}

// A table name for SQL: each dotted part quoted when it is not a plain lower-case identifier.
QString quotedName(const QString &name)
{
    static const QRegularExpression plain(QStringLiteral("^[a-z_][a-z0-9_]*$"));
    QStringList parts;
    for (QString part : name.split(u'.')) {
        if (!plain.match(part).hasMatch())
            part = u'"' + part.replace(QStringLiteral("\""), QStringLiteral("\"\"")) + u'"';
        parts.append(part);
    }
    return parts.join(u'.');
}
} // namespace

SqlConsole::SqlConsole(Sandbox::Client *client, QString databaseId, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_databaseId(std::move(databaseId))
    , m_editor(new SqlEditor(this))
    , m_results(new QTabWidget(this))
    , m_schema(new SchemaModel(&client->databases(), m_databaseId, this))
    , m_history(new QueryHistory(m_databaseId, {}, this))
    , m_schemaView(new QTreeView(this))
    , m_search(new QLineEdit(this))
    , m_runButton(new QToolButton(this))
    , m_cancelButton(new QToolButton(this))
    , m_timer(new QLabel(this))
    , m_tick(new QTimer(this))
{
    QWidget *editorPane = makeEditorPane();
    QWidget *sidePane = makeSidePane();
    auto *split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(sidePane);
    split->addWidget(editorPane);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 800});
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    connect(m_editor, &SqlEditor::runStatementRequested, this, &SqlConsole::runStatementUnderCursor);
    connect(m_editor, &SqlEditor::runAllRequested, this, &SqlConsole::runAll);
    connectSchemaView();
    m_tick->setInterval(100);
    connect(m_tick, &QTimer::timeout, this, &SqlConsole::updateTimer);

    m_infoCall = m_client->databases().info(m_databaseId, this, [this](Result<DatabaseInfo> info) {
        if (info)
            m_editor->setDialect(info->engine);
    });
    refreshSchema();
}

// The toolbar (run, run selection, cancel, the live timer) above the editor and the results.
QWidget *SqlConsole::makeEditorPane()
{
    m_runButton->setText(tr("Run"));
    m_runButton->setToolTip(
        tr("Run the statement under the cursor (Ctrl+Enter); Ctrl+Shift+Enter runs all"));
    m_runButton->setPopupMode(QToolButton::MenuButtonPopup);
    auto *runAllAction = new QAction(tr("Run All"), this);
    auto *runSelectionAction = new QAction(tr("Run Selection"), this);
    connect(runAllAction, &QAction::triggered, this, &SqlConsole::runAll);
    connect(runSelectionAction, &QAction::triggered, this, &SqlConsole::runSelection);
    m_runButton->addActions({runAllAction, runSelectionAction});
    connect(m_runButton, &QToolButton::clicked, this, &SqlConsole::runStatementUnderCursor);
    m_cancelButton->setText(tr("Cancel"));
    m_cancelButton->setEnabled(false);
    connect(m_cancelButton, &QToolButton::clicked, this, &SqlConsole::cancel);
    auto *refresh = new QToolButton(this);
    refresh->setText(tr("Refresh Schema"));
    connect(refresh, &QToolButton::clicked, this, &SqlConsole::refreshSchema);
    auto *toolbar = new QHBoxLayout;
    toolbar->addWidget(m_runButton);
    toolbar->addWidget(m_cancelButton);
    toolbar->addWidget(m_timer, 1);
    toolbar->addWidget(refresh);

    m_results->setTabsClosable(true);
    Style::useQuietCloseButtons(m_results->tabBar());
    m_results->setDocumentMode(true);
    connect(m_results, &QTabWidget::tabCloseRequested, this, [this](int i) {
        QWidget *w = m_results->widget(i);
        if (w == m_current)
            cancel();
        m_results->removeTab(i);
        w->deleteLater();
    });

    auto *right = new QSplitter(Qt::Vertical, this);
    right->addWidget(new CodeEditorView(m_editor, this));
    right->addWidget(m_results);
    // The results get the room: four fifths of the height, so that at 1024x700 ten rows show
    // below the server-side filter's row (the editor can be dragged larger).
    right->setStretchFactor(0, 1);
    right->setStretchFactor(1, 4);
    right->setSizes({120, 480});
    right->setCollapsible(0, false);
    right->setCollapsible(1, false);
    auto *rightPane = new QWidget(this);
    auto *rightLayout = new QVBoxLayout(rightPane);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addLayout(toolbar);
    rightLayout->addWidget(right, 1);
    return rightPane;
}

// The schema tree and the searchable history.
QWidget *SqlConsole::makeSidePane()
{
    m_schemaView->setModel(m_schema);
    m_schemaView->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_schemaView->setUniformRowHeights(true);
    auto *historyPane = new QWidget(this);
    auto *historyList = new QListView(historyPane);
    historyList->setModel(m_history->filtered());
    historyList->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_search->setPlaceholderText(tr("Search history"));
    m_search->setClearButtonEnabled(true);
    connect(m_search, &QLineEdit::textChanged, m_history, &QueryHistory::setSearch);
    connect(historyList, &QListView::activated, this, [this](const QModelIndex &index) {
        m_editor->insert(index.data(Qt::UserRole).toString() + QStringLiteral(";\n"));
    });
    auto *historyLayout = new QVBoxLayout(historyPane);
    historyLayout->setContentsMargins(0, 0, 0, 0);
    historyLayout->addWidget(m_search);
    historyLayout->addWidget(historyList);
    auto *left = new QTabWidget(this);
    left->addTab(m_schemaView, tr("Schema"));
    left->addTab(historyPane, tr("History"));
    return left;
}

// The schema's tables: open them, count them, describe them.
void SqlConsole::connectSchemaView()
{
    m_schemaView->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_schemaView, &QTreeView::customContextMenuRequested, this, [this](const QPoint &pos) {
        const QModelIndex index = m_schemaView->indexAt(pos).siblingAtColumn(0);
        const QString kind = index.data(SchemaModel::KindRole).toString();
        if (kind != QLatin1String("table") && kind != QLatin1String("view"))
            return;
        const QString table = quotedName(index.data(SchemaModel::NameRole).toString());
        QMenu menu(this);
        menu.addAction(tr("Open (First %1 Rows)").arg(kTopRows), this, [this, table] {
            runSql(QStringLiteral("SELECT * FROM %1 LIMIT %2").arg(table).arg(kTopRows));
        });
        menu.addAction(tr("Select All Rows"), this,
                       [this, table] { runSql(QStringLiteral("SELECT * FROM %1").arg(table)); });
        menu.addAction(tr("Count Rows"), this, [this, table] {
            runSql(QStringLiteral("SELECT count(*) FROM %1").arg(table));
        });
        menu.addSeparator();
        menu.addAction(tr("Describe"), this, [this, index] { describe(index); });
        menu.exec(m_schemaView->viewport()->mapToGlobal(pos));
    });
    connect(m_schemaView, &QTreeView::activated, this, [this](const QModelIndex &i) {
        const QModelIndex index = i.siblingAtColumn(0);
        const QString kind = index.data(SchemaModel::KindRole).toString();
        if (kind == QLatin1String("table") || kind == QLatin1String("view"))
            runSql(QStringLiteral("SELECT * FROM %1 LIMIT %2")
                       .arg(quotedName(index.data(SchemaModel::NameRole).toString()))
                       .arg(kTopRows));
    });
    connect(m_schema, &SchemaModel::loaded, this, [this] {
        m_editor->setSchema(m_schema->columnsByTable());
        m_schemaView->expandToDepth(-1);
    });
}

SqlConsole::~SqlConsole() = default;

ResultView *SqlConsole::resultAt(int index) const
{
    return qobject_cast<ResultView *>(m_results->widget(index));
}

QString SqlConsole::elapsedText() const
{
    return m_timer->text();
}

void SqlConsole::refreshSchema()
{
    m_schema->refresh();
}

void SqlConsole::runSql(const QString &sql)
{
    if (isRunning())
        return;
    // Added to the end of the editor (the user's text stays), then run as the statement under
    // the cursor: what ran is there to edit and run again.
    QString text = m_editor->text();
    if (!text.isEmpty() && !text.endsWith(u'\n'))
        text += u'\n';
    const int start = int(text.size());
    m_editor->setText(text + sql + QStringLiteral(";\n"));
    m_editor->setCursorOffset(start);
    runStatementUnderCursor();
}

void SqlConsole::describe(const QModelIndex &table)
{
    QStringList lines{table.data(SchemaModel::NameRole).toString(), QString()};
    const QAbstractItemModel *model = table.model();
    for (int r = 0; r < model->rowCount(table); ++r) {
        const QModelIndex child = model->index(r, 0, table);
        const QString type = model->index(r, 1, table).data().toString();
        if (child.data(SchemaModel::KindRole).toString() == QLatin1String("column")) {
            lines.append(QStringLiteral("  %1  %2").arg(child.data().toString(), -24).arg(type));
        } else {
            lines.append(QString());
            lines.append(child.data().toString());
            for (int i = 0; i < model->rowCount(child); ++i)
                lines.append(QStringLiteral("  %1  %2")
                                 .arg(model->index(i, 0, child).data().toString(), -24)
                                 .arg(model->index(i, 1, child).data().toString()));
        }
    }
    auto *view = new ResultView(m_results);
    view->showText(lines.join(u'\n'));
    view->setStatus(tr("%n column(s)", nullptr, model->rowCount(table)));
    m_results->setCurrentIndex(
        m_results->addTab(view,
                          tr("Describe %1").arg(table.data(SchemaModel::NameRole).toString())));
}

void SqlConsole::runAll()
{
    run(splitSql(m_editor->text()));
}

void SqlConsole::runSelection()
{
    const auto [from, to] = m_editor->selectionOffsets();
    if (from < 0)
        return runStatementUnderCursor();
    const QString text = m_editor->text();
    QList<SqlStatementRange> statements = splitSql(text.mid(from, to - from));
    for (SqlStatementRange &s : statements) {
        s.start += from;
        s.end += from;
    }
    run(statements);
}

void SqlConsole::runStatementUnderCursor()
{
    const QList<SqlStatementRange> statements = splitSql(m_editor->text());
    const int i = statementAt(statements, m_editor->cursorOffset());
    if (i >= 0)
        run({statements[i]});
}

void SqlConsole::run(const QList<SqlStatementRange> &statements)
{
    if (isRunning() || statements.isEmpty())
        return;
    m_editor->clearErrors();
    m_queue.clear();
    for (const SqlStatementRange &s : statements)
        m_queue.append({s.text, s.start});
    // Results of an earlier run make room for this one's.
    while (m_results->count() > 0) {
        QWidget *w = m_results->widget(0);
        m_results->removeTab(0);
        w->deleteLater();
    }
    m_schemaChanged = false;
    m_failed = false;
    m_clock.start();
    m_tick->start();
    m_cancelButton->setEnabled(true);
    m_runButton->setEnabled(false);
    Q_EMIT runningChanged(true);
    runNext();
}

void SqlConsole::runNext()
{
    if (m_queue.isEmpty())
        return endRun();
    m_currentStatement = m_queue.takeFirst();
    const QString sql = m_currentStatement.sql;
    const QString verb = firstWord(sql);
    ResultView *view = addResultTab(sql);
    m_current = view;
    m_statementClock.start();
    view->setStatus(tr("Running…"));
    auto *feed = new RowFeed(&m_client->databases(), m_databaseId, sentSql(sql), {});
    feed->setPageSize(kPageSize);
    if (isQuery(verb)) {
        letServerRequery(view, withoutSemicolon(sql));
    } else if (verb == QLatin1String("WITH")) {
        // Only a WITH ... SELECT can run again inside a SELECT to be sorted or filtered: WITH ...
        // INSERT/UPDATE/DELETE ... RETURNING would fail there. The server names what it ran.
        connect(
            view->model(), &ResultModel::started, view,
            [this, view, feed = QPointer<RowFeed>(feed), inner = withoutSemicolon(sql)] {
                if (feed && feed->command() == QLatin1String("SELECT"))
                    letServerRequery(view, inner);
            },
            Qt::SingleShotConnection);
    }
    if (verb == QLatin1String("CREATE") || verb == QLatin1String("DROP")
        || verb == QLatin1String("ALTER"))
        m_schemaChanged = true;
    followStatement(view, verb == QLatin1String("EXPLAIN"));
    view->model()->setFeed(feed);
}

void SqlConsole::endRun()
{
    m_tick->stop();
    updateTimer();
    m_cancelButton->setEnabled(false);
    m_runButton->setEnabled(true);
    if (m_schemaChanged)
        refreshSchema();
    Q_EMIT runningChanged(false);
    Q_EMIT runFinished();
}

ResultView *SqlConsole::addResultTab(const QString &sql)
{
    auto *view = new ResultView(m_results);
    QString title = sql.simplified();
    if (title.size() > 28)
        title = title.left(28) + QStringLiteral("…");
    const int tab
        = m_results->addTab(view, QStringLiteral("%1: %2").arg(m_results->count() + 1).arg(title));
    m_results->setTabToolTip(tab, sql);
    m_results->setCurrentIndex(tab);
    // "Copy as SQL INSERT" names the table a simple SELECT reads.
    static const QRegularExpression
        fromTable(QStringLiteral("^\\s*select\\b.*?\\bfrom\\s+([A-Za-z_\"][\\w.\"]*)"),
                  QRegularExpression::CaseInsensitiveOption
                      | QRegularExpression::DotMatchesEverythingOption);
    if (const auto m = fromTable.match(sql); m.hasMatch())
        view->setTableName(m.captured(1).remove(u'"'));
    return view;
}

// PostgreSQL: a plain EXPLAIN [ANALYZE] is sent as EXPLAIN (FORMAT JSON[, ANALYZE]) so that the
// plan can be drawn as a tree; an error's position is moved back by what was inserted.
QString SqlConsole::sentSql(const QString &sql)
{
    m_sentShift = 0;
    m_sentFrom = 0;
    static const QRegularExpression
        plainExplain(QStringLiteral("^(\\s*EXPLAIN)(\\s+ANALY[SZ]E)?(?=\\s+[^\\s(])"),
                     QRegularExpression::CaseInsensitiveOption);
    if (fromWire<SandboxType>(m_editor->dialect()) != SandboxType::Postgres)
        return sql;
    const auto m = plainExplain.match(sql);
    if (!m.hasMatch())
        return sql;
    const QString prefix = m.captured(1) + QStringLiteral(" (FORMAT JSON")
                           + (m.captured(2).isEmpty() ? QString() : QStringLiteral(", ANALYZE"))
                           + u')';
    m_sentShift = int(prefix.size()) - m.capturedEnd(0);
    m_sentFrom = int(prefix.size());
    return prefix + sql.mid(m.capturedEnd(0));
}

// Sorting, filtering and counting run the query again on the server (the result may be far
// larger than what was fetched): as a subquery, filtered by the condition typed, ordered by the
// column's position, or counted.
void SqlConsole::letServerRequery(ResultView *view, const QString &inner)
{
    view->setRequeryable(true);
    // The query's rows with the view's filter (not its order).
    const auto filtered = [inner](const ResultView *v) {
        QString q = QStringLiteral("SELECT * FROM (\n%1\n) AS q").arg(inner);
        if (!v->filter().isEmpty())
            q += QStringLiteral("\nWHERE (%1)").arg(v->filter());
        return q;
    };
    connect(view, &ResultView::requeryRequested, this, [this, view, filtered] {
        QString q = filtered(view);
        QStringList said;
        if (!view->filter().isEmpty())
            said.append(tr("filtered"));
        if (view->sortColumn() >= 0) {
            const bool up = view->sortOrder() == Qt::AscendingOrder;
            q += QStringLiteral("\nORDER BY %1 %2")
                     .arg(view->sortColumn() + 1)
                     .arg(up ? QStringLiteral("ASC") : QStringLiteral("DESC"));
            said.append(
                tr("sorted by %1 %2")
                    .arg(view->model()->headerData(view->sortColumn(), Qt::Horizontal).toString(),
                         up ? QStringLiteral("↑") : QStringLiteral("↓")));
        }
        view->setTotal(tr("Count")); // of the rows as they were
        view->setRequeryNote(
            said.isEmpty()
                ? QString()
                : tr("%1 on the server (the query ran again)").arg(said.join(tr(" and "))));
        auto *feed = new RowFeed(&m_client->databases(), m_databaseId, q, {});
        feed->setPageSize(kPageSize);
        view->model()->setFeed(feed);
    });
    connect(view, &ResultView::countRequested, this, [this, view, filtered] {
        auto *count = new ResultModel(view);
        connect(count, &ResultModel::finished, view, [view, count] {
            view->setTotal(tr("%1 rows in all").arg(count->index(0, 0).data().toString()));
            count->deleteLater();
        });
        connect(count, &ResultModel::failed, view, [view, count](const Error &e) {
            view->setTotal(tr("Count failed: %1").arg(e.message));
            count->deleteLater();
        });
        count->setFeed(new RowFeed(&m_client->databases(), m_databaseId,
                                   QStringLiteral("SELECT count(*) FROM (\n%1\n) AS counted")
                                       .arg(filtered(view)),
                                   {}));
    });
}

// The statement's result as it comes: its rows (or what it did), a plan, or an error. Signals of
// a view that is no longer the current statement's are a sort or filter run again.
void SqlConsole::followStatement(ResultView *view, bool explain)
{
    ResultModel *model = view->model();
    connect(model, &QAbstractItemModel::rowsInserted, view, [view] { showRowCount(view); });
    connect(model, &ResultModel::started, view, [this, view, explain] {
        if (view == m_current)
            statementStarted(view, explain);
    });
    connect(model, &ResultModel::finished, view, [this, view, explain] {
        if (explain)
            showPlan(view);
        else
            showRowCount(view);
    });
    connect(model, &ResultModel::failed, view,
            [this, view](const Error &error) { statementFailed(view, error); });
}

void SqlConsole::statementStarted(ResultView *view, bool explain)
{
    const qint64 ms = m_statementClock.elapsed();
    ResultModel *model = view->model();
    RowFeed *f = model->feed();
    if (model->fields().isEmpty()) {
        const QString message = tr("%1: %2 affected (%3)")
                                    .arg(f->command(), rows(f->rowsAffected()),
                                         Style::formatDuration(ms));
        view->showText(message);
        view->setStatus(message);
    } else if (!explain) {
        view->showRows();
        showRowCount(view);
    }
    if (explain) {
        // A plan is short: read it whole, then show it as text.
        model->exportTo(QString(), ResultModel::Format::Csv, view, [](Result<qint64>) {});
        return;
    }
    m_history->add(m_currentStatement.sql, ms, true);
    finishCurrent(true, true);
}

// As a tree when it is a plan the tree knows (PostgreSQL's JSON, SQLite's rows, DuckDB's
// operators), else as text.
void SqlConsole::showPlan(ResultView *view)
{
    auto *plan = new PlanView(view);
    if (plan->setPlan(*view->model())) {
        view->showWidget(plan);
    } else {
        delete plan;
        view->showText(planText(view->model()));
    }
    view->setStatus(tr("plan"));
    if (view == m_current) {
        m_history->add(m_currentStatement.sql, m_statementClock.elapsed(), true);
        finishCurrent(true, true);
    }
}

void SqlConsole::statementFailed(ResultView *view, const Error &error)
{
    if (view != m_current) {
        // A sort or filter run again after the statement: said on the result's own line,
        // where the filter waits to be corrected.
        view->setStatus(tr("Error: %1").arg(error.message.section(u'\n', 0, 0)));
        return;
    }
    const SqlErrorLocation at = SqlErrorLocation::fromError(error);
    QString message = error.message;
    if (!at.detail.isEmpty())
        message += QStringLiteral("\n") + tr("Detail: %1").arg(at.detail);
    if (!at.hint.isEmpty())
        message += QStringLiteral("\n") + tr("Hint: %1").arg(at.hint);
    if (at.isValid()) {
        message += QStringLiteral("\n")
                   + tr("at line %1, column %2 of the statement").arg(at.line).arg(at.column);
        markError(at, error.message);
    }
    view->showText(message, true);
    view->setStatus(tr("Error (%1)").arg(errorCodeName(error.code)));
    m_history->add(m_currentStatement.sql, m_statementClock.elapsed(), false);
    finishCurrent(false, false);
}

// The error's place in the editor: its position in the statement as sent, moved back by what
// sentSql() inserted, to the end of the word there.
void SqlConsole::markError(const SqlErrorLocation &at, const QString &message)
{
    const int position = m_sentShift != 0 && at.position > m_sentFrom ? at.position - m_sentShift
                                                                      : at.position;
    const int inStatement = utf16Offset(m_currentStatement.sql, position);
    int length = 1;
    const QString &s = m_currentStatement.sql;
    while (inStatement + length < s.size() && !s[inStatement + length].isSpace()
           && s[inStatement].isLetterOrNumber())
        ++length;
    m_editor->markError(m_currentStatement.offset + inStatement, length, message);
}

void SqlConsole::finishCurrent(bool ok, bool continueRun)
{
    const int tab = m_results->indexOf(m_current);
    m_current = nullptr;
    if (!ok)
        m_failed = true;
    Q_EMIT statementDone(tab, ok);
    if (!continueRun)
        m_queue.clear();
    runNext();
}

void SqlConsole::cancel()
{
    if (!m_current)
        return;
    if (RowFeed *feed = m_current->model()->feed())
        feed->cancel(); // rpc.cancel: the server stops the statement
    m_current
        ->showText(tr("Cancelled after %1.").arg(Style::formatDuration(m_statementClock.elapsed())),
                   true);
    m_current->setStatus(tr("Cancelled"));
    m_history->add(m_currentStatement.sql, m_statementClock.elapsed(), false);
    finishCurrent(false, false);
}

void SqlConsole::updateTimer()
{
    if (!m_clock.isValid())
        return;
    const QString elapsed = Style::formatDuration(m_clock.elapsed());
    m_timer->setText(isRunning() ? tr("Running… %1").arg(elapsed)
                     : m_failed  ? tr("Failed after %1").arg(elapsed)
                                 : tr("Done in %1").arg(elapsed));
    Style::setTextTone(m_timer, !isRunning() && m_failed ? Style::Tone::Error : Style::Tone::Normal);
}

} // namespace Sandbox::Ui
