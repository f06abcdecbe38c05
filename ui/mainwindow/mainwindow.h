#pragma once

#include <client/agenttypes.h>
#include <client/connectionprofile.h>
#include <client/types.h>

#include <QMainWindow>
#include <QPointer>

#include <functional>

class QDockWidget;
class QLabel;
class QStackedWidget;
class QTabWidget;
class QLineEdit;
class QTreeView;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

class AgentDashboard;
class ConnectionManager;
class ConnectionStatus;
class DoctorDialog;
class ProfileStore;
class RunNotifier;
class SandboxListModel;
class SandboxPageRegistry;
class SandboxPoller;
class SandboxWorkspace;
class SecretStore;
struct StoredProfile;

// The main window: the sidebar of sandboxes (live status; create, start, stop, delete from the
// toolbar, the menus and a context menu), one tab per opened sandbox (its workspace), and the
// status bar (connection, engine version, quota). Window layout and the open sandboxes with
// their open files come back after a restart (QSettings, per connection).
class MainWindow final : public QMainWindow
{
    Q_OBJECT

public:
    // Not owned: all outlive the window.
    MainWindow(ConnectionManager *connection, const SandboxPageRegistry *registry,
               ProfileStore *profiles, SecretStore *secrets, QWidget *parent = nullptr);
    ~MainWindow() override;

    // Connects with a stored profile (a remote one's key comes from the SecretStore).
    void connectToProfile(const StoredProfile &profile);
    // Connects with `profile`; `sessionKey` names the saved set of open tabs for it.
    void connectWith(const ConnectionProfile &profile, const QString &sessionKey);
    void showConnectionDialog();
    // Help ▸ System Check…: what `sandboxd doctor` says about this computer (ui/doctor/).
    void showSystemCheck();
    // Once per user (the first run): the same check in the background, shown only when
    // something fails.
    void checkSystemOnFirstRun();
    void showPreferences();
    // The fix the agent page offered (AgentProblem::Kind): network turned on in place, the CLI
    // installed, or a new sandbox with the model key.
    void fixAgent(const Sandbox::SandboxInfo &sandbox, int problemKind);

    SandboxListModel *sandboxModel() const { return m_model; }
    QTreeView *sidebar() const { return m_sidebar; }
    QTabWidget *sandboxTabs() const { return m_tabs; }
    ConnectionStatus *connectionStatus() const { return m_status; }
    SandboxPoller *poller() const { return m_poller; }
    // View ▸ Agent Dashboard (Ctrl+Shift+D): every agent session of the connection in a tab.
    void showAgentDashboard();
    AgentDashboard *agentDashboard() const { return m_dashboard; }
    RunNotifier *runNotifier() const { return m_notifier; }
    // A menu or toolbar action by object name ("newSandbox", "runCommand", "stopCommand", ...).
    QAction *action(const QString &name) const;

    SandboxWorkspace *openSandbox(const QString &id);
    SandboxWorkspace *workspace(const QString &id) const;
    SandboxWorkspace *currentWorkspace() const;
    QList<SandboxWorkspace *> workspaces() const;
    bool closeSandboxTab(int index);
    void selectSandbox(const QString &id);

    void newSandbox();
    void createAgent(const AgentCreateOptions &options);
    void createDatabase(const DatabaseCreateOptions &options);
    void startSelected();
    void stopSelected();
    void deleteSelected(bool askFirst = true);
    // Asks for the selected sandbox's new name; renameSandbox() gives it (sandbox.setName).
    void renameSelected();
    void renameSandbox(const QString &id, const QString &name);
    void runCommand();
    void stopCommand();
    void nextTab();
    void previousTab();

    // Writes the window layout and the open tabs to the settings (also done on close).
    void saveSession();
    // Reads the window layout back (the tabs come back once the sandboxes are listed).
    void restoreWindowState();

Q_SIGNALS:
    void sandboxRenamed(const QString &id);
    // A listing of the sandboxes was applied to the sidebar.
    void sandboxesListed();
    void sandboxCreated(const Sandbox::SandboxInfo &sandbox);
    void errorShown(const QString &message);
    // An agent's "no network" problem was fixed in place (sandbox.setNetwork).
    void networkTurnedOn(const QString &id);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void makeSidebar();
    void makeSidebarFilter();
    void makeSidebarDock();
    void makeCentre();
    // An action of the window, named, with its key in its tooltip; triggered calls slot.
    QAction *makeAction(const char *name, const QString &text, const QKeySequence &key,
                        const std::function<void()> &slot, const QIcon &icon = {});
    void scopeAction(QAction *a, QWidget *owner);
    void createActions();
    void createSandboxActions();
    void createViewActions();
    void createEditActions();
    void createMenus();
    void createViewMenu();
    void createToolBar();
    void connectSidebar();
    void connectTabs();
    void connectConnection();
    void onClientChanged(Client *client);
    void onListed(const QList<SandboxInfo> &sandboxes, const QStringList &failedKinds);
    void restoreTabs();
    void updateActions();
    void applyFilter();
    void updateWelcome();
    void updateTab(SandboxWorkspace *ws);
    void updateTitle();
    void showError(const QString &message);
    std::optional<SandboxInfo> selectedSandbox() const;
    void applyLifecycle(const QString &verb, const QString &id);
    // The agent's CLI is not on the engine: asks, installs it with its progress, then creates.
    void offerCliInstall(const AgentCliInfo &cli, const AgentCreateOptions &options);
    void createAgentNow(const AgentCreateOptions &options);
    QString settingsGroup() const;

    ConnectionManager *m_connection;
    const SandboxPageRegistry *m_registry;
    ProfileStore *m_profiles;
    SecretStore *m_secrets;
    SandboxListModel *m_model;
    SandboxPoller *m_poller;
    QTreeView *m_sidebar;
    QLineEdit *m_filter;
    QDockWidget *m_sidebarDock;
    QStackedWidget *m_central;
    QLabel *m_welcome;
    QTabWidget *m_tabs;
    ConnectionStatus *m_status;
    QPointer<Client> m_client;
    QPointer<DoctorDialog> m_doctor;
    AgentDashboard *m_dashboard = nullptr; // per connection; a tab while shown
    RunNotifier *m_notifier;               // owned (child)
    QString m_sessionKey = QStringLiteral("local");
    bool m_restorePending = false;
    bool m_restoring = false;
    bool m_closing = false;
};

} // namespace Sandbox::Ui
