#include "sandboxlistmodel.h"

#include "../common/uistyle.h"

#include <protocol/sandboxenums.h>

#include <QFont>
#include <QSet>

#include <algorithm>

namespace Sandbox::Ui {

namespace {
// internalId: 0 for group rows, group + 1 for the sandboxes in a group.
constexpr quintptr kGroupId = 0;
} // namespace

SandboxListModel::SandboxListModel(QObject *parent)
    : QAbstractItemModel(parent)
{}

SandboxListModel::~SandboxListModel() = default;

SandboxListModel::Group SandboxListModel::groupFor(const SandboxInfo &sandbox)
{
    if (fromWire<SandboxKind>(sandbox.kind) == SandboxKind::Agent)
        return AgentsGroup;
    if (fromWire<SandboxKind>(sandbox.kind) == SandboxKind::Database)
        return DatabasesGroup;
    return OtherGroup;
}

QModelIndex SandboxListModel::index(int row, int column, const QModelIndex &parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    if (!parent.isValid())
        return row < GroupCount ? createIndex(row, column, kGroupId) : QModelIndex();
    if (parent.internalId() != kGroupId || parent.column() != 0)
        return {};
    const int group = parent.row();
    if (row >= m_groups[group].size())
        return {};
    return createIndex(row, column, quintptr(group + 1));
}

QModelIndex SandboxListModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == kGroupId)
        return {};
    return createIndex(int(child.internalId() - 1), 0, kGroupId);
}

int SandboxListModel::rowCount(const QModelIndex &parent) const
{
    if (!parent.isValid())
        return GroupCount;
    if (parent.internalId() != kGroupId || parent.column() != 0)
        return 0;
    return int(m_groups[parent.row()].size());
}

int SandboxListModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QIcon SandboxListModel::iconFor(const QString &status) const
{
    auto it = m_icons.constFind(status);
    if (it == m_icons.cend())
        it = m_icons.insert(status, Style::statusIcon(status));
    return it.value();
}

QVariant SandboxListModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    if (index.internalId() == kGroupId) {
        const int g = index.row();
        switch (role) {
        case Qt::DisplayRole:
            if (index.column() != NameColumn)
                return {};
            switch (g) {
            case AgentsGroup:
                return tr("Agents (%1)").arg(m_groups[g].size());
            case DatabasesGroup:
                return tr("Databases (%1)").arg(m_groups[g].size());
            default:
                return tr("Sandboxes (%1)").arg(m_groups[g].size());
            }
        case Qt::FontRole: {
            QFont f;
            f.setBold(true);
            return f;
        }
        case Qt::ToolTipRole:
            switch (g) {
            case AgentsGroup:
                return tr("Coding-agent sandboxes (Claude Code, OpenCode, Codex)");
            case DatabasesGroup:
                return tr("Database sandboxes (PostgreSQL, SQLite, DuckDB)");
            default:
                return tr("Sandboxes of other kinds");
            }
        case IsGroupRole:
            return true;
        default:
            return {};
        }
    }
    const SandboxInfo &s = m_groups[index.internalId() - 1][index.row()];
    // While the engine cannot be asked, what was listed last is no longer known to be true.
    const QString shown = m_stale ? QStringLiteral("unknown") : s.status;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case NameColumn:
            return s.name.isEmpty() ? s.id : s.name;
        case TypeColumn:
            return s.type;
        case StatusColumn:
            return m_stale ? tr("unknown") : s.status;
        }
        return {};
    case Qt::DecorationRole:
        return index.column() == NameColumn ? QVariant(iconFor(shown)) : QVariant();
    case Qt::ForegroundRole:
        if (index.column() == StatusColumn)
            return Style::statusColor(shown);
        return {};
    case Qt::ToolTipRole: {
        QString tip = tr("%1\n%2 · %3 · %4\nmemory %5 MiB · %6 CPUs · network %7")
                          .arg(s.id, s.type, s.size,
                               m_stale ? tr("%1 when last seen (not connected now)").arg(s.status)
                                       : s.status)
                          .arg(s.limits.memoryMb)
                          .arg(s.limits.cpus)
                          .arg(s.networkPolicy.summary());
        if (s.limits.enforced == false) {
            QStringList loose;
            for (auto it = s.limits.enforcement.cbegin(); it != s.limits.enforcement.cend(); ++it)
                if (!it->enforced)
                    loose.append(it.key());
            tip += u'\n' + tr("limits not enforced: %1").arg(loose.join(QStringLiteral(", ")));
        }
        if (!s.error.isEmpty())
            tip += u'\n' + s.error;
        return tip;
    }
    case IdRole:
        return s.id;
    case StatusRole:
        return shown;
    case KindRole:
        return s.kind;
    case TypeRole:
        return s.type;
    case IsGroupRole:
        return false;
    case SandboxRole:
        return QVariant::fromValue(s);
    default:
        return {};
    }
}

QVariant SandboxListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn:
        return tr("Name");
    case TypeColumn:
        return tr("Type");
    case StatusColumn:
        return tr("Status");
    default:
        return {};
    }
}

Qt::ItemFlags SandboxListModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    if (index.internalId() == kGroupId)
        return Qt::ItemIsEnabled;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

bool SandboxListModel::before(const SandboxInfo &a, const SandboxInfo &b)
{
    if (a.createdAt != b.createdAt)
        return a.createdAt < b.createdAt;
    return a.id < b.id;
}

