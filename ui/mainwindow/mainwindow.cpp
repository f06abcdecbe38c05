#include "mainwindow.h"

#include "connectionstatus.h"
#include "newsandboxdialog.h"
#include "preferencesdialog.h"
#include "sandboxlistmodel.h"
#include "sandboxpoller.h"

#include "../agents/agentdashboard.h"
#include "../agents/agentproblem.h"
#include "../agents/agentsessionview.h"
#include "../agents/cliinstalldialog.h"
#include "../agents/runnotifier.h"
#include "../common/uistyle.h"
#include "../connection/connectiondialog.h"
#include "../connection/connectionmanager.h"
#include "../connection/profilestore.h"
#include "../connection/secretstore.h"
#include "../console/consolepage.h"
#include "../doctor/doctordialog.h"
#include "../editor/editorpage.h"
#include "../files/filespage.h"
#include "../workspace/sandboxpageregistry.h"
#include "../workspace/sandboxworkspace.h"

#include <client/client.h>
#include <protocol/sandboxenums.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QLoggingCategory>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QTreeView>
#include <QVBoxLayout>

Q_LOGGING_CATEGORY(lcMainWindow, "sandbox.ui.mainwindow", QtInfoMsg)

namespace Sandbox::Ui {

namespace {
const char *kSidebarId = "sandboxes";
}

MainWindow::MainWindow(ConnectionManager *connection, const SandboxPageRegistry *registry,
                       ProfileStore *profiles, SecretStore *secrets, QWidget *parent)
    : QMainWindow(parent)
    , m_connection(connection)
    , m_registry(registry)
    , m_profiles(profiles)
    , m_secrets(secrets)
    , m_model(new SandboxListModel(this))
    , m_poller(new SandboxPoller(this))
    , m_sidebar(new QTreeView(this))
    , m_filter(new QLineEdit(this))
    , m_sidebarDock(new QDockWidget(tr("Sandboxes"), this))
    , m_central(new QStackedWidget(this))
    , m_welcome(new QLabel(this))
    , m_tabs(new QTabWidget(this))
    , m_status(new ConnectionStatus(connection, this))
    , m_notifier(new RunNotifier(this))
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("Sandbox Desktop"));
    resize(1280, 800);

    makeSidebar();
    makeSidebarFilter();
    makeSidebarDock();
    makeCentre();
    createActions();
    createMenus();
    connectSidebar();
    connectTabs();
    connectConnection();
    onClientChanged(m_connection->client());
    updateActions();
}

void MainWindow::makeSidebar()
{
    m_sidebar->setModel(m_model);
    m_sidebar->setObjectName(QString::fromLatin1(kSidebarId));
    m_sidebar->setUniformRowHeights(true);
    m_sidebar->setSelectionMode(QAbstractItemView::SingleSelection);
    m_sidebar->setContextMenuPolicy(Qt::CustomContextMenu);
    m_sidebar->setRootIsDecorated(true);
    m_sidebar->setAllColumnsShowFocus(true);
    m_sidebar->header()->setStretchLastSection(false);
    m_sidebar->header()->setSectionResizeMode(SandboxListModel::NameColumn, QHeaderView::Stretch);
    m_sidebar->header()->setSectionResizeMode(SandboxListModel::TypeColumn,
                                              QHeaderView::ResizeToContents);
    // The names get the room: the type is in each row's tooltip.
    m_sidebar->setColumnHidden(SandboxListModel::TypeColumn, true);
    m_sidebar->header()->setSectionResizeMode(SandboxListModel::StatusColumn,
                                              QHeaderView::ResizeToContents);
    m_sidebar->expandAll();
    connect(m_model, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex &parent) {
        if (parent.isValid())
            m_sidebar->expand(parent);
    });
}

// Above the list: a filter on names, ids, types and statuses (every word must match).
void MainWindow::makeSidebarFilter()
{
    m_filter->setObjectName(QStringLiteral("sandboxFilter"));
    m_filter->setPlaceholderText(tr("Filter (Ctrl+Shift+F)"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setMaxLength(200);
    connect(m_filter, &QLineEdit::textChanged, this, &MainWindow::applyFilter);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, &MainWindow::applyFilter);
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, &MainWindow::applyFilter);
    connect(m_model, &QAbstractItemModel::modelReset, this, &MainWindow::applyFilter);
    connect(m_model, &QAbstractItemModel::dataChanged, this, &MainWindow::applyFilter);
    connect(m_filter, &QLineEdit::returnPressed, this, [this] {
        // Enter: to the first sandbox shown.
        for (int g = 0; g < m_model->rowCount(); ++g) {
            const QModelIndex group = m_model->index(g, 0);
            for (int r = 0; r < m_model->rowCount(group); ++r) {
                if (m_sidebar->isRowHidden(r, group))
                    continue;
                m_sidebar->setCurrentIndex(m_model->index(r, 0, group));
                m_sidebar->setFocus();
                return;
            }
        }
    });
    auto *clearFilter = new QAction(m_filter);
    clearFilter->setShortcut(QKeySequence(Qt::Key_Escape));
    clearFilter->setShortcutContext(Qt::WidgetShortcut);
    connect(clearFilter, &QAction::triggered, this, [this] {
        m_filter->clear();
        m_sidebar->setFocus();
    });
    m_filter->addAction(clearFilter);
}

void MainWindow::makeSidebarDock()
{
    auto *sidebarPane = new QWidget(this);
    auto *sidebarLayout = new QVBoxLayout(sidebarPane);
    sidebarLayout->setContentsMargins(0, 0, 0, 0);
    sidebarLayout->setSpacing(2);
    sidebarLayout->addWidget(m_filter);
    sidebarLayout->addWidget(m_sidebar, 1);
    m_sidebarDock->setObjectName(QStringLiteral("sidebarDock"));
    m_sidebarDock->setWidget(sidebarPane);
    m_sidebarDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable
                               | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::LeftDockWidgetArea, m_sidebarDock);
    // Narrow enough that a 1024 px window leaves the sandbox's pages the room; the user's width
    // is kept with the window's state.
    m_sidebar->setMinimumWidth(120);
    resizeDocks({m_sidebarDock}, {220}, Qt::Horizontal);
}

// Centre: a welcome text until a sandbox is opened, then one tab per sandbox; below it the
// status bar.
void MainWindow::makeCentre()
{
    m_welcome->setObjectName(QStringLiteral("welcome"));
    m_welcome->setAlignment(Qt::AlignCenter);
    m_welcome->setWordWrap(true);
    m_tabs->setDocumentMode(true);
    m_tabs->setTabsClosable(true);
    Style::useQuietCloseButtons(m_tabs->tabBar());
    m_tabs->setMovable(true);
    m_tabs->setObjectName(QStringLiteral("sandboxTabs"));
    m_central->addWidget(m_welcome);
    m_central->addWidget(m_tabs);
    setCentralWidget(m_central);

    statusBar()->addPermanentWidget(m_status, 1);
    statusBar()->setSizeGripEnabled(true);
}

