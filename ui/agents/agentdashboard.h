#pragma once

#include <client/agenttypes.h>
#include <client/types.h>

#include <QSet>
#include <QWidget>

class QLabel;
class QModelIndex;
class QSortFilterProxyModel;
class QTableView;
class QTableWidget;
class QTimer;
class QToolButton;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

class AgentDashboardModel;

// All agent sessions of the connection at a glance: state (idle, running a prompt with its elapsed
// time and last event, needs input, failed, done), model, tokens in/out, cost, last activity,
// runs; sortable by every column; totals of the endpoint (the app holds one connection at a
// time, and the line names it) and of today above, and per day in a small table ("By day"). The
// numbers come from the engine's run history (`agents.runs`) and move live with the
// `stream.event`s the connection receives, also those of runs that other connections started,
// which it watches (stream.watch) once the history names them. Double-click (or Enter) asks to
// open a session; the host decides where (e.g. a tab with an AgentSessionView).
class AgentDashboard final : public QWidget
{
    Q_OBJECT

public:
    static constexpr int kStateWidth = 240;
    // The "By day" table: the newest days with runs, and how many rows it shows before it
    // scrolls.
    static constexpr int kByDayDays = 31;
    static constexpr int kByDayRowsShown = 7;

    AgentDashboard(Sandbox::Client *client, QWidget *parent = nullptr); // client not owned
    AgentDashboardModel *model() const { return m_model; }
    QTableView *table() const { return m_table; }
    QLabel *totalsLabel() const { return m_summary; }
    QToolButton *byDayButton() const { return m_byDayButton; }
    QTableWidget *byDayTable() const { return m_byDay; }

    // Asks the engine for the list again (agents.list), then for the runs of what changed.
    void refresh();
    // A listing made elsewhere (the main window's poller): agent sandboxes are kept, the runs of
    // those that changed are fetched.
    void setSandboxes(const QList<Sandbox::SandboxInfo> &sandboxes);
    // Names the endpoint in the totals line (e.g. "local engine").
    void setEndpointName(const QString &name);
    // Wires a session view's runs into the table.
    void track(QObject *sessionView);

Q_SIGNALS:
    void openRequested(const Sandbox::SandboxInfo &sandbox);
    // A listing was applied (refresh() or setSandboxes()).
    void refreshed();
    // Runs of sandbox `id` were read from the engine's history.
    void runsLoaded(const QString &id);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void fitColumns();
    void widenColumns(const QModelIndex &topLeft, const QModelIndex &bottomRight);
    void fetchRuns(const QStringList &ids);
    void onStreamActivity(const QString &method, const QJsonObject &params);
    // Runs that another connection started and that still go on: followed live (stream.watch).
    void watchRunsStartedElsewhere(const QList<Sandbox::AgentRunRecord> &runs);
    void summarize();
    void fillByDay();

    Sandbox::Client *m_client;      // not owned
    AgentDashboardModel *m_model;   // owned (child)
    QSortFilterProxyModel *m_proxy; // owned (child)
    QTableView *m_table;
    QLabel *m_summary;
    QToolButton *m_byDayButton;
    QTableWidget *m_byDay; // runs, tokens and cost per day, shown by m_byDayButton
    QString m_endpoint;
    QSet<QString> m_fetching; // sandboxes whose runs are being read
    QSet<QString> m_watched;  // runs of other connections watched on this one, by stream id
    QTimer *m_unknownStreams; // a run event of a stream not yet known: read the runs again
    QTimer *m_fitColumns;     // column widths follow the contents and the width, batched
};

} // namespace Sandbox::Ui
