#include "agentdashboardmodel.h"

#include "../common/uistyle.h"

#include <protocol/sandboxenums.h>

#include <QLocale>

#include <algorithm>
#include <functional>
#include <map>

namespace Sandbox::Ui {

AgentDashboardModel::AgentDashboardModel(QObject *parent)
    : QAbstractTableModel(parent)
{
    // Running prompts show their elapsed time.
    m_tick.setInterval(1000);
    connect(&m_tick, &QTimer::timeout, this, [this] {
        for (int i = 0; i < m_rows.size(); ++i) {
            if (stateOf(m_rows[i]) == State::Running)
                changed(i, 1u << Status);
        }
    });
    m_flush.setSingleShot(true);
    m_flush.setInterval(0);
    connect(&m_flush, &QTimer::timeout, this, &AgentDashboardModel::flush);
}

int AgentDashboardModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int AgentDashboardModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AgentDashboardModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Name");
    case Type:
        return tr("Agent");
    case Status:
        return tr("State");
    case Model:
        return tr("Model");
    case Tokens:
        return tr("Tokens in / out");
    case Cost:
        return tr("Cost");
    case Context:
        return tr("Context");
    case LastActivity:
        return tr("Last activity");
    case Runs:
        return tr("Runs");
    case Network:
        return tr("Network");
    default:
        return {};
    }
}

