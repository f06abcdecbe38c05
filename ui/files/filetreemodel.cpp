#include "filetreemodel.h"

#include "../common/uistyle.h"

#include <client/client.h>

#include <QFileIconProvider>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QMimeData>
#include <QUrl>

#include <algorithm>

Q_LOGGING_CATEGORY(lcFileTree, "sandbox.ui.filetree", QtInfoMsg)

namespace Sandbox::Ui {

FileTreeModel::FileTreeModel(Client *client, const QString &sandboxId, QObject *parent,
                             const QString &rootPath)
    : QAbstractItemModel(parent)
    , m_client(client)
    , m_sandboxId(sandboxId)
    , m_rootPath(rootPath)
    , m_root(std::make_unique<Node>())
{
    m_root->entry.path = rootPath;
    m_root->entry.name = rootPath;
    m_root->entry.type = FileEntry::Type::Directory;
}

FileTreeModel::~FileTreeModel() = default;

FileTreeModel::Node *FileTreeModel::nodeOf(const QModelIndex &index) const
{
    return index.isValid() ? static_cast<Node *>(index.internalPointer()) : m_root.get();
}

int FileTreeModel::rowOf(const Node *node) const
{
    if (!node->parent)
        return 0;
    const auto &siblings = node->parent->children;
    // Siblings are sorted: binary search by the same order, then confirm.
    const auto it = std::lower_bound(siblings.begin(), siblings.end(), node,
                                     [](const std::unique_ptr<Node> &a, const Node *b) {
                                         return lessThan(a->entry, b->entry);
                                     });
    if (it != siblings.end() && it->get() == node)
        return int(it - siblings.begin());
    for (size_t i = 0; i < siblings.size(); ++i) {
        if (siblings[i].get() == node)
            return int(i);
    }
    return -1;
}

QModelIndex FileTreeModel::indexOfNode(const Node *node, int column) const
{
    if (!node || node == m_root.get())
        return {};
    const int row = rowOf(node);
    return row < 0 ? QModelIndex() : createIndex(row, column, const_cast<Node *>(node));
}

QModelIndex FileTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || row < 0)
        return {};
    const Node *p = nodeOf(parent);
    if (!p || row >= int(p->children.size()) || (parent.isValid() && parent.column() != 0))
        return {};
    return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex FileTreeModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    const Node *n = nodeOf(child);
    return indexOfNode(n->parent);
}

int FileTreeModel::rowCount(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int FileTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

bool FileTreeModel::hasChildren(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return false;
    const Node *n = nodeOf(parent);
    if (!n->isDir())
        return false;
    return n->state != Node::State::Loaded || !n->children.empty();
}

QVariant FileTreeModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    const Node *n = nodeOf(index);
    const FileEntry &e = n->entry;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case NameColumn:
            return e.type == FileEntry::Type::Symlink ? e.name + QStringLiteral(" → ") + e.target
                                                      : e.name;
        case SizeColumn:
            return n->isDir() ? QVariant() : QVariant(Style::formatSize(e.size));
        case ModifiedColumn:
            return e.mtime.isValid()
                       ? e.mtime.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))
                       : QString();
        }
        break;
    case Qt::DecorationRole:
        if (index.column() == NameColumn) {
            QFileIconProvider icons;
            return icons.icon(n->isDir() ? QFileIconProvider::Folder : QFileIconProvider::File);
        }
        break;
    case Qt::ToolTipRole:
        if (e.type == FileEntry::Type::Symlink)
            return tr("%1 (link to %2)").arg(e.path, e.target);
        return n->isDir() ? e.path : tr("%1 · %2").arg(e.path, Style::formatSize(e.size));
    case Qt::TextAlignmentRole:
        if (index.column() == SizeColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case PathRole:
        return e.path;
    case IsDirectoryRole:
        return n->isDir();
    case SizeRole:
        return e.size;
    case EntryTypeRole:
        return int(e.type);
    default:
        break;
    }
    return {};
}

QVariant FileTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn:
        return tr("Name");
    case SizeColumn:
        return tr("Size");
    case ModifiedColumn:
        return tr("Modified");
    default:
        return {};
    }
}

