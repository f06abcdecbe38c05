#include "filespage.h"

#include "filetransfer.h"
#include "filetreemodel.h"
#include "filewatch.h"

#include "../common/uistyle.h"
#include "../workspace/sandboxworkspace.h"

#include <client/client.h>
#include <protocol/sandboxenums.h>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QToolBar>
#include <QTreeView>
#include <QVBoxLayout>

namespace Sandbox::Ui {

FilesPage::FilesPage(const SandboxPageContext &context, QWidget *parent)
    : SandboxPage(context, parent)
    , m_model(new FileTreeModel(context.client, context.sandbox.id, this))
    , m_transfer(new FileTransfer(context.client, context.sandbox.id, this))
    , m_watch(new FileWatch(context.client, m_model, this))
    , m_view(new QTreeView(this))
    , m_status(new QLabel(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    auto *toolbar = new QToolBar(this);
    toolbar->setIconSize(QSize(16, 16));
    toolbar->setToolButtonStyle(Qt::ToolButtonIconOnly);
    const auto add = [&](const char *theme, QStyle::StandardPixmap fallback, const QString &text,
                         const QKeySequence &key, void (FilesPage::*slot)(),
                         bool onToolbar = true) {
        auto *a = new QAction(Style::icon(theme, fallback, this), text, this);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        a->setToolTip(
            key.isEmpty()
                ? text
                : QStringLiteral("%1 (%2)").arg(text, key.toString(QKeySequence::NativeText)));
        connect(a, &QAction::triggered, this, slot);
        addAction(a);
        if (onToolbar)
            toolbar->addAction(a);
        return a;
    };
    add("view-refresh", QStyle::SP_BrowserReload, tr("Refresh"), QKeySequence::Refresh,
        &FilesPage::refresh);
    add("document-new", QStyle::SP_FileIcon, tr("New File…"), QKeySequence(), &FilesPage::newFile);
    add("folder-new", QStyle::SP_FileDialogNewFolder, tr("New Folder…"), QKeySequence(),
        &FilesPage::newFolder);
    add("go-up", QStyle::SP_ArrowUp, tr("Upload…"), QKeySequence(), &FilesPage::uploadFiles);
    m_downloadAction = add("go-down", QStyle::SP_ArrowDown, tr("Download…"), QKeySequence(),
                           &FilesPage::downloadCurrent);
    m_renameAction = add("edit-rename", QStyle::SP_FileDialogDetailedView, tr("Rename…"),
                         QKeySequence(Qt::Key_F2), &FilesPage::renameCurrent, false);
    m_deleteAction = add("edit-delete", QStyle::SP_TrashIcon, tr("Delete"), QKeySequence::Delete,
                         &FilesPage::deleteSelected);
    layout->addWidget(toolbar);

    m_view->setModel(m_model);
    m_view->setHeaderHidden(false);
    m_view->setUniformRowHeights(true);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setDragDropMode(QAbstractItemView::DragDrop);
    m_view->setDefaultDropAction(Qt::MoveAction);
    m_view->setDropIndicatorShown(true);
    m_view->setAnimated(false);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->header()->setStretchLastSection(false);
    m_view->header()->setSectionResizeMode(FileTreeModel::NameColumn, QHeaderView::Stretch);
    m_view->header()->setSectionResizeMode(FileTreeModel::SizeColumn, QHeaderView::ResizeToContents);
    m_view->setColumnHidden(FileTreeModel::ModifiedColumn, true);
    layout->addWidget(m_view, 1);
    m_view->viewport()->installEventFilter(this);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &FilesPage::updateSelectionActions);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &FilesPage::updateSelectionActions);

    m_status->setWordWrap(true);
    m_status->setContentsMargins(6, 3, 6, 3);
    m_status->setTextFormat(Qt::PlainText);
    m_status->hide();
    layout->addWidget(m_status);

