#pragma once

#include "sandboxpagefactory.h"

#include <client/types.h>

#include <QJsonObject>
#include <QPointer>
#include <QSet>
#include <QTimer>
#include <QWidget>

class QSplitter;
class QStackedWidget;
class QTabWidget;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

class EditorPage;
class LimitsBadge;
class SandboxPageRegistry;
class SecretStore;

// Everything of one opened sandbox: the pages its factories make, in three areas — the side
// (file tree), the documents (editors; the agent session and the SQL console will go here) and
// the panel below (console) — and the editors opened from the file tree.
class SandboxWorkspace final : public QWidget
{
    Q_OBJECT

public:
    // `secrets` (not owned, may be null) keeps what pages store as secrets (an agent's model
    // key).
    SandboxWorkspace(Client *client, const SandboxInfo &sandbox,
                     const SandboxPageRegistry &registry, QWidget *parent = nullptr,
                     SecretStore *secrets = nullptr);
    ~SandboxWorkspace() override;

    const SandboxInfo &sandbox() const { return m_sandbox; }
    QString sandboxId() const { return m_sandbox.id; }
    QString title() const;
    // The sandbox as the list saw it last: status, name, ...; passed on to every page.
    void setSandbox(const SandboxInfo &sandbox);
    // Collapses the file pane (Qt::Horizontal) or the console (Qt::Vertical), or brings it back
    // at the size it had.
    void togglePane(Qt::Orientation orientation);
    bool isPaneCollapsed(Qt::Orientation orientation) const;
    // Tells every page that the engine can (not) be reached.
    void setConnected(bool connected);

    // The page a factory made, by factory id ("console", "files", ...).
    SandboxPage *page(const QString &factoryId) const;
    template<typename T>
    T *page(const QString &factoryId) const
    {
        return qobject_cast<T *>(page(factoryId));
    }
    QList<SandboxPage *> pages() const;

    // Opens `path` in an editor, or shows the one already open.
    EditorPage *openFile(const QString &path);
    QList<EditorPage *> editors() const;
    EditorPage *currentEditor() const;
    void showPage(SandboxPage *page);
    // Closes the current editor (asks about unsaved changes); false if none closed.
    bool closeCurrentEditor();
    void fileRenamed(const QString &from, const QString &to);
    void fileDeleted(const QString &path);
    // Next/previous tab in the document area.
    void cycleDocuments(int delta);

    // Asks every page (unsaved editors); false if one says no.
    bool maybeClose();
    QJsonObject saveState() const;
    void restoreState(const QJsonObject &state);

Q_SIGNALS:
    // The agent page offers a fix for a problem (AgentProblem::Kind as int).
    void agentFixRequested(const Sandbox::SandboxInfo &sandbox, int problemKind);
    // A page changed the sandbox (the agent page its network policy): the window shows it.
    void sandboxChanged(const Sandbox::SandboxInfo &sandbox);
    void message(const QString &text);

private:
    void notifyFilesChanged();
    QTabWidget *areaWidget(SandboxPageFactory::Area area) const;
    void addPage(SandboxPage *page, SandboxPageFactory::Area area, bool closable);
    void updateTab(SandboxPage *page);
    void closeDocument(int index);
    void updateDocumentPlaceholder();

    QPointer<Client> m_client;
    SandboxInfo m_sandbox;
    QSplitter *m_horizontal;
    QSplitter *m_vertical;
    QTabWidget *m_side;
    QStackedWidget *m_documentStack;
    QTabWidget *m_documents;
    QWidget *m_documentPlaceholder;
    QTabWidget *m_panel;
    LimitsBadge *m_limits;                        // owned (child): shown when a limit does not hold
    QHash<QString, SandboxPage *> m_factoryPages; // by factory id
    QSet<QObject *> m_busyPages;                  // at work in the sandbox (not owned)
    QTimer m_filesTimer;
    QList<int> m_sideSizes;  // before the file pane was collapsed
    QList<int> m_panelSizes; // before the console was collapsed
};

} // namespace Sandbox::Ui