// The sidebar: a row opens its sandbox, the actions follow the current row, and a context menu.
void MainWindow::connectSidebar()
{
    connect(m_sidebar, &QTreeView::activated, this, [this](const QModelIndex &index) {
        if (const auto s = m_model->sandboxAt(index))
            openSandbox(s->id);
    });
    connect(m_sidebar->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &MainWindow::updateActions);
    connect(m_sidebar, &QTreeView::customContextMenuRequested, this, [this](const QPoint &pos) {
        const QModelIndex index = m_sidebar->indexAt(pos);
        QMenu menu(this);
        if (m_model->sandboxAt(index)) {
            m_sidebar->setCurrentIndex(index);
            menu.addAction(tr("Open"), this, [this, index] {
                if (const auto s = m_model->sandboxAt(index))
                    openSandbox(s->id);
            });
            menu.addSeparator();
            menu.addAction(action(QStringLiteral("startSandbox")));
            menu.addAction(action(QStringLiteral("stopSandbox")));
            menu.addAction(action(QStringLiteral("renameSandbox")));
            menu.addAction(action(QStringLiteral("deleteSandbox")));
            menu.addSeparator();
        }
        menu.addAction(action(QStringLiteral("newSandbox")));
        menu.addAction(action(QStringLiteral("refreshSandboxes")));
        menu.exec(m_sidebar->viewport()->mapToGlobal(pos));
    });
}

void MainWindow::connectTabs()
{
    connect(m_tabs, &QTabWidget::tabCloseRequested, this, &MainWindow::closeSandboxTab);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] {
        updateTitle();
        updateActions();
        if (auto *ws = currentWorkspace())
            selectSandbox(ws->sandboxId());
    });
}

// The connection's state reaches the poller, the workspaces and the actions; the poller's list
// the sidebar; a run's notification opens its sandbox.
void MainWindow::connectConnection()
{
    connect(m_connection, &ConnectionManager::clientChanged, this, &MainWindow::onClientChanged);
    connect(m_connection, &ConnectionManager::connected, this, [this] {
        m_poller->start();
        for (SandboxWorkspace *ws : workspaces())
            ws->setConnected(true);
        updateActions();
    });
    connect(m_connection, &ConnectionManager::stateChanged, this,
            [this](ConnectionManager::State state) {
                // Listing resumes with connected(); meanwhile nothing is queued up, and what
                // was listed is shown as unknown.
                if (state != ConnectionManager::State::Connected) {
                    m_poller->stop();
                    m_model->setStale(true);
                    for (SandboxWorkspace *ws : workspaces())
                        ws->setConnected(false);
                }
                updateActions();
            });
    connect(m_poller, &SandboxPoller::listed, this, &MainWindow::onListed);
    connect(m_poller, &SandboxPoller::failed, this, [this](const QString &message) {
        if (m_connection->state() == ConnectionManager::State::Connected)
            statusBar()->showMessage(tr("Listing sandboxes failed: %1").arg(message), 5000);
    });
    connect(m_notifier, &RunNotifier::openRequested, this, [this](const QString &id) {
        openSandbox(id);
        raise();
        activateWindow();
    });
}

MainWindow::~MainWindow() = default;

void MainWindow::showAgentDashboard()
{
    if (!m_dashboard)
        return;
    if (m_tabs->indexOf(m_dashboard) < 0) {
        m_tabs->insertTab(0, m_dashboard, tr("Agents"));
        m_tabs->setTabToolTip(0, tr("Every agent session of this connection"));
    }
    m_central->setCurrentWidget(m_tabs);
    m_tabs->setCurrentWidget(m_dashboard);
    m_dashboard->table()->setFocus();
}

QAction *MainWindow::action(const QString &name) const
{
    return findChild<QAction *>(name, Qt::FindDirectChildrenOnly);
}

QAction *MainWindow::makeAction(const char *name, const QString &text, const QKeySequence &key,
                                const std::function<void()> &slot, const QIcon &icon)
{
    auto *a = new QAction(icon, text, this);
    a->setObjectName(QString::fromLatin1(name));
    if (!key.isEmpty()) {
        a->setShortcut(key);
        a->setToolTip(
            QStringLiteral("%1 (%2)").arg(QString(text).remove(u'&').remove(QStringLiteral("…")),
                                          key.toString(QKeySequence::NativeText)));
    }
    connect(a, &QAction::triggered, this, slot);
    addAction(a);
    return a;
}

// The keys of these actions belong to the widget that owns what they act on: the sandbox
// list, the console. Elsewhere (the SQL editor, the agent's prompt) the focused page keeps
// Ctrl+Enter and Ctrl+Shift+Enter for itself.
void MainWindow::scopeAction(QAction *a, QWidget *owner)
{
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    removeAction(a);
    if (owner)
        owner->addAction(a);
}

void MainWindow::createActions()
{
    createSandboxActions();
    createViewActions();
    makeAction("quit", tr("&Quit"), QKeySequence::Quit, [this] { close(); });
    makeAction("systemCheck", tr("&System Check…"), {}, [this] { showSystemCheck(); });
    makeAction("agentDashboard", tr("&Agent Dashboard"),
               QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D), [this] { showAgentDashboard(); });
    makeAction(
        "preferences", tr("&Preferences…"), QKeySequence::Preferences,
        [this] { showPreferences(); },
        Style::icon("preferences-system", QStyle::SP_FileDialogDetailedView, this));
    createEditActions();
}

