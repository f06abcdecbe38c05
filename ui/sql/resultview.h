#pragma once

#include "resultmodel.h"

#include <QWidget>

class QDialog;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QStackedWidget;
class QTableView;
class QToolButton;

namespace Sandbox::Ui {

// One result tab of the console: a grid over a ResultModel (copy with Ctrl+C, export to CSV or
// JSON), or text (a message, an error, an EXPLAIN plan), and a status line.
class ResultView final : public QWidget
{
    Q_OBJECT

public:
    explicit ResultView(QWidget *parent = nullptr);

    ResultModel *model() const { return m_model; }
    QTableView *table() const { return m_table; }
    void showRows();
    void showText(const QString &text, bool isError = false);
    // Shows `widget` (a plan tree) in place of the rows; the view takes it over.
    void showWidget(QWidget *widget);
    QWidget *shownWidget() const;
    bool isTextShown() const;
    QString text() const;
    void setStatus(const QString &status);
    QString status() const;

    // Copies the selected cells (tab-separated; with the header row when `withHeader`).
    void copySelection(bool withHeader = false);
    void exportTo(const QString &path, ResultModel::Format format);
    // The current cell in a dialog: long text, JSON indented, bytes as hex.
    void viewCurrentCell();
    // Fetches the rest of the result, page by page (bounded: MaxFetchAllRows).
    void fetchAll();
    // The table name used by "Copy as SQL INSERT".
    void setTableName(const QString &name) { m_tableName = name; }
    static constexpr int MaxFetchAllRows = 1'000'000;
    // A result of a query that can be run again: a click on a column's header asks for it
    // sorted, a condition in the filter field for its rows that meet it (requeryRequested: the
    // query runs again on the server, as the whole result may be far more than the rows
    // fetched), and Count asks for its number of rows (countRequested).
    void setRequeryable(bool on);
    void setTotal(const QString &text);
    // The column the server sorts by (-1: none), and its order.
    int sortColumn() const { return m_sortColumn; }
    Qt::SortOrder sortOrder() const { return m_sortOrder; }
    // The filter's condition as typed (a WHERE condition; empty: none).
    QString filter() const { return m_filterText; }
    QLineEdit *filterField() const { return m_filter; }
    // What the rows shown are, said after the status ("sorted by n ↓ on the server"); empty for
    // the query as written.
    void setRequeryNote(const QString &note);

Q_SIGNALS:
    void exported(const QString &path, qint64 rows);
    void exportFailed(const QString &message);
    // The sort column or the filter changed: run the query again (sortColumn(), filter()).
    void requeryRequested();
    void countRequested();
    // The cell viewer is open (modal): for tests.
    void cellViewerOpened(QDialog *dialog);

private:
    void askExport(ResultModel::Format format);

    ResultModel *m_model;     // owned (child)
    QStackedWidget *m_stack;  // owned (child)
    QTableView *m_table;      // owned (child of m_stack)
    QPlainTextEdit *m_text;   // owned (child of m_stack)
    QLabel *m_status;         // owned (child)
    QWidget *m_exportButtons; // owned (child)
    QString m_tableName = QStringLiteral("result");
    bool m_fetchingAll = false;
    QToolButton *m_countButton = nullptr; // owned (child)
    int m_sortColumn = -1;
    Qt::SortOrder m_sortOrder = Qt::AscendingOrder;
    QLineEdit *m_filter = nullptr; // owned (child)
    bool m_requeryable = false;
    QString m_filterText;
    QString m_statusText; // as set, without the note
    QString m_requeryNote;
};

} // namespace Sandbox::Ui