Qt::ItemFlags FileTreeModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::ItemIsDropEnabled;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled;
    if (nodeOf(index)->isDir())
        f |= Qt::ItemIsDropEnabled;
    else
        f |= Qt::ItemNeverHasChildren;
    return f;
}

bool FileTreeModel::canFetchMore(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return false;
    if (m_deferred)
        return false;
    const Node *n = nodeOf(parent);
    return n->isDir() && n->state == Node::State::NotLoaded;
}

void FileTreeModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent))
        return;
    list(nodeOf(parent));
}

void FileTreeModel::list(Node *node)
{
    if (!m_client)
        return;
    if (node->state == Node::State::NotLoaded)
        node->state = Node::State::Loading;
    const QString path = node->entry.path;
    qCDebug(lcFileTree) << "list" << m_sandboxId << path;
    const quint64 generation = m_generation;
    ++m_loading;
    m_client->sandboxes()
        .listFiles(m_sandboxId, path, false, this,
                   [this, path, generation](Result<FileListing> r) {
                       --m_loading;
                       if (generation != m_generation)
                           return; // a reset came in between
                       Node *n = findNode(path);
                       if (!n || !n->isDir())
                           return; // gone meanwhile
                       if (!r) {
                           qCInfo(lcFileTree)
                               << "listing" << path << "failed:" << r.error().message;
                           if (n->state == Node::State::Loading)
                               n->state = Node::State::NotLoaded;
                           Q_EMIT errorOccurred(
                               tr("Cannot list %1: %2").arg(path, r.error().message));
                           // Let views show the node as empty rather than ask again and again.
                           if (n->state == Node::State::NotLoaded) {
                               n->state = Node::State::Loaded;
                               const QModelIndex idx = indexOfNode(n);
                               if (idx.isValid())
                                   Q_EMIT dataChanged(idx, idx);
                           }
                           return;
                       }
                       applyListing(n, r.value());
                       Q_EMIT directoryLoaded(path);
                       if (Node *again = findNode(path);
                           again && std::exchange(again->relist, false))
                           list(again);
                   })
        .detach();
}

bool FileTreeModel::lessThan(const FileEntry &a, const FileEntry &b)
{
    const bool ad = a.type == FileEntry::Type::Directory;
    const bool bd = b.type == FileEntry::Type::Directory;
    if (ad != bd)
        return ad;
    const int c = a.name.compare(b.name, Qt::CaseInsensitive);
    if (c != 0)
        return c < 0;
    return a.name < b.name;
}