// Connect, and what acts on the selected sandbox or its console.
void MainWindow::createSandboxActions()
{
    makeAction(
        "connect", tr("&Connect…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O),
        [this] { showConnectionDialog(); },
        Style::icon("network-connect", QStyle::SP_DriveNetIcon, this));
    makeAction(
        "newSandbox", tr("&New Sandbox…"), QKeySequence::New, [this] { newSandbox(); },
        Style::icon("list-add", QStyle::SP_FileDialogNewFolder, this));
    scopeAction(makeAction(
                    "startSandbox", tr("&Start Sandbox"),
                    QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return), [this] { startSelected(); },
                    Style::icon("media-playback-start", QStyle::SP_MediaPlay, this)),
                m_sidebar);
    scopeAction(makeAction(
                    "stopSandbox", tr("S&top Sandbox"),
                    QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_X), [this] { stopSelected(); },
                    Style::icon("media-playback-stop", QStyle::SP_MediaStop, this)),
                m_sidebar);
    QAction *del = makeAction(
        "deleteSandbox", tr("&Delete Sandbox…"), QKeySequence(), [this] { deleteSelected(true); },
        Style::icon("edit-delete", QStyle::SP_TrashIcon, this));
    // Delete only from the sidebar, so that it never competes with the editor's or the file tree's.
    auto *sidebarDelete = new QAction(m_sidebar);
    sidebarDelete->setShortcut(QKeySequence::Delete);
    sidebarDelete->setShortcutContext(Qt::WidgetShortcut);
    connect(sidebarDelete, &QAction::triggered, del, &QAction::trigger);
    m_sidebar->addAction(sidebarDelete);
    QAction *rename = makeAction("renameSandbox", tr("Re&name Sandbox…"), QKeySequence(),
                                 [this] { renameSelected(); });
    // F2 only in the sidebar: in the file tree it renames a file.
    auto *sidebarRename = new QAction(m_sidebar);
    sidebarRename->setShortcut(QKeySequence(Qt::Key_F2));
    sidebarRename->setShortcutContext(Qt::WidgetShortcut);
    connect(sidebarRename, &QAction::triggered, rename, &QAction::trigger);
    m_sidebar->addAction(sidebarRename);
    makeAction(
        "refreshSandboxes", tr("&Refresh"), QKeySequence(Qt::CTRL | Qt::Key_R),
        [this] {
            m_poller->refresh();
            m_connection->refreshQuota();
        },
        Style::icon("view-refresh", QStyle::SP_BrowserReload, this));
    // Added to every console as it opens (openSandbox()).
    scopeAction(makeAction(
                    "runCommand", tr("&Run Command"), QKeySequence(Qt::CTRL | Qt::Key_Return),
                    [this] { runCommand(); },
                    Style::icon("system-run", QStyle::SP_CommandLink, this)),
                nullptr);
    scopeAction(makeAction(
                    "stopCommand", tr("Stop C&ommand"), QKeySequence(Qt::CTRL | Qt::Key_Period),
                    [this] { stopCommand(); },
                    Style::icon("process-stop", QStyle::SP_BrowserStop, this)),
                nullptr);
}

// Moving between tabs and panes, showing and hiding them, closing them.
void MainWindow::createViewActions()
{
    makeAction("nextTab", tr("&Next Sandbox Tab"), QKeySequence(Qt::CTRL | Qt::Key_PageDown),
               [this] { nextTab(); });
    makeAction("previousTab", tr("&Previous Sandbox Tab"), QKeySequence(Qt::CTRL | Qt::Key_PageUp),
               [this] { previousTab(); });
    makeAction("nextPage", tr("Next &File Tab"), QKeySequence(Qt::CTRL | Qt::Key_Tab), [this] {
        if (auto *ws = currentWorkspace())
            ws->cycleDocuments(+1);
    });
    makeAction("previousPage", tr("Previous F&ile Tab"),
               QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Backtab), [this] {
                   if (auto *ws = currentWorkspace())
                       ws->cycleDocuments(-1);
               });
    makeAction("focusConsole", tr("Focus &Console"), QKeySequence(Qt::CTRL | Qt::Key_QuoteLeft),
               [this] {
                   if (auto *ws = currentWorkspace())
                       if (auto *c = ws->page<ConsolePage>(QStringLiteral("console")))
                           c->focusCommandLine();
               });
    makeAction("focusFiles", tr("Focus &Files"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
               [this] {
                   if (auto *ws = currentWorkspace())
                       if (auto *f = ws->page<FilesPage>(QStringLiteral("files")))
                           f->view()->setFocus();
               });
    makeAction("focusSidebar", tr("Focus &Sandbox List"), QKeySequence(Qt::CTRL | Qt::Key_0),
               [this] {
                   m_sidebarDock->show();
                   m_sidebar->setFocus();
               });
    makeAction("filterSandboxes", tr("F&ilter Sandboxes"),
               QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F), [this] {
                   m_sidebarDock->show();
                   m_filter->setFocus();
                   m_filter->selectAll();
               });
    makeAction("toggleFiles", tr("Show/Hide the &File Pane"), QKeySequence(Qt::CTRL | Qt::Key_B),
               [this] {
                   if (auto *ws = currentWorkspace())
                       ws->togglePane(Qt::Horizontal);
               });
    makeAction("toggleConsole", tr("Show/Hide the Co&nsole"), QKeySequence(Qt::CTRL | Qt::Key_J),
               [this] {
                   if (auto *ws = currentWorkspace())
                       ws->togglePane(Qt::Vertical);
               });
    makeAction("closeFile", tr("Close File"), QKeySequence(Qt::CTRL | Qt::Key_W), [this] {
        if (auto *ws = currentWorkspace())
            ws->closeCurrentEditor();
    });
    makeAction("closeSandboxTab", tr("Close Sandbox &Tab"),
               QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W),
               [this] { closeSandboxTab(m_tabs->currentIndex()); });
}

