// The main window against a real sandboxd: connected status with version and quota, a sandbox
// created from the window with its console and files, stop/start/delete with the sidebar's live
// status, keyboard shortcuts, an extra page registered by kind, the agent dashboard as a tab,
// the open tabs and files back after a restart, and the sidebar's filter.
#include <uitest.h>

#include <agents/agentdashboard.h>
#include <agents/agentdashboardmodel.h>
#include <agents/agentproblem.h>
#include <agents/agentsessionview.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <console/commandline.h>
#include <console/consolebuffer.h>
#include <console/consolepage.h>
#include <console/consoleview.h>
#include <editor/editorpage.h>
#include <files/filespage.h>
#include <files/filetreemodel.h>
#include <mainwindow/connectionstatus.h>
#include <mainwindow/mainwindow.h>
#include <mainwindow/sandboxlistmodel.h>
#include <mainwindow/sandboxpoller.h>
#include <workspace/sandboxpageregistry.h>
#include <workspace/sandboxworkspace.h>

#include <Qsci/qsciscintilla.h>

#include <QAbstractButton>
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QTreeView>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
// An extra page for agent sandboxes only, as the agent-session view will register one.
class NotesPage final : public SandboxPage
{
public:
    using SandboxPage::SandboxPage;
    QString title() const override { return QStringLiteral("Notes"); }
};

class NotesFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("notes"); }
    QString title() const override { return QStringLiteral("Notes"); }
    Area area() const override { return Area::Documents; }
    bool appliesTo(const SandboxInfo &s) const override { return s.kind == QLatin1String("agent"); }
    SandboxPage *create(const SandboxPageContext &c, QWidget *parent) const override
    {
        return new NotesPage(c, parent);
    }
};

bool consoleHas(ConsolePage *console, const QString &text)
{
    const ConsoleBuffer &b = console->view()->buffer();
    for (qint64 i = 0; i < b.lineCount(); ++i) {
        if (b.line(i).text == text)
            return true;
    }
    return false;
}
} // namespace