    connect(m_view, &QTreeView::activated, this, [this](const QModelIndex &index) {
        if (!m_model->isDirectory(index))
            openCurrent();
    });
    connect(m_view, &QTreeView::customContextMenuRequested, this, [this](const QPoint &pos) {
        QMenu menu(this);
        const bool onItem = m_view->indexAt(pos).isValid();
        if (onItem && !m_model->isDirectory(m_view->currentIndex()))
            menu.addAction(tr("Open"), this, &FilesPage::openCurrent);
        for (QAction *a : actions()) {
            if ((a == m_renameAction || a == m_deleteAction || a == m_downloadAction) && !onItem)
                continue;
            // Not offered for the database's own files.
            if ((a == m_renameAction || a == m_deleteAction) && !a->isEnabled())
                continue;
            menu.addAction(a);
        }
        menu.exec(m_view->viewport()->mapToGlobal(pos));
    });
    connect(m_model, &FileTreeModel::errorOccurred, this, &FilesPage::onError);
    connect(m_model, &FileTreeModel::directoryLoaded, this, [this](const QString &path) {
        if (m_model->isTruncated(m_model->indexOf(path)))
            showMessage(
                tr("%1 holds more entries than the server lists (10 000); only those are shown")
                    .arg(path));
        else if (!m_lastStatus.isEmpty() && !m_transfer->isBusy())
            showMessage({});
    });
    connect(m_model, &FileTreeModel::uploadRequested, m_transfer, &FileTransfer::upload);
    connect(m_model, &FileTreeModel::moveRequested, this, &FilesPage::moveInto);
    connect(m_transfer, &FileTransfer::progress, this,
            [this](const QString &text) { showMessage(text); });
    connect(m_transfer, &FileTransfer::remoteChanged, m_model, &FileTreeModel::refreshPath);
    connect(m_transfer, &FileTransfer::finished, this, [this](int files, const QStringList &errors) {
        if (errors.isEmpty())
            showMessage(tr("%n file(s) transferred", nullptr, files));
        else
            showMessage(errors.join(u'\n'), true);
        Q_EMIT message(errors.isEmpty() ? tr("%n file(s) transferred", nullptr, files)
                                        : errors.first());
    });
    updateSelectionActions();
    // A sleeping sandbox's files are listed when the page is first shown (a restored tab in the
    // background must not wake it).
    if (fromWire<SandboxStatus>(context.sandbox.status) == SandboxStatus::Sleeping)
        m_model->setDeferred(true);
    m_watch->setEnabled(fromWire<SandboxStatus>(context.sandbox.status) == SandboxStatus::Running);
}

FilesPage::~FilesPage() = default;

void FilesPage::showEvent(QShowEvent *event)
{
    SandboxPage::showEvent(event);
    if (m_model->isDeferred()) {
        m_model->setDeferred(false);
        if (m_model->canFetchMore({}))
            m_model->fetchMore({});
    }
}

bool FilesPage::eventFilter(QObject *watched, QEvent *event)
{
    // A click on the empty space below the entries clears the selection (and the current
    // folder: New File and New Folder then go to /workspace, which the user sees).
    if (watched == m_view->viewport() && event->type() == QEvent::MouseButtonPress) {
        const auto *mouse = static_cast<QMouseEvent *>(event);
        if (!m_view->indexAt(mouse->position().toPoint()).isValid()) {
            m_view->clearSelection();
            m_view->selectionModel()->setCurrentIndex({}, QItemSelectionModel::Clear);
        }
    }
    return SandboxPage::eventFilter(watched, event);
}

bool FilesPage::isDatabaseFile(const QString &path) const
{
    if (fromWire<SandboxKind>(sandbox().kind) != SandboxKind::Database)
        return false;
    if (fromWire<SandboxType>(sandbox().type) == SandboxType::Postgres)
        return path == QLatin1String("/workspace/pgdata")
               || path.startsWith(QLatin1String("/workspace/pgdata/"));
    static const QRegularExpression dataFile(
        QStringLiteral("\\.(db|sqlite3?|duckdb)(-wal|-shm|-journal|\\.wal|\\.tmp)?$"));
    return dataFile.match(path).hasMatch();
}

void FilesPage::filesMayHaveChanged()
{
    // Only a running sandbox: listing a sleeping one would wake it.
    if (fromWire<SandboxStatus>(sandbox().status) == SandboxStatus::Running)
        m_model->refreshLoaded();
}

void FilesPage::updateSelectionActions()
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    bool protectedData = false;
    for (const QModelIndex &i : rows)
        protectedData = protectedData || isDatabaseFile(m_model->pathOf(i));
    const QString hint = tr("Holds the database's data: drop tables or databases from the SQL "
                            "console instead");
    m_deleteAction->setEnabled(!rows.isEmpty() && !protectedData);
    m_deleteAction->setToolTip(protectedData ? hint : tr("Delete"));
    const QString current = m_view->currentIndex().isValid()
                                ? m_model->pathOf(m_view->currentIndex())
                                : QString();
    m_renameAction->setEnabled(!current.isEmpty() && !isDatabaseFile(current));
}

QString FilesPage::title() const
{
    return tr("Files");
}

