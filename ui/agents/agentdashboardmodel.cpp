#include "agentdashboardmodel.h"

#include <QLocale>

namespace Sandbox::Ui {

AgentDashboardModel::AgentDashboardModel(QObject *parent)
    : QAbstractTableModel(parent)
{}

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
        return tr("Status");
    case Network:
        return tr("Network");
    case LastActivity:
        return tr("Last activity");
    case Runs:
        return tr("Runs");
    case Tokens:
        return tr("Tokens");
    case Cost:
        return tr("Cost");
    default:
        return {};
    }
}

QVariant AgentDashboardModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row &r = m_rows.at(index.row());
    if (role == IdRole)
        return r.info.id;
    const QDateTime last = r.lastActivity.isValid() && r.lastActivity > r.info.lastActiveAt
                               ? r.lastActivity
                               : r.info.lastActiveAt;
    if (role == SortRole) {
        switch (index.column()) {
        case LastActivity:
            return last;
        case Runs:
            return r.runs;
        case Tokens:
            return r.tokens;
        case Cost:
            return r.costUsd;
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::ToolTipRole) {
        if (index.column() == Network)
            return r.info.network
                       ? tr("Shares the host's network: the agent reaches its model API directly")
                       : tr("No network: the agent cannot reach its model API");
        if (index.column() == Status && !r.lastError.isEmpty())
            return r.lastError;
        return {};
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Name:
        return r.info.name.isEmpty() ? r.info.id : r.info.name;
    case Type:
        return r.info.type;
    case Status:
        if (r.running)
            return tr("running a prompt");
        if (r.info.status == QLatin1String("error"))
            return tr("error: %1").arg(r.info.error);
        return r.info.status;
    case Network:
        return r.info.network ? tr("host network") : tr("none");
    case LastActivity:
        return QLocale().toString(last.toLocalTime(), QLocale::ShortFormat);
    case Runs:
        return r.failedRuns ? tr("%1 (%2 failed)").arg(r.runs).arg(r.failedRuns)
                            : QString::number(r.runs);
    case Tokens:
        return QLocale().toString(r.tokens);
    case Cost:
        return r.costKnown ? QStringLiteral("$%1").arg(r.costUsd, 0, 'f', 4) : QStringLiteral("—");
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

void AgentDashboardModel::changed(int row)
{
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
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
}

void AgentDashboardModel::runStarted(const QString &id)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    m_rows[row].running = true;
    m_rows[row].lastActivity = QDateTime::currentDateTimeUtc();
    changed(row);
}

void AgentDashboardModel::runFinished(const QString &id, const AgentRunResult &result)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    r.running = false;
    ++r.runs;
    if (!result.success) {
        ++r.failedRuns;
        r.lastError = result.error;
    }
    r.tokens += result.usage.inputTokens + result.usage.outputTokens;
    if (result.usage.costUsd) {
        r.costUsd += *result.usage.costUsd;
        r.costKnown = true;
    }
    r.lastActivity = QDateTime::currentDateTimeUtc();
    changed(row);
}

void AgentDashboardModel::runFailed(const QString &id, const QString &why)
{
    const int row = rowOf(id);
    if (row < 0)
        return;
    Row &r = m_rows[row];
    r.running = false;
    r.lastError = why;
    r.lastActivity = QDateTime::currentDateTimeUtc();
    changed(row);
}

double AgentDashboardModel::totalCostUsd() const
{
    double total = 0;
    for (const Row &r : m_rows)
        total += r.costUsd;
    return total;
}

} // namespace Sandbox::Ui