// These act on the focused widget, which handles their keys itself: the menu only shows
// them (a window-wide shortcut would take Ctrl+C from a table or Ctrl+S from an editor).
void MainWindow::createEditActions()
{
    const auto shown = [](QAction *a) {
        a->setShortcutContext(Qt::WidgetShortcut);
        return a;
    };
    shown(makeAction(
        "save", tr("&Save"), QKeySequence::Save,
        [this] {
            if (auto *ws = currentWorkspace())
                if (EditorPage *e = ws->currentEditor())
                    e->save();
        },
        Style::icon("document-save", QStyle::SP_DialogSaveButton, this)));
    const struct
    {
        const char *name;
        const char *text;
        QKeySequence::StandardKey key;
        const char *slot;
    } edits[] = {
        {"undo", QT_TR_NOOP("&Undo"), QKeySequence::Undo, "undo"},
        {"redo", QT_TR_NOOP("&Redo"), QKeySequence::Redo, "redo"},
        {"cut", QT_TR_NOOP("Cu&t"), QKeySequence::Cut, "cut"},
        {"copy", QT_TR_NOOP("&Copy"), QKeySequence::Copy, "copy"},
        {"paste", QT_TR_NOOP("&Paste"), QKeySequence::Paste, "paste"},
        {"selectAll", QT_TR_NOOP("Select &All"), QKeySequence::SelectAll, "selectAll"},
    };
    for (const auto &e : edits) {
        const QByteArray slot(e.slot);
        shown(makeAction(e.name, tr(e.text), e.key, [slot] {
            // Line edits, text edits and QScintilla editors all have these slots.
            if (QWidget *focus = QApplication::focusWidget())
                QMetaObject::invokeMethod(focus, slot.constData());
        }));
    }
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->addAction(action(QStringLiteral("connect")));
    file->addSeparator();
    file->addAction(action(QStringLiteral("save")));
    file->addAction(action(QStringLiteral("closeFile")));
    file->addAction(action(QStringLiteral("closeSandboxTab")));
    file->addSeparator();
    file->addAction(action(QStringLiteral("quit")));

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    edit->setObjectName(QStringLiteral("editMenu"));
    for (const char *name :
         {"undo", "redo", "", "cut", "copy", "paste", "", "selectAll", "", "preferences"}) {
        if (*name)
            edit->addAction(action(QString::fromLatin1(name)));
        else
            edit->addSeparator();
    }
    // Enabled for what has the focus when the menu opens.
    connect(edit, &QMenu::aboutToShow, this, [this] {
        QWidget *focus = QApplication::focusWidget();
        const auto has = [focus](const char *method) {
            return focus && focus->metaObject()->indexOfMethod(method) >= 0;
        };
        action(QStringLiteral("undo"))->setEnabled(has("undo()"));
        action(QStringLiteral("redo"))->setEnabled(has("redo()"));
        action(QStringLiteral("cut"))->setEnabled(has("cut()"));
        action(QStringLiteral("copy"))->setEnabled(has("copy()"));
        action(QStringLiteral("paste"))->setEnabled(has("paste()"));
        action(QStringLiteral("selectAll"))->setEnabled(has("selectAll()"));
    });

    QMenu *sandbox = menuBar()->addMenu(tr("&Sandbox"));
    for (const char *name : {"newSandbox", "startSandbox", "stopSandbox", "renameSandbox",
                             "deleteSandbox", "refreshSandboxes"})
        sandbox->addAction(action(QString::fromLatin1(name)));

    QMenu *console = menuBar()->addMenu(tr("&Console"));
    console->addAction(action(QStringLiteral("runCommand")));
    console->addAction(action(QStringLiteral("stopCommand")));

    createViewMenu();

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(action(QStringLiteral("systemCheck")));
    help->addAction(tr("&About Sandbox Desktop"), this, [this] {
        QMessageBox::about(
            this, tr("About Sandbox Desktop"),
            tr("<h3>Sandbox Desktop %1</h3><p>Coding agents and throw-away databases in isolated "
               "sandboxes, on this computer (sandboxd, bubblewrap) or on a remote endpoint.</p>")
                .arg(QApplication::applicationVersion()));
    });

    createToolBar();
}

void MainWindow::createViewMenu()
{
    QMenu *view = menuBar()->addMenu(tr("&View"));
    for (const char *name : {"nextTab", "previousTab", "nextPage", "previousPage"})
        view->addAction(action(QString::fromLatin1(name)));
    view->addSeparator();
    for (const char *name : {"focusSidebar", "focusFiles", "focusConsole"})
        view->addAction(action(QString::fromLatin1(name)));
    view->addSeparator();
    view->addAction(action(QStringLiteral("agentDashboard")));
    QMenu *notify = view->addMenu(tr("&Notify When an Agent…"));
    notify->setObjectName(QStringLiteral("notifyMenu"));
    for (const auto &[kind, text] :
         {std::pair{RunNotifier::State::Done, tr("Is &Done")},
          std::pair{RunNotifier::State::Failed, tr("&Fails")},
          std::pair{RunNotifier::State::NeedsInput, tr("&Needs Input")}}) {
        QAction *a = notify->addAction(text);
        a->setObjectName(RunNotifier::settingsKey(kind));
        a->setCheckable(true);
        a->setChecked(RunNotifier::isEnabled(kind));
        connect(a, &QAction::toggled, this,
                [kind = kind](bool on) { RunNotifier::setEnabled(kind, on); });
    }
    view->addSeparator();
    view->addAction(action(QStringLiteral("toggleFiles")));
    view->addAction(action(QStringLiteral("toggleConsole")));
    QAction *toggle = m_sidebarDock->toggleViewAction();
    toggle->setText(tr("Sandbox &List"));
    view->addAction(toggle);
}

void MainWindow::createToolBar()
{
    QToolBar *tools = addToolBar(tr("Main"));
    tools->setObjectName(QStringLiteral("mainToolBar"));
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->setIconSize(QSize(16, 16));
    tools->addAction(action(QStringLiteral("connect")));
    tools->addSeparator();
    for (const char *name :
         {"newSandbox", "startSandbox", "stopSandbox", "deleteSandbox", "refreshSandboxes"})
        tools->addAction(action(QString::fromLatin1(name)));
    tools->addSeparator();
    tools->addAction(action(QStringLiteral("runCommand")));
    tools->addAction(action(QStringLiteral("stopCommand")));
}

void MainWindow::showSystemCheck()
{
    if (!m_doctor) {
        m_doctor = new DoctorDialog(this);
        m_doctor->setAttribute(Qt::WA_DeleteOnClose);
        if (!m_connection->engineProgram().isEmpty())
            m_doctor->setProgram(m_connection->engineProgram());
        m_doctor->runCheck();
    }
    m_doctor->show();
    m_doctor->raise();
    m_doctor->activateWindow();
}

void MainWindow::checkSystemOnFirstRun()
{
    const QString key = QStringLiteral("systemCheck/firstRunDone");
    if (QSettings().value(key).toBool())
        return;
    auto *check = new HostCheck(this);
    if (!m_connection->engineProgram().isEmpty())
        check->setProgram(m_connection->engineProgram());
    connect(check, &HostCheck::finished, this, [this, check, key](const Result<HostReport> &r) {
        check->deleteLater();
        QSettings().setValue(key, true);
        if (!r || r->failures == 0 || m_doctor)
            return;
        m_doctor = new DoctorDialog(this);
        m_doctor->setAttribute(Qt::WA_DeleteOnClose);
        if (!m_connection->engineProgram().isEmpty())
            m_doctor->setProgram(m_connection->engineProgram());
        m_doctor->setReport(r);
        m_doctor->show();
    });
    check->run();
}

void MainWindow::connectToProfile(const StoredProfile &profile)
{
    if (profile.local) {
        // A key given in the Connect dialog (an engine run by another user) comes first; else
        // the engine's data directory has it.
        m_secrets->read(profile.secretName(), this, [this, profile](Result<QString> key) {
            connectWith(profile.toConnectionProfile(key ? key.value() : QString()), profile.id);
        });
        return;
    }
    statusBar()->showMessage(tr("Reading the API key of %1…").arg(profile.name));
    m_secrets->read(profile.secretName(), this, [this, profile](Result<QString> key) {
        if (!key) {
            showError(tr("No API key stored for %1 (%2): add it in the Connect dialog.")
                          .arg(profile.name, key.error().message));
            return;
        }
        connectWith(profile.toConnectionProfile(key.value()), profile.id);
    });
}

