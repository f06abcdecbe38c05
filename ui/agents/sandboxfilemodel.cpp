#include "sandboxfilemodel.h"

#include <client/sandboxmethods.h>

#include <QLocale>

namespace Sandbox::Ui {

struct SandboxFileModel::Node
{
    QString name;
    QString path;
    bool isDir = false;
    qint64 size = 0;
    Node *parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;
    bool fetched = false;
    bool fetching = false;

    int row() const
    {
        if (!parent)
            return 0;
        for (size_t i = 0; i < parent->children.size(); ++i) {
            if (parent->children[i].get() == this)
                return int(i);
        }
        return 0;
    }
};

SandboxFileModel::SandboxFileModel(SandboxMethods *methods, const QString &sandboxId,
                                   QObject *parent)
    : QAbstractItemModel(parent)
    , m_methods(methods)
    , m_id(sandboxId)
    , m_root(std::make_unique<Node>())
{
    m_root->path = QStringLiteral("/workspace");
    m_root->isDir = true;
}

SandboxFileModel::~SandboxFileModel() = default;

SandboxFileModel::Node *SandboxFileModel::nodeOf(const QModelIndex &index) const
{
    return index.isValid() ? static_cast<Node *>(index.internalPointer()) : m_root.get();
}

QModelIndex SandboxFileModel::indexOf(Node *node) const
{
    if (!node || node == m_root.get())
        return {};
    return createIndex(node->row(), 0, node);
}

SandboxFileModel::Node *SandboxFileModel::find(const QString &path) const
{
    Node *n = m_root.get();
    if (path == n->path)
        return n;
    const QStringList parts = path.mid(n->path.size()).split(u'/', Qt::SkipEmptyParts);
    for (const QString &part : parts) {
        Node *next = nullptr;
        for (const auto &c : n->children) {
            if (c->name == part)
                next = c.get();
        }
        if (!next)
            return nullptr;
        n = next;
    }
    return n;
}

QModelIndex SandboxFileModel::index(int row, int column, const QModelIndex &parent) const
{
    if (!hasIndex(row, column, parent))
        return {};
    Node *p = nodeOf(parent);
    return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex SandboxFileModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    return indexOf(nodeOf(child)->parent);
}

int SandboxFileModel::rowCount(const QModelIndex &parent) const
{
    if (parent.column() > 0)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int SandboxFileModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

bool SandboxFileModel::hasChildren(const QModelIndex &parent) const
{
    if (parent.column() > 0)
        return false;
    const Node *n = nodeOf(parent);
    return n->isDir && (!n->fetched || !n->children.empty());
}

QVariant SandboxFileModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Node *n = nodeOf(index);
    if (role == PathRole)
        return n->path;
    if (role == IsDirRole)
        return n->isDir;
    if (role == Qt::ToolTipRole)
        return n->path;
    if (role != Qt::DisplayRole)
        return {};
    if (index.column() == Name)
        return n->isDir ? n->name + u'/' : n->name;
    if (index.column() == Size && !n->isDir)
        return QLocale().formattedDataSize(n->size);
    return {};
}

QVariant SandboxFileModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    return section == Name ? tr("Name") : tr("Size");
}

bool SandboxFileModel::canFetchMore(const QModelIndex &parent) const
{
    if (parent.column() > 0)
        return false;
    const Node *n = nodeOf(parent);
    return n->isDir && !n->fetched && !n->fetching;
}

void SandboxFileModel::fetchMore(const QModelIndex &parent)
{
    Node *n = nodeOf(parent);
    if (!n->isDir || n->fetched || n->fetching)
        return;
    n->fetching = true;
    ++m_loading;
    const QString path = n->path;
    const quint64 generation = m_generation;
    m_methods
        ->listFiles(m_id, path, false, this,
                    [this, path, generation](Result<FileListing> r) {
                        if (generation != m_generation)
                            return; // reloaded meanwhile
                        --m_loading;
                        Node *n = find(path);
                        if (!n)
                            return;
                        n->fetching = false;
                        n->fetched = true;
                        if (!r) {
                            Q_EMIT loadFailed(path, r.error().message);
                            return;
                        }
                        QList<FileEntry> entries = r->entries;
                        std::sort(entries.begin(), entries.end(),
                                  [](const FileEntry &a, const FileEntry &b) {
                                      const bool ad = a.type == FileEntry::Type::Directory,
                                                 bd = b.type == FileEntry::Type::Directory;
                                      return ad != bd ? ad : a.name.localeAwareCompare(b.name) < 0;
                                  });
                        if (!entries.isEmpty()) {
                            beginInsertRows(indexOf(n), 0, int(entries.size()) - 1);
                            for (const FileEntry &e : entries) {
                                auto c = std::make_unique<Node>();
                                c->name = e.name;
                                c->path = e.path;
                                c->isDir = e.type == FileEntry::Type::Directory;
                                c->size = e.size;
                                c->parent = n;
                                n->children.push_back(std::move(c));
                            }
                            endInsertRows();
                        } else {
                            const QModelIndex i = indexOf(n);
                            if (i.isValid())
                                Q_EMIT dataChanged(i, i);
                        }
                        Q_EMIT loaded(path);
                    })
        .detach();
}

void SandboxFileModel::reload()
{
    beginResetModel();
    ++m_generation;
    m_loading = 0;
    m_root->children.clear();
    m_root->fetched = false;
    m_root->fetching = false;
    endResetModel();
}

} // namespace Sandbox::Ui
