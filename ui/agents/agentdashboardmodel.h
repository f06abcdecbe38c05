#pragma once

#include <client/agenttypes.h>
#include <client/types.h>

#include <QAbstractTableModel>
#include <QDateTime>

namespace Sandbox::Ui {

// Every agent sandbox of the connection, one row each: name, type, status (with "running a
// prompt" while a run is on), network, last activity, runs, tokens and cost so far (from the runs
// this app has seen). setSandboxes() merges a fresh agents.list answer row by row.
class AgentDashboardModel final : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Column { Name, Type, Status, Network, LastActivity, Runs, Tokens, Cost, ColumnCount };
    enum Role { IdRole = Qt::UserRole + 1, SortRole };

    explicit AgentDashboardModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    void setSandboxes(const QList<Sandbox::SandboxInfo> &sandboxes);
    void runStarted(const QString &id);
    void runFinished(const QString &id, const Sandbox::AgentRunResult &result);
    void runFailed(const QString &id, const QString &why);

    int rowOf(const QString &id) const;
    Sandbox::SandboxInfo sandboxAt(int row) const { return m_rows.value(row).info; }
    double totalCostUsd() const;

private:
    struct Row
    {
        Sandbox::SandboxInfo info;
        bool running = false;
        int runs = 0;
        int failedRuns = 0;
        qint64 tokens = 0;
        double costUsd = 0;
        bool costKnown = false;
        QDateTime lastActivity;
        QString lastError;
    };
    void changed(int row);

    QList<Row> m_rows;
};

} // namespace Sandbox::Ui