void MainWindow::connectWith(const ConnectionProfile &profile, const QString &sessionKey)
{
    if (!workspaces().isEmpty())
        saveSession();
    m_sessionKey = sessionKey;
    m_connection->connectTo(profile);
}

void MainWindow::showPreferences()
{
    PreferencesDialog dialog(this);
    connect(&dialog, &PreferencesDialog::connectionSettingsRequested, this,
            &MainWindow::showConnectionDialog, Qt::QueuedConnection);
    dialog.exec();
}

void MainWindow::showConnectionDialog()
{
    for (SandboxWorkspace *ws : workspaces()) {
        if (!ws->maybeClose())
            return;
    }
    ConnectionDialog dialog(m_profiles, m_secrets, m_sessionKey, this);
    if (dialog.exec() == QDialog::Accepted)
        connectToProfile(dialog.chosenProfile());
}

void MainWindow::onClientChanged(Client *client)
{
    if (m_client == client)
        return;
    // Everything shown belonged to the old connection.
    m_poller->stop();
    m_poller->setClient(client);
    while (m_tabs->count() > 0) {
        QWidget *w = m_tabs->widget(0);
        m_tabs->removeTab(0);
        if (w != m_dashboard)
            w->deleteLater();
    }
    // The dashboard (and the notifications it drives) follows every connection, shown or not.
    m_notifier->watch(nullptr);
    if (m_dashboard)
        m_dashboard->deleteLater();
    m_dashboard = nullptr;
    if (client) {
        m_dashboard = new AgentDashboard(client, this);
        m_dashboard->hide();
        m_dashboard->setEndpointName(m_sessionKey);
        m_notifier->watch(m_dashboard->model());
        connect(m_dashboard, &AgentDashboard::openRequested, this,
                [this](const SandboxInfo &s) { openSandbox(s.id); });
    }
    m_central->setCurrentWidget(m_welcome);
    m_model->clear();
    m_client = client;
    m_restorePending = client != nullptr;
    updateActions();
    updateTitle();
}

void MainWindow::onListed(const QList<SandboxInfo> &sandboxes, const QStringList &failedKinds)
{
    QList<SandboxInfo> all = sandboxes;
    // Keep what we knew of the kinds that could not be listed this time.
    for (const SandboxInfo &s : m_model->sandboxes()) {
        if (failedKinds.contains(s.kind))
            all.append(s);
    }
    m_model->setSandboxes(all);
    if (m_dashboard)
        m_dashboard->setSandboxes(all);
    m_model->setStale(false);
    for (SandboxWorkspace *ws : workspaces()) {
        if (const auto s = m_model->sandbox(ws->sandboxId())) {
            if (s->status != ws->sandbox().status || s->name != ws->sandbox().name)
                ws->setSandbox(*s);
        } else if (ws->sandbox().status != QLatin1String("deleted")) {
            SandboxInfo gone = ws->sandbox();
            gone.status = QStringLiteral("deleted");
            ws->setSandbox(gone);
        }
        updateTab(ws);
    }
    if (m_restorePending && failedKinds.isEmpty())
        restoreTabs();
    m_connection->refreshQuota();
    updateActions();
    Q_EMIT sandboxesListed();
}

QString MainWindow::settingsGroup() const
{
    QString key = m_sessionKey;
    key.replace(u'/', u'_');
    return QStringLiteral("session-") + key;
}

void MainWindow::saveSession()
{
    if (m_restoring)
        return;
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    if (!m_client)
        return;
    QJsonArray open;
    for (SandboxWorkspace *ws : workspaces())
        open.append(QJsonObject{{QStringLiteral("id"), ws->sandboxId()},
                                {QStringLiteral("state"), ws->saveState()}});
    settings.beginGroup(settingsGroup());
    settings.setValue(QStringLiteral("openSandboxes"),
                      QString::fromUtf8(QJsonDocument(open).toJson(QJsonDocument::Compact)));
    settings.setValue(QStringLiteral("currentSandbox"),
                      currentWorkspace() ? currentWorkspace()->sandboxId() : QString());
    settings.endGroup();
}

void MainWindow::restoreWindowState()
{
    QSettings settings;
    const QByteArray geometry = settings.value(QStringLiteral("window/geometry")).toByteArray();
    if (!geometry.isEmpty())
        restoreGeometry(geometry);
    const QByteArray state = settings.value(QStringLiteral("window/state")).toByteArray();
    if (!state.isEmpty())
        restoreState(state);
}

void MainWindow::restoreTabs()
{
    m_restorePending = false;
    QSettings settings;
    settings.beginGroup(settingsGroup());
    const QJsonArray open = QJsonDocument::fromJson(
                                settings.value(QStringLiteral("openSandboxes")).toString().toUtf8())
                                .array();
    const QString current = settings.value(QStringLiteral("currentSandbox")).toString();
    settings.endGroup();
    m_restoring = true;
    for (const QJsonValue &v : open) {
        const QJsonObject o = v.toObject();
        const QString id = o.value(QStringLiteral("id")).toString();
        if (!m_model->sandbox(id) || workspace(id))
            continue;
        if (SandboxWorkspace *ws = openSandbox(id))
            ws->restoreState(o.value(QStringLiteral("state")).toObject());
    }
    m_restoring = false;
    if (SandboxWorkspace *ws = workspace(current))
        m_tabs->setCurrentWidget(ws);
    if (m_tabs->count() > 0)
        m_central->setCurrentWidget(m_tabs);
}

QList<SandboxWorkspace *> MainWindow::workspaces() const
{
    QList<SandboxWorkspace *> out;
    for (int i = 0; i < m_tabs->count(); ++i) {
        if (auto *ws = qobject_cast<SandboxWorkspace *>(m_tabs->widget(i)))
            out << ws;
    }
    return out;
}

SandboxWorkspace *MainWindow::workspace(const QString &id) const
{
    for (SandboxWorkspace *ws : workspaces()) {
        if (ws->sandboxId() == id)
            return ws;
    }
    return nullptr;
}

SandboxWorkspace *MainWindow::currentWorkspace() const
{
    return qobject_cast<SandboxWorkspace *>(m_tabs->currentWidget());
}