bool SandboxListModel::same(const SandboxInfo &a, const SandboxInfo &b)
{
    return a.status == b.status && a.name == b.name && a.error == b.error && a.type == b.type
           && a.size == b.size && a.network == b.network && a.lastActiveAt == b.lastActiveAt;
}

void SandboxListModel::setSandboxes(const QList<SandboxInfo> &sandboxes)
{
    QList<SandboxInfo> fresh[GroupCount];
    for (const SandboxInfo &s : sandboxes) {
        if (!s.id.isEmpty())
            fresh[groupFor(s)].append(s);
    }
    for (int g = 0; g < GroupCount; ++g)
        applyGroup(Group(g), std::move(fresh[g]));
}

void SandboxListModel::applyGroup(Group group, QList<SandboxInfo> fresh)
{
    std::sort(fresh.begin(), fresh.end(), before);
    fresh.erase(std::unique(fresh.begin(), fresh.end(),
                            [](const SandboxInfo &a, const SandboxInfo &b) { return a.id == b.id; }),
                fresh.end());
    QList<SandboxInfo> &rows = m_groups[group];
    const QModelIndex parent = createIndex(group, 0, kGroupId);
    const int oldCount = int(rows.size());

    QSet<QString> freshIds;
    for (const SandboxInfo &s : std::as_const(fresh))
        freshIds.insert(s.id);
    for (int r = int(rows.size()) - 1; r >= 0; --r) {
        if (freshIds.contains(rows[r].id))
            continue;
        int first = r;
        while (first > 0 && !freshIds.contains(rows[first - 1].id))
            --first;
        beginRemoveRows(parent, first, r);
        rows.remove(first, r - first + 1);
        endRemoveRows();
        r = first;
    }

    // Merge (both sorted by creation): what is left of `rows` is a subset of `fresh`.
    int k = 0;
    for (qsizetype i = 0; i < fresh.size();) {
        if (k < rows.size() && rows[k].id == fresh[i].id) {
            if (!same(rows[k], fresh[i])) {
                rows[k] = fresh[i];
                Q_EMIT dataChanged(index(k, 0, parent), index(k, ColumnCount - 1, parent));
            }
            ++k;
            ++i;
            continue;
        }
        qsizetype j = i;
        const QString stopAt = k < rows.size() ? rows[k].id : QString();
        while (j < fresh.size() && (stopAt.isNull() || fresh[j].id != stopAt))
            ++j;
        beginInsertRows(parent, k, k + int(j - i) - 1);
        for (qsizetype n = i; n < j; ++n)
            rows.insert(k + int(n - i), fresh[n]);
        endInsertRows();
        k += int(j - i);
        i = j;
    }
    if (rows.size() != oldCount)
        Q_EMIT dataChanged(parent, parent); // the count in the group's title
}

void SandboxListModel::updateSandbox(const SandboxInfo &sandbox)
{
    QList<SandboxInfo> all = sandboxes();
    bool found = false;
    for (SandboxInfo &s : all) {
        if (s.id == sandbox.id) {
            s = sandbox;
            found = true;
        }
    }
    if (!found)
        all.append(sandbox);
    setSandboxes(all);
}

void SandboxListModel::removeSandbox(const QString &id)
{
    QList<SandboxInfo> all = sandboxes();
    all.erase(std::remove_if(all.begin(), all.end(),
                             [&](const SandboxInfo &s) { return s.id == id; }),
              all.end());
    setSandboxes(all);
}

void SandboxListModel::setStale(bool stale)
{
    if (m_stale == stale)
        return;
    m_stale = stale;
    for (int g = 0; g < GroupCount; ++g) {
        if (!m_groups[g].isEmpty())
            Q_EMIT dataChanged(index(0, 0, groupIndex(Group(g))),
                               index(int(m_groups[g].size()) - 1, ColumnCount - 1,
                                     groupIndex(Group(g))));
    }
}

void SandboxListModel::clear()
{
    setSandboxes({});
}

QList<SandboxInfo> SandboxListModel::sandboxes() const
{
    QList<SandboxInfo> out;
    for (const auto &g : m_groups)
        out += g;
    return out;
}

std::optional<SandboxInfo> SandboxListModel::sandbox(const QString &id) const
{
    for (const auto &g : m_groups) {
        for (const SandboxInfo &s : g) {
            if (s.id == id)
                return s;
        }
    }
    return std::nullopt;
}

std::optional<SandboxInfo> SandboxListModel::sandboxAt(const QModelIndex &index) const
{
    if (!index.isValid() || index.internalId() == kGroupId || index.model() != this)
        return std::nullopt;
    return m_groups[index.internalId() - 1].value(index.row());
}

QModelIndex SandboxListModel::indexOf(const QString &id, int column) const
{
    for (int g = 0; g < GroupCount; ++g) {
        for (int r = 0; r < m_groups[g].size(); ++r) {
            if (m_groups[g][r].id == id)
                return createIndex(r, column, quintptr(g + 1));
        }
    }
    return {};
}

QModelIndex SandboxListModel::groupIndex(Group group) const
{
    return createIndex(group, 0, kGroupId);
}

int SandboxListModel::count() const
{
    int n = 0;
    for (const auto &g : m_groups)
        n += int(g.size());
    return n;
}

} // namespace Sandbox::Ui