void FileTreeModel::applyListing(Node *node, const FileListing &listing)
{
    QList<FileEntry> entries = listing.entries;
    // The server's entries, cleaned: no "." or "..", no names with a slash, no duplicates.
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [](const FileEntry &e) {
                                     return e.name.isEmpty() || e.name == QLatin1String(".")
                                            || e.name == QLatin1String("..")
                                            || e.name.contains(u'/');
                                 }),
                  entries.end());
    std::sort(entries.begin(), entries.end(), lessThan);
    entries.erase(std::unique(entries.begin(), entries.end(),
                              [](const FileEntry &a, const FileEntry &b) {
                                  return a.name == b.name;
                              }),
                  entries.end());
    for (FileEntry &e : entries) {
        if (e.path.isEmpty())
            e.path = node->entry.path + u'/' + e.name;
    }
    node->truncated = listing.truncated;
    const QModelIndex parentIndex = indexOfNode(node);

    if (node->children.empty()) {
        node->state = Node::State::Loaded;
        if (!entries.isEmpty()) {
            beginInsertRows(parentIndex, 0, int(entries.size()) - 1);
            node->children.reserve(size_t(entries.size()));
            for (const FileEntry &e : std::as_const(entries)) {
                auto child = std::make_unique<Node>();
                child->entry = e;
                child->parent = node;
                node->children.push_back(std::move(child));
            }
            endInsertRows();
        } else if (parentIndex.isValid()) {
            Q_EMIT dataChanged(parentIndex, parentIndex); // now known to be empty
        }
        return;
    }

    // 1. Remove the children that are gone (or changed between file and directory).
    QHash<QString, const FileEntry *> byName;
    byName.reserve(entries.size());
    for (const FileEntry &e : std::as_const(entries))
        byName.insert(e.name, &e);
    for (int row = int(node->children.size()) - 1; row >= 0; --row) {
        const Node *c = node->children[size_t(row)].get();
        const FileEntry *e = byName.value(c->entry.name);
        const bool keep = e && (e->type == FileEntry::Type::Directory) == c->isDir();
        if (keep)
            continue;
        int first = row;
        while (first > 0) {
            const Node *prev = node->children[size_t(first - 1)].get();
            const FileEntry *pe = byName.value(prev->entry.name);
            if (pe && (pe->type == FileEntry::Type::Directory) == prev->isDir())
                break;
            --first;
        }
        beginRemoveRows(parentIndex, first, row);
        node->children.erase(node->children.begin() + first, node->children.begin() + row + 1);
        endRemoveRows();
        row = first;
    }

    // 2. Merge: both lists are sorted the same way and what is left is a subset of `entries`.
    int k = 0;
    qsizetype i = 0;
    while (i < entries.size()) {
        if (k < int(node->children.size())
            && node->children[size_t(k)]->entry.name == entries[i].name) {
            Node *c = node->children[size_t(k)].get();
            const FileEntry &e = entries[i];
            if (c->entry.size != e.size || c->entry.mtime != e.mtime || c->entry.mode != e.mode
                || c->entry.type != e.type || c->entry.target != e.target) {
                c->entry = e;
                Q_EMIT dataChanged(index(k, 0, parentIndex), index(k, ColumnCount - 1, parentIndex));
            }
            ++k;
            ++i;
            continue;
        }
        // A run of new entries goes in before children[k].
        qsizetype j = i;
        const QString stopAt = k < int(node->children.size())
                                   ? node->children[size_t(k)]->entry.name
                                   : QString();
        while (j < entries.size() && (stopAt.isNull() || entries[j].name != stopAt))
            ++j;
        const int count = int(j - i);
        beginInsertRows(parentIndex, k, k + count - 1);
        std::vector<std::unique_ptr<Node>> fresh;
        fresh.reserve(size_t(count));
        for (qsizetype n = i; n < j; ++n) {
            auto child = std::make_unique<Node>();
            child->entry = entries[n];
            child->parent = node;
            fresh.push_back(std::move(child));
        }
        node->children.insert(node->children.begin() + k, std::make_move_iterator(fresh.begin()),
                              std::make_move_iterator(fresh.end()));
        endInsertRows();
        k += count;
        i = j;
    }
    node->state = Node::State::Loaded;
}

QString FileTreeModel::pathOf(const QModelIndex &index) const
{
    return nodeOf(index)->entry.path;
}

bool FileTreeModel::isDirectory(const QModelIndex &index) const
{
    return nodeOf(index)->isDir();
}

std::optional<FileEntry> FileTreeModel::entry(const QModelIndex &index) const
{
    if (!index.isValid())
        return std::nullopt;
    return nodeOf(index)->entry;
}

FileTreeModel::Node *FileTreeModel::findNode(const QString &path) const
{
    QString p = path;
    while (p.size() > 1 && p.endsWith(u'/'))
        p.chop(1);
    if (p == m_rootPath)
        return m_root.get();
    if (!p.startsWith(m_rootPath + u'/'))
        return nullptr;
    const QStringList parts = p.mid(m_rootPath.size() + 1).split(u'/', Qt::SkipEmptyParts);
    Node *n = m_root.get();
    for (const QString &part : parts) {
        Node *next = nullptr;
        for (const auto &c : n->children) {
            if (c->entry.name == part) {
                next = c.get();
                break;
            }
        }
        if (!next)
            return nullptr;
        n = next;
    }
    return n;
}

QModelIndex FileTreeModel::indexOf(const QString &path) const
{
    return indexOfNode(findNode(path));
}

QString FileTreeModel::directoryFor(const QModelIndex &index) const
{
    if (!index.isValid())
        return m_rootPath;
    const Node *n = nodeOf(index);
    if (n->isDir())
        return n->entry.path;
    return n->parent ? n->parent->entry.path : m_rootPath;
}

bool FileTreeModel::isTruncated(const QModelIndex &directory) const
{
    return nodeOf(directory)->truncated;
}