namespace {

QString elapsed(qint64 ms)
{
    const qint64 s = qMax<qint64>(0, ms / 1000);
    if (s < 3600)
        return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2:%3")
        .arg(s / 3600)
        .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
        .arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString oneLine(QString text, int max)
{
    text = text.simplified();
    return text.size() > max ? text.left(max - 1) + QChar(0x2026) : text;
}

bool ended(AgentRunRecord::Status s)
{
    return s != AgentRunRecord::Status::Running && s != AgentRunRecord::Status::Unknown;
}

QString announceKey(const AgentRunRecord &r)
{
    return r.streamId.isEmpty() ? r.runId : r.streamId;
}

QString errorOf(const AgentRunRecord &r)
{
    if (r.answer && !r.answer->error.isEmpty())
        return r.answer->error;
    if (r.error)
        return r.error->message;
    return {};
}

} // namespace

AgentDashboardModel::State AgentDashboardModel::stateOf(const Row &r) const
{
    if (r.localRunning)
        return State::Running;
    switch (r.last.status) {
    case AgentRunRecord::Status::Running:
        return State::Running;
    case AgentRunRecord::Status::Succeeded:
        return r.last.needsInput.isNeeded() ? State::NeedsInput : State::Done;
    case AgentRunRecord::Status::Failed:
    case AgentRunRecord::Status::Interrupted:
        return r.last.needsInput.isNeeded() ? State::NeedsInput : State::Failed;
    case AgentRunRecord::Status::Cancelled:
        return State::Cancelled;
    default:
        return State::Idle;
    }
}

std::optional<qint64> AgentDashboardModel::contextTokens(const Row &r) const
{
    return r.last.usage.contextTokens;
}

std::optional<qint64> AgentDashboardModel::contextWindow(const Row &r) const
{
    if (r.last.usage.contextWindow)
        return r.last.usage.contextWindow;
    const auto it = m_windows.constFind(r.last.model());
    return it == m_windows.cend() ? std::nullopt : std::optional<qint64>(*it);
}

void AgentDashboardModel::learnWindow(const AgentRunRecord &run)
{
    if (run.usage.contextWindow && *run.usage.contextWindow > 0)
        m_windows.insert(run.model(), *run.usage.contextWindow);
}

AgentDashboardModel::State AgentDashboardModel::stateAt(int row) const
{
    return row >= 0 && row < m_rows.size() ? stateOf(m_rows.at(row)) : State::Idle;
}

QString AgentDashboardModel::nameOf(const Row &r) const
{
    return r.info.name.isEmpty() ? r.info.id : r.info.name;
}

QString AgentDashboardModel::stateText(const Row &r) const
{
    switch (stateOf(r)) {
    case State::Running: {
        const QDateTime started = r.localRunning && r.localStartedAt.isValid() ? r.localStartedAt
                                  : r.last.startedAt.isValid()                 ? r.last.startedAt
                                                                               : r.localStartedAt;
        QString text = tr("running a prompt");
        if (started.isValid())
            text += QStringLiteral(" ") + elapsed(started.msecsTo(QDateTime::currentDateTimeUtc()));
        if (!r.lastEvent.isEmpty())
            text += QStringLiteral(" · ") + r.lastEvent;
        return text;
    }
    case State::NeedsInput:
        if (r.last.needsInput.reason == AgentNeedsInput::Reason::Permission)
            return tr("needs input: allow %1")
                .arg(r.last.needsInput.toolNames().join(QStringLiteral(", ")));
        return tr("needs input: %1").arg(oneLine(r.last.needsInput.question, 80));
    case State::Failed: {
        const QString why = errorOf(r.last);
        return why.isEmpty() ? tr("failed") : tr("failed: %1").arg(oneLine(why, 80));
    }
    case State::Done:
        return tr("done");
    case State::Cancelled:
        return tr("cancelled");
    case State::Idle:
        break;
    }
    if (fromWire<SandboxStatus>(r.info.status) == SandboxStatus::Error)
        return tr("error: %1").arg(r.info.error);
    if (fromWire<SandboxStatus>(r.info.status) != SandboxStatus::Running)
        return r.info.status;
    return tr("idle");
}

QVariant AgentDashboardModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row &r = m_rows.at(index.row());
    if (role == IdRole)
        return r.info.id;
    if (role == StateRole)
        return QVariant::fromValue(stateOf(r));
    // The context in use and the window, -1 where not known.
    const qint64 used = contextTokens(r).value_or(-1);
    const qint64 window = used >= 0 ? contextWindow(r).value_or(-1) : -1;
    if (role == ContextRole)
        return window > 0 ? QVariant(double(used) / double(window)) : QVariant();
    const qint64 in = r.sums.tokensIn, out = r.sums.tokensOut;
    const double cost = r.sums.costUsd;
    const bool costKnown = r.sums.costKnown;
    const int failed = r.sums.failed;
    QDateTime last = r.info.lastActiveAt;
    if (r.lastActivity.isValid() && (!last.isValid() || r.lastActivity > last))
        last = r.lastActivity;
    if (role == SortRole) {
        switch (index.column()) {
        case Status:
            return int(stateOf(r));
        case LastActivity:
            // By the second: sessions streaming at once would otherwise trade places with
            // every event (unreadable, and a re-sort and a full repaint each time).
            return last.isValid() ? QDateTime::fromSecsSinceEpoch(last.toSecsSinceEpoch(), Qt::UTC)
                                  : last;
        case Runs:
            return qsizetype(r.runs.size());
        case Tokens:
            return in + out;
        case Cost:
            return cost;
        case Context: // the share; a count without its window after every share
            return window > 0  ? double(used) / double(window)
                   : used >= 0 ? 1e6 + double(used)
                               : -1.0;
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::ToolTipRole) {
        if (index.column() == Network)
            return r.info.network
                       ? tr("Shares the host's network: the agent reaches its model API directly")
                       : tr("No network: the agent cannot reach its model API");
        if (index.column() == Status) {
            if (stateOf(r) == State::NeedsInput
                && r.last.needsInput.reason == AgentNeedsInput::Reason::Question)
                return r.last.needsInput.question;
            const QString why = errorOf(r.last);
            return why.isEmpty() ? r.last.prompt.left(500) : why;
        }
        if (index.column() == Context && used >= 0)
            return window > 0
                       ? tr("%1 of the model's %2 tokens of context in use (its latest call)")
                             .arg(QLocale().toString(used), QLocale().toString(window))
                       : tr("%1 tokens of context in use (its latest call); the model's "
                            "window is not known")
                             .arg(QLocale().toString(used));
        if (index.column() == Tokens && r.last.usage.cacheReadTokens > 0)
            return tr("Last run: %1 read from the prompt cache")
                .arg(QLocale().toString(r.last.usage.cacheReadTokens));
        return {};
    }
    if (role == Qt::DecorationRole && index.column() == Status) {
        const State state = stateOf(r);
        auto it = m_icons.find(int(state));
        if (it == m_icons.end()) {
            const char *like = state == State::Running      ? "sleeping" // blue
                               : state == State::NeedsInput ? "creating" // amber
                               : state == State::Failed     ? "error"
                               : state == State::Done       ? "running" // green
                                                            : "stopped";
            it = m_icons.insert(int(state), Style::statusIcon(QString::fromLatin1(like)));
        }
        return *it;
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Name:
        return nameOf(r);
    case Type:
        return r.info.type;
    case Status:
        return stateText(r);
    case Model:
        return r.last.runId.isEmpty()     ? QString()
               : r.last.model().isEmpty() ? tr("default")
                                          : r.last.model();
    case Tokens:
        return QStringLiteral("%1 / %2").arg(QLocale().toString(in), QLocale().toString(out));
    case Cost:
        return costKnown ? QStringLiteral("$%1").arg(cost, 0, 'f', 4) : QStringLiteral("—");
    case Context:
        if (used < 0)
            return QString();
        if (window <= 0)
            return tr("%1 tokens").arg(QLocale().toString(used));
        return QStringLiteral("%1%").arg(100.0 * double(used) / double(window), 0, 'f',
                                         used * 10 < window ? 1 : 0);
    case LastActivity:
        if (!last.isValid())
            return QString();
        // Today: the time; before: the date too.
        return last.toLocalTime().date() == QDate::currentDate()
                   ? QLocale().toString(last.toLocalTime().time(), QLocale::ShortFormat)
                   : QLocale().toString(last.toLocalTime(), QLocale::ShortFormat);
    case Runs:
        return failed ? tr("%1 (%2 failed)").arg(r.runs.size()).arg(failed)
                      : QString::number(r.runs.size());
    case Network:
        return r.info.network ? tr("host network") : tr("none");
    default:
        return {};
    }
}

int AgentDashboardModel::rowOf(const QString &id) const
{
    for (int i = 0; i < m_rows.size(); ++i) {
        if (m_rows[i].info.id == id)
            return i;
    }
    return -1;
}

bool AgentDashboardModel::hasHistory(const QString &id) const
{
    const int row = rowOf(id);
    return row >= 0 && m_rows[row].historyLoaded;
}

void AgentDashboardModel::sum(Row &r)
{
    Sums s;
    for (const RunSummary &run : std::as_const(r.runs)) {
        s.tokensIn += run.tokensIn;
        s.tokensOut += run.tokensOut;
        if (run.costUsd) {
            s.costUsd += *run.costUsd;
            s.costKnown = true;
        }
        if (run.status == AgentRunRecord::Status::Failed
            || run.status == AgentRunRecord::Status::Interrupted)
            ++s.failed;
    }
    r.sums = s;
}

void AgentDashboardModel::changed(int row, quint32 columns)
{
    m_rows[row].dirty |= columns;
    if (columns != 1u << Status) // the tick moves no totals
        m_totalsChanged = true;
    if (!m_flush.isActive())
        m_flush.start();
}

void AgentDashboardModel::flush()
{
    m_flush.stop();
    int top = -1, bottom = -1;
    quint32 columns = 0;
    bool running = false;
    for (int i = 0; i < m_rows.size(); ++i) {
        Row &r = m_rows[i];
        running = running || stateOf(r) == State::Running;
        if (!r.dirty)
            continue;
        if (top < 0)
            top = i;
        bottom = i;
        columns |= r.dirty;
        r.dirty = 0;
    }
    if (top >= 0) {
        int left = 0, right = ColumnCount - 1;
        while (left < right && !(columns & (1u << left)))
            ++left;
        while (right > left && !(columns & (1u << right)))
            --right;
        Q_EMIT dataChanged(index(top, left), index(bottom, right));
    }
    if (std::exchange(m_totalsChanged, false))
        Q_EMIT totalsChanged();
    if (running && !m_tick.isActive())
        m_tick.start();
    else if (!running)
        m_tick.stop();
}

void AgentDashboardModel::setSandboxes(const QList<SandboxInfo> &sandboxes)
{
    // Rows that are gone, then the ones that changed, then the new ones.
    for (int i = int(m_rows.size()) - 1; i >= 0; --i) {
        const bool still = std::any_of(sandboxes.begin(), sandboxes.end(),
                                       [&](const SandboxInfo &s) {
                                           return s.id == m_rows[i].info.id;
                                       });
        if (!still) {
            beginRemoveRows({}, i, i);
            m_rows.removeAt(i);
            endRemoveRows();
        }
    }
    for (const SandboxInfo &s : sandboxes) {
        const int row = rowOf(s.id);
        if (row >= 0) {
            m_rows[row].info = s;
            changed(row);
            continue;
        }
        beginInsertRows({}, int(m_rows.size()), int(m_rows.size()));
        Row r;
        r.info = s;
        m_rows.append(r);
        endInsertRows();
    }
    Q_EMIT totalsChanged();
}

QStringList AgentDashboardModel::staleIds() const
{
    QStringList out;
    for (const Row &r : m_rows) {
        if (!r.historyLoaded || r.info.lastActiveAt != r.seenActiveAt
            || stateOf(r) == State::Running)
            out.append(r.info.id);
    }
    return out;
}

void AgentDashboardModel::announce(Row &r, const QString &key, State state, const QString &detail)
{
    if (key.isEmpty() || r.announced.contains(key))
        return;
    r.announced.insert(key);
    Q_EMIT runEnded(r.info.id, nameOf(r), state, detail);
}

void AgentDashboardModel::setRuns(const QString &id, const QList<AgentRunRecord> &runs)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    const bool firstLoad = !r.historyLoaded;
    const AgentRunRecord before = r.last;
    for (const AgentRunRecord &run : runs) {
        // This app's own record of a run it finished (runFinished) gives way to the engine's.
        if (!run.streamId.isEmpty())
            r.runs.remove(QStringLiteral("local:") + run.streamId);
        RunSummary &s = r.runs[run.runId];
        s.startedAt = run.startedAt;
        s.status = run.status;
        s.tokensIn = run.usage.inputTokens;
        s.tokensOut = run.usage.outputTokens;
        s.costUsd = run.usage.costUsd;
        learnWindow(run);
        if (run.status == AgentRunRecord::Status::Running && !run.streamId.isEmpty())
            m_streamRow.insert(run.streamId, id);
        else if (!run.streamId.isEmpty())
            m_streamRow.remove(run.streamId);
        const bool replacesLocal = r.last.runId.startsWith(QLatin1String("local:"))
                                   && run.startedAt.secsTo(r.last.startedAt) < 10;
        if (r.last.runId.isEmpty() || run.runId == r.last.runId || replacesLocal
            || run.startedAt > r.last.startedAt) {
            const bool sameRun = run.runId == r.last.runId;
            const QString lastEvent = r.lastEvent;
            r.last = run;
            if (sameRun && run.status == AgentRunRecord::Status::Running)
                r.lastEvent = lastEvent; // the live one is newer than the history's
            else
                r.lastEvent = run.lastEventType;
        }
        // Runs that ended while this model watched are said once; the history read at start is
        // not (it ended before the user looked).
        if (firstLoad || !ended(run.status))
            continue;
        const bool wasRunning = r.announced.contains(QStringLiteral("running:") + run.runId);
        const bool isNew = !before.runId.isEmpty() && run.startedAt >= before.startedAt
                           && run.runId != before.runId;
        if (wasRunning || isNew || (run.runId == before.runId && !ended(before.status))) {
            const bool needs = run.needsInput.isNeeded();
            const State state = needs ? State::NeedsInput
                                : run.status == AgentRunRecord::Status::Succeeded ? State::Done
                                : run.status == AgentRunRecord::Status::Cancelled ? State::Cancelled
                                                                                  : State::Failed;
            if (state != State::Cancelled)
                announce(r, announceKey(run), state,
                         needs ? (
                             run.needsInput.reason == AgentNeedsInput::Reason::Question
                                 ? run.needsInput.question
                                 : tr("allow %1")
                                       .arg(run.needsInput.toolNames().join(QStringLiteral(", "))))
                         : state == State::Failed
                             ? errorOf(run)
                             : oneLine(run.answer ? run.answer->result : QString(), 200));
        }
    }
    for (const AgentRunRecord &run : runs) {
        if (firstLoad && ended(run.status))
            r.announced.insert(announceKey(run));
        else if (run.status == AgentRunRecord::Status::Running)
            r.announced.insert(QStringLiteral("running:") + run.runId);
        if (run.lastEventAt.isValid()
            && (!r.lastActivity.isValid() || run.lastEventAt > r.lastActivity))
            r.lastActivity = run.lastEventAt;
        if (run.endedAt.isValid() && (!r.lastActivity.isValid() || run.endedAt > r.lastActivity))
            r.lastActivity = run.endedAt;
    }
    if (ended(r.last.status))
        r.localRunning = false;
    r.historyLoaded = true;
    r.seenActiveAt = r.info.lastActiveAt;
    sum(r);
    changed(row);
}

