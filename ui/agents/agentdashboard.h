#pragma once

#include <client/agenttypes.h>
#include <client/types.h>

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

class AgentDashboardModel;

// All agent sessions at a glance: status, last activity, runs, tokens, cost. Double-click (or
// Enter) asks to open a session; the host decides where (e.g. a tab with an AgentSessionView).
class AgentDashboard final : public QWidget
{
    Q_OBJECT

public:
    AgentDashboard(Sandbox::Client *client, QWidget *parent = nullptr); // client not owned
    AgentDashboardModel *model() const { return m_model; }
    QTableView *table() const { return m_table; }

    // Asks the engine for the list again (agents.list).
    void refresh();
    // Wires a session view's runs into the table.
    void track(QObject *sessionView);

Q_SIGNALS:
    void openRequested(const Sandbox::SandboxInfo &sandbox);
    void refreshed();

private:
    Sandbox::Client *m_client;      // not owned
    AgentDashboardModel *m_model;   // owned (child)
    QSortFilterProxyModel *m_proxy; // owned (child)
    QTableView *m_table;
    QLabel *m_summary;
};

} // namespace Sandbox::Ui
