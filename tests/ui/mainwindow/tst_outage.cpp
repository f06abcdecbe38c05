// The engine goes away under the window and comes back (restarted on the same data dir): the
// sandbox list shows "unknown" in grey meanwhile, the console stops its clock and then says in
// words what happened to its command; and restoring a session does not wake the sleeping
// sandboxes that had a tab. Real engines, a loopback proxy in front of them.
#include <tcpproxy.h>
#include <uitest.h>

#include <common/uistyle.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <console/consolebuffer.h>
#include <console/consolepage.h>
#include <console/consoleview.h>
#include <mainwindow/mainwindow.h>
#include <mainwindow/sandboxlistmodel.h>
#include <mainwindow/sandboxpoller.h>
#include <workspace/sandboxpageregistry.h>
#include <workspace/sandboxworkspace.h>

#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
bool consoleContains(ConsolePage *console, const QString &text)
{
    const ConsoleBuffer &b = console->view()->buffer();
    for (qint64 i = 0; i < b.lineCount(); ++i) {
        if (b.line(i).text.contains(text))
            return true;
    }
    return false;
}
} // namespace

class TestOutage final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        registerDefaultPages(m_registry);
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        const auto a = m_engine.createAgent(QStringLiteral("outage-a"));
        const auto b = m_engine.createAgent(QStringLiteral("outage-b"));
        QVERIFY(a && b);
        m_a = a->id;
        m_b = b->id;
        m_proxy = std::make_unique<TcpProxy>(m_engine.process().url());
        QVERIFY(m_proxy->listen());
        m_key = m_engine.process().key();
    }

    void theEngineGoesAndComesBack()
    {
        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionManager connection;
        RpcClient::ReconnectPolicy policy;
        policy.initialDelayMs = 200;
        policy.maxDelayMs = 500;
        policy.jitter = 0;
        connection.setReconnectPolicy(policy);
        MainWindow window(&connection, &m_registry, &profiles, &secrets);
        window.resize(1280, 800);
        window.show();
        QSignalSpy listed(&window, &MainWindow::sandboxesListed);
        window.connectWith(ConnectionProfile::remote(m_proxy->url(), m_key),
                           QStringLiteral("outage"));
        QVERIFY(listed.wait(15000));

        SandboxWorkspace *ws = window.openSandbox(m_a);
        QVERIFY(ws);
        window.openSandbox(m_b);
        window.openSandbox(m_a);
        auto *console = ws->page<ConsolePage>(QStringLiteral("console"));
        console->run(QStringLiteral("echo started; sleep 120; echo late"));
        QTRY_VERIFY_WITH_TIMEOUT(consoleContains(console, QStringLiteral("started")), 15000);
        QVERIFY(console->isRunning());
        const auto status = [&] {
            return window.sandboxModel()->indexOf(m_a, SandboxListModel::StatusColumn);
        };
        QCOMPARE(status().data().toString(), QStringLiteral("running"));

        // The engine dies (as a crash would).
        m_engine.process().kill9();
        QTRY_VERIFY_WITH_TIMEOUT(connection.state() != ConnectionManager::State::Connected, 10000);
        // Grey and unknown, not green and running.
        QTRY_COMPARE(status().data().toString(), QStringLiteral("unknown"));
        QCOMPARE(status().data(Qt::ForegroundRole).value<QColor>(), Style::statusColor(QString()));
        // The console says so, in words, and its clock stops.
        QTRY_VERIFY2(console->statusText().startsWith(QLatin1String("connection lost")),
                     qPrintable(console->statusText()));
        QVERIFY(consoleContains(console, QStringLiteral("connection to the engine was lost")));
        QVERIFY(!consoleContains(console, QStringLiteral("[error:")));
        const QString frozen = console->statusText();
        QSignalSpy tick(&connection, &ConnectionManager::stateChanged);
        tick.wait(700); // a few reconnect attempts
        QCOMPARE(console->statusText(), frozen);

        // It comes back, restarted on the same data dir (another port, behind the same proxy).
        QVERIFY2(m_second.start({}, m_engine.process().dataDir()),
                 qPrintable(m_second.process().log()));
        m_proxy->setTarget(m_second.process().url());
        QTRY_COMPARE_WITH_TIMEOUT(connection.state(), ConnectionManager::State::Connected, 15000);
        // No raw "[error: stream … not found]" afterwards; the console is ready again.
        QTRY_VERIFY_WITH_TIMEOUT(!console->isRunning(), 15000);
        QVERIFY(!consoleContains(console, QStringLiteral("[error:")));
        // The list is true again: a restart leaves sandboxes sleeping.
        QTRY_VERIFY_WITH_TIMEOUT(status().data().toString() != QLatin1String("unknown"), 15000);
        window.close(); // saves the session: two tabs, both sandboxes asleep
    }

    void restoringASessionDoesNotWakeSleepingSandboxes()
    {
        // The background tab's sandbox sleeps since the restart (the front one's pages, shown,
        // may have woken it).
        const auto statusOf = [this](const QString &id) {
            const QJsonObject r = m_second.rpc().result(QStringLiteral("sandbox.status"),
                                                        {{QStringLiteral("id"), id}});
            return (r.isEmpty() ? m_second.rpc().lastError().value(QStringLiteral("message"))
                                : r.value(QStringLiteral("status")))
                .toString();
        };
        QCOMPARE(statusOf(m_b), QStringLiteral("sleeping"));

        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionManager connection;
        MainWindow window(&connection, &m_registry, &profiles, &secrets);
        window.resize(1280, 800);
        window.show();
        QSignalSpy listed(&window, &MainWindow::sandboxesListed);
        window.connectWith(ConnectionProfile::remote(m_proxy->url(), m_key),
                           QStringLiteral("outage"));
        QVERIFY(listed.wait(15000));
        // Both tabs are back, the last current one in front.
        QTRY_COMPARE(window.findChild<QTabWidget *>(QStringLiteral("sandboxTabs"))->count(), 2);
        QCOMPARE(window.currentWorkspace()->sandboxId(), m_a);
        // Two more listings: time for anything the restore started to reach the engine.
        QVERIFY(listed.wait(15000));
        QVERIFY(listed.wait(15000));
        // The tab in the background did not wake its sandbox.
        QCOMPARE(statusOf(m_b), QStringLiteral("sleeping"));
    }

    void cleanupTestCase() { m_proxy.reset(); }

private:
    UiTest::Engine m_engine;
    EngineFixture m_second; // the engine restarted on the first one's data dir
    std::unique_ptr<TcpProxy> m_proxy;
    SandboxPageRegistry m_registry;
    QString m_key;
    QString m_a;
    QString m_b;
};

QTEST_MAIN(TestOutage)
#include "tst_outage.moc"
