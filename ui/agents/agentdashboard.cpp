#include "agentdashboard.h"

#include "agentdashboardmodel.h"
#include "agentsessionview.h"

#include "../common/uistyle.h"

#include <client/agentsservice.h>
#include <client/client.h>
#include <client/rpcclient.h>
#include <protocol/sandboxenums.h>

#include <QDate>
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
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
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
        painter->fillRect(track, trackColor(option));
        QRect used = track;
        used.setWidth(qMax(f > 0 ? 1 : 0, int(track.width() * f + 0.5)));
        const Style::Tone tone = f >= 0.9   ? Style::Tone::Error
                                 : f >= 0.7 ? Style::Tone::Warning
                                            : Style::Tone::Info;
        painter->fillRect(used, Style::color(tone, pal));
    }

    // The empty part of the bar: the row's text colour over its background, strong enough to be
    // seen on light and dark palettes alike (a fixed blend was nearly invisible on dark ones,
    // where alternate rows and the selection are close to it).
    static QColor trackColor(const QStyleOptionViewItem &option)
    {
        const QPalette &pal = option.palette;
        const bool selected = option.state & QStyle::State_Selected;
        const QColor background = selected
                                      ? pal.color(QPalette::Highlight)
                                      : pal.color(option.features & QStyleOptionViewItem::Alternate
                                                      ? QPalette::AlternateBase
                                                      : QPalette::Base);
        const QColor text = pal.color(selected ? QPalette::HighlightedText : QPalette::Text);
        QColor c = Style::blend(background, text, 0.3);
        for (qreal t = 0.35; t <= 1.0 && Style::contrast(c, background) < kTrackContrast; t += 0.05)
            c = Style::blend(background, text, t);
        return c;
    }
    static constexpr qreal kTrackContrast = 2.0;

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
    , m_byDayButton(new QToolButton(this))
    , m_byDay(new QTableWidget(this))
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
    // The days' totals (runs by the day they started), a small table under the totals line.
    m_byDayButton->setObjectName(QStringLiteral("agentByDayButton"));
    m_byDayButton->setText(tr("By day"));
    m_byDayButton->setCheckable(true);
    m_byDayButton->setToolTip(tr("Runs, tokens and cost per day"));
    m_byDay->setObjectName(QStringLiteral("agentByDay"));
    m_byDay->setColumnCount(5);
    m_byDay->setHorizontalHeaderLabels(
        {tr("Day"), tr("Runs"), tr("Tokens in"), tr("Tokens out"), tr("Cost")});
    m_byDay->verticalHeader()->hide();
    m_byDay->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_byDay->setSelectionMode(QAbstractItemView::NoSelection);
    m_byDay->setFocusPolicy(Qt::NoFocus);
    m_byDay->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_byDay->horizontalHeader()->setStretchLastSection(true);
    m_byDay->hide();
    connect(m_byDayButton, &QToolButton::toggled, this, [this](bool on) {
        m_byDay->setVisible(on);
        summarize();
    });
    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_byDayButton, 0, Qt::AlignTop);
    top->addWidget(refreshButton, 0, Qt::AlignTop);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_byDay);
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
            if (fromWire<SandboxStatus>(s.status) == SandboxStatus::Running)
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
    parts << AgentDashboardModel::stateCounts(t);
    const QLocale locale;
    parts << tr("tokens %1 in / %2 out")
                 .arg(locale.toString(t.tokensIn), locale.toString(t.tokensOut));
    parts << tr("cost $%1").arg(t.costUsd, 0, 'f', 4);
    parts << tr("today: %n run(s)", nullptr, t.runsToday)
                 + tr(", %1 tokens, $%2")
                       .arg(locale.toString(t.tokensToday))
                       .arg(t.costTodayUsd, 0, 'f', 4);
    const QString text = parts.join(QStringLiteral(" · "));
    // One connection at a time: the totals are this endpoint's, and the line says so.
    m_summary->setText(m_endpoint.isEmpty() ? text : tr("Totals of %1: %2").arg(m_endpoint, text));
    if (m_byDay->isVisible())
        fillByDay();
}

void AgentDashboard::fillByDay()
{
    const QList<AgentDashboardModel::DayTotals> days = m_model->byDay(kByDayDays);
    const QLocale locale;
    m_byDay->setRowCount(int(days.size()));
    const QDate today = QDate::currentDate();
    for (int i = 0; i < days.size(); ++i) {
        const AgentDashboardModel::DayTotals &d = days[i];
        const QString day = d.day == today ? tr("Today")
                            : d.day == today.addDays(-1)
                                ? tr("Yesterday")
                                : locale.toString(d.day, QLocale::ShortFormat);
        const QStringList cells{day, locale.toString(d.runs), locale.toString(d.tokensIn),
                                locale.toString(d.tokensOut),
                                d.costKnown ? QStringLiteral("$%1").arg(d.costUsd, 0, 'f', 4)
                                            : QStringLiteral("—")};
        for (int c = 0; c < cells.size(); ++c) {
            QTableWidgetItem *item = m_byDay->item(i, c);
            if (!item) {
                item = new QTableWidgetItem;
                m_byDay->setItem(i, c, item);
            }
            item->setText(cells[c]);
            item->setTextAlignment(c == 0 ? Qt::Alignment(Qt::AlignLeft | Qt::AlignVCenter)
                                          : Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
        }
    }
    // As tall as its rows, at most kByDayRowsShown of them (then it scrolls).
    const int rows = qMin(int(days.size()), kByDayRowsShown);
    int height = m_byDay->horizontalHeader()->sizeHint().height() + 2 * m_byDay->frameWidth();
    for (int i = 0; i < rows; ++i)
        height += m_byDay->rowHeight(i);
    m_byDay->setFixedHeight(height);
}

void AgentDashboard::setSandboxes(const QList<SandboxInfo> &sandboxes)
{
    QList<SandboxInfo> agents;
    for (const SandboxInfo &s : sandboxes) {
        if (fromWire<SandboxKind>(s.kind) == SandboxKind::Agent)
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