void FileTreeModel::refresh(const QModelIndex &directory)
{
    Node *n = nodeOf(directory);
    if (!n->isDir()) {
        n = n->parent;
        if (!n)
            return;
    }
    if (n->state == Node::State::Loading)
        return;
    if (n->state == Node::State::NotLoaded && n != m_root.get())
        return; // never shown: nothing to refresh
    list(n);
}

void FileTreeModel::refreshPath(const QString &directoryPath)
{
    Node *n = findNode(directoryPath);
    if (!n || !n->isDir())
        return;
    if (n->state == Node::State::Loading)
        n->relist = true; // its first listing may predate the change: list once more after it
    else if (n->state == Node::State::Loaded || n == m_root.get())
        list(n);
}

void FileTreeModel::refreshLoaded(int maxDirectories)
{
    std::vector<Node *> queue{m_root.get()};
    int listed = 0;
    for (size_t i = 0; i < queue.size() && listed < maxDirectories; ++i) {
        Node *n = queue[i];
        if (n->state == Node::State::Loading)
            continue;
        if (n->state != Node::State::Loaded && n != m_root.get())
            continue;
        list(n);
        ++listed;
        for (const auto &child : n->children) {
            if (child->isDir() && child->state == Node::State::Loaded)
                queue.push_back(child.get());
        }
    }
}

void FileTreeModel::reload()
{
    beginResetModel();
    ++m_generation;
    m_root->children.clear();
    m_root->state = Node::State::NotLoaded;
    m_root->truncated = false;
    endResetModel();
}

QStringList FileTreeModel::mimeTypes() const
{
    return {QString::fromLatin1(PathsMimeType), QStringLiteral("text/uri-list")};
}

QMimeData *FileTreeModel::mimeData(const QModelIndexList &indexes) const
{
    QStringList paths;
    for (const QModelIndex &i : indexes) {
        if (i.isValid() && i.column() == 0)
            paths << pathOf(i);
    }
    if (paths.isEmpty())
        return nullptr;
    auto *data = new QMimeData;
    data->setData(QString::fromLatin1(PathsMimeType), paths.join(u'\n').toUtf8());
    data->setText(paths.join(u'\n'));
    return data;
}

Qt::DropActions FileTreeModel::supportedDropActions() const
{
    return Qt::CopyAction | Qt::MoveAction;
}

Qt::DropActions FileTreeModel::supportedDragActions() const
{
    return Qt::MoveAction;
}

bool FileTreeModel::canDropMimeData(const QMimeData *data, Qt::DropAction, int, int,
                                    const QModelIndex &parent) const
{
    if (!data)
        return false;
    if (parent.isValid() && !isDirectory(parent))
        return true; // goes to the file's directory
    if (data->hasFormat(QString::fromLatin1(PathsMimeType)))
        return true;
    if (data->hasUrls()) {
        const QList<QUrl> urls = data->urls();
        return std::any_of(urls.begin(), urls.end(), [](const QUrl &u) { return u.isLocalFile(); });
    }
    return false;
}

bool FileTreeModel::dropMimeData(const QMimeData *data, Qt::DropAction action, int row, int column,
                                 const QModelIndex &parent)
{
    if (!canDropMimeData(data, action, row, column, parent))
        return false;
    const QString target = directoryFor(parent);
    if (data->hasFormat(QString::fromLatin1(PathsMimeType))) {
        QStringList paths = QString::fromUtf8(data->data(QString::fromLatin1(PathsMimeType)))
                                .split(u'\n', Qt::SkipEmptyParts);
        // Dropping something on itself or into its own parent changes nothing.
        paths.erase(std::remove_if(paths.begin(), paths.end(),
                                   [&](const QString &p) {
                                       return p == target || target.startsWith(p + u'/')
                                              || QFileInfo(p).path() == target;
                                   }),
                    paths.end());
        if (!paths.isEmpty())
            Q_EMIT moveRequested(paths, target);
        return !paths.isEmpty();
    }
    QStringList local;
    for (const QUrl &u : data->urls()) {
        if (u.isLocalFile())
            local << u.toLocalFile();
    }
    if (local.isEmpty())
        return false;
    Q_EMIT uploadRequested(local, target);
    return true;
}

} // namespace Sandbox::Ui
