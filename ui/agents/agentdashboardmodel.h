#pragma once

#include <client/agenttypes.h>
#include <client/types.h>

#include <QAbstractTableModel>
#include <QDateTime>
#include <QHash>
#include <QIcon>
#include <QSet>
#include <QTimer>

namespace Sandbox::Ui {

// Every agent sandbox of the connection, one row each: its session's state (idle, running a
// prompt — with the elapsed time and the last event —, needs input, failed, done; with a coloured
// mark), the model, tokens in and out, cost, the model's context in use (where the CLI reports it),
// last activity and runs. The numbers come from the engine's run history
// (setRuns(): `agents.runs`, so they survive restarts of the app and the engine) and, while a run
// goes on, from its live `stream.event`s (streamEvent()). setSandboxes() merges a fresh
// agents.list answer row by row.
class AgentDashboardModel final : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Column {
        Name,
        Type,
        Status,
        Model,
        Tokens, // "in / out"; sorted by their sum
        Cost,
        Context, // of the last run: "used / window" as a percentage, empty where not known
        LastActivity,
        Runs,
        Network,
        ColumnCount
    };
    // ContextRole: the share of the model's context window in use (0–1), invalid when not known.
    enum Role { IdRole = Qt::UserRole + 1, SortRole, StateRole, ContextRole };
    // A session's state, as the State column says it.
    enum class State { Idle, Running, NeedsInput, Failed, Done, Cancelled };
    Q_ENUM(State)
    // How many runs of the history are read for a sandbox seen for the first time (the totals
    // count these and the runs that follow).
    static constexpr int kHistoryRuns = 50;

    explicit AgentDashboardModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    void setSandboxes(const QList<Sandbox::SandboxInfo> &sandboxes);
    // The sandbox's kept runs, newest first (some or all of them: runs are merged by runId).
    void setRuns(const QString &id, const QList<Sandbox::AgentRunRecord> &runs);
    // A `stream.event` of stream `streamId`: false when no row runs that stream (yet).
    bool streamEvent(const QString &streamId, const Sandbox::AgentEvent &event);
    // The session view of this app started, finished or failed a run (before the history says).
    void runStarted(const QString &id);
    void runFinished(const QString &id, const Sandbox::AgentRunResult &result);
    void runFailed(const QString &id, const QString &why);

    int rowOf(const QString &id) const;
    Sandbox::SandboxInfo sandboxAt(int row) const { return m_rows.value(row).info; }
    State stateAt(int row) const;
    // Ids of the sandboxes whose history should be fetched again: new ones, ones active since,
    // ones running a prompt.
    QStringList staleIds() const;
    // The last known run of a row (empty runId when none).
    Sandbox::AgentRunRecord lastRunAt(int row) const { return m_rows.value(row).last; }
    bool hasHistory(const QString &id) const;

    struct Totals
    {
        int sessions = 0;
        int running = 0;
        int needsInput = 0;
        int failed = 0;
        qint64 tokensIn = 0;
        qint64 tokensOut = 0;
        double costUsd = 0;
        double costTodayUsd = 0;
        qint64 tokensToday = 0;
        int runsToday = 0;
        int runs = 0; // runs counted (the history read of each sandbox, and the runs since)
    };
    // "2 running", "1 need(s) input", "1 failed": the states worth a look, those with sessions.
    static QStringList stateCounts(const Totals &t);
    // Computed on demand (the dashboard asks once per flush, not per event).
    Totals totals() const;
    // The runs of one day (by their start, local time) added up.
    struct DayTotals
    {
        QDate day;
        int runs = 0;
        qint64 tokensIn = 0;
        qint64 tokensOut = 0;
        double costUsd = 0;
        bool costKnown = false; // some run of the day reported its cost
    };
    // The days with runs, newest first, at most `days` of them.
    QList<DayTotals> byDay(int days) const;
    double totalCostUsd() const { return totals().costUsd; }

Q_SIGNALS:
    // The last run of sandbox `id` ended in `state` (Done, Failed, NeedsInput): said once per run,
    // for runs that ended while this model watched (not for history read at start).
    void runEnded(const QString &id, const QString &name,
                  Sandbox::Ui::AgentDashboardModel::State state, const QString &detail);
    void totalsChanged();

private:
    struct RunSummary
    {
        QDateTime startedAt;
        Sandbox::AgentRunRecord::Status status = Sandbox::AgentRunRecord::Status::Unknown;
        qint64 tokensIn = 0;
        qint64 tokensOut = 0;
        std::optional<double> costUsd;
    };
    // A row's runs added up (kept with the row: data() is asked for every cell and role on
    // every repaint, the runs change once per event at most).
    struct Sums
    {
        qint64 tokensIn = 0;
        qint64 tokensOut = 0;
        double costUsd = 0;
        bool costKnown = false;
        int failed = 0;
    };
    struct Row
    {
        Sandbox::SandboxInfo info;
        QHash<QString, RunSummary> runs; // by runId
        Sums sums;                       // of `runs`: see sum()
        Sandbox::AgentRunRecord last;    // the newest run
        bool historyLoaded = false;
        bool localRunning = false; // this app's session view runs a prompt
        QDateTime localStartedAt;
        QDateTime lastActivity;  // the newest of the sandbox's, its runs' and events'
        QString lastEvent;       // of the running prompt, e.g. "tool_call Write"
        QDateTime seenActiveAt;  // info.lastActiveAt when the history was last read
        QSet<QString> announced; // runs whose end was said (runEnded)
        quint32 dirty = 0;       // columns changed since the last flush(), one bit each
    };
    State stateOf(const Row &r) const;
    // The last run's context in use and its window (the window from an earlier run of the same
    // model when this one has not said it yet); nullopt when not known.
    std::optional<qint64> contextTokens(const Row &r) const;
    std::optional<qint64> contextWindow(const Row &r) const;
    void learnWindow(const Sandbox::AgentRunRecord &run);
    QString stateText(const Row &r) const;
    QString nameOf(const Row &r) const;
    static void sum(Row &r);
    // A run of this desktop's ended now: the row runs no more; the run's record so far (the
    // options and times this desktop knows; runId and outcome are the caller's).
    static Sandbox::AgentRunRecord endLocalRun(Row &r, Sandbox::AgentRunRecord::Status status);
    // Row `row` changed in `columns` (bits of Column): said with the next flush().
    void changed(int row, quint32 columns = ~0u);
    // What changed since the last flush, said at once: one dataChanged over the changed rows and
    // columns, one totalsChanged. Events come in bursts (50 sessions streaming); the view, the
    // sorting proxy and the totals line follow once per pass of the event loop, not per event.
    void flush();
    void announce(Row &r, const QString &runId, State state, const QString &detail);

    QList<Row> m_rows;
    QTimer m_flush; // zero-interval, single-shot: flush()
    bool m_totalsChanged = false;
    QHash<QString, QString> m_streamRow; // live stream id -> sandbox id
    QTimer m_tick;                       // the elapsed time of running prompts
    mutable QHash<int, QIcon> m_icons;   // by State
    QHash<QString, qint64> m_windows;    // context window by model, as the runs said
};

} // namespace Sandbox::Ui
