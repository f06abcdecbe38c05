#pragma once

#include "../workspace/sandboxpage.h"

class QLabel;
class QTreeView;
class QAction;

namespace Sandbox::Ui {

class FileTreeModel;
class FileTransfer;
class FileWatch;

// The files of a sandbox: a lazy tree of /workspace that follows the sandbox's changes while it
// runs (FileWatch), with refresh, new file, new folder, rename,
// delete, upload and download (toolbar, context menu, keys), and drag and drop — local files
// dropped on a folder are uploaded there, items dragged onto a folder are moved into it.
// Opening a file (double-click, Enter) asks the workspace for an editor.
class FilesPage final : public SandboxPage
{
    Q_OBJECT

public:
    explicit FilesPage(const SandboxPageContext &context, QWidget *parent = nullptr);
    ~FilesPage() override;

    QString title() const override;
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject &state) override;
    void sandboxChanged(const SandboxInfo &sandbox) override;

    FileTreeModel *model() const { return m_model; }
    QTreeView *view() const { return m_view; }
    FileTransfer *transfer() const { return m_transfer; }
    // Follows the sandbox's changes while it runs (sandbox.watch).
    FileWatch *watch() const { return m_watch; }

    // The actions, also for tests: they work on the current item.
    void refresh();
    void newFile();
    void newFolder();
    void renameCurrent();
    void deleteSelected();
    void uploadFiles();
    void downloadCurrent();
    void openCurrent();
    // The second halves of "New File…" and "New Folder…": `name` inside `directory`.
    void createFile(const QString &directory, const QString &name);
    void createFolder(const QString &directory, const QString &name);
    // Renames `path` to `newName` in the same directory (the second half of "Rename…").
    void rename(const QString &path, const QString &newName);
    // Moves each of `paths` into `targetDirectory` (drag and drop in the tree).
    void moveInto(const QStringList &paths, const QString &targetDirectory);

    // Whether `path` holds the data of this sandbox's database server (PostgreSQL's pgdata, a
    // SQLite or DuckDB file and its journals): never offered for deletion or renaming here.
    bool isDatabaseFile(const QString &path) const;
    void filesMayHaveChanged() override;

protected:
    void showEvent(QShowEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void updateSelectionActions();
    QString currentPath() const;
    QString currentDirectory() const;
    void showMessage(const QString &text, bool error = false);
    void onError(const QString &message);
    void renameOne(const QString &from, const QString &to);
    static QString validateName(const QString &name);

    FileTreeModel *m_model;
    FileTransfer *m_transfer;
    FileWatch *m_watch;
    QTreeView *m_view;
    QLabel *m_status;
    QAction *m_renameAction = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_downloadAction = nullptr;
    QString m_lastStatus;
};

} // namespace Sandbox::Ui
