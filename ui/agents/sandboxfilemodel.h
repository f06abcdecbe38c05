#pragma once

#include <client/rpccall.h>
#include <client/types.h>

#include <QAbstractItemModel>

#include <memory>
#include <vector>

namespace Sandbox {
class SandboxMethods;
}

namespace Sandbox::Ui {

// The files of one sandbox's /workspace as a tree that loads one directory at a time
// (canFetchMore/fetchMore -> listFiles). reload() starts over; answers for a tree that was
// reloaded meanwhile are dropped (a generation counter).
class SandboxFileModel final : public QAbstractItemModel
{
    Q_OBJECT

public:
    enum Column { Name, Size, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, IsDirRole };

    // `methods` (e.g. client->agents()) must outlive the model.
    SandboxFileModel(Sandbox::SandboxMethods *methods, const QString &sandboxId,
                     QObject *parent = nullptr);
    ~SandboxFileModel() override;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    bool hasChildren(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

    void reload();
    // Whether a directory listing is on its way.
    bool isLoading() const { return m_loading > 0; }

Q_SIGNALS:
    void loadFailed(const QString &path, const QString &message);
    void loaded(const QString &path);

private:
    struct Node;
    Node *nodeOf(const QModelIndex &index) const;
    QModelIndex indexOf(Node *node) const;
    Node *find(const QString &path) const;

    Sandbox::SandboxMethods *m_methods; // not owned
    QString m_id;
    std::unique_ptr<Node> m_root;
    quint64 m_generation = 0;
    int m_loading = 0;
};

} // namespace Sandbox::Ui