bool AgentDashboardModel::streamEvent(const QString &streamId, const AgentEvent &event)
{
    const QString id = m_streamRow.value(streamId);
    const int row = id.isEmpty() ? -1 : rowOf(id);
    if (row < 0)
        return false;
    Row &r = m_rows[row];
    const QDateTime now = QDateTime::currentDateTimeUtc();
    quint32 columns = 1u << Status;
    // The last activity sorts by the second (see data()): within one the row stays where it is.
    if (!r.lastActivity.isValid() || r.lastActivity.toSecsSinceEpoch() != now.toSecsSinceEpoch())
        columns |= 1u << LastActivity;
    r.lastActivity = now;
    switch (event.type) {
    case AgentEvent::Type::ToolCall:
    case AgentEvent::Type::ToolResult:
        r.lastEvent = event.typeName + QStringLiteral(" ") + event.name;
        break;
    case AgentEvent::Type::FileChange:
        r.lastEvent = event.typeName + QStringLiteral(" ") + event.path;
        break;
    case AgentEvent::Type::Usage: {
        if (r.last.streamId == streamId) {
            r.last.usage = event.usage;
            RunSummary &s = r.runs[r.last.runId];
            s.tokensIn = event.usage.inputTokens;
            s.tokensOut = event.usage.outputTokens;
            s.costUsd = event.usage.costUsd;
            sum(r);
            learnWindow(r.last);
            columns |= 1u << Tokens | 1u << Cost | 1u << Context;
        }
        break;
    }
    case AgentEvent::Type::Result:
        if (r.last.streamId == streamId)
            r.last.needsInput = event.needsInput;
        r.lastEvent = event.typeName;
        break;
    default:
        r.lastEvent = event.typeName;
        break;
    }
    changed(row, columns);
    return true;
}

