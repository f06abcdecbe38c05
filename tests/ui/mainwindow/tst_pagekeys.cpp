// Keys belong to the page that has the focus: Ctrl+Enter runs the SQL statement in the SQL
// editor and sends the prompt in the agent page (not the console's command), Ctrl+Shift+Enter on
// a sleeping database runs the script (not "Start Sandbox"), and the console and the sandbox list
// keep their own keys. Real window, real engine, key presses through QTest.
#include <uitest.h>

#include <agents/agentsessionview.h>
#include <agents/agenttranscriptmodel.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <console/commandline.h>
#include <console/consolebuffer.h>
#include <console/consolepage.h>
#include <console/consoleview.h>
#include <mainwindow/mainwindow.h>
#include <mainwindow/sandboxlistmodel.h>
#include <mainwindow/sandboxpoller.h>
#include <sql/resultview.h>
#include <sql/sqlconsole.h>
#include <sql/sqleditor.h>
#include <workspace/sandboxpageregistry.h>
#include <workspace/sandboxworkspace.h>

#include <QAction>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QTreeView>

using namespace Sandbox;
using namespace Sandbox::Ui;

class TestPageKeys final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        registerDefaultPages(m_registry);
        m_secrets = std::make_unique<SecretStore>(SecretStore::Backend::File,
                                                  UiTest::settingsDir()
                                                      + QStringLiteral("/keys.json"));
        m_window = std::make_unique<MainWindow>(&m_connection, &m_registry, &m_profiles,
                                                m_secrets.get());
        m_window->resize(1280, 800);
        m_window->show();
        m_window->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        QSignalSpy listed(m_window.get(), &MainWindow::sandboxesListed);
        m_window->connectWith(m_engine.localProfile(), QStringLiteral("keys"));
        QVERIFY(listed.wait(15000));
    }

    void ctrlEnterRunsTheStatementInTheSqlEditor()
    {
        SqlConsole *sql = openDatabase(QStringLiteral("keys-db"), std::nullopt);
        QVERIFY(sql);
        // The name asked for is the name kept (not "postgres" or the id).
        QCOMPARE(m_window->currentWorkspace()->title(), QStringLiteral("keys-db"));
        ConsolePage *console = currentConsole();
        QVERIFY(console);
        const qint64 consoleLines = console->view()->buffer().lineCount();

        sql->editor()->setText(QStringLiteral("SELECT 41 + 1 AS answer;"));
        sql->editor()->setFocus();
        QVERIFY(sql->editor()->hasFocus());
        QSignalSpy finished(sql, &SqlConsole::runFinished);
        QTest::keyClick(sql->editor(), Qt::Key_Return, Qt::ControlModifier);
        QVERIFY2(finished.wait(30000), "Ctrl+Enter in the SQL editor ran no statement");
        QCOMPARE(sql->results()->count(), 1);
        QCOMPARE(sql->resultAt(0)->model()->index(0, 0).data().toString(), QStringLiteral("42"));
        // The console ran nothing and kept the focus away.
        QVERIFY(!console->isRunning());
        QCOMPARE(console->view()->buffer().lineCount(), consoleLines);
        QVERIFY(sql->editor()->hasFocus());
    }

    void ctrlShiftEnterRunsAllOnASleepingDatabase()
    {
        // A database that goes to sleep after a second of idleness.
        SqlConsole *sql = openDatabase(QStringLiteral("sleepy-db"), 1000);
        QVERIFY(sql);
        const QString id = m_window->currentWorkspace()->sandboxId();
        QVERIFY(UiTest::waitFor(
            [&] {
                const auto s = m_window->sandboxModel()->sandbox(id);
                return s && s->status == QLatin1String("sleeping");
            },
            30000));
        // The sidebar's selection is this database, so "Start Sandbox" is enabled: its key must
        // still not fire from the editor.
        m_window->selectSandbox(id);
        QVERIFY(m_window->action(QStringLiteral("startSandbox"))->isEnabled());

        sql->editor()->setText(QStringLiteral("SELECT 1 AS a;\nSELECT 2 AS b;"));
        sql->editor()->setFocus();
        QSignalSpy finished(sql, &SqlConsole::runFinished);
        QTest::keyClick(sql->editor(), Qt::Key_Return, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY2(finished.wait(60000), "Ctrl+Shift+Enter in the SQL editor ran nothing");
        QCOMPARE(sql->results()->count(), 2);
        QCOMPARE(sql->resultAt(1)->model()->index(0, 0).data().toString(), QStringLiteral("2"));
    }

    void ctrlEnterSendsTheAgentPrompt()
    {
        const auto agent = m_engine.createAgent(QStringLiteral("keys-agent"));
        QVERIFY(agent);
        m_window->poller()->refresh();
        QVERIFY(UiTest::waitFor(
            [&] { return m_window->sandboxModel()->sandbox(agent->id).has_value(); }));
        SandboxWorkspace *ws = m_window->openSandbox(agent->id);
        QVERIFY(ws);
        auto *view = ws->findChild<AgentSessionView *>();
        QVERIFY(view);
        ws->showPage(ws->page(QStringLiteral("agent-session")));
        ConsolePage *console = currentConsole();
        const qint64 consoleLines = console->view()->buffer().lineCount();

        view->promptEdit()->setFocus();
        QTest::keyClicks(view->promptEdit(), QStringLiteral("hello"));
        const int rows = view->transcript()->rowCount();
        QTest::keyClick(view->promptEdit(), Qt::Key_Return, Qt::ControlModifier);
        // Sent: the prompt is in the transcript and the box is empty again (the run itself
        // fails at once here: this sandbox has no network).
        QVERIFY2(UiTest::waitFor([&] { return view->transcript()->rowCount() > rows; }, 5000),
                 "Ctrl+Enter in the agent's prompt sent nothing");
        QVERIFY(view->promptEdit()->toPlainText().isEmpty());
        QCOMPARE(console->view()->buffer().lineCount(), consoleLines);
    }

    void consoleAndSidebarKeepTheirKeys()
    {
        ConsolePage *console = currentConsole();
        QVERIFY(console);
        QVERIFY(UiTest::waitFor([&] { return !console->isRunning(); }, 10000));
        // Nothing runs: Stop Command is disabled.
        QVERIFY(!m_window->action(QStringLiteral("stopCommand"))->isEnabled());
        console->commandLine()->setText(QStringLiteral("sleep 30; echo late"));
        console->focusCommandLine();
        QTest::keyClick(console->commandLine(), Qt::Key_Return, Qt::ControlModifier);
        QVERIFY(UiTest::waitFor([&] { return console->isRunning(); }, 10000));
        QVERIFY(m_window->action(QStringLiteral("stopCommand"))->isEnabled());
        QSignalSpy finished(console, &ConsolePage::runningChanged);
        QTest::keyClick(console->commandLine(), Qt::Key_Period, Qt::ControlModifier);
        QVERIFY(UiTest::waitFor([&] { return !console->isRunning(); }, 15000));
        QVERIFY(!m_window->action(QStringLiteral("stopCommand"))->isEnabled());

        // Ctrl+Shift+X in the sandbox list stops the selected sandbox.
        const QString id = m_window->currentWorkspace()->sandboxId();
        m_window->selectSandbox(id);
        m_window->sidebar()->setFocus();
        QTest::keyClick(m_window->sidebar(), Qt::Key_X, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(UiTest::waitFor(
            [&] {
                return m_window->sandboxModel()->sandbox(id)->status == QLatin1String("stopped");
            },
            20000));
    }

    void cleanupTestCase()
    {
        m_window.reset();
        m_connection.disconnectFromServer();
    }

private:
    SqlConsole *openDatabase(const QString &name, std::optional<qint64> sleepAfterMs)
    {
        QSignalSpy created(m_window.get(), &MainWindow::sandboxCreated);
        DatabaseCreateOptions options;
        options.type = QStringLiteral("sqlite");
        options.size = QStringLiteral("basic");
        options.name = name;
        options.sleepAfterMs = sleepAfterMs;
        m_window->createDatabase(options);
        if (!created.wait(60000))
            return nullptr;
        SandboxWorkspace *ws = m_window->currentWorkspace();
        if (!ws)
            return nullptr;
        ws->showPage(ws->page(QStringLiteral("sql-console")));
        return ws->findChild<SqlConsole *>();
    }

    ConsolePage *currentConsole() const
    {
        SandboxWorkspace *ws = m_window->currentWorkspace();
        return ws ? ws->page<ConsolePage>(QStringLiteral("console")) : nullptr;
    }

    UiTest::Engine m_engine;
    SandboxPageRegistry m_registry;
    ProfileStore m_profiles;
    std::unique_ptr<SecretStore> m_secrets;
    ConnectionManager m_connection;
    std::unique_ptr<MainWindow> m_window;
};

QTEST_MAIN(TestPageKeys)
#include "tst_pagekeys.moc"