QJsonObject FilesPage::saveState() const
{
    return {
        {QStringLiteral("header"), QString::fromLatin1(m_view->header()->saveState().toBase64())}};
}

void FilesPage::restoreState(const QJsonObject &state)
{
    const QByteArray header = QByteArray::fromBase64(
        state.value(QStringLiteral("header")).toString().toLatin1());
    if (!header.isEmpty())
        m_view->header()->restoreState(header);
}

void FilesPage::sandboxChanged(const SandboxInfo &sandbox)
{
    const bool wasRunning = fromWire<SandboxStatus>(this->sandbox().status)
                            == SandboxStatus::Running;
    SandboxPage::sandboxChanged(sandbox);
    // A sandbox that comes (back) up: its files may have changed.
    if (!wasRunning && fromWire<SandboxStatus>(sandbox.status) == SandboxStatus::Running)
        m_model->refresh();
    m_watch->setEnabled(fromWire<SandboxStatus>(sandbox.status) == SandboxStatus::Running);
}

void FilesPage::showMessage(const QString &text, bool error)
{
    m_lastStatus = text;
    m_status->setText(text);
    Style::setTextTone(m_status, error ? Style::Tone::Error : Style::Tone::Normal);
    m_status->setVisible(!text.isEmpty());
}

void FilesPage::onError(const QString &message)
{
    showMessage(message, true);
    Q_EMIT this->message(message);
}

QString FilesPage::currentPath() const
{
    const QModelIndex i = m_view->currentIndex();
    return i.isValid() ? m_model->pathOf(i) : QString();
}

QString FilesPage::currentDirectory() const
{
    return m_model->directoryFor(m_view->currentIndex());
}

QString FilesPage::validateName(const QString &name)
{
    if (name.isEmpty())
        return tr("The name is empty.");
    if (name.contains(u'/') || name == QLatin1String(".") || name == QLatin1String(".."))
        return tr("A name cannot contain “/” or be “.” or “..”.");
    if (name.contains(QChar(0)) || name.size() > 255)
        return tr("That name is not allowed.");
    return {};
}

void FilesPage::refresh()
{
    const QModelIndex i = m_view->currentIndex();
    if (i.isValid() && m_model->isDirectory(i) && m_view->isExpanded(i))
        m_model->refresh(i);
    else
        m_model->refresh(i.isValid() ? i.parent() : QModelIndex());
    if (!i.isValid() || i.parent().isValid())
        m_model->refresh({}); // the root too
}

void FilesPage::newFile()
{
    const QString dir = currentDirectory();
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("New File"),
                                               tr("Name of the new file in %1:").arg(dir),
                                               QLineEdit::Normal, QString(), &ok)
                             .trimmed();
    if (ok)
        createFile(dir, name);
}

void FilesPage::createFile(const QString &directory, const QString &name)
{
    if (const QString why = validateName(name); !why.isEmpty())
        return onError(why);
    const QString path = directory + u'/' + name;
    // writeFile would replace an existing file: make sure there is none.
    client()
        ->sandboxes()
        .stat(sandbox().id, path, this,
              [this, path, directory](Result<FileEntry> r) {
                  if (r)
                      return onError(tr("%1 already exists").arg(path));
                  if (r.error().code != ErrorCode::NotFound)
                      return onError(tr("%1: %2").arg(path, r.error().message));
                  client()
                      ->sandboxes()
                      .writeFile(sandbox().id, path, QByteArray(), {}, this,
                                 [this, path, directory](Result<WriteFileResult> w) {
                                     if (!w)
                                         return onError(tr("Cannot create %1: %2")
                                                            .arg(path, w.error().message));
                                     m_model->refreshPath(directory);
                                     if (auto *ws = context().workspace)
                                         ws->openFile(path);
                                 })
                      .detach();
              })
        .detach();
}

void FilesPage::newFolder()
{
    const QString dir = currentDirectory();
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("New Folder"),
                                               tr("Name of the new folder in %1:").arg(dir),
                                               QLineEdit::Normal, QString(), &ok)
                             .trimmed();
    if (ok)
        createFolder(dir, name);
}

void FilesPage::createFolder(const QString &directory, const QString &name)
{
    if (const QString why = validateName(name); !why.isEmpty())
        return onError(why);
    const QString path = directory + u'/' + name;
    client()
        ->sandboxes()
        .mkdir(sandbox().id, path, false, this,
               [this, path, directory](Result<QString> r) {
                   if (!r)
                       return onError(tr("Cannot create %1: %2").arg(path, r.error().message));
                   m_model->refreshPath(directory);
               })
        .detach();
}

