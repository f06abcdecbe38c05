#pragma once

#include <QJsonValue>
#include <QTreeWidget>

namespace Sandbox::Ui {

class ResultModel;

// A query plan as a tree: PostgreSQL's EXPLAIN (FORMAT JSON [, ANALYZE]) with each node's cost,
// rows and (when analysed) time, and a bar of its share of the plan's total cost or time;
// SQLite's EXPLAIN QUERY PLAN rows (id, parent, detail) and DuckDB's operators as trees too.
class PlanView final : public QTreeWidget
{
    Q_OBJECT

public:
    enum Column { OperationColumn, CostColumn, RowsColumn, TimeColumn, ShareColumn };
    enum Role { ShareRole = Qt::UserRole + 1 }; // double 0..1 (ShareColumn)

    explicit PlanView(QWidget *parent = nullptr);

    // Fills the tree from an EXPLAIN result; false when it is not a plan this view knows (the
    // caller then shows the plan as text).
    bool setPlan(const ResultModel &model);
    // PostgreSQL's JSON plan (the text of its one "QUERY PLAN" cell).
    bool setPostgresJson(const QString &json);
    // The operation names, depth-first, indented by two spaces per level (for tests).
    QStringList outline() const;

private:
    bool setSqliteRows(const ResultModel &model);
    bool setDuckDbText(const QString &text);
    void addPostgresNode(const QJsonObject &plan, QTreeWidgetItem *parent, double total,
                         bool byTime);
};

} // namespace Sandbox::Ui
