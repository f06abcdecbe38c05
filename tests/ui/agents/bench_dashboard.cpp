// Benchmark (label bench): the agent dashboard with 50 sessions streaming at once. Every round,
// each of the 50 running sessions gets one `stream.event` (a tool call, or its usage totals) and
// the window repaints; the time of a round is the latency until all 50 rows show their new state:
// until the table has painted after the model said the round's changes (the dashboard says them
// once per pass of the event loop). The baseline, in the same run: the bare model update — a
// QStandardItemModel behind the same sorted QTableView, two cells set per event — until the
// table has painted, with the same rounds.
#include <agents/agentdashboard.h>
#include <agents/agentdashboardmodel.h>
#include <client/agenttypes.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEvent>
#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QTest>

#include <algorithm>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {

constexpr int kSessions = 50;
constexpr int kRounds = 200;

struct Figures
{
    double median = 0;
    double p90 = 0;
};

Figures figures(QList<qint64> nanos)
{
    std::sort(nanos.begin(), nanos.end());
    return {nanos.at(nanos.size() / 2) / 1e6, nanos.at(nanos.size() * 9 / 10) / 1e6};
}

AgentEvent streamedEvent(int round, int session)
{
    AgentEvent e;
    if (round % 2 == 0) {
        e.type = AgentEvent::Type::ToolCall;
        e.typeName = QStringLiteral("tool_call");
        e.name = QStringLiteral("Write");
    } else {
        e.type = AgentEvent::Type::Usage;
        e.typeName = QStringLiteral("usage");
        e.usage.inputTokens = 1000 * round + session;
        e.usage.outputTokens = 10 * round;
        e.usage.costUsd = 0.001 * round;
    }
    return e;
}

// Counts the paints of a widget (the table's viewport).
class Paints final : public QObject
{
public:
    explicit Paints(QWidget *w) { w->installEventFilter(this); }
    int count = 0;

protected:
    bool eventFilter(QObject *, QEvent *e) override
    {
        if (e->type() == QEvent::Paint)
            ++count;
        return false;
    }
};

// Runs the event loop until `done` (false after 10 s).
template<typename F>
bool spinUntil(F done)
{
    QElapsedTimer limit;
    limit.start();
    while (!done()) {
        if (limit.elapsed() > 10000)
            return false;
        QCoreApplication::processEvents();
    }
    return true;
}

} // namespace

class bench_Dashboard : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void fiftySessionsStreaming();
};

void bench_Dashboard::fiftySessionsStreaming()
{
    // Ours: the dashboard as the app shows it, every session running a prompt.
    QList<qint64> ours;
    {
        AgentDashboard dashboard(nullptr);
        dashboard.resize(1400, 900);
        dashboard.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dashboard));
        AgentDashboardModel *model = dashboard.model();
        QList<SandboxInfo> sandboxes;
        for (int i = 0; i < kSessions; ++i) {
            SandboxInfo s;
            s.id = QStringLiteral("sb_%1").arg(i, 4, 10, QLatin1Char('0'));
            s.kind = QStringLiteral("agent");
            s.type = QStringLiteral("claude-code");
            s.status = QStringLiteral("running");
            s.name = QStringLiteral("session %1").arg(i);
            s.lastActiveAt = QDateTime::currentDateTimeUtc();
            sandboxes.append(s);
        }
        model->setSandboxes(sandboxes);
        for (int i = 0; i < kSessions; ++i) {
            AgentRunRecord run;
            run.runId = QStringLiteral("run_%1").arg(i, 16, 10, QLatin1Char('0'));
            run.status = AgentRunRecord::Status::Running;
            run.statusName = QStringLiteral("running");
            run.startedAt = QDateTime::currentDateTimeUtc();
            run.streamId = QStringLiteral("st_%1").arg(i);
            run.prompt = QStringLiteral("work");
            model->setRuns(sandboxes[i].id, {run});
        }
        QCOMPARE(model->totals().running, kSessions);
        QCoreApplication::processEvents();
        Paints paints(dashboard.table()->viewport());
        // The paints counted when the model first said a change of the round: the round is on
        // screen with the next paint after that.
        int paintsWhenSaid = -1;
        connect(model, &QAbstractItemModel::dataChanged, this, [&] {
            if (paintsWhenSaid < 0)
                paintsWhenSaid = paints.count;
        });
        for (int round = 0; round < kRounds; ++round) {
            QElapsedTimer t;
            t.start();
            paintsWhenSaid = -1;
            for (int i = 0; i < kSessions; ++i)
                QVERIFY(model->streamEvent(QStringLiteral("st_%1").arg(i), streamedEvent(round, i)));
            QVERIFY(spinUntil([&] { return paintsWhenSaid >= 0 && paints.count > paintsWhenSaid; }));
            ours.append(t.nsecsElapsed());
        }
        QVERIFY(model->index(model->rowOf(QStringLiteral("sb_0049")), AgentDashboardModel::Tokens)
                    .data(AgentDashboardModel::SortRole)
                    .toLongLong()
                > 0);
    }

    // Baseline: the bare model update behind the same kind of sorted table.
    QList<qint64> bare;
    {
        QStandardItemModel model(kSessions, AgentDashboardModel::ColumnCount);
        for (int i = 0; i < kSessions; ++i) {
            for (int c = 0; c < AgentDashboardModel::ColumnCount; ++c)
                model.setItem(i, c, new QStandardItem(QStringLiteral("session %1").arg(i)));
        }
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        QTableView table;
        table.setModel(&proxy);
        table.setSortingEnabled(true);
        table.sortByColumn(AgentDashboardModel::LastActivity, Qt::DescendingOrder);
        table.resize(1400, 900);
        table.show();
        QVERIFY(QTest::qWaitForWindowExposed(&table));
        Paints paints(table.viewport());
        for (int round = 0; round < kRounds; ++round) {
            QElapsedTimer t;
            t.start();
            for (int i = 0; i < kSessions; ++i) {
                const AgentEvent e = streamedEvent(round, i);
                model.item(i, AgentDashboardModel::Status)
                    ->setText(QStringLiteral("running a prompt · %1").arg(e.typeName));
                model.item(i, AgentDashboardModel::Tokens)
                    ->setText(
                        QStringLiteral("%1 / %2").arg(e.usage.inputTokens).arg(e.usage.outputTokens));
            }
            const int before = paints.count;
            QVERIFY(spinUntil([&] { return paints.count > before; }));
            bare.append(t.nsecsElapsed());
        }
    }

    const Figures o = figures(ours);
    const Figures b = figures(bare);
    qInfo("BENCH dashboard %d sessions streaming: a round of %d events on screen in median %.2f ms "
          "(p90 %.2f ms, %.1f us per event); baseline bare QStandardItemModel+sorted QTableView "
          "median %.2f ms (p90 %.2f ms); ratio %.1fx",
          kSessions, kSessions, o.median, o.p90, o.median * 1000.0 / kSessions, b.median, b.p90,
          b.median > 0 ? o.median / b.median : 0.0);
}

QTEST_MAIN(bench_Dashboard)
#include "bench_dashboard.moc"