void FilesPage::renameCurrent()
{
    const QModelIndex i = m_view->currentIndex();
    if (!i.isValid() || isDatabaseFile(m_model->pathOf(i)))
        return;
    const QString from = m_model->pathOf(i);
    const QFileInfo info(from);
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Rename"), tr("New name for %1:").arg(from),
                                               QLineEdit::Normal, info.fileName(), &ok)
                             .trimmed();
    if (!ok || name == info.fileName())
        return;
    rename(from, name);
}

void FilesPage::rename(const QString &path, const QString &newName)
{
    if (const QString why = validateName(newName); !why.isEmpty())
        return onError(why);
    renameOne(path, QFileInfo(path).path() + u'/' + newName);
}

void FilesPage::moveInto(const QStringList &paths, const QString &targetDirectory)
{
    for (const QString &from : paths)
        renameOne(from, targetDirectory + u'/' + QFileInfo(from).fileName());
}

void FilesPage::renameOne(const QString &from, const QString &to)
{
    client()
        ->sandboxes()
        .rename(sandbox().id, from, to, this,
                [this, from, to](Result<QString> r) {
                    if (!r)
                        return onError(
                            tr("Cannot move %1 to %2: %3").arg(from, to, r.error().message));
                    m_model->refreshPath(QFileInfo(from).path());
                    m_model->refreshPath(QFileInfo(to).path());
                    if (auto *ws = context().workspace)
                        ws->fileRenamed(from, to);
                })
        .detach();
}

void FilesPage::deleteSelected()
{
    QStringList paths;
    bool anyDirectory = false;
    for (const QModelIndex &i : m_view->selectionModel()->selectedRows()) {
        if (isDatabaseFile(m_model->pathOf(i)))
            return; // the action is disabled; its key may still come
        paths << m_model->pathOf(i);
        anyDirectory = anyDirectory || m_model->isDirectory(i);
    }
    if (paths.isEmpty())
        return;
    const QString question = paths.size() == 1
                                 ? tr("Delete %1%2?")
                                       .arg(paths.first(),
                                            anyDirectory ? tr(" and everything in it") : QString())
                                 : tr("Delete these %1 items%2?\n\n%3")
                                       .arg(paths.size())
                                       .arg(anyDirectory ? tr(" (folders with everything in them)")
                                                         : QString(),
                                            paths.mid(0, 10).join(u'\n'));
    if (QMessageBox::question(this, tr("Delete"), question, QMessageBox::Yes | QMessageBox::Cancel,
                              QMessageBox::Cancel)
        != QMessageBox::Yes)
        return;
    for (const QString &path : std::as_const(paths)) {
        client()
            ->sandboxes()
            .deleteFile(sandbox().id, path, true, this,
                        [this, path](Result<QString> r) {
                            if (!r)
                                return onError(
                                    tr("Cannot delete %1: %2").arg(path, r.error().message));
                            m_model->refreshPath(QFileInfo(path).path());
                            if (auto *ws = context().workspace)
                                ws->fileDeleted(path);
                        })
            .detach();
    }
}

void FilesPage::uploadFiles()
{
    const QString dir = currentDirectory();
    const QStringList files = QFileDialog::getOpenFileNames(this, tr("Upload to %1").arg(dir),
                                                            QStandardPaths::writableLocation(
                                                                QStandardPaths::HomeLocation));
    if (!files.isEmpty())
        m_transfer->upload(files, dir);
}

void FilesPage::downloadCurrent()
{
    const QModelIndex i = m_view->currentIndex();
    if (!i.isValid())
        return;
    const QString remote = m_model->pathOf(i);
    const QString name = QFileInfo(remote).fileName();
    const QString downloads = QStandardPaths::writableLocation(QStandardPaths::DownloadLocation);
    if (m_model->isDirectory(i)) {
        const QString parent = QFileDialog::getExistingDirectory(this,
                                                                 tr("Download %1 into").arg(remote),
                                                                 downloads);
        if (!parent.isEmpty())
            m_transfer->download(remote, true, parent + u'/' + name);
    } else {
        const QString local = QFileDialog::getSaveFileName(this, tr("Download %1").arg(remote),
                                                           downloads + u'/' + name);
        if (!local.isEmpty())
            m_transfer->download(remote, false, local);
    }
}

void FilesPage::openCurrent()
{
    const QModelIndex i = m_view->currentIndex();
    if (!i.isValid() || m_model->isDirectory(i))
        return;
    if (auto *ws = context().workspace)
        ws->openFile(m_model->pathOf(i));
}

} // namespace Sandbox::Ui
