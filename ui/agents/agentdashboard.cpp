#include "agentdashboard.h"

#include "agentdashboardmodel.h"
#include "agentsessionview.h"

#include "../common/uistyle.h"

#include <client/agentsservice.h>
#include <client/client.h>
#include <client/rpcclient.h>

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {

// The Context column: its percentage over a thin bar of the share in use (amber from 70 %, red
// from 90 %); nothing where the share is not known.
class ContextDelegate final : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override
    {
        QStyledItemDelegate::paint(painter, option, index);
        const QVariant share = index.data(AgentDashboardModel::ContextRole);
        if (!share.isValid())
            return;
        const double f = qBound(0.0, share.toDouble(), 1.0);
        const QRect track(option.rect.left() + 4, option.rect.bottom() - 3,
                          qMax(0, option.rect.width() - 8), 3);
        const QPalette &pal = option.palette;
        painter->fillRect(track,
                          Style::blend(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.18));
        QRect used = track;
        used.setWidth(qMax(f > 0 ? 1 : 0, int(track.width() * f + 0.5)));
        const Style::Tone tone = f >= 0.9   ? Style::Tone::Error
                                 : f >= 0.7 ? Style::Tone::Warning
                                            : Style::Tone::Info;
        painter->fillRect(used, Style::color(tone, pal));
    }

    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        QSize s = QStyledItemDelegate::sizeHint(option, index);
        if (index.data(AgentDashboardModel::ContextRole).isValid())
            s.setWidth(qMax(s.width(), option.fontMetrics.horizontalAdvance(QLatin1Char('0')) * 8));
        return s;
    }
};

} // namespace

AgentDashboard::AgentDashboard(Client *client, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_model(new AgentDashboardModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_table(new QTableView(this))
    , m_summary(new QLabel(this))
    , m_unknownStreams(new QTimer(this))
    , m_fitColumns(new QTimer(this))
{
    setObjectName(QStringLiteral("agentDashboard"));
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(AgentDashboardModel::SortRole);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->setObjectName(QStringLiteral("agentTable"));
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->setItemDelegateForColumn(AgentDashboardModel::Context, new ContextDelegate(m_table));
    // Every column as wide as its contents; the state gets the rest, at least kStateWidth (a
    // narrow window scrolls sideways rather than cut the state short).
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->horizontalHeader()->setStretchLastSection(false);
    m_table->viewport()->installEventFilter(this);
    m_fitColumns->setSingleShot(true);
    m_fitColumns->setInterval(100);
    connect(m_fitColumns, &QTimer::timeout, this, &AgentDashboard::fitColumns);
    const auto fitSoon = [this] { m_fitColumns->start(); };
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, fitSoon);
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, fitSoon);
    connect(m_proxy, &QAbstractItemModel::modelReset, this, fitSoon);
    // Live changes only widen the columns they touch, from the changed cells alone (a re-sort
    // moves rows, not widths): measuring every row per event is what made 50 streaming sessions
    // slow.
    connect(m_proxy, &QAbstractItemModel::dataChanged, this, &AgentDashboard::widenColumns);
    m_table->sortByColumn(AgentDashboardModel::LastActivity, Qt::DescendingOrder);
    // The network is in the sidebar and the session view; the columns go to the state.
    m_table->setColumnHidden(AgentDashboardModel::Network, true);
    m_summary->setObjectName(QStringLiteral("agentTotals"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // The totals wrap in a narrow window rather than run off its edge.
    m_summary->setWordWrap(true);
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
    connect(m_model, &AgentDashboardModel::totalsChanged, this, &AgentDashboard::summarize);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, &AgentDashboard::summarize);
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, &AgentDashboard::summarize);
    // Live: the events of runs this connection follows move their rows at once.
    if (m_client && m_client->rpc()) {
        connect(m_client->rpc(), &RpcClient::streamActivity, this,
                &AgentDashboard::onStreamActivity);
        // Watches end with the connection; the next read of the runs watches again.
        connect(m_client->rpc(), &RpcClient::stateChanged, this, [this](RpcClient::State s) {
            if (s != RpcClient::State::Connected)
                m_watched.clear();
        });
    }
    m_unknownStreams->setSingleShot(true);
    m_unknownStreams->setInterval(250);
    connect(m_unknownStreams, &QTimer::timeout, this, [this] {
        QStringList running;
        for (int i = 0; i < m_model->rowCount(); ++i) {
            const SandboxInfo s = m_model->sandboxAt(i);
            if (s.status == QLatin1String("running"))
                running.append(s.id);
        }
        fetchRuns(running);
    });
    summarize();
}

void AgentDashboard::fitColumns()
{
    int others = 0;
    for (int c = 0; c < AgentDashboardModel::ColumnCount; ++c) {
        if (c == AgentDashboardModel::Status || m_table->isColumnHidden(c))
            continue;
        m_table->resizeColumnToContents(c);
        others += m_table->columnWidth(c);
    }
    m_table->setColumnWidth(AgentDashboardModel::Status,
                            qMax(kStateWidth, m_table->viewport()->width() - others));
}