void AgentDashboardModel::runStarted(const QString &id)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    r.localRunning = true;
    r.localStartedAt = QDateTime::currentDateTimeUtc();
    r.lastActivity = r.localStartedAt;
    r.lastEvent.clear();
    changed(row);
}

AgentRunRecord AgentDashboardModel::endLocalRun(Row &r, AgentRunRecord::Status status)
{
    r.localRunning = false;
    r.lastActivity = QDateTime::currentDateTimeUtc();
    AgentRunRecord run;
    run.options = r.last.options;
    run.status = status;
    run.startedAt = r.localStartedAt.isValid() ? r.localStartedAt : r.lastActivity;
    run.endedAt = r.lastActivity;
    return run;
}

void AgentDashboardModel::runFinished(const QString &id, const AgentRunResult &result)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    // Until the history says more: this run as the last one.
    AgentRunRecord run = endLocalRun(r, result.success ? AgentRunRecord::Status::Succeeded
                                                       : AgentRunRecord::Status::Failed);
    run.runId = r.last.streamId == result.streamId && !result.streamId.isEmpty()
                    ? r.last.runId
                    : QStringLiteral("local:") + result.streamId;
    run.usage = result.usage;
    run.needsInput = result.needsInput;
    run.answer = result;
    run.streamId = result.streamId;
    RunSummary &s = r.runs[run.runId];
    s.startedAt = run.startedAt;
    s.status = run.status;
    s.tokensIn = result.usage.inputTokens;
    s.tokensOut = result.usage.outputTokens;
    s.costUsd = result.usage.costUsd;
    sum(r);
    learnWindow(run);
    r.last = run;
    const State state = result.needsInput.isNeeded() ? State::NeedsInput
                        : result.success             ? State::Done
                                                     : State::Failed;
    announce(r, announceKey(run), state,
             state == State::NeedsInput ? (
                 result.needsInput.reason == AgentNeedsInput::Reason::Question
                     ? result.needsInput.question
                     : tr("allow %1").arg(result.needsInput.toolNames().join(QStringLiteral(", "))))
             : state == State::Failed ? result.error
                                      : oneLine(result.result, 200));
    changed(row);
}