SandboxWorkspace *MainWindow::openSandbox(const QString &id)
{
    if (SandboxWorkspace *ws = workspace(id)) {
        m_tabs->setCurrentWidget(ws);
        return ws;
    }
    const auto info = m_model->sandbox(id);
    if (!info || !m_client)
        return nullptr;
    auto *ws = new SandboxWorkspace(m_client, *info, *m_registry, m_tabs, m_secrets);
    connect(ws, &SandboxWorkspace::agentFixRequested, this, &MainWindow::fixAgent);
    connect(ws, &SandboxWorkspace::sandboxChanged, this, [this, ws](const SandboxInfo &s) {
        m_model->updateSandbox(s);
        ws->setSandbox(s);
    });
    connect(ws, &SandboxWorkspace::message, this,
            [this](const QString &text) { statusBar()->showMessage(text, 5000); });
    if (auto *console = ws->page<ConsolePage>(QStringLiteral("console"))) {
        console->addAction(action(QStringLiteral("runCommand")));
        console->addAction(action(QStringLiteral("stopCommand")));
        connect(console, &ConsolePage::runningChanged, this, &MainWindow::updateActions);
    }
    const int index = m_tabs->addTab(ws, ws->title());
    updateTab(ws);
    // While a session is restored the tabs stay hidden and none is made current: a shown page
    // loads what it shows, and that would wake a sleeping sandbox (restoreTabs() shows the one
    // that was current at the end).
    if (!m_restoring) {
        m_central->setCurrentWidget(m_tabs);
        m_tabs->setCurrentIndex(index);
    }
    if (const SandboxStatus status = fromWire<SandboxStatus>(info->status);
        status == SandboxStatus::Stopped || status == SandboxStatus::Error)
        statusBar()->showMessage(tr("%1 is %2: start it (Sandbox ▸ Start) to run commands")
                                     .arg(ws->title(), info->status),
                                 8000);
    if (!m_restoring) {
        if (auto *c = ws->page<ConsolePage>(QStringLiteral("console")))
            c->focusCommandLine();
        saveSession();
    }
    return ws;
}

bool MainWindow::closeSandboxTab(int index)
{
    if (m_dashboard && m_tabs->widget(index) == m_dashboard) {
        m_tabs->removeTab(index);
        m_dashboard->hide();
        if (m_tabs->count() == 0)
            m_central->setCurrentWidget(m_welcome);
        updateTitle();
        return true;
    }
    auto *ws = qobject_cast<SandboxWorkspace *>(m_tabs->widget(index));
    if (!ws || !ws->maybeClose())
        return false;
    m_tabs->removeTab(index);
    ws->deleteLater();
    if (m_tabs->count() == 0)
        m_central->setCurrentWidget(m_welcome);
    saveSession();
    updateTitle();
    return true;
}

void MainWindow::selectSandbox(const QString &id)
{
    const QModelIndex index = m_model->indexOf(id);
    if (index.isValid() && m_sidebar->currentIndex().siblingAtColumn(0) != index)
        m_sidebar->setCurrentIndex(index);
}

void MainWindow::updateTab(SandboxWorkspace *ws)
{
    const int i = m_tabs->indexOf(ws);
    if (i < 0)
        return;
    const SandboxInfo &s = ws->sandbox();
    m_tabs->setTabText(i, ws->title());
    m_tabs->setTabIcon(i, Style::statusIcon(s.status));
    m_tabs->setTabToolTip(i, tr("%1 · %2 · %3").arg(s.id, s.type, s.status));
}

void MainWindow::updateTitle()
{
    SandboxWorkspace *ws = currentWorkspace();
    setWindowTitle(ws ? tr("%1 — Sandbox Desktop").arg(ws->title()) : tr("Sandbox Desktop"));
}

std::optional<SandboxInfo> MainWindow::selectedSandbox() const
{
    if (const auto s = m_model->sandboxAt(m_sidebar->currentIndex().siblingAtColumn(0)))
        return s;
    if (SandboxWorkspace *ws = currentWorkspace())
        return m_model->sandbox(ws->sandboxId());
    return std::nullopt;
}

void MainWindow::applyFilter()
{
    // Rows are hidden in the view, so the model's indexes stay the ones every action uses.
    const QStringList words = m_filter->text().split(u' ', Qt::SkipEmptyParts);
    const auto matches = [&words](const SandboxInfo &s) {
        for (const QString &w : words) {
            const bool found = s.name.contains(w, Qt::CaseInsensitive)
                               || s.id.contains(w, Qt::CaseInsensitive)
                               || s.type.contains(w, Qt::CaseInsensitive)
                               || s.status.contains(w, Qt::CaseInsensitive);
            if (!found)
                return false;
        }
        return true;
    };
    for (int g = 0; g < m_model->rowCount(); ++g) {
        const QModelIndex group = m_model->index(g, 0);
        const int rows = m_model->rowCount(group);
        int shown = 0;
        for (int r = 0; r < rows; ++r) {
            const auto s = m_model->sandboxAt(m_model->index(r, 0, group));
            const bool show = words.isEmpty() || (s && matches(*s));
            if (m_sidebar->isRowHidden(r, group) == show)
                m_sidebar->setRowHidden(r, group, !show);
            shown += show ? 1 : 0;
        }
        const bool showGroup = words.isEmpty() || shown > 0;
        if (m_sidebar->isRowHidden(g, {}) == showGroup)
            m_sidebar->setRowHidden(g, {}, !showGroup);
    }
}

void MainWindow::updateWelcome()
{
    // Offers only what can be done now, and says what to do when nothing can.
    QString text;
    switch (m_connection->state()) {
    case ConnectionManager::State::Connected:
        text = m_model->count() == 0
                   ? tr("<h3>No sandboxes yet</h3><p>Create a coding agent or a database with "
                        "<b>Sandbox ▸ New Sandbox…</b> (Ctrl+N).</p>")
                   : tr("<h3>No sandbox open</h3><p>Double-click a sandbox in the list on the "
                        "left (or select it and press Enter) to open its console and files,<br>or "
                        "create one with <b>Ctrl+N</b>.</p>");
        break;
    case ConnectionManager::State::StartingEngine:
    case ConnectionManager::State::Connecting:
        text = tr("<h3>Connecting…</h3>");
        break;
    case ConnectionManager::State::Reconnecting:
        text = tr("<h3>Connection lost</h3><p>Reconnecting to the engine; the sandboxes keep "
                  "running meanwhile.</p>");
        break;
    case ConnectionManager::State::Unauthorized:
    case ConnectionManager::State::Failed:
    case ConnectionManager::State::Disconnected:
        text = tr("<h3>Not connected</h3><p>%1</p><p>Choose or set up an engine with "
                  "<b>File ▸ Connect…</b> (Ctrl+Shift+O).</p>")
                   .arg(m_connection->errorMessage().isEmpty()
                            ? tr("No engine is connected.")
                            : m_connection->errorMessage().toHtmlEscaped());
        break;
    }
    m_welcome->setText(text);
}