void AgentDashboard::widenColumns(const QModelIndex &topLeft, const QModelIndex &bottomRight)
{
    if (m_fitColumns->isActive())
        return; // a full fit is due anyway
    int grown = 0;
    for (int c = topLeft.column(); c <= bottomRight.column(); ++c) {
        if (c == AgentDashboardModel::Status || m_table->isColumnHidden(c))
            continue;
        int width = m_table->columnWidth(c);
        for (int row = topLeft.row(); row <= bottomRight.row(); ++row)
            width = qMax(width, m_table->sizeHintForIndex(m_proxy->index(row, c)).width());
        if (width > m_table->columnWidth(c)) {
            grown += width - m_table->columnWidth(c);
            m_table->setColumnWidth(c, width);
        }
    }
    if (grown > 0)
        m_table->setColumnWidth(AgentDashboardModel::Status,
                                qMax(kStateWidth,
                                     m_table->columnWidth(AgentDashboardModel::Status) - grown));
}

bool AgentDashboard::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_table->viewport() && event->type() == QEvent::Resize)
        m_fitColumns->start();
    return QWidget::eventFilter(watched, event);
}

void AgentDashboard::setEndpointName(const QString &name)
{
    m_endpoint = name;
    summarize();
}

void AgentDashboard::summarize()
{
    const AgentDashboardModel::Totals t = m_model->totals();
    QStringList parts;
    parts << tr("%n agent session(s)", nullptr, t.sessions);
    if (t.running)
        parts << tr("%1 running").arg(t.running);
    if (t.needsInput)
        parts << tr("%1 need(s) input").arg(t.needsInput);
    if (t.failed)
        parts << tr("%1 failed").arg(t.failed);
    parts << tr("tokens %1 in / %2 out")
                 .arg(QLocale().toString(t.tokensIn), QLocale().toString(t.tokensOut));
    parts << tr("cost $%1 (today $%2)").arg(t.costUsd, 0, 'f', 4).arg(t.costTodayUsd, 0, 'f', 4);
    const QString text = parts.join(QStringLiteral(" · "));
    m_summary->setText(m_endpoint.isEmpty() ? text : m_endpoint + QStringLiteral(": ") + text);
}

void AgentDashboard::setSandboxes(const QList<SandboxInfo> &sandboxes)
{
    QList<SandboxInfo> agents;
    for (const SandboxInfo &s : sandboxes) {
        if (s.kind == QLatin1String("agent"))
            agents.append(s);
    }
    m_model->setSandboxes(agents);
    fetchRuns(m_model->staleIds());
    Q_EMIT refreshed();
}

void AgentDashboard::fetchRuns(const QStringList &ids)
{
    if (!m_client)
        return;
    for (const QString &id : ids) {
        if (m_fetching.contains(id))
            continue;
        m_fetching.insert(id);
        const int limit = m_model->hasHistory(id) ? 20 : AgentDashboardModel::kHistoryRuns;
        m_client->agents()
            .runs(id, limit, this,
                  [this, id](Result<QList<AgentRunRecord>> r) {
                      m_fetching.remove(id);
                      if (!r)
                          return; // e.g. deleted meanwhile: the next listing drops the row
                      m_model->setRuns(id, r.value());
                      watchRunsStartedElsewhere(r.value());
                      Q_EMIT runsLoaded(id);
                  })
            .detach();
    }
}

void AgentDashboard::watchRunsStartedElsewhere(const QList<AgentRunRecord> &runs)
{
    RpcClient *rpc = m_client ? m_client->rpc() : nullptr;
    if (!rpc || rpc->state() != RpcClient::State::Connected)
        return;
    for (const AgentRunRecord &run : runs) {
        // A run this connection started (or watches already) brings its events anyway.
        if (run.status != AgentRunRecord::Status::Running || run.streamId.isEmpty()
            || rpc->followsStream(run.streamId) || m_watched.contains(run.streamId))
            continue;
        // Its events reach the table through RpcClient::streamActivity like those of runs of
        // this connection, the backlog first (the table takes an event twice alike); its end
        // has the history read again (onStreamActivity).
        m_watched.insert(run.streamId);
        rpc->observeStream(run.streamId, 0, this,
                           [this, streamId = run.streamId](Result<QJsonValue> r) {
                               if (!r || r->toObject().value(QStringLiteral("done")).toBool())
                                   m_watched.remove(streamId);
                           })
            .detach();
    }
}

void AgentDashboard::onStreamActivity(const QString &method, const QJsonObject &params)
{
    const QString streamId = params.value(QStringLiteral("streamId")).toString();
    if (method == QLatin1String("stream.event")) {
        const auto event = AgentEvent::fromJson(params.value(QStringLiteral("event")));
        if (!event || event->typeName == QLatin1String("terminal"))
            return;
        if (!m_model->streamEvent(streamId, event.value()) && !m_unknownStreams->isActive())
            m_unknownStreams->start(); // a run this dashboard has not seen start
        return;
    }
    // stream.end: the run's final record (status, answer, needsInput) is in its history now.
    m_watched.remove(streamId);
    for (int i = 0; i < m_model->rowCount(); ++i) {
        if (m_model->lastRunAt(i).streamId == streamId) {
            fetchRuns({m_model->sandboxAt(i).id});
            return;
        }
    }
}

void AgentDashboard::refresh()
{
    if (!m_client)
        return;
    m_client->agents()
        .list(this,
              [this](Result<QList<SandboxInfo>> r) {
                  if (!r) {
                      m_summary->setText(
                          tr("Cannot list the agent sandboxes: %1").arg(r.error().message));
                      return;
                  }
                  setSandboxes(r.value());
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
            [this](const QString &id, const AgentRunResult &r) {
                m_model->runFinished(id, r);
                fetchRuns({id});
            });
    connect(view, &AgentSessionView::runFailed, this,
            [this](const QString &id, const QString &why) { m_model->runFailed(id, why); });
}

} // namespace Sandbox::Ui
