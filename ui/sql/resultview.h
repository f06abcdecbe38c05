#pragma once

#include "resultmodel.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QStackedWidget;
class QTableView;

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
    bool isTextShown() const;
    QString text() const;
    void setStatus(const QString &status);
    QString status() const;

    // Copies the selected cells (tab-separated; with the header row when `withHeader`).
    void copySelection(bool withHeader = false);
    void exportTo(const QString &path, ResultModel::Format format);

Q_SIGNALS:
    void exported(const QString &path, qint64 rows);
    void exportFailed(const QString &message);

private:
    void askExport(ResultModel::Format format);

    ResultModel *m_model;     // owned (child)
    QStackedWidget *m_stack;  // owned (child)
    QTableView *m_table;      // owned (child of m_stack)
    QPlainTextEdit *m_text;   // owned (child of m_stack)
    QLabel *m_status;         // owned (child)
    QWidget *m_exportButtons; // owned (child)
};

} // namespace Sandbox::Ui