void AgentDashboardModel::runFailed(const QString &id, const QString &why)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    AgentRunRecord run = endLocalRun(r, AgentRunRecord::Status::Failed);
    run.runId = QStringLiteral("local:failed:") + r.lastActivity.toString(Qt::ISODateWithMs);
    run.error = Error{ErrorCode::InternalError, why, {}};
    r.last = run;
    changed(row);
}

QStringList AgentDashboardModel::stateCounts(const Totals &t)
{
    QStringList parts;
    if (t.running)
        parts << tr("%1 running").arg(t.running);
    if (t.needsInput)
        parts << tr("%1 need(s) input").arg(t.needsInput);
    if (t.failed)
        parts << tr("%1 failed").arg(t.failed);
    return parts;
}

AgentDashboardModel::Totals AgentDashboardModel::totals() const
{
    Totals t;
    const QDate today = QDate::currentDate();
    for (const Row &r : m_rows) {
        ++t.sessions;
        switch (stateOf(r)) {
        case State::Running:
            ++t.running;
            break;
        case State::NeedsInput:
            ++t.needsInput;
            break;
        case State::Failed:
            ++t.failed;
            break;
        default:
            break;
        }
        for (const RunSummary &s : r.runs) {
            t.tokensIn += s.tokensIn;
            t.tokensOut += s.tokensOut;
            t.costUsd += s.costUsd.value_or(0);
            ++t.runs;
            if (s.startedAt.toLocalTime().date() == today) {
                ++t.runsToday;
                t.costTodayUsd += s.costUsd.value_or(0);
                t.tokensToday += s.tokensIn + s.tokensOut;
            }
        }
    }
    return t;
}

QList<AgentDashboardModel::DayTotals> AgentDashboardModel::byDay(int days) const
{
    std::map<QDate, DayTotals, std::greater<>> byDate;
    for (const Row &r : m_rows) {
        for (const RunSummary &s : r.runs) {
            if (!s.startedAt.isValid())
                continue;
            const QDate day = s.startedAt.toLocalTime().date();
            DayTotals &d = byDate[day];
            d.day = day;
            ++d.runs;
            d.tokensIn += s.tokensIn;
            d.tokensOut += s.tokensOut;
            d.costUsd += s.costUsd.value_or(0);
            d.costKnown = d.costKnown || s.costUsd.has_value();
        }
    }
    QList<DayTotals> out;
    for (const auto &[day, totals] : byDate) {
        if (out.size() >= days)
            break;
        out.append(totals);
    }
    return out;
}

} // namespace Sandbox::Ui