void MainWindow::updateActions()
{
    updateWelcome();
    const bool connected = m_connection->state() == ConnectionManager::State::Connected;
    const auto s = selectedSandbox();
    const SandboxStatus status = s ? fromWire<SandboxStatus>(s->status) : SandboxStatus::Unknown;
    action(QStringLiteral("newSandbox"))->setEnabled(connected);
    action(QStringLiteral("startSandbox"))
        ->setEnabled(connected && s && status != SandboxStatus::Running
                     && status != SandboxStatus::Creating);
    action(QStringLiteral("stopSandbox"))
        ->setEnabled(connected && s
                     && (status == SandboxStatus::Running || status == SandboxStatus::Sleeping));
    action(QStringLiteral("deleteSandbox"))->setEnabled(connected && s.has_value());
    action(QStringLiteral("renameSandbox"))->setEnabled(connected && s.has_value());
    action(QStringLiteral("refreshSandboxes"))->setEnabled(connected);
    SandboxWorkspace *ws = currentWorkspace();
    auto *console = ws ? ws->page<ConsolePage>(QStringLiteral("console")) : nullptr;
    action(QStringLiteral("runCommand"))->setEnabled(console != nullptr);
    // Nothing to stop while the console is idle.
    action(QStringLiteral("stopCommand"))->setEnabled(console && console->isRunning());
}

void MainWindow::showError(const QString &message)
{
    qCInfo(lcMainWindow) << message;
    statusBar()->showMessage(message, 15000);
    Q_EMIT errorShown(message);
}

