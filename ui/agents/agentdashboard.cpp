#include "agentdashboard.h"

#include "agentdashboardmodel.h"
#include "agentsessionview.h"

#include <client/client.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace Sandbox::Ui {

AgentDashboard::AgentDashboard(Client *client, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_model(new AgentDashboardModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_table(new QTableView(this))
    , m_summary(new QLabel(this))
{
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(AgentDashboardModel::SortRole);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(AgentDashboardModel::Name,
                                                      QHeaderView::Stretch);
    auto *refreshButton = new QPushButton(tr("Refresh"), this);
    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(refreshButton);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);

    connect(refreshButton, &QPushButton::clicked, this, &AgentDashboard::refresh);
    connect(m_table, &QTableView::activated, this, [this](const QModelIndex &index) {
        Q_EMIT openRequested(m_model->sandboxAt(m_proxy->mapToSource(index).row()));
    });
    const auto summarize = [this] {
        m_summary->setText(tr("%n agent sandbox(es) · total cost $%1", nullptr, m_model->rowCount())
                               .arg(m_model->totalCostUsd(), 0, 'f', 4));
    };
    connect(m_model, &QAbstractItemModel::dataChanged, this, summarize);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, summarize);
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, summarize);
    summarize();
}

void AgentDashboard::refresh()
{
    m_client->agents()
        .list(this,
              [this](Result<QList<SandboxInfo>> r) {
                  if (!r) {
                      m_summary->setText(
                          tr("Cannot list the agent sandboxes: %1").arg(r.error().message));
                      return;
                  }
                  m_model->setSandboxes(r.value());
                  Q_EMIT refreshed();
              })
        .detach();
}

void AgentDashboard::track(QObject *sessionView)
{
    auto *view = qobject_cast<AgentSessionView *>(sessionView);
    if (!view)
        return;
    connect(view, &AgentSessionView::runStarted, this,
            [this](const QString &id) { m_model->runStarted(id); });
    connect(view, &AgentSessionView::runFinished, this,
            [this](const QString &id, const AgentRunResult &r) { m_model->runFinished(id, r); });
    connect(view, &AgentSessionView::runFailed, this,
            [this](const QString &id, const QString &why) { m_model->runFailed(id, why); });
}

} // namespace Sandbox::Ui
