#pragma once

#include <client/types.h>
#include <protocol/error.h>

#include <QAbstractItemModel>
#include <QPointer>

#include <memory>
#include <vector>

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

// The files of a sandbox below a root (default /workspace) as a lazy tree: a directory is
// listed (agents.listFiles, not recursive) only when a view asks for its children
// (canFetchMore/fetchMore), one directory per request. refresh() lists a directory again and
// applies only the differences, so that expanded subdirectories and selections survive.
// Answers that arrive after a reset or for a node that is gone are dropped (generation counter,
// lookup by path). Directories first, then by name.
//
// Drag and drop: local files dropped on a directory are announced with uploadRequested(); the
// model's own paths dropped on a directory with moveRequested(). The model itself never
// changes the sandbox.
class FileTreeModel final : public QAbstractItemModel
{
    Q_OBJECT

public:
    enum Column { NameColumn, SizeColumn, ModifiedColumn, ColumnCount };
    enum Role {
        PathRole = Qt::UserRole + 1, // QString, absolute
        IsDirectoryRole,             // bool
        SizeRole,                    // qint64
        EntryTypeRole,               // int (FileEntry::Type)
    };
    static constexpr const char *PathsMimeType = "application/x-sandbox-paths";

    FileTreeModel(Client *client, const QString &sandboxId, QObject *parent = nullptr,
                  const QString &rootPath = QStringLiteral("/workspace"));
    ~FileTreeModel() override;

    QString rootPath() const { return m_rootPath; }
    QString sandboxId() const { return m_sandboxId; }

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    bool hasChildren(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

    QStringList mimeTypes() const override;
    QMimeData *mimeData(const QModelIndexList &indexes) const override;
    Qt::DropActions supportedDropActions() const override;
    Qt::DropActions supportedDragActions() const override;
    bool canDropMimeData(const QMimeData *data, Qt::DropAction action, int row, int column,
                         const QModelIndex &parent) const override;
    bool dropMimeData(const QMimeData *data, Qt::DropAction action, int row, int column,
                      const QModelIndex &parent) override;

    QString pathOf(const QModelIndex &index) const;
    bool isDirectory(const QModelIndex &index) const;
    std::optional<FileEntry> entry(const QModelIndex &index) const;
    // The index of a path already loaded, or invalid (the root maps to the invalid index too).
    QModelIndex indexOf(const QString &path) const;
    // The directory a drop or a "new file" on `index` goes to: itself if a directory, else its parent.
    QString directoryFor(const QModelIndex &index) const;
    // Whether the directory's listing was cut at the server's limit (10 000 entries).
    bool isTruncated(const QModelIndex &directory) const;
    bool isLoading() const { return m_loading > 0; }

    // Lists `directory` again (if it was loaded) and applies the changes. The root: refresh({}).
    void refresh(const QModelIndex &directory = {});
    void refreshPath(const QString &directoryPath);
    // Lists every loaded directory again (the root first, then breadth-first, at most
    // `maxDirectories` of them) and applies the changes: files that appeared, went or changed size.
    void refreshLoaded(int maxDirectories = 32);
    // Deferred: nothing is listed, not even when a view asks (a sleeping sandbox in a tab that is
    // not shown: a listing would wake it). Off again, a view's next request lists.
    void setDeferred(bool deferred) { m_deferred = deferred; }
    bool isDeferred() const { return m_deferred; }
    // Forgets everything and lists the root again.
    void reload();

Q_SIGNALS:
    void directoryLoaded(const QString &path);
    void errorOccurred(const QString &message);
    void uploadRequested(const QStringList &localPaths, const QString &targetDirectory);
    void moveRequested(const QStringList &sandboxPaths, const QString &targetDirectory);

private:
    struct Node
    {
        enum class State { NotLoaded, Loading, Loaded };
        FileEntry entry;
        Node *parent = nullptr;
        std::vector<std::unique_ptr<Node>> children;
        State state = State::NotLoaded;
        bool truncated = false;
        bool relist = false; // asked to list again while its first listing was under way
        bool isDir() const { return entry.type == FileEntry::Type::Directory; }
    };

    Node *nodeOf(const QModelIndex &index) const;
    QModelIndex indexOfNode(const Node *node, int column = 0) const;
    Node *findNode(const QString &path) const;
    int rowOf(const Node *node) const;
    void list(Node *node);
    void applyListing(Node *node, const FileListing &listing);
    static bool lessThan(const FileEntry &a, const FileEntry &b);

    QPointer<Client> m_client;
    QString m_sandboxId;
    QString m_rootPath;
    std::unique_ptr<Node> m_root;
    quint64 m_generation = 0;
    int m_loading = 0;
    bool m_deferred = false;
};

} // namespace Sandbox::Ui
