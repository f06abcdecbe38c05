#pragma once

#include <client/client.h>
#include <client/types.h>

#include <QJsonObject>
#include <QPointer>
#include <QWidget>

namespace Sandbox::Ui {

class SandboxWorkspace;
class SecretStore;

// What a page of a sandbox's tab set gets: the connection, the sandbox as last seen, and the
// workspace that hosts it (to open files, show another page, or report a message).
struct SandboxPageContext
{
    QPointer<Client> client; // not owned; the connection the workspace belongs to
    SandboxInfo sandbox;
    SandboxWorkspace *workspace = nullptr; // not owned; outlives its pages
    SecretStore *secrets = nullptr;        // not owned; where keys are kept (may be null)
};

// One page of an opened sandbox: the console, the file tree, an editor, and later the agent
// session and the SQL console. Pages are made by a SandboxPageFactory (sandboxpagefactory.h).
class SandboxPage : public QWidget
{
    Q_OBJECT

public:
    explicit SandboxPage(const SandboxPageContext &context, QWidget *parent = nullptr);
    ~SandboxPage() override;

    const SandboxPageContext &context() const { return m_context; }
    const SandboxInfo &sandbox() const { return m_context.sandbox; }
    Client *client() const { return m_context.client; }

    // The tab's text (e.g. "main.py*" for an editor with unsaved changes) and tooltip.
    virtual QString title() const = 0;
    virtual QString toolTip() const { return title(); }
    // True when the page may close now; may ask the user (e.g. unsaved changes).
    virtual bool maybeClose() { return true; }
    // What comes back after a restart (kept in the settings, so never a secret).
    virtual QJsonObject saveState() const { return {}; }
    virtual void restoreState(const QJsonObject &state) { Q_UNUSED(state) }
    // The sandbox changed (status, name, ...). The base class keeps the new value.
    virtual void sandboxChanged(const SandboxInfo &sandbox);
    // Another page did something that may have changed the sandbox's files (a command ran, a
    // file was saved, an agent worked): the workspace tells every page.
    virtual void filesMayHaveChanged() {}
    // The connection to the engine was lost (false) or is back (true).
    virtual void connectionChanged(bool connected) { Q_UNUSED(connected) }

Q_SIGNALS:
    void titleChanged();
    // A short message for the window's status bar.
    void message(const QString &text);
    // This page may have changed the sandbox's files (see filesMayHaveChanged()); `busy`: it is
    // still at work (the workspace then keeps telling the pages, every 2 s, until it is done).
    void filesTouched(bool busy = false);

private:
    SandboxPageContext m_context;
};

} // namespace Sandbox::Ui