void MainWindow::newSandbox()
{
    if (!m_client)
        return;
    NewSandboxDialog dialog(this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (dialog.isDatabase())
        createDatabase(dialog.databaseOptions());
    else
        createAgent(dialog.agentOptions());
}

void MainWindow::fixAgent(const SandboxInfo &sandbox, int problemKind)
{
    // Each fix acts on the sandbox that has the problem, in place.
    const auto kind = AgentProblem::Kind(problemKind);
    if (kind == AgentProblem::Kind::NoNetwork) {
        // In place (sandbox.setNetwork, docs/protocol.md 3.5): the same sandbox, its files and
        // its conversation, now with the public internet; its Network page narrows it down.
        if (!m_client)
            return;
        const QString id = sandbox.id;
        m_client->sandboxes()
            .setNetwork(id, NetworkPolicy::publicInternet(), this,
                        [this, id](Result<SandboxInfo> r) {
                            if (!r)
                                return showError(
                                    tr("Cannot turn the network on: %1").arg(r.error().message));
                            m_model->updateSandbox(r.value());
                            if (SandboxWorkspace *ws = workspace(id)) {
                                ws->setSandbox(r.value());
                                if (SandboxPage *network = ws->page(QStringLiteral("network")))
                                    ws->showPage(network);
                            }
                            statusBar()
                                ->showMessage(tr("%1 has network now: send the prompt again.")
                                                  .arg(r->name.isEmpty() ? r->id : r->name),
                                              8000);
                            Q_EMIT networkTurnedOn(id);
                        })
            .detach();
        return;
    }
    if (kind == AgentProblem::Kind::NoCli) {
        // Installed on the engine, then the sandbox restarts to get it at /opt/agent.
        if (!m_client)
            return;
        const QString id = sandbox.id;
        m_client->agents()
            .clis(this,
                  [this, id, type = sandbox.type](Result<QList<AgentCliInfo>> r) {
                      if (!r)
                          return showError(r.error().message);
                      for (const AgentCliInfo &cli : r.value()) {
                          if (cli.type != type)
                              continue;
                          const auto restart = [this, id] {
                              if (!m_client)
                                  return;
                              m_client->sandboxes()
                                  .stop(id, this,
                                        [this, id](Result<SandboxInfo>) {
                                            applyLifecycle(QStringLiteral("start"), id);
                                        })
                                  .detach();
                          };
                          if (cli.installed)
                              return restart();
                          auto *dialog = new CliInstallDialog(m_client->agents(), cli, this);
                          connect(dialog, &CliInstallDialog::installed, this, restart);
                          connect(dialog, &CliInstallDialog::failed, this,
                                  [this, cli](const QString &message) {
                                      showError(tr("%1 could not be installed: %2")
                                                    .arg(cli.name, message));
                                  });
                          dialog->start();
                          return;
                      }
                  })
            .detach();
        return;
    }
    // A missing model key and a refused host are fixed by the agent page itself, for its
    // sandbox (AgentSessionView::setModelKey, sandbox.setNetwork).
}

void MainWindow::createAgent(const AgentCreateOptions &options)
{
    if (!m_client)
        return;
    // The engine runs the CLIs it has; one it does not have yet is offered first (it installs
    // it from npm, docs/protocol.md 4.7.3), then the agent is created.
    statusBar()->showMessage(tr("Creating a %1 sandbox…").arg(options.type));
    m_client->agents()
        .clis(this,
              [this, options](Result<QList<AgentCliInfo>> r) {
                  if (r) {
                      for (const AgentCliInfo &cli : r.value()) {
                          if (cli.type == options.type && !cli.installed && cli.canInstall)
                              return offerCliInstall(cli, options);
                      }
                  }
                  // (An engine without agents.clis runs the CLIs it has: create as before.)
                  createAgentNow(options);
              })
        .detach();
}

void MainWindow::offerCliInstall(const AgentCliInfo &cli, const AgentCreateOptions &options)
{
    if (!m_client)
        return;
    if (!cli.installing) {
        QMessageBox box(QMessageBox::Question, tr("Install %1").arg(cli.name),
                        tr("%1 is not installed on this engine yet.").arg(cli.name),
                        QMessageBox::NoButton, this);
        box.setObjectName(QStringLiteral("cliInstallOffer"));
        box.setInformativeText(
            tr("The engine installs it from npm (%1 %2, about %3 MB) into its data folder, once "
               "for every %4 sandbox; then the sandbox is created.")
                .arg(cli.package, cli.version,
                     QLocale().toString(qRound64(cli.downloadBytes / 1e6)), cli.name));
        QPushButton *install = box.addButton(CliInstallDialog::offerText(cli),
                                             QMessageBox::AcceptRole);
        box.addButton(QMessageBox::Cancel);
        box.setDefaultButton(install);
        box.exec();
        if (box.clickedButton() != install || !m_client) {
            statusBar()->clearMessage();
            return;
        }
    }
    auto *dialog = new CliInstallDialog(m_client->agents(), cli, this);
    connect(dialog, &CliInstallDialog::installed, this, [this, options] {
        statusBar()->showMessage(tr("Creating a %1 sandbox…").arg(options.type));
        createAgentNow(options);
    });
    connect(dialog, &CliInstallDialog::failed, this, [this, cli](const QString &message) {
        statusBar()->clearMessage();
        showError(tr("%1 could not be installed: %2").arg(cli.name, message));
    });
    dialog->start();
}

void MainWindow::createAgentNow(const AgentCreateOptions &options)
{
    if (!m_client)
        return;
    m_client->agents()
        .create(options, this,
                [this](Result<SandboxInfo> r) {
                    if (!r)
                        return showError(tr("Cannot create the sandbox: %1").arg(r.error().message));
                    m_model->updateSandbox(r.value());
                    statusBar()->showMessage(tr("Created %1").arg(r->id), 5000);
                    openSandbox(r->id);
                    m_poller->refresh();
                    Q_EMIT sandboxCreated(r.value());
                })
        .detach();
}

void MainWindow::createDatabase(const DatabaseCreateOptions &options)
{
    if (!m_client)
        return;
    statusBar()->showMessage(tr("Creating a %1 database…").arg(options.type));
    m_client->databases()
        .create(options, this,
                [this](Result<SandboxInfo> r) {
                    if (!r)
                        return showError(
                            tr("Cannot create the database: %1").arg(r.error().message));
                    m_model->updateSandbox(r.value());
                    openSandbox(r->id);
                    m_poller->refresh();
                    Q_EMIT sandboxCreated(r.value());
                })
        .detach();
}

void MainWindow::applyLifecycle(const QString &verb, const QString &id)
{
    if (!m_client)
        return;
    const auto done = [this, verb, id](Result<SandboxInfo> r) {
        if (!r)
            return showError(tr("Cannot %1 %2: %3").arg(verb, id, r.error().message));
        m_model->updateSandbox(r.value());
        if (SandboxWorkspace *ws = workspace(id)) {
            ws->setSandbox(r.value());
            updateTab(ws);
        }
        m_poller->refresh();
        updateActions();
    };
    // sandbox.* works for any kind.
    if (verb == QLatin1String("start"))
        m_client->sandboxes().start(id, this, done).detach();
    else
        m_client->sandboxes().stop(id, this, done).detach();
    statusBar()->showMessage(verb == QLatin1String("start") ? tr("Starting %1…").arg(id)
                                                            : tr("Stopping %1…").arg(id));
}

void MainWindow::startSelected()
{
    if (const auto s = selectedSandbox())
        applyLifecycle(QStringLiteral("start"), s->id);
}

void MainWindow::stopSelected()
{
    if (const auto s = selectedSandbox())
        applyLifecycle(QStringLiteral("stop"), s->id);
}

void MainWindow::renameSelected()
{
    const auto s = selectedSandbox();
    if (!s || !m_client)
        return;
    bool ok = false;
    const QString name
        = QInputDialog::getText(this, tr("Rename Sandbox"),
                                tr("A new name for %1 (%2); empty for none:").arg(s->id, s->type),
                                QLineEdit::Normal, s->name, &ok);
    if (ok)
        renameSandbox(s->id, name.trimmed());
}

void MainWindow::renameSandbox(const QString &id, const QString &name)
{
    if (!m_client)
        return;
    // sandbox.setName works for any kind.
    m_client->rpc()
        ->call(QStringLiteral("sandbox.setName"),
               {{QStringLiteral("id"), id}, {QStringLiteral("name"), name}}, this,
               [this, id](Result<QJsonValue> r) {
                   Result<SandboxInfo> info = r ? SandboxInfo::fromJson(r.value())
                                                : Result<SandboxInfo>(r.error());
                   if (!info)
                       return showError(tr("Cannot rename %1: %2").arg(id, info.error().message));
                   m_model->updateSandbox(info.value());
                   if (SandboxWorkspace *ws = workspace(id)) {
                       ws->setSandbox(info.value());
                       updateTab(ws);
                   }
                   statusBar()->showMessage(info->name.isEmpty()
                                                ? tr("%1 has no name now").arg(id)
                                                : tr("Renamed %1 to %2").arg(id, info->name),
                                            5000);
                   updateTitle();
                   Q_EMIT sandboxRenamed(id);
               })
        .detach();
}

void MainWindow::deleteSelected(bool askFirst)
{
    const auto s = selectedSandbox();
    if (!s || !m_client)
        return;
    const QString id = s->id;
    if (askFirst
        && QMessageBox::question(this, tr("Delete Sandbox"),
                                 tr("Delete %1 (%2) and its /workspace? This cannot be undone.")
                                     .arg(s->name.isEmpty() ? id : s->name, s->type),
                                 QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel)
               != QMessageBox::Yes)
        return;
    if (SandboxWorkspace *ws = workspace(id)) {
        if (!closeSandboxTab(m_tabs->indexOf(ws)))
            return;
    }
    m_client->sandboxes()
        .remove(id, this,
                [this, id, sandbox = *s](Result<QString> r) {
                    if (!r)
                        return showError(tr("Cannot delete %1: %2").arg(id, r.error().message));
                    // A model key set for this sandbox's runs goes with it (none kept: NotFound).
                    m_secrets->remove(AgentSessionView::modelKeyName(sandbox), this,
                                      [](const std::optional<Error> &) {});
                    m_model->removeSandbox(id);
                    statusBar()->showMessage(tr("Deleted %1").arg(id), 5000);
                    m_poller->refresh();
                    updateActions();
                })
        .detach();
}

void MainWindow::runCommand()
{
    SandboxWorkspace *ws = currentWorkspace();
    auto *console = ws ? ws->page<ConsolePage>(QStringLiteral("console")) : nullptr;
    if (!console)
        return;
    console->focusCommandLine();
    console->run(console->commandLineText());
}

void MainWindow::stopCommand()
{
    SandboxWorkspace *ws = currentWorkspace();
    if (auto *console = ws ? ws->page<ConsolePage>(QStringLiteral("console")) : nullptr)
        console->stop();
}

void MainWindow::nextTab()
{
    if (m_tabs->count() > 1)
        m_tabs->setCurrentIndex((m_tabs->currentIndex() + 1) % m_tabs->count());
}

void MainWindow::previousTab()
{
    if (m_tabs->count() > 1)
        m_tabs->setCurrentIndex((m_tabs->currentIndex() + m_tabs->count() - 1) % m_tabs->count());
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    for (SandboxWorkspace *ws : workspaces()) {
        if (!ws->maybeClose()) {
            event->ignore();
            return;
        }
    }
    saveSession();
    m_closing = true;
    event->accept();
}

} // namespace Sandbox::Ui
