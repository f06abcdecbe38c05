#include "networkview.h"

#include "networklogmodel.h"
#include "networkpolicyeditor.h"

#include <client/client.h>

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace Sandbox::Ui {

NetworkView::NetworkView(Client *client, const SandboxInfo &sandbox, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_id(sandbox.id)
    , m_summary(new QLabel(this))
    , m_editor(new NetworkPolicyEditor(this))
    , m_apply(new QPushButton(tr("Apply"), this))
    , m_revert(new QPushButton(tr("Revert"), this))
    , m_table(new QTableView(this))
    , m_model(new NetworkLogModel(this))
    , m_allow(new QPushButton(tr("Allow this destination"), this))
    , m_empty(new QLabel(tr("Nothing was refused."), this))
{
    m_summary->setTextFormat(Qt::PlainText);
    m_apply->setEnabled(false);
    m_revert->setEnabled(false);
    m_allow->setEnabled(false);
    m_allow->setToolTip(tr("Adds the allow entry that lets this destination through; it applies "
                           "to the next connection."));

    auto *policyBox = new QGroupBox(tr("Network policy"), this);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_summary, 1);
    buttons->addWidget(m_revert);
    buttons->addWidget(m_apply);
    auto *policyLayout = new QVBoxLayout(policyBox);
    policyLayout->addWidget(m_editor);
    policyLayout->addLayout(buttons);

    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setStretchLastSection(false);
    m_table->horizontalHeader()->setSectionResizeMode(NetworkLogModel::Reason, QHeaderView::Stretch);
    for (int c : {NetworkLogModel::Time, NetworkLogModel::Destination, NetworkLogModel::Process,
                  NetworkLogModel::Count})
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setForegroundRole(QPalette::PlaceholderText);

    auto *logBox = new QGroupBox(tr("Refused connections"), this);
    auto *refreshButton = new QPushButton(tr("Refresh"), logBox);
    auto *logButtons = new QHBoxLayout;
    logButtons->addWidget(m_empty, 1);
    logButtons->addWidget(refreshButton);
    logButtons->addWidget(m_allow);
    auto *logLayout = new QVBoxLayout(logBox);
    logLayout->addWidget(m_table);
    logLayout->addLayout(logButtons);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(policyBox);
    splitter->addWidget(logBox);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(splitter);

    connect(m_editor, &NetworkPolicyEditor::changed, this, &NetworkView::updateButtons);
    connect(m_apply, &QPushButton::clicked, this, &NetworkView::apply);
    connect(m_revert, &QPushButton::clicked, this,
            [this] { m_editor->setPolicy(m_editor->savedPolicy()); });
    connect(m_allow, &QPushButton::clicked, this, &NetworkView::allowSelected);
    connect(refreshButton, &QPushButton::clicked, this, &NetworkView::refresh);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &NetworkView::updateButtons);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, &NetworkView::updateButtons);
    connect(m_model, &QAbstractItemModel::modelReset, this, &NetworkView::updateButtons);
    if (m_client) {
        connect(m_client->rpc(), &RpcClient::notification, this,
                [this](const QString &method, const QJsonObject &params) {
                    if (method != QLatin1String("network.denied")
                        || params.value(QStringLiteral("id")).toString() != m_id)
                        return;
                    if (const auto d = NetworkDenial::fromJson(
                            params.value(QStringLiteral("denial"))))
                        m_model->addDenial(d.value());
                });
        // After a reconnect, what was missed meanwhile.
        connect(m_client->rpc(), &RpcClient::stateChanged, this, [this](RpcClient::State s) {
            if (s == RpcClient::State::Connected)
                refresh();
        });
    }
    showPolicy(sandbox.networkPolicy);
    refresh();
}

NetworkView::~NetworkView() = default;

void NetworkView::showPolicy(const NetworkPolicy &policy)
{
    m_editor->setPolicy(policy);
    m_summary->setText(tr("Now: %1").arg(policy.summary()));
}

void NetworkView::refresh()
{
    if (!m_client)
        return;
    m_logCall = m_client->sandboxes().networkLog(m_id, this, [this](Result<NetworkLog> r) {
        if (!r) {
            Q_EMIT message(tr("Cannot read the network log: %1").arg(r.error().message));
            return;
        }
        // Keep what the user is editing; show what the server has otherwise.
        if (!m_editor->isModified())
            showPolicy(r->policy);
        m_model->setDenials(r->denied);
        m_table->scrollToBottom();
    });
}

void NetworkView::apply()
{
    send(m_editor->policy());
}

void NetworkView::allowSelected()
{
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return;
    const QString entry = rows.first().data(NetworkLogModel::AllowEntryRole).toString();
    if (entry.isEmpty())
        return;
    send(m_editor->savedPolicy().allowing(entry));
}

void NetworkView::send(const NetworkPolicy &policy)
{
    if (!m_client)
        return;
    m_apply->setEnabled(false);
    m_setCall = m_client->sandboxes().setNetwork(m_id, policy, this, [this](Result<SandboxInfo> r) {
        if (!r) {
            m_editor->showError(r.error().message);
            updateButtons();
            return;
        }
        showPolicy(r->networkPolicy);
        Q_EMIT message(tr("Network policy: %1").arg(r->networkPolicy.summary()));
        Q_EMIT sandboxChanged(r.value());
    });
}

void NetworkView::updateButtons()
{
    const bool modified = m_editor->isModified();
    m_apply->setEnabled(modified);
    m_revert->setEnabled(modified);
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    const QString entry = rows.isEmpty()
                              ? QString()
                              : rows.first().data(NetworkLogModel::AllowEntryRole).toString();
    m_allow->setEnabled(!entry.isEmpty());
    m_allow->setText(entry.isEmpty() ? tr("Allow this destination") : tr("Allow %1").arg(entry));
    m_empty->setVisible(m_model->rowCount() == 0);
}

} // namespace Sandbox::Ui
