#pragma once

#include <client/types.h>

#include <QAbstractItemModel>
#include <QHash>
#include <QIcon>

#include <optional>

namespace Sandbox::Ui {

// The sidebar: three groups — Agents, Databases, and Sandboxes of any other kind — each with its
// sandboxes in the order they were created. setSandboxes() applies a fresh listing as a diff
// (rows inserted, removed, changed in place), so that selection and expansion survive the
// periodic refresh and a status change repaints one row.
class SandboxListModel final : public QAbstractItemModel
{
    Q_OBJECT

public:
    enum Group { AgentsGroup, DatabasesGroup, OtherGroup, GroupCount };
    enum Column { NameColumn, TypeColumn, StatusColumn, ColumnCount };
    enum Role {
        IdRole = Qt::UserRole + 1, // QString (empty for a group row)
        StatusRole,                // QString
        KindRole,                  // QString
        TypeRole,                  // QString
        IsGroupRole,               // bool
        SandboxRole,               // QVariant<Sandbox::SandboxInfo>
    };

    explicit SandboxListModel(QObject *parent = nullptr);
    ~SandboxListModel() override;

    static Group groupFor(const SandboxInfo &sandbox);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;

    // Every sandbox the server listed (agents and databases together).
    void setSandboxes(const QList<SandboxInfo> &sandboxes);
    // One sandbox changed (e.g. the answer of a stop): applied at once.
    void updateSandbox(const SandboxInfo &sandbox);
    void removeSandbox(const QString &id);
    void clear();
    // Stale: the engine cannot be asked (disconnected); statuses show as "unknown" in grey, the
    // last known one in the tooltip, until the next listing.
    void setStale(bool stale);
    bool isStale() const { return m_stale; }

    QList<SandboxInfo> sandboxes() const;
    std::optional<SandboxInfo> sandbox(const QString &id) const;
    std::optional<SandboxInfo> sandboxAt(const QModelIndex &index) const;
    QModelIndex indexOf(const QString &id, int column = 0) const;
    QModelIndex groupIndex(Group group) const;
    int count() const;

private:
    static bool before(const SandboxInfo &a, const SandboxInfo &b);
    static bool same(const SandboxInfo &a, const SandboxInfo &b);
    void applyGroup(Group group, QList<SandboxInfo> fresh);
    QIcon iconFor(const QString &status) const;

    QList<SandboxInfo> m_groups[GroupCount];
    mutable QHash<QString, QIcon> m_icons;
    bool m_stale = false;
};

} // namespace Sandbox::Ui
