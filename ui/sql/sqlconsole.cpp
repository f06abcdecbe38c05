#include "sqlconsole.h"

#include "queryhistory.h"
#include "resultview.h"
#include "schemamodel.h"
#include "sqleditor.h"

#include "../common/uistyle.h"
#include "../editor/codeeditorview.h"

#include <client/client.h>
#include <client/rowfeed.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QLoggingCategory>
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
    // Toolbar: run, run selection, cancel, the live timer.
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
    right->setStretchFactor(0, 2);
    right->setStretchFactor(1, 3);
    auto *rightPane = new QWidget(this);
    auto *rightLayout = new QVBoxLayout(rightPane);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addLayout(toolbar);
    rightLayout->addWidget(right, 1);

    // Left: the schema tree and the searchable history.
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

    auto *split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(rightPane);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 800});
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    connect(m_editor, &SqlEditor::runStatementRequested, this, &SqlConsole::runStatementUnderCursor);
    connect(m_editor, &SqlEditor::runAllRequested, this, &SqlConsole::runAll);
    connect(m_schema, &SchemaModel::loaded, this, [this] {
        m_editor->setSchema(m_schema->columnsByTable());
        m_schemaView->expandToDepth(-1);
    });
    m_tick->setInterval(100);
    connect(m_tick, &QTimer::timeout, this, &SqlConsole::updateTimer);

    m_infoCall = m_client->databases().info(m_databaseId, this, [this](Result<DatabaseInfo> info) {
        if (info)
            m_editor->setDialect(info->engine);
    });
    refreshSchema();
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
    m_clock.start();
    m_tick->start();
    m_cancelButton->setEnabled(true);
    m_runButton->setEnabled(false);
    Q_EMIT runningChanged(true);
    runNext();
}

void SqlConsole::runNext()
{
    if (m_queue.isEmpty()) {
        m_tick->stop();
        updateTimer();
        m_cancelButton->setEnabled(false);
        m_runButton->setEnabled(true);
        if (m_schemaChanged)
            refreshSchema();
        Q_EMIT runningChanged(false);
        Q_EMIT runFinished();
        return;
    }
    m_currentStatement = m_queue.takeFirst();
    const QString sql = m_currentStatement.sql;
    const QString verb = firstWord(sql);
    auto *view = new ResultView(m_results);
    QString title = sql.simplified();
    if (title.size() > 28)
        title = title.left(28) + QStringLiteral("…");
    const int tab
        = m_results->addTab(view, QStringLiteral("%1: %2").arg(m_results->count() + 1).arg(title));
    m_results->setTabToolTip(tab, sql);
    m_results->setCurrentIndex(tab);
    m_current = view;
    m_statementClock.start();
    view->setStatus(tr("Running…"));

    auto *feed = new RowFeed(&m_client->databases(), m_databaseId, sql, {});
    feed->setPageSize(kPageSize);
    ResultModel *model = view->model();
    const bool explain = verb == QLatin1String("EXPLAIN");
    if (verb == QLatin1String("CREATE") || verb == QLatin1String("DROP")
        || verb == QLatin1String("ALTER"))
        m_schemaChanged = true;
    auto status = [view, model] {
        const QString more = model->canFetchMore({}) ? tr(", more as you scroll") : QString();
        view->setStatus(rows(model->rowCount()) + more);
    };
    connect(model, &QAbstractItemModel::rowsInserted, view, status);
    connect(model, &ResultModel::started, view, [this, view, model, explain, status] {
        if (view != m_current)
            return;
        const qint64 ms = m_statementClock.elapsed();
        RowFeed *f = model->feed();
        if (model->fields().isEmpty()) {
            const QString message = tr("%1: %2 affected (%3)")
                                        .arg(f->command(), rows(f->rowsAffected()),
                                             Style::formatDuration(ms));
            view->showText(message);
            view->setStatus(message);
        } else if (!explain) {
            view->showRows();
            status();
        }
        if (explain) {
            // A plan is short: read it whole, then show it as text.
            model->exportTo(QString(), ResultModel::Format::Csv, view, [](Result<qint64>) {});
            return;
        }
        m_history->add(m_currentStatement.sql, ms, true);
        finishCurrent(true, true);
    });
    connect(model, &ResultModel::finished, view, [this, view, model, explain, status] {
        if (explain) {
            view->showText(planText(model));
            view->setStatus(tr("plan"));
            if (view == m_current) {
                m_history->add(m_currentStatement.sql, m_statementClock.elapsed(), true);
                finishCurrent(true, true);
            }
            return;
        }
        status();
    });
    connect(model, &ResultModel::failed, view, [this, view](const Error &error) {
        if (view != m_current)
            return;
        const SqlErrorLocation at = SqlErrorLocation::fromError(error);
        QString message = error.message;
        if (!at.detail.isEmpty())
            message += QStringLiteral("\n") + tr("Detail: %1").arg(at.detail);
        if (!at.hint.isEmpty())
            message += QStringLiteral("\n") + tr("Hint: %1").arg(at.hint);
        if (at.isValid()) {
            message += QStringLiteral("\n")
                       + tr("at line %1, column %2 of the statement").arg(at.line).arg(at.column);
            const int inStatement = utf16Offset(m_currentStatement.sql, at.position);
            int length = 1;
            const QString &s = m_currentStatement.sql;
            while (inStatement + length < s.size() && !s[inStatement + length].isSpace()
                   && s[inStatement].isLetterOrNumber())
                ++length;
            m_editor->markError(m_currentStatement.offset + inStatement, length, error.message);
        }
        view->showText(message, true);
        view->setStatus(tr("Error (%1)").arg(errorCodeName(error.code)));
        m_history->add(m_currentStatement.sql, m_statementClock.elapsed(), false);
        finishCurrent(false, false);
    });
    model->setFeed(feed);
}

void SqlConsole::finishCurrent(bool ok, bool continueRun)
{
    const int tab = m_results->indexOf(m_current);
    m_current = nullptr;
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
    m_timer->setText(isRunning() ? tr("Running… %1").arg(Style::formatDuration(m_clock.elapsed()))
                                 : tr("Done in %1").arg(Style::formatDuration(m_clock.elapsed())));
}

} // namespace Sandbox::Ui
