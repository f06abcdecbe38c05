#pragma once

#include "sqlsplitter.h"

#include <client/rpccall.h>

#include "resultview.h" // complete: QPointer<ResultView> below
#include <QElapsedTimer>
#include <QPointer>

#include <QWidget>

class QLabel;
class QLineEdit;
class QTabWidget;
class QTimer;
class QToolButton;
class QTreeView;

namespace Sandbox {
class Client;
struct Error;
struct SqlErrorLocation;
} // namespace Sandbox

namespace Sandbox::Ui {

class QueryHistory;

class SchemaModel;
class SqlEditor;

// The SQL console of one database, a self-contained widget for the database's tab set: an
// editor (dialect keywords, completion from the live schema), run all / selection / statement
// under the cursor (Ctrl+Enter), one result tab per statement with a live timer and Cancel,
// the schema tree and the searchable query history (kept across restarts). Errors from the
// server are marked in the editor where they happened.
class SqlConsole final : public QWidget
{
    Q_OBJECT

public:
    // `client` is not owned and must outlive the console.
    SqlConsole(Sandbox::Client *client, QString databaseId, QWidget *parent = nullptr);
    ~SqlConsole() override;

    QString databaseId() const { return m_databaseId; }
    SqlEditor *editor() const { return m_editor; }
    QTabWidget *results() const { return m_results; }
    ResultView *resultAt(int index) const;
    SchemaModel *schema() const { return m_schema; }
    QueryHistory *history() const { return m_history; }
    QString elapsedText() const;
    bool isRunning() const { return m_current != nullptr; }

public Q_SLOTS:
    void runAll();
    void runSelection();
    void runStatementUnderCursor();
    void cancel();
    void refreshSchema();
    // Adds `sql` (one statement, no ";") to the end of the editor and runs it.
    void runSql(const QString &sql);
    // The columns and indexes of a table of the schema tree, in a result tab.
    void describe(const QModelIndex &table);

Q_SIGNALS:
    void runningChanged(bool running);
    // A statement of a run ended: with its first page, its end, or an error.
    void statementDone(int tab, bool ok);
    // The whole run ended (all statements, an error, or Cancel).
    void runFinished();

private:
    struct Pending
    {
        QString sql;
        int offset = 0; // where it starts in the editor's text (UTF-16)
    };
    QWidget *makeEditorPane();
    QWidget *makeSidePane();
    void connectSchemaView();

    void run(const QList<SqlStatementRange> &statements);
    // A run, statement by statement: the next one's tab and feed, or the run's end.
    void runNext();
    void endRun();
    ResultView *addResultTab(const QString &sql);
    QString sentSql(const QString &sql);
    void letServerRequery(ResultView *view, const QString &inner);
    void followStatement(ResultView *view, bool explain);
    void statementStarted(ResultView *view, bool explain);
    void showPlan(ResultView *view);
    void statementFailed(ResultView *view, const Error &error);
    void markError(const SqlErrorLocation &at, const QString &message);
    void finishCurrent(bool ok, bool continueRun);
    void updateTimer();

    Sandbox::Client *m_client; // not owned
    QString m_databaseId;
    SqlEditor *m_editor;         // owned (child of its CodeEditorView)
    QTabWidget *m_results;       // owned (child)
    SchemaModel *m_schema;       // owned (child)
    QueryHistory *m_history;     // owned (child)
    QTreeView *m_schemaView;     // owned (child)
    QLineEdit *m_search;         // owned (child)
    QToolButton *m_runButton;    // owned (child)
    QToolButton *m_cancelButton; // owned (child)
    QLabel *m_timer;             // owned (child)
    QTimer *m_tick;              // owned (child)
    QElapsedTimer m_clock;
    bool m_failed = false; // a statement of the current run failed or was cancelled
    int m_sentShift = 0;   // characters the sent statement has more than the editor's (EXPLAIN)
    int m_sentFrom = 0;    // from where, in the sent statement
    QElapsedTimer m_statementClock;
    QList<Pending> m_queue;
    QPointer<ResultView> m_current;
    Pending m_currentStatement;
    bool m_schemaChanged = false;
    RpcCall m_infoCall;
};

} // namespace Sandbox::Ui