class TestMainWindow final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        registerDefaultPages(m_registry);
        m_registry.add(std::make_unique<NotesFactory>());
        m_secrets = std::make_unique<SecretStore>(SecretStore::Backend::File,
                                                  UiTest::settingsDir()
                                                      + QStringLiteral("/keys.json"));
    }

    void connectsAndShowsStatus()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        QVERIFY(
            UiTest::waitFor([&] { return !w->connectionStatus()->quotaText().isEmpty(); }, 10000));
        QCOMPARE(w->connectionStatus()->stateText(),
                 QStringLiteral("Connected to the local engine"));
        QVERIFY(w->connectionStatus()->versionText().contains(QStringLiteral(SANDBOX_VERSION)));
        QVERIFY(w->action(QStringLiteral("newSandbox"))->isEnabled());
        QAbstractItemModelTester tester(w->sandboxModel(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy listed(w.get(), &MainWindow::sandboxesListed);
        QVERIFY(listed.wait(10000));
    }

    void createOpenRunAndEdit()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        QSignalSpy created(w.get(), &MainWindow::sandboxCreated);
        AgentCreateOptions options;
        options.type = QStringLiteral("codex");
        options.size = QStringLiteral("basic");
        options.name = QStringLiteral("from-the-window");
        w->createAgent(options);
        QVERIFY(created.wait(30000));
        const SandboxInfo s = created.first().first().value<SandboxInfo>();
        m_sandboxId = s.id;

        // The sidebar lists it under Agents with its live status; a tab is open for it.
        const QModelIndex row = w->sandboxModel()->indexOf(s.id, SandboxListModel::StatusColumn);
        QVERIFY(row.isValid());
        QCOMPARE(row.parent(), w->sandboxModel()->groupIndex(SandboxListModel::AgentsGroup));
        QCOMPARE(row.data().toString(), QStringLiteral("running"));
        SandboxWorkspace *ws = w->currentWorkspace();
        QVERIFY(ws);
        QCOMPARE(ws->sandboxId(), s.id);
        QCOMPARE(w->sandboxTabs()->tabText(w->sandboxTabs()->currentIndex()),
                 QStringLiteral("from-the-window"));

        // Its pages: console, files, and the page registered for agents.
        auto *console = ws->page<ConsolePage>(QStringLiteral("console"));
        auto *files = ws->page<FilesPage>(QStringLiteral("files"));
        QVERIFY(console);
        QVERIFY(files);
        QVERIFY(ws->page(QStringLiteral("notes")));

        // Type a command and run it with Ctrl+Return (the console's key).
        console->commandLine()->setText(
            QStringLiteral("printf 'print(42)\\n' > hello.py && echo written"));
        QSignalSpy finished(console, &ConsolePage::commandFinished);
        console->focusCommandLine();
        QTest::keySequence(console->commandLine(), QKeySequence(Qt::CTRL | Qt::Key_Return));
        QVERIFY(finished.wait(15000));
        QVERIFY(consoleHas(console, QStringLiteral("written")));

        // The file tree lists it; opening it makes an editor tab.
        files->refresh();
        QVERIFY(UiTest::waitFor(
            [&] { return files->model()->indexOf(QStringLiteral("/workspace/hello.py")).isValid(); },
            10000));
        EditorPage *editor = ws->openFile(QStringLiteral("/workspace/hello.py"));
        QVERIFY(UiTest::waitFor([&] { return editor->state() == EditorPage::State::Text; }, 10000));
        QCOMPARE(editor->editor()->text(), QStringLiteral("print(42)\n"));
        QCOMPARE(ws->currentEditor(), editor);
        QCOMPARE(ws->openFile(QStringLiteral("/workspace/hello.py")), editor); // not twice

        // The agent dashboard: Ctrl+Shift+D shows it as a tab, listing the sandbox; activating
        // its row goes back to the sandbox's tab; closing the dashboard keeps the sandbox's.
        QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
        AgentDashboard *dashboard = w->agentDashboard();
        QVERIFY(dashboard);
        QCOMPARE(w->sandboxTabs()->currentWidget(), dashboard);
        QCOMPARE(w->sandboxTabs()->tabText(w->sandboxTabs()->currentIndex()),
                 QStringLiteral("Agents"));
        QTableView *table = dashboard->table();
        const auto rowOf = [&] {
            for (int i = 0; i < table->model()->rowCount(); ++i) {
                if (table->model()->index(i, 0).data(AgentDashboardModel::IdRole) == s.id)
                    return i;
            }
            return -1;
        };
        QVERIFY(UiTest::waitFor([&] { return rowOf() >= 0; }, 15000));
        QCOMPARE(table->model()->index(rowOf(), AgentDashboardModel::Name).data().toString(),
                 QStringLiteral("from-the-window"));
        QCOMPARE(table->model()->index(rowOf(), AgentDashboardModel::Status).data().toString(),
                 QStringLiteral("idle"));
        Q_EMIT table->activated(table->model()->index(rowOf(), 0));
        QCOMPARE(w->currentWorkspace(), ws);
        QVERIFY(w->closeSandboxTab(w->sandboxTabs()->indexOf(dashboard)));
        QCOMPARE(w->sandboxTabs()->indexOf(dashboard), -1);
        QCOMPARE(w->currentWorkspace(), ws);

        w->saveSession();
    }

    void tabsAndFilesComeBackAfterARestart()
    {
        QVERIFY(!m_sandboxId.isEmpty());
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor([&] { return w->workspace(m_sandboxId) != nullptr; }, 20000));
        SandboxWorkspace *ws = w->workspace(m_sandboxId);
        QVERIFY(UiTest::waitFor([&] { return ws->editors().size() == 1; }, 5000));
        QCOMPARE(ws->editors().first()->path(), QStringLiteral("/workspace/hello.py"));
        QVERIFY(
            UiTest::waitFor([&] { return ws->editors().first()->state() == EditorPage::State::Text; },
                            10000));
    }

    void stopStartAndDeleteFollowTheSidebar()
    {
        QVERIFY(!m_sandboxId.isEmpty());
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor([&] { return w->sandboxModel()->sandbox(m_sandboxId).has_value(); },
                                15000));
        w->selectSandbox(m_sandboxId);
        QVERIFY(w->action(QStringLiteral("stopSandbox"))->isEnabled());
        w->action(QStringLiteral("stopSandbox"))->trigger();
        QVERIFY(UiTest::waitFor(
            [&] {
                return w->sandboxModel()->sandbox(m_sandboxId)->status == QLatin1String("stopped");
            },
            15000));
        QVERIFY(w->action(QStringLiteral("startSandbox"))->isEnabled());
        QVERIFY(!w->action(QStringLiteral("stopSandbox"))->isEnabled());
        // The open tab follows (its icon and its pages know).
        if (SandboxWorkspace *ws = w->workspace(m_sandboxId))
            QCOMPARE(ws->sandbox().status, QStringLiteral("stopped"));

        w->action(QStringLiteral("startSandbox"))->trigger();
        QVERIFY(UiTest::waitFor(
            [&] {
                return w->sandboxModel()->sandbox(m_sandboxId)->status == QLatin1String("running");
            },
            15000));

        // A sandbox stopped elsewhere shows up as stopped by the next poll.
        Client *c = m_engine.client();
        QVERIFY(UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().stop(m_sandboxId, this, cb); }));
        w->poller()->refresh();
        QVERIFY(UiTest::waitFor(
            [&] {
                return w->sandboxModel()->sandbox(m_sandboxId)->status == QLatin1String("stopped");
            },
            10000));

        // A model key set for the sandbox's runs (the agent page's problem bar) is deleted with it.
        const QString keyName = AgentSessionView::modelKeyName(
            *w->sandboxModel()->sandbox(m_sandboxId));
        bool written = false;
        m_secrets->write(keyName, QStringLiteral("sk-ant-test-0123456789"), this,
                         [&](const std::optional<Error> &e) { written = !e; });
        QVERIFY(UiTest::waitFor([&] { return written; }, 5000));

        w->selectSandbox(m_sandboxId);
        w->deleteSelected(false);
        QVERIFY(UiTest::waitFor([&] { return !w->sandboxModel()->sandbox(m_sandboxId).has_value(); },
                                15000));
        QVERIFY(!w->workspace(m_sandboxId));
        // Asked again until the store answers that the key is gone (one question at a time).
        bool asking = false;
        bool keyGone = false;
        QVERIFY(UiTest::waitFor(
            [&] {
                if (!asking) {
                    asking = true;
                    m_secrets->read(keyName, this, [&](Result<QString> key) {
                        keyGone = !key && key.error().code == ErrorCode::NotFound;
                        asking = false;
                    });
                }
                return keyGone;
            },
            5000));
        const auto gone = UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().status(m_sandboxId, this, cb); });
        QCOMPARE(gone.error().code, ErrorCode::NotFound);
    }

    void keyboardShortcuts()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        QCOMPARE(w->action(QStringLiteral("newSandbox"))->shortcut(),
                 QKeySequence(QKeySequence::New));
        QCOMPARE(w->action(QStringLiteral("runCommand"))->shortcut(),
                 QKeySequence(Qt::CTRL | Qt::Key_Return));
        QCOMPARE(w->action(QStringLiteral("stopCommand"))->shortcut(),
                 QKeySequence(Qt::CTRL | Qt::Key_Period));
        QCOMPARE(w->action(QStringLiteral("nextTab"))->shortcut(),
                 QKeySequence(Qt::CTRL | Qt::Key_PageDown));
        QCOMPARE(w->action(QStringLiteral("previousTab"))->shortcut(),
                 QKeySequence(Qt::CTRL | Qt::Key_PageUp));

        // Two sandboxes open: Ctrl+PgDown and Ctrl+PgUp move between their tabs.
        for (const QString &name : {QStringLiteral("one"), QStringLiteral("two")}) {
            const auto s = m_engine.createAgent(name);
            QVERIFY(s);
        }
        w->poller()->refresh();
        QVERIFY(UiTest::waitFor([&] { return w->sandboxModel()->count() >= 2; }, 10000));
        const QList<SandboxInfo> all = w->sandboxModel()->sandboxes();
        w->openSandbox(all.at(0).id);
        w->openSandbox(all.at(1).id);
        QCOMPARE(w->sandboxTabs()->count(), 2);
        QCOMPARE(w->sandboxTabs()->currentIndex(), 1);
        QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::Key_PageDown));
        QCOMPARE(w->sandboxTabs()->currentIndex(), 0);
        QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::Key_PageUp));
        QCOMPARE(w->sandboxTabs()->currentIndex(), 1);

        // Ctrl+. in the console stops its running command.
        auto *console = w->currentWorkspace()->page<ConsolePage>(QStringLiteral("console"));
        console->run(QStringLiteral("echo go; sleep 60"));
        QVERIFY(UiTest::waitFor([&] { return consoleHas(console, QStringLiteral("go")); }, 10000));
        console->focusCommandLine();
        QTest::keySequence(console->commandLine(), QKeySequence(Qt::CTRL | Qt::Key_Period));
        QVERIFY(UiTest::waitFor([&] { return !console->isRunning(); }, 10000));

        // The extra page appears only where its factory applies.
        QVERIFY(w->currentWorkspace()->page(QStringLiteral("notes")));
    }

    void aTabsCloseButtonClosesThatTab()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor([&] { return w->sandboxModel()->count() >= 2; }, 15000));
        const QList<SandboxInfo> all = w->sandboxModel()->sandboxes();
        const QString first = all.at(0).id;
        const QString second = all.at(1).id;
        for (int i = w->sandboxTabs()->count() - 1; i >= 0; --i)
            w->closeSandboxTab(i);
        w->openSandbox(first);
        w->openSandbox(second);
        QTabBar *bar = w->sandboxTabs()->tabBar();
        // Moved: the button still closes its own tab.
        bar->moveTab(1, 0);
        QCOMPARE(w->sandboxTabs()->widget(0), w->workspace(second));
        const auto side = QTabBar::ButtonPosition(
            bar->style()->styleHint(QStyle::SH_TabBar_CloseButtonPosition, nullptr, bar));
        QTRY_VERIFY(bar->tabButton(1, side)
                    && bar->tabButton(1, side)->objectName() == QLatin1String("quietTabClose"));
        auto *close = qobject_cast<QAbstractButton *>(bar->tabButton(1, side));
        QVERIFY(close);
        // The style's plain close icon (as on docks), not Fusion's red box.
        QCOMPARE(close->icon().pixmap(16).toImage(),
                 bar->style()
                     ->standardIcon(QStyle::SP_TitleBarCloseButton, nullptr, bar)
                     .pixmap(16)
                     .toImage());
        QTest::mouseClick(close, Qt::LeftButton);
        QTRY_VERIFY(!w->workspace(first));
        QVERIFY(w->workspace(second));
        QCOMPARE(w->sandboxTabs()->count(), 1);
    }

    void aSandboxIsRenamed()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor([&] { return w->sandboxModel()->count() >= 1; }, 15000));
        const SandboxInfo s = w->sandboxModel()->sandboxes().constFirst();
        w->openSandbox(s.id);
        w->selectSandbox(s.id);
        auto *tree = w->findChild<QTreeView *>(QStringLiteral("sandboxes"));
        QVERIFY(tree);
        QVERIFY(w->action(QStringLiteral("renameSandbox"))->isEnabled());
        // F2 in the sandbox list asks for the name; the user types one and presses OK.
        QTimer answer;
        answer.setInterval(50);
        connect(&answer, &QTimer::timeout, this, [&answer] {
            if (auto *d = qobject_cast<QInputDialog *>(QApplication::activeModalWidget())) {
                answer.stop();
                d->setTextValue(QStringLiteral("  renamed in the window "));
                d->accept();
            }
        });
        answer.start();
        QSignalSpy renamed(w.get(), &MainWindow::sandboxRenamed);
        tree->setFocus();
        QTest::keyClick(tree, Qt::Key_F2);
        QVERIFY(renamed.count() == 1 || renamed.wait(10000));
        const QString name = QStringLiteral("renamed in the window");
        QCOMPARE(w->sandboxModel()->sandbox(s.id)->name, name);
        const int tab = w->sandboxTabs()->indexOf(w->workspace(s.id));
        QVERIFY2(w->sandboxTabs()->tabText(tab).contains(name),
                 qPrintable(w->sandboxTabs()->tabText(tab)));
        // The engine keeps it: a fresh listing says so too.
        Client *c = m_engine.client();
        const auto status = UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().status(s.id, this, cb); });
        QVERIFY(status);
        QCOMPARE(status->name, name);
        w->poller()->refresh();
        QSignalSpy listed(w.get(), &MainWindow::sandboxesListed);
        QVERIFY(listed.wait(10000));
        QCOMPARE(w->sandboxModel()->sandbox(s.id)->name, name);
    }

    void theSidebarFilters()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        const auto alpha = m_engine.createAgent(QStringLiteral("filter-alpha"),
                                                QStringLiteral("codex"));
        const auto beta = m_engine.createAgent(QStringLiteral("filter-beta"));
        QVERIFY(alpha && beta);
        SandboxListModel *model = w->sandboxModel();
        w->poller()->refresh();
        QVERIFY(
            UiTest::waitFor([&] { return model->sandbox(alpha->id) && model->sandbox(beta->id); },
                            10000));
        auto *tree = w->findChild<QTreeView *>(QStringLiteral("sandboxes"));
        auto *filter = w->findChild<QLineEdit *>(QStringLiteral("sandboxFilter"));
        QVERIFY(tree && filter);
        // Shown: its row and its group's row are in the view.
        const auto shown = [&](const QString &id) {
            const QModelIndex i = model->indexOf(id);
            return i.isValid() && !tree->isRowHidden(i.row(), i.parent())
                   && !tree->isRowHidden(i.parent().row(), {}) && tree->visualRect(i).isValid();
        };
        QVERIFY(shown(alpha->id) && shown(beta->id));

        // Ctrl+Shift+F goes to the filter; what is typed filters, in any case.
        w->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(w.get()));
        QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
        QTRY_COMPARE(QApplication::focusWidget(), filter);
        QTest::keyClicks(filter, QStringLiteral("BETA"));
        QVERIFY(shown(beta->id));
        QVERIFY(!shown(alpha->id));
        // A group with nothing that matches is hidden with its rows.
        QVERIFY(tree->isRowHidden(model->groupIndex(SandboxListModel::DatabasesGroup).row(), {}));

        // Enter: to the sandbox shown, ready for the keyboard.
        QTest::keyClick(filter, Qt::Key_Return);
        QCOMPARE(QApplication::focusWidget(), tree);
        QCOMPARE(model->sandboxAt(tree->currentIndex())->id, beta->id);

        // A sandbox listed while filtering is filtered too.
        const auto gamma = m_engine.createAgent(QStringLiteral("filter-gamma"));
        QVERIFY(gamma);
        w->poller()->refresh();
        QVERIFY(UiTest::waitFor([&] { return model->sandbox(gamma->id).has_value(); }, 10000));
        QVERIFY(!shown(gamma->id));

        // Every word must match: name, type, status or id.
        filter->setText(QStringLiteral("filter CODEX run"));
        QVERIFY(shown(alpha->id));
        QVERIFY(!shown(beta->id));
        QVERIFY(!shown(gamma->id));
        filter->setText(alpha->id);
        QVERIFY(shown(alpha->id));
        QVERIFY(!shown(gamma->id));

        // Escape clears it: everything is back.
        filter->setFocus();
        QTest::keyClick(filter, Qt::Key_Escape);
        QVERIFY(filter->text().isEmpty());
        for (const QString &id : {alpha->id, beta->id, gamma->id})
            QVERIFY(shown(id));
    }

    void noNetworkIsFixedInPlace()
    {
        // An agent without network: the problem bar's fix turns it on for that sandbox (no new
        // sandbox, no dialog), and the engine says so.
        Client *c = m_engine.client();
        AgentCreateOptions o;
        o.type = QStringLiteral("codex");
        o.size = QStringLiteral("basic");
        o.name = QStringLiteral("offline-agent");
        const auto created = UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->agents().create(o, this, cb); });
        QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
        QCOMPARE(created->networkPolicy.mode, NetworkPolicy::Mode::Off);
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor([&] { return w->sandboxModel()->sandbox(created->id).has_value(); },
                                15000));
        const int before = w->sandboxModel()->count();
        const AgentProblem problem = AgentProblem::explain(
            QStringLiteral("the agent cannot reach its model API: sandbox %1 has no network")
                .arg(created->id),
            QStringLiteral("codex"));
        QCOMPARE(problem.fix, QStringLiteral("Turn Network On"));
        QSignalSpy turnedOn(w.get(), &MainWindow::networkTurnedOn);
        w->fixAgent(created.value(), int(problem.kind));
        QVERIFY(turnedOn.wait(15000));
        QCOMPARE(QApplication::activeModalWidget(), nullptr);
        const auto status = UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().status(created->id, this, cb); });
        QVERIFY(status);
        QCOMPARE(status->networkPolicy.mode, NetworkPolicy::Mode::Public);
        QCOMPARE(w->sandboxModel()->sandbox(created->id)->networkPolicy.mode,
                 NetworkPolicy::Mode::Public);
        QCOMPARE(w->sandboxModel()->count(), before);
    }

    void cleanupTestCase() { m_connection.reset(); }

private:
    std::unique_ptr<MainWindow> makeWindow()
    {
        m_connection.reset(); // one connection per window, as in the app
        m_connection = std::make_unique<ConnectionManager>();
        auto w = std::make_unique<MainWindow>(m_connection.get(), &m_registry, &m_profiles,
                                              m_secrets.get());
        w->restoreWindowState();
        w->show();
        w->connectWith(m_engine.localProfile(), QStringLiteral("test-engine"));
        return w;
    }

    UiTest::Engine m_engine;
    SandboxPageRegistry m_registry;
    ProfileStore m_profiles;
    std::unique_ptr<SecretStore> m_secrets;
    std::unique_ptr<ConnectionManager> m_connection;
    QString m_sandboxId;
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
