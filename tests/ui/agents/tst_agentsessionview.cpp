// The agent session view and dashboard, offscreen, driving the real Claude Code CLI in a real
// sandbox through a real sandboxd (mock model API): type a prompt, Send, watch the transcript,
// the totals and the file tree; the turn's changes with their diff, revert and a comment that goes
// with the next prompt; a follow-up continues the session; Stop kills the run.
#include "mockmodelserver.h"
#include "uitest.h"

#include <agents/agentproblem.h>

#include <agents/agentchangesview.h>
#include <agents/agentdashboard.h>
#include <agents/agentdashboardmodel.h>
#include <agents/agentsessionview.h>
#include <agents/agenttranscriptmodel.h>
#include <agents/agenttranscriptview.h>
#include <agents/diffmodel.h>
#include <agents/runnotifier.h>
#include <client/client.h>
#include <common/uistyle.h>
#include <connection/secretstore.h>
#include <files/filetreemodel.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDir>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sys/types.h>

using namespace Sandbox;
using namespace Sandbox::Ui;
using Sandbox::Mocks::MockModelServer;

namespace {

// org.freedesktop.Notifications as a desktop serves it, on the test's own session bus: it keeps
// what it is asked to show and can say that the user clicked one.
class NotificationServer : public QObject
{
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.Notifications")

public:
    struct Shown
    {
        uint id;
        QString summary;
        QString body;
        QStringList actions;
    };
    ~NotificationServer() override
    {
        if (m_bus.isConnected()) {
            m_bus.unregisterService(QStringLiteral("org.freedesktop.Notifications"));
            QDBusConnection::disconnectFromBus(m_bus.name());
        }
    }
    bool start()
    {
        const QString address = qEnvironmentVariable("DBUS_SESSION_BUS_ADDRESS");
        if (address.isEmpty()) {
            why = QStringLiteral("no test session bus");
            return false;
        }
        m_bus = QDBusConnection::connectToBus(address, QStringLiteral("notification-server"));
        if (!m_bus.isConnected()
            || !m_bus.registerObject(QStringLiteral("/org/freedesktop/Notifications"), this,
                                     QDBusConnection::ExportAllSlots
                                         | QDBusConnection::ExportAllSignals)
            || !m_bus.registerService(QStringLiteral("org.freedesktop.Notifications"))) {
            why = m_bus.lastError().message();
            return false;
        }
        return true;
    }

    QList<Shown> notifications;
    QString why;

public Q_SLOTS:
    uint Notify(const QString &, uint, const QString &, const QString &summary, const QString &body,
                const QStringList &actions, const QVariantMap &, int)
    {
        notifications.append({uint(notifications.size() + 1), summary, body, actions});
        return uint(notifications.size());
    }
    QStringList GetCapabilities() { return {QStringLiteral("actions"), QStringLiteral("body")}; }

Q_SIGNALS:
    void ActionInvoked(uint id, const QString &actionKey);
    void NotificationClosed(uint id, uint reason);

private:
    QDBusConnection m_bus{QString()};
};

} // namespace

class tst_AgentSessionView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void sendShowsTheRunLive();
    void changesShowTheTurnRevertAndComment();
    void followUpContinuesTheSession();
    void stopKillsTheRun();
    void allowAndContinueRunsWithTheToolAllowed();
    void reopenedViewShowsPastRuns();
    void dashboardShowsTheSessions();
    void runsStartedElsewhereAreFollowedLive();
    void commitThisTurnCommitsTheTurnsFiles();
    void fileModelLoadsLazily();
    void problemsInTheUsersTermsWithTheirFix();
    void problemWording_data();
    void problemWording();
    void theProblemBarAllowsTheHostAndSetsTheKey();
    void errorCardsSayWhatHappenedWithTheirFix();
    void headerSaysWhereTheNetworkGoes_data();
    void headerSaysWhereTheNetworkGoes();

private:
    QStringList titles() const;
    // Creates an agent sandbox through the client and waits for it (an empty id if it failed).
    SandboxInfo createAgent(const AgentCreateOptions &create);
    // The test sandbox's file at `path`, as agents.stat answers.
    Result<FileEntry> stat(const QString &path);
    // The newest error card of `view`'s transcript since its last prompt (a row's own widget),
    // or null; `row` gets its row.
    static QWidget *lastCard(AgentSessionView &view, int *row = nullptr);
    // Runs `script` in the sandbox (sh -c); its exit code and output.
    std::optional<ExecResult> exec(const QString &script, const QString &cwd = {},
                                   const QString &id = {});

    UiTest::Engine m_engine;
    MockModelServer m_mock;
    Client *m_client = nullptr; // not owned: m_engine's
    SandboxInfo m_sandbox;
    std::unique_ptr<AgentSessionView> m_view;
};

void tst_AgentSessionView::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true); // notification preferences in a test location
    QVERIFY(m_mock.listen());
    QVERIFY2(m_engine.start(
                 {QStringLiteral("--agents-dir"), QStringLiteral(SANDBOX_BINARY_DIR "/agents")}),
             qPrintable(m_engine.process().log()));
    m_client = m_engine.client();
    QCOMPARE(m_client->rpc()->state(), RpcClient::State::Connected);
    AgentCreateOptions create;
    create.type = QStringLiteral("claude-code");
    create.size = QStringLiteral("standard-2");
    create.name = QStringLiteral("ui test");
    // The mock listens on this computer's loopback: only an exact allow entry reaches it.
    create.networkPolicy = NetworkPolicy::off().allowing(
        QStringLiteral("127.0.0.1:%1").arg(m_mock.port()));
    create.env = {{QStringLiteral("ANTHROPIC_API_KEY"), QStringLiteral("sk-ant-ui-test-0000")},
                  {QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}};
    m_sandbox = createAgent(create);
    QVERIFY(!m_sandbox.id.isEmpty());
    m_view = std::make_unique<AgentSessionView>(m_client, m_sandbox);
    m_view->resize(1000, 700);
    m_view->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_view.get()));
    m_view->modelPicker()->setCurrentText(QStringLiteral("claude-sonnet-4-5"));
}

SandboxInfo tst_AgentSessionView::createAgent(const AgentCreateOptions &create)
{
    const auto r = m_engine.createAgent(create);
    if (!r)
        qWarning().noquote() << "agents.create:" << r.error().message;
    return r ? r.value() : SandboxInfo{};
}

Result<FileEntry> tst_AgentSessionView::stat(const QString &path)
{
    return UiTest::call<FileEntry>(
        [&](Callback<FileEntry> done) {
            return m_client->agents().stat(m_sandbox.id, path, this, done);
        },
        10000);
}

QWidget *tst_AgentSessionView::lastCard(AgentSessionView &view, int *row)
{
    auto *list = view.findChild<AgentTranscriptView *>();
    const AgentTranscriptModel *m = view.transcript();
    for (int r = m->rowCount() - 1; list && r >= 0; --r) {
        const QModelIndex i = m->index(r);
        if (AgentTranscriptModel::Kind(i.data(AgentTranscriptModel::KindRole).toInt())
            == AgentTranscriptModel::Kind::Prompt)
            break;
        if (QWidget *card = list->indexWidget(i)) {
            if (row)
                *row = r;
            return card;
        }
    }
    return nullptr;
}

QStringList tst_AgentSessionView::titles() const
{
    QStringList out;
    const AgentTranscriptModel *m = m_view->transcript();
    for (int i = 0; i < m->rowCount(); ++i)
        out.append(m->index(i).data(AgentTranscriptModel::TitleRole).toString() + u'|'
                   + m->index(i).data(AgentTranscriptModel::BodyRole).toString().left(60));
    return out;
}

void tst_AgentSessionView::sendShowsTheRunLive()
{
    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    QTest::keyClicks(m_view->promptEdit(),
                     QStringLiteral("[[remember:heron]] [[write:/workspace/ui.txt|from the UI]]"));
    QTest::mouseClick(m_view->sendButton(), Qt::LeftButton);
    QVERIFY(m_view->isRunning());
    QVERIFY(!m_view->sendButton()->isEnabled());
    QVERIFY(m_view->stopButton()->isEnabled());
    QVERIFY(m_view->promptEdit()->toPlainText().isEmpty());
    QVERIFY(finished.wait(120000));
    QVERIFY(finished.at(0).at(1).value<AgentRunResult>().success);
    QVERIFY(m_view->sendButton()->isEnabled());

    const QStringList t = titles();
    QVERIFY2(t.size() >= 5, qPrintable(t.join(u'\n')));
    QCOMPARE(t.first(),
             QStringLiteral("|[[remember:heron]] [[write:/workspace/ui.txt|from the UI]]"));
    const auto rowStartingWith = [&t](const QString &prefix) {
        for (qsizetype i = 0; i < t.size(); ++i) {
            if (t[i].startsWith(prefix))
                return i;
        }
        return qsizetype(-1);
    };
    const qsizetype call = rowStartingWith(QStringLiteral("Write /workspace/ui.txt|"));
    const qsizetype change = rowStartingWith(QStringLiteral("Created /workspace/ui.txt|"));
    QVERIFY2(call > 0 && change > call, qPrintable(t.join(u'\n')));
    QVERIFY(t.contains(QStringLiteral("|Done: the file is written.")));
    QVERIFY(t.last().startsWith(QLatin1String("Done in ")));
    QVERIFY2(m_view->totalsText().contains(QLatin1String("Cost: $")),
             qPrintable(m_view->totalsText()));
    QVERIFY(!m_view->totalsText().contains(QLatin1String("Tokens: 0 in")));
    QVERIFY(!m_view->sessionId().isEmpty());

    // For a look by a person: SANDBOX_SCREENSHOT_DIR=DIR saves the view as it is now.
    if (const QString dir = qEnvironmentVariable("SANDBOX_SCREENSHOT_DIR"); !dir.isEmpty()) {
        m_view->transcript()->toggleExpanded(int(call));
        QTest::qWait(200); // on purpose: the expanded row's deferred layout settles for the picture
        m_view->grab().save(dir + QStringLiteral("/agent-session-view.png"));
    }

    // The file tree shows the new file.
    FileTreeModel *files = m_view->files();
    QTRY_VERIFY_WITH_TIMEOUT(files->rowCount() > 0, 10000);
    bool found = false;
    for (int i = 0; i < files->rowCount(); ++i)
        found = found
                || files->index(i, 0).data(FileTreeModel::PathRole).toString()
                       == QLatin1String("/workspace/ui.txt");
    QVERIFY(found);
}

void tst_AgentSessionView::changesShowTheTurnRevertAndComment()
{
    AgentChangesView *changes = m_view->changesView();
    QSignalSpy loaded(changes, &AgentChangesView::changesLoaded);
    m_view->showChanges();
    QVERIFY(loaded.wait(30000));
    // The turn made ui.txt: listed, with its diff.
    QCOMPARE(changes->fileList()->count(), 1);
    QCOMPARE(changes->fileList()->item(0)->text(), QStringLiteral("A ui.txt  +1 −0"));
    QVERIFY(
        changes->runPicker()->currentText().contains(QLatin1String("[[write:/workspace/ui.txt")));
    DiffModel *diff = changes->diffModel();
    QCOMPARE(diff->columnCount(), 3);
    QCOMPARE(diff->rowCount(), 2); // the hunk's header, the line
    QVERIFY(diff->index(1, DiffModel::UnifiedText)
                .data()
                .toString()
                .startsWith(QLatin1String("+from the UI")));
    QCOMPARE(diff->index(1, DiffModel::UnifiedNew).data().toString(), QStringLiteral("1"));
    QCOMPARE(diff->index(1, DiffModel::UnifiedText).data(Qt::BackgroundRole).value<QColor>(),
             Style::background(Style::Tone::Success, changes->palette()));
    QTest::mouseClick(changes->sideBySideButton(), Qt::LeftButton);
    QCOMPARE(diff->columnCount(), 4);
    QVERIFY(diff->index(1, DiffModel::NewText)
                .data()
                .toString()
                .startsWith(QLatin1String("from the UI")));
    QVERIFY(diff->index(1, DiffModel::OldText).data().toString().isEmpty());

    // For a look by a person: the review, light and dark.
    if (const QString dir = qEnvironmentVariable("SANDBOX_SCREENSHOT_DIR"); !dir.isEmpty()) {
        const QPalette light = m_view->palette();
        const QSize size = m_view->size();
        for (const QSize &at : {QSize(1400, 900), QSize(720, 520)}) {
            m_view->resize(at);
            const QString suffix = at.width() > 1000 ? QStringLiteral("large")
                                                     : QStringLiteral("small");
            m_view->setPalette(light);
            QTest::qWait(150); // on purpose, for the picture: deferred layouts and repaints settle
            m_view->grab().save(dir + QStringLiteral("/cockpit-diff-light-") + suffix
                                + QStringLiteral(".png"));
            m_view->setPalette(Style::darkPalette());
            QTest::qWait(150); // on purpose, as above
            m_view->grab().save(dir + QStringLiteral("/cockpit-diff-dark-") + suffix
                                + QStringLiteral(".png"));
        }
        m_view->setPalette(light);
        m_view->resize(size);
    }

    // A comment on the line goes above the next prompt, to the model.
    changes->diffView()->setCurrentIndex(diff->index(1, DiffModel::NewText));
    changes->commentEdit()->setText(QStringLiteral("Say it in capitals"));
    QTest::keyClick(changes->commentEdit(), Qt::Key_Return);
    QCOMPARE(changes->comments().size(), 1);
    QVERIFY(changes->commentEdit()->text().isEmpty());
    QVERIFY(diff->index(1, DiffModel::NewNumber).data().toString().startsWith(u'●'));
    QVERIFY(m_view->tabs()->tabText(1).contains(QLatin1String("1 comment")));

    // Revert: the file the turn made is gone.
    QSignalSpy reverted(changes, &AgentChangesView::reverted);
    QVERIFY(changes->revertButton()->isEnabled());
    QTest::mouseClick(changes->revertButton(), Qt::LeftButton);
    QVERIFY(reverted.wait(30000));
    QVERIFY(changes->statusLabel()->text().contains(QLatin1String("deleted")));
    QVERIFY(!changes->revertButton()->isEnabled());
    QCOMPARE(stat(QStringLiteral("/workspace/ui.txt")).error().code, ErrorCode::NotFound);

    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    m_mock.clear();
    QVERIFY(m_view->send(QStringLiteral("Thanks")));
    QVERIFY(finished.wait(120000));
    bool sent = false;
    for (const MockModelServer::Request &r : m_mock.requests())
        sent = sent
               || (r.body.contains("Say it in capitals")
                   && r.body.contains("/workspace/ui.txt:1 (`from the UI"));
    QVERIFY(sent);
    QVERIFY(changes->comments().isEmpty());
    QCOMPARE(m_view->tabs()->tabText(1), QStringLiteral("Changes"));
    // The new turn changed nothing; it is the one shown now.
    QTRY_VERIFY_WITH_TIMEOUT(changes->runPicker()->currentText().contains(QLatin1String("Thanks")),
                             30000);
    QTRY_COMPARE_WITH_TIMEOUT(changes->fileList()->count(), 0, 30000);
    m_view->tabs()->setCurrentIndex(0);
}

void tst_AgentSessionView::followUpContinuesTheSession()
{
    const QString session = m_view->sessionId();
    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    QVERIFY(m_view->send(QStringLiteral("[[recall]]")));
    QVERIFY(finished.wait(120000));
    QCOMPARE(m_view->sessionId(), session);
    QVERIFY(titles().contains(QStringLiteral("|I remember: heron.")));
}

void tst_AgentSessionView::stopKillsTheRun()
{
    QSignalSpy failed(m_view.get(), &AgentSessionView::runFailed);
    const int before = m_mock.modelCallCount();
    QVERIFY(m_view->send(QStringLiteral("[[sleep:300000]] slowly")));
    QTRY_VERIFY_WITH_TIMEOUT(m_mock.modelCallCount() > before && m_mock.openConnections() > 0,
                             60000);
    QTest::mouseClick(m_view->stopButton(), Qt::LeftButton);
    QVERIFY(failed.wait(15000));
    QVERIFY(!m_view->isRunning());
    QVERIFY(m_view->sendButton()->isEnabled());
    QVERIFY(titles().last().startsWith(QLatin1String("Error|Stopped")));
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.openConnections(), 0, 10000);
}

void tst_AgentSessionView::allowAndContinueRunsWithTheToolAllowed()
{
    // Asking for permission in a non-interactive run refuses the write: the run needs the user.
    m_view->permissionPicker()->setCurrentIndex(
        m_view->permissionPicker()->findData(QStringLiteral("default")));
    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    QVERIFY(m_view->send(QStringLiteral("[[write:/workspace/allowed.txt|now allowed]]")));
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.at(0).at(1).value<AgentRunResult>().needsInput.reason,
             AgentNeedsInput::Reason::Permission);
    QTRY_VERIFY(m_view->fixButton()->isVisible());
    QCOMPARE(m_view->fixButton()->text(), QStringLiteral("Allow and continue"));
    QVERIFY(m_view->problemLabel()->text().contains(QLatin1String("Write")));
    // One click: the same prompt again with Write allowed; the file is written.
    QTest::mouseClick(m_view->fixButton(), Qt::LeftButton);
    QVERIFY(m_view->isRunning());
    QVERIFY(finished.wait(120000));
    const AgentRunResult second = finished.at(1).at(1).value<AgentRunResult>();
    QVERIFY2(second.success, qPrintable(second.error));
    QVERIFY(!second.needsInput.isNeeded());
    QVERIFY(!m_view->fixButton()->isVisible());
    QVERIFY(stat(QStringLiteral("/workspace/allowed.txt")));
    m_view->permissionPicker()->setCurrentIndex(0);
}

void tst_AgentSessionView::reopenedViewShowsPastRuns()
{
    // As after a restart of the app: a new connection, a new view of the same sandbox.
    Client client(ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    client.open();
    QTRY_COMPARE(client.rpc()->state(), RpcClient::State::Connected);
    AgentSessionView reopened(&client, m_sandbox);
    QSignalSpy ready(&reopened, &AgentSessionView::historyReady);
    QVERIFY(ready.wait(30000));
    QVERIFY(reopened.historyLoaded());
    QStringList shown;
    const AgentTranscriptModel *m = reopened.transcript();
    for (int i = 0; i < m->rowCount(); ++i)
        shown.append(m->index(i).data(AgentTranscriptModel::TitleRole).toString() + u'|'
                     + m->index(i).data(AgentTranscriptModel::BodyRole).toString().left(60));
    const QStringList live = titles();
    // The same prompts and answers, in the same order, as the view that ran them showed.
    for (const QString &row :
         {QStringLiteral("|[[remember:heron]] [[write:/workspace/ui.txt|from the UI]]"),
          QStringLiteral("|Done: the file is written."), QStringLiteral("|I remember: heron."),
          QStringLiteral("|[[write:/workspace/allowed.txt|now allowed]]")}) {
        QVERIFY2(shown.contains(row), qPrintable(row + u'\n' + shown.join(u'\n')));
        QVERIFY(live.contains(row));
    }
    QVERIFY(shown.indexOf(QStringLiteral("|I remember: heron."))
            > shown.indexOf(QStringLiteral("|Done: the file is written.")));
    // The conversation goes on where it was; the totals count every run.
    QCOMPARE(reopened.sessionId(), m_view->sessionId());
    QVERIFY2(reopened.totalsText().contains(QLatin1String("Cost: $")),
             qPrintable(reopened.totalsText()));
}

void tst_AgentSessionView::dashboardShowsTheSessions()
{
    // The desktop's notification server, on the test's own session bus (main() starts it).
    NotificationServer server;
    QVERIFY2(server.start(), qPrintable(server.why));
    AgentDashboard dashboard(m_client);
    QAbstractItemModelTester tester(dashboard.model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    RunNotifier notifier;
    notifier.watch(dashboard.model());
    dashboard.track(m_view.get());
    QSignalSpy refreshed(&dashboard, &AgentDashboard::refreshed);
    QSignalSpy loaded(&dashboard, &AgentDashboard::runsLoaded);
    dashboard.refresh();
    QVERIFY(refreshed.wait(10000));
    const int row = dashboard.model()->rowOf(m_sandbox.id);
    QVERIFY(row >= 0);
    const auto cell = [&](int column) {
        return dashboard.model()->index(row, column).data().toString();
    };
    QCOMPARE(cell(AgentDashboardModel::Name), QStringLiteral("ui test"));
    QCOMPARE(cell(AgentDashboardModel::Network), QStringLiteral("host network"));
    // The runs of the tests before, from the engine's history.
    QTRY_VERIFY_WITH_TIMEOUT(dashboard.model()->hasHistory(m_sandbox.id), 10000);
    const int runsBefore = cell(AgentDashboardModel::Runs).section(u' ', 0, 0).toInt();
    QVERIFY2(runsBefore >= 2, qPrintable(cell(AgentDashboardModel::Runs)));
    QCOMPARE(server.notifications.size(), 0); // history is not news

    // A run in the session view shows up at once and moves with its events.
    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    QSignalSpy open(&notifier, &RunNotifier::openRequested);
    QVERIFY(m_view->send(QStringLiteral("[[write:/workspace/dash.txt|from the dashboard test]]")));
    QVERIFY(cell(AgentDashboardModel::Status).startsWith(QLatin1String("running a prompt")));
    QCOMPARE(dashboard.model()->totals().running, 1);
    QVERIFY(finished.wait(120000));
    QTRY_COMPARE_WITH_TIMEOUT(cell(AgentDashboardModel::Status), QStringLiteral("done"), 10000);
    QTRY_COMPARE_WITH_TIMEOUT(cell(AgentDashboardModel::Runs).section(u' ', 0, 0).toInt(),
                              runsBefore + 1, 10000);
    QCOMPARE(cell(AgentDashboardModel::Model), QStringLiteral("claude-sonnet-4-5"));
    // The context in use, as the real CLI reported it: a share of the model's window.
    QTRY_VERIFY_WITH_TIMEOUT(cell(AgentDashboardModel::Context).endsWith(u'%'), 10000);
    const double share = dashboard.model()
                             ->index(row, AgentDashboardModel::Context)
                             .data(AgentDashboardModel::ContextRole)
                             .toDouble();
    QVERIFY2(share > 0 && share < 1, qPrintable(QString::number(share)));
    QVERIFY2(cell(AgentDashboardModel::Cost).startsWith(u'$'),
             qPrintable(cell(AgentDashboardModel::Cost)));
    QVERIFY(dashboard.model()
                ->index(row, AgentDashboardModel::Tokens)
                .data(AgentDashboardModel::SortRole)
                .toLongLong()
            > 0);
    QVERIFY(dashboard.model()->totals().costTodayUsd > 0);

    // One desktop notification for it, over D-Bus, naming the session; clicking opens it.
    QTRY_COMPARE_WITH_TIMEOUT(server.notifications.size(), 1, 10000);
    QCOMPARE(server.notifications.at(0).summary, QStringLiteral("ui test: done"));
    QVERIFY(server.notifications.at(0).actions.contains(QStringLiteral("default")));
    Q_EMIT server.ActionInvoked(server.notifications.at(0).id, QStringLiteral("default"));
    QVERIFY(open.wait(5000));
    QCOMPARE(open.at(0).at(0).toString(), m_sandbox.id);

    // The preference turns a kind off.
    RunNotifier::setEnabled(AgentDashboardModel::State::Done, false);
    QVERIFY(!notifier.notify(m_sandbox.id, QStringLiteral("ui test"),
                             AgentDashboardModel::State::Done, QString()));
    RunNotifier::setEnabled(AgentDashboardModel::State::Done, true);
    QVERIFY(notifier.notify(m_sandbox.id, QStringLiteral("<b>ui</b>"),
                            AgentDashboardModel::State::Failed, QStringLiteral("<i>x</i>")));
    QTRY_COMPARE(server.notifications.size(), 2);
    QCOMPARE(server.notifications.at(1).body, QStringLiteral("&lt;i&gt;x&lt;/i&gt;"));

    // Opening from the table.
    QSignalSpy openRow(&dashboard, &AgentDashboard::openRequested);
    Q_EMIT dashboard.table()->activated(dashboard.table()->model()->index(0, 0));
    QCOMPARE(openRow.count(), 1);
    QCOMPARE(openRow.at(0).at(0).value<SandboxInfo>().id, m_sandbox.id);
}

// A run that another client (another window, sandboxctl, another computer) started shows live on
// this client's dashboard and in its session view (stream.watch), before it ends: its state, its
// tokens and its events, while the client that started it keeps getting them too.
void tst_AgentSessionView::runsStartedElsewhereAreFollowedLive()
{
    Client other(ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    other.open();
    QTRY_COMPARE(other.rpc()->state(), RpcClient::State::Connected);
    AgentRunOptions options;
    options.model = QStringLiteral("claude-sonnet-4-5");
    // The first turn ends quickly with its tokens; the second is held by the model until the
    // dashboard and the view below have seen the run live (a fixed 45 s was not always enough on
    // a loaded machine: the run ended first once more in a full run where this suite took 169 s).
    AgentRun *run = other.agents().runConversation(
        m_sandbox.id,
        {QStringLiteral("[[write:/workspace/elsewhere.txt|from another client]]"),
         QStringLiteral("[[hold]] [[write:/workspace/later.txt|later]]")},
        options, this);
    QVERIFY(run);
    QSignalSpy started(run, &AgentRun::started);
    QSignalSpy startedEvents(run, &AgentRun::event);
    QSignalSpy finished(run, &AgentRun::finished);
    QVERIFY(started.wait(30000));

    AgentDashboard dashboard(m_client);
    QAbstractItemModelTester tester(dashboard.model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy refreshed(&dashboard, &AgentDashboard::refreshed);
    dashboard.refresh();
    QVERIFY(refreshed.wait(10000));
    const int row = dashboard.model()->rowOf(m_sandbox.id);
    QVERIFY(row >= 0);
    const auto cell = [&](int column) {
        return dashboard.model()->index(row, column).data().toString();
    };
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.model()->stateAt(row), AgentDashboardModel::State::Running,
                              10000);
    // The first turn's tool call and tokens arrive while the run goes on.
    QTRY_VERIFY_WITH_TIMEOUT(cell(AgentDashboardModel::Status).contains(QLatin1String("Write"))
                                 || cell(AgentDashboardModel::Status)
                                        .contains(QLatin1String("elsewhere.txt")),
                             60000);
    QTRY_VERIFY_WITH_TIMEOUT(dashboard.model()->lastRunAt(row).usage.inputTokens > 0, 60000);
    QVERIFY2(!run->isDone(), "the run ended before the dashboard showed it live");
    QCOMPARE(dashboard.model()->stateAt(row), AgentDashboardModel::State::Running);

    // A session view opened now shows the run going on, its events so far and the live ones.
    AgentSessionView view(m_client, m_sandbox);
    QSignalSpy viewFinished(&view, &AgentSessionView::runFinished);
    QTRY_VERIFY_WITH_TIMEOUT(view.isWatchingRun(), 15000);
    QVERIFY(view.isRunning());
    QVERIFY(view.stopButton()->isEnabled());
    const auto shown = [&view](const QString &prefix) {
        const AgentTranscriptModel *m = view.transcript();
        for (int i = 0; i < m->rowCount(); ++i) {
            if (m->index(i).data(AgentTranscriptModel::TitleRole).toString().startsWith(prefix))
                return true;
        }
        return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(shown(QStringLiteral("Write /workspace/elsewhere.txt")), 15000);
    QVERIFY2(!run->isDone(), "the run ended before the session view showed it live");

    // The end reaches both; the client that started it lost nothing to the watchers.
    m_mock.releaseHeld();
    QVERIFY(finished.wait(120000));
    QVERIFY(finished.at(0).at(0).value<AgentRunResult>().success);
    QTRY_COMPARE_WITH_TIMEOUT(viewFinished.count(), 1, 15000);
    QVERIFY(!view.isRunning());
    QVERIFY(shown(QStringLiteral("Write /workspace/later.txt")));
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.model()->stateAt(row), AgentDashboardModel::State::Done,
                              15000);
    int writes = 0;
    for (const QList<QVariant> &args : std::as_const(startedEvents)) {
        const AgentEvent e = args.at(0).value<AgentEvent>();
        writes += e.type == AgentEvent::Type::ToolCall && e.name == QLatin1String("Write");
    }
    QCOMPARE(writes, 2);
}

std::optional<ExecResult> tst_AgentSessionView::exec(const QString &script, const QString &cwd,
                                                     const QString &id)
{
    std::optional<Result<ExecResult>> r;
    ExecOptions options;
    options.cwd = cwd;
    m_client->agents()
        .exec(id.isEmpty() ? m_sandbox.id : id, Command(script), options, this,
              [&r](Result<ExecResult> result) { r = std::move(result); })
        .detach();
    if (!QTest::qWaitFor([&r] { return r.has_value(); }, 60000))
        return std::nullopt;
    if (!r || !*r)
        return std::nullopt;
    return r->value();
}

void tst_AgentSessionView::commitThisTurnCommitsTheTurnsFiles()
{
    // The workspace (the run's working directory) as a git repository, with a first commit of
    // what is there and a file the user changed by hand (not the turn's: it stays out of the
    // commit).
    const auto init = exec(
        QStringLiteral("set -e; cd /workspace && git init -q -b trunk . && "
                       "git config user.email dev@example.invalid && git config user.name Dev && "
                       "echo mine > mine.txt && git add -A && git commit -qm base && "
                       "echo edited by hand >> mine.txt"));
    QVERIFY(init);
    QVERIFY2(init->exitCode == 0, init->standardError.constData());

    // A turn writes a new file in it.
    QSignalSpy finished(m_view.get(), &AgentSessionView::runFinished);
    QVERIFY(m_view->send(
        QStringLiteral("[[write:/workspace/turn.txt|written by the turn]] add turn.txt")));
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.at(0).at(1).value<AgentRunResult>().success,
             qPrintable(finished.at(0).at(1).value<AgentRunResult>().error));

    AgentChangesView *changes = m_view->changesView();
    m_view->showChanges();
    // (The view reads the runs again when the run ends: wait until the new one is shown.)
    QTRY_VERIFY_WITH_TIMEOUT(changes->runPicker()->currentText().contains(
                                 QLatin1String("/workspace/turn.txt"))
                                 && changes->fileList()->count() == 1
                                 && changes->commitButton()->isEnabled(),
                             30000);
    QVERIFY(changes->fileList()->item(0)->text().contains(QLatin1String("turn.txt")));
    const auto git = changes->findChildren<QLabel *>();
    QVERIFY(std::any_of(git.begin(), git.end(),
                        [](QLabel *l) { return l->text().contains(QLatin1String("git: trunk")); }));

    // The button commits the turn's file, with the prompt as its message, and nothing else.
    QSignalSpy committed(changes, &AgentChangesView::committed);
    QTest::mouseClick(changes->commitButton(), Qt::LeftButton);
    QVERIFY(committed.wait(60000));
    QVERIFY2(committed.at(0).at(0).toBool(), qPrintable(committed.at(0).at(1).toString()));
    QVERIFY(changes->statusLabel()->text().startsWith(QLatin1String("Committed")));
    const auto log = exec(
        QStringLiteral("git log --format='%s|%an' --name-only -1; git log --oneline | wc -l"));
    QVERIFY(log);
    QCOMPARE(QString::fromUtf8(log->standardOutput).trimmed(),
             QStringLiteral("[[write:/workspace/turn.txt|written by the turn]] add "
                            "turn.txt|Dev\n\nturn.txt\n2"));
    const auto status = exec(QStringLiteral("git status --porcelain"));
    QVERIFY(status);
    QCOMPARE(QString::fromUtf8(status->standardOutput), QStringLiteral(" M mine.txt\n"));
}

void tst_AgentSessionView::fileModelLoadsLazily()
{
    // Two levels: only the root is listed until a directory is expanded.
    bool done = false;
    m_client->agents()
        .mkdir(m_sandbox.id, QStringLiteral("/workspace/sub/deeper"), true, this,
               [&done](Result<QString>) { done = true; })
        .detach();
    QTRY_VERIFY(done);
    FileTreeModel model(m_client, m_sandbox.id);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy loaded(&model, &FileTreeModel::directoryLoaded);
    // (The tester itself may already have asked for the root.)
    QCOMPARE(model.rowCount(), 0);
    if (model.canFetchMore({}))
        model.fetchMore({});
    QVERIFY(loaded.wait(10000));
    QModelIndex sub;
    for (int i = 0; i < model.rowCount(); ++i) {
        if (model.index(i, 0).data(FileTreeModel::PathRole).toString()
            == QLatin1String("/workspace/sub"))
            sub = model.index(i, 0);
    }
    QVERIFY(sub.isValid());
    QCOMPARE(model.index(0, 0).data(FileTreeModel::IsDirectoryRole).toBool(),
             true); // directories first
    QVERIFY(model.hasChildren(sub));
    QCOMPARE(model.rowCount(sub), 0); // not listed before it is asked for
    if (model.canFetchMore(sub))
        model.fetchMore(sub);
    QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(sub), 1, 10000);
    QCOMPARE(model.index(0, 0, sub).data(FileTreeModel::PathRole).toString(),
             QStringLiteral("/workspace/sub/deeper"));
    // A reload drops the tree; the answer for the old tree is ignored, the new one fills it once.
    model.reload();
    QCOMPARE(model.rowCount(), 0);
    if (model.canFetchMore({}))
        model.fetchMore({});
    QVERIFY(loaded.wait(10000));
    QStringList paths;
    for (int i = 0; i < model.rowCount(); ++i)
        paths.append(model.index(i, 0).data(FileTreeModel::PathRole).toString());
    QCOMPARE(paths.count(QStringLiteral("/workspace/sub")), 1);
    QCOMPARE(model.rowCount(model.index(int(paths.indexOf(QStringLiteral("/workspace/sub"))), 0)),
             0);
}

void tst_AgentSessionView::problemsInTheUsersTermsWithTheirFix()
{
    // An agent sandbox without network still reaches its model through the engine's gateway
    // (docs/protocol.md 3.5); here the engine itself cannot reach the model's API (no internet
    // in the test machine): the page says so in the user's terms, not the CLI's.
    AgentCreateOptions create;
    create.type = QStringLiteral("claude-code");
    create.size = QStringLiteral("lite");
    create.name = QStringLiteral("offline");
    const SandboxInfo offline = createAgent(create);
    QVERIFY(!offline.id.isEmpty());
    AgentSessionView view(m_client, offline);
    view.resize(900, 600);
    view.show();
    QVERIFY(view.send(QStringLiteral("hello")));
    // Claude Code retries an unreachable API with back-off before it gives up: 20-45 s here.
    QTRY_VERIFY_WITH_TIMEOUT(!view.isRunning(), 120000);
    QTRY_VERIFY(view.problemLabel()->isVisible());
    QVERIFY2(view.problemLabel()->text().contains(QLatin1String("could not reach the model's API")),
             qPrintable(view.problemLabel()->text()));
    QVERIFY(!view.fixButton()->isVisible()); // nothing in the app fixes the computer's internet
    // The API's wording is not what the user reads.
    QVERIFY(!view.problemLabel()->text().contains(QLatin1String("network: true")));
    QVERIFY(!view.problemLabel()->text().contains(QLatin1String("502")));
}

void tst_AgentSessionView::problemWording_data()
{
    QTest::addColumn<QString>("message");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("says");
    QTest::newRow("claude login") << "Invalid API key · Please run /login"
                                  << int(AgentProblem::Kind::NoModelKey) << "ANTHROPIC_API_KEY";
    QTest::newRow("engine: no network")
        << "the agent cannot reach its model API: sandbox sb_1 has no network. Create agent "
           "sandboxes with network: true (they then share the host's network)."
        << int(AgentProblem::Kind::NoNetwork) << "has no network";
    QTest::newRow("gateway: model API unreachable")
        << "API Error: 502 sandbox model gateway: cannot resolve api.anthropic.com: no such name."
        << int(AgentProblem::Kind::ModelUnreachable) << "could not reach the model's API";
    QTest::newRow("engine: the CLI is not installed yet")
        << "Claude Code is not installed on this engine yet: install it with agents.installCli "
           "(sandboxctl agents install-cli claude-code)"
        << int(AgentProblem::Kind::NoCli) << "Install it";
    QTest::newRow("something else")
        << "segmentation fault" << int(AgentProblem::Kind::None) << "segmentation fault";
    QTest::newRow("claude: rate limited")
        << "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}"
        << int(AgentProblem::Kind::RateLimited) << "Wait a minute";
    QTest::newRow("codex: server error")
        << "unexpected status 503 Service Unavailable: upstream connect error"
        << int(AgentProblem::Kind::ModelFailed) << "failed on its side";
    QTest::newRow("claude: overloaded")
        << "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"
        << int(AgentProblem::Kind::ModelFailed) << "failed on its side";
    QTest::newRow("opencode: connection refused")
        << "AI_APICallError: Cannot connect to API: connect ECONNREFUSED 10.0.0.1:443"
        << int(AgentProblem::Kind::ModelUnreachable) << "could not reach the model's API";
    QTest::newRow("a 500-line file is no server error")
        << "the tool read 500 lines and then crashed" << int(AgentProblem::Kind::None)
        << "500 lines";
}

void tst_AgentSessionView::problemWording()
{
    QFETCH(QString, message);
    QFETCH(int, kind);
    QFETCH(QString, says);
    const AgentProblem p = AgentProblem::explain(message, QStringLiteral("claude-code"));
    QCOMPARE(int(p.kind), kind);
    QVERIFY2(p.text.contains(says), qPrintable(p.text));
    if (p.kind != AgentProblem::Kind::None)
        QVERIFY(!p.text.contains(QLatin1String("/login"))
                && !p.text.contains(QLatin1String(": true")));
    QVERIFY(!p.title.isEmpty());
    // A host the network refused during the run explains a failed connection, not a refused key.
    const QStringList denied{QStringLiteral("api.example.com:443")};
    const AgentProblem withHosts = AgentProblem::explain(message, QStringLiteral("claude-code"),
                                                         denied);
    const bool keepsItsKind = p.kind == AgentProblem::Kind::NoModelKey
                              || p.kind == AgentProblem::Kind::NoNetwork
                              || p.kind == AgentProblem::Kind::NoCli
                              || p.kind == AgentProblem::Kind::RateLimited
                              || p.kind == AgentProblem::Kind::ModelFailed
                              || (p.kind == AgentProblem::Kind::ModelUnreachable
                                  && message.contains(QLatin1String("gateway")));
    QCOMPARE(int(withHosts.kind), keepsItsKind ? kind : int(AgentProblem::Kind::HostDenied));
    if (!keepsItsKind) {
        QCOMPARE(withHosts.fix, QStringLiteral("Allow api.example.com:443"));
        QCOMPARE(withHosts.hosts, denied);
    }
}

void tst_AgentSessionView::theProblemBarAllowsTheHostAndSetsTheKey()
{
    // An existing sandbox that has neither an allow entry for its model server (the mock, on
    // this computer's loopback) nor a key, which the mock wants as a provider does. Both are
    // fixed from the agent page's problem bar, for this sandbox, without a new one.
    const QByteArray key = "sk-ant-bar-7f3e91c2";
    m_mock.setRequiredKey(key);
    const auto anyKeyAgain = qScopeGuard([this] { m_mock.setRequiredKey({}); });
    AgentCreateOptions create;
    create.type = QStringLiteral("claude-code");
    create.size = QStringLiteral("lite");
    create.name = QStringLiteral("keyless");
    create.env = {{QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}};
    const SandboxInfo keyless = createAgent(create);
    QVERIFY(!keyless.id.isEmpty());
    QVERIFY(keyless.gateway);
    QTemporaryDir keyring;
    SecretStore secrets(SecretStore::Backend::File, keyring.path() + QStringLiteral("/keys.json"));
    AgentSessionView view(m_client, keyless);
    view.setSecretStore(&secrets);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.modelPicker()->setCurrentText(QStringLiteral("claude-sonnet-4-5"));
    const QString prompt = QStringLiteral("[[write:/workspace/keyed.txt|with a key]]");

    // 1. The network refuses the model server: the bar names it and allows it in place.
    QTest::keyClicks(view.promptEdit(), prompt);
    QTest::mouseClick(view.sendButton(), Qt::LeftButton);
    QVERIFY(view.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!view.isRunning(), 120000);
    const QString entry = QStringLiteral("127.0.0.1:%1").arg(m_mock.port());
    QTRY_VERIFY(view.fixButton()->isVisible());
    QVERIFY2(view.problemLabel()->text().contains(entry), qPrintable(view.problemLabel()->text()));
    QCOMPARE(view.fixButton()->text(), QStringLiteral("Allow ") + entry);
    QVERIFY(UiTest::shoot(&view, QStringLiteral("agent-allowhost")));
    QSignalSpy changed(&view, &AgentSessionView::sandboxChanged);
    QTest::mouseClick(view.fixButton(), Qt::LeftButton);
    QVERIFY(changed.wait(15000));
    const SandboxInfo allowed = changed.first().first().value<SandboxInfo>();
    QCOMPARE(allowed.networkPolicy.allow, QStringList{entry});
    QVERIFY(!view.problemLabel()->isVisible());
    QCOMPARE(view.promptEdit()->toPlainText(), prompt); // one Send away

    // 2. The model server answers now, and refuses a call without a key: the bar asks for it,
    // masked.
    QTest::mouseClick(view.sendButton(), Qt::LeftButton);
    QVERIFY(view.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!view.isRunning(), 120000);
    QTRY_VERIFY(view.fixButton()->isVisible());
    QVERIFY2(view.problemLabel()->text().contains(QLatin1String("ANTHROPIC_API_KEY")),
             qPrintable(view.problemLabel()->text()));
    QCOMPARE(view.fixButton()->text(), QStringLiteral("Set the Model Key…"));
    QVERIFY(UiTest::shoot(&view, QStringLiteral("agent-modelkey")));
    QVERIFY(!view.hasModelKey());
    QTest::mouseClick(view.fixButton(), Qt::LeftButton);
    auto *dialog = view.findChild<QInputDialog *>(QStringLiteral("modelKeyDialog"));
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->isVisible());
    QCOMPARE(dialog->textEchoMode(), QLineEdit::Password);
    auto *field = dialog->findChild<QLineEdit *>();
    QVERIFY(field);
    QTest::keyClicks(field, QString::fromLatin1(key));
    for (const bool dark : {false, true}) {
        const QPalette light = QApplication::palette();
        QApplication::setPalette(dark ? Style::darkPalette() : light);
        QTest::qWait(30); // on purpose: the palette's repaint lands before the picture
        QVERIFY(dialog->grab().save(
            QStringLiteral(SANDBOX_BINARY_DIR "/artefacts/agent-modelkey-dialog-%1.png")
                .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))));
        QApplication::setPalette(light);
    }
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY(view.hasModelKey());
    QVERIFY(!view.problemLabel()->isVisible());
    // Kept in the keyring (here its file stand-in) under this sandbox's name.
    std::optional<Result<QString>> kept;
    secrets.read(AgentSessionView::modelKeyName(keyless), this,
                 [&kept](Result<QString> r) { kept = std::move(r); });
    QTRY_VERIFY(kept.has_value());
    QVERIFY(kept->ok());
    QCOMPARE(kept->value(), QString::fromLatin1(key));

    // 3. The next run reaches the model with the key, and does its work.
    m_mock.clear();
    QSignalSpy finished(&view, &AgentSessionView::runFinished);
    QCOMPARE(view.promptEdit()->toPlainText(), prompt);
    QTest::mouseClick(view.sendButton(), Qt::LeftButton);
    QVERIFY(finished.wait(120000));
    const auto result = finished.first().at(1).value<AgentRunResult>();
    QVERIFY2(result.success, qPrintable(result.error));
    QVERIFY(m_mock.modelCallCount() > 0);
    for (const MockModelServer::Request &r : m_mock.requests()) {
        if (r.method == "POST")
            QCOMPARE(r.headers.value("x-api-key"), key);
    }
    const auto written = exec(QStringLiteral("cat /workspace/keyed.txt"), {}, keyless.id);
    QVERIFY(written);
    QCOMPARE(written->standardOutput.trimmed(), QByteArray("with a key"));

    // 4. The key never entered the sandbox: not in its environment, nor any process's.
    const auto env = exec(QStringLiteral("env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' "
                                         "'\\n'; grep -rs . /home/agent 2>/dev/null | head -c "
                                         "4000000"),
                          {}, keyless.id);
    QVERIFY(env);
    QVERIFY(env->standardOutput.contains("ANTHROPIC_API_KEY=sandbox-model-gateway"));
    QVERIFY(!env->standardOutput.contains(key));

    // 5. The page opened again (after a restart of the app) finds the sandbox's key.
    AgentSessionView again(m_client, keyless);
    again.setSecretStore(&secrets);
    QTRY_VERIFY(again.hasModelKey());
}

void tst_AgentSessionView::errorCardsSayWhatHappenedWithTheirFix()
{
    // The transcript's error cards, from real Claude Code runs against the mock model server:
    // what happened in plain words with the fix in place, the CLI's own words behind Details
    // (selectable, copyable) and nowhere else, and an error nobody knows shown as it is under a
    // generic title.
    const QByteArray key = "sk-ant-card-51d0a7e4";
    m_mock.setRequiredKey(key);
    const auto anyKeyAgain = qScopeGuard([this] { m_mock.setRequiredKey({}); });
    AgentCreateOptions create;
    create.type = QStringLiteral("claude-code");
    create.size = QStringLiteral("lite");
    create.name = QStringLiteral("cards");
    create.env = {{QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}};
    const SandboxInfo sandbox = createAgent(create);
    QVERIFY(!sandbox.id.isEmpty());
    QTemporaryDir keyring;
    SecretStore secrets(SecretStore::Backend::File, keyring.path() + QStringLiteral("/keys.json"));
    AgentSessionView view(m_client, sandbox);
    view.setSecretStore(&secrets);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.modelPicker()->setCurrentText(QStringLiteral("claude-sonnet-4-5"));
    const AgentTranscriptModel *model = view.transcript();
    const auto label = [](QWidget *card, const char *name) {
        auto *l = card->findChild<QLabel *>(QLatin1String(name));
        return l ? l->text() : QStringLiteral("(no %1)").arg(QLatin1String(name));
    };
    const auto run = [&view](const QString &prompt) {
        view.promptEdit()->setPlainText(prompt);
        QTest::mouseClick(view.sendButton(), Qt::LeftButton);
        return view.isRunning() && UiTest::waitFor([&view] { return !view.isRunning(); }, 120000);
    };

    // 1. The network refuses the model server: the card names the host and allows it.
    QVERIFY(run(QStringLiteral("[[write:/workspace/card.txt|carded]]")));
    const QString entry = QStringLiteral("127.0.0.1:%1").arg(m_mock.port());
    int row = -1;
    QWidget *card = lastCard(view, &row);
    QVERIFY2(card, qPrintable(titles().join(u'\n')));
    QVERIFY(card->isVisible());
    QVERIFY2(label(card, "problemTitle").contains(QLatin1String("The network refused a host")),
             qPrintable(label(card, "problemTitle")));
    QVERIFY2(label(card, "problemText").contains(entry), qPrintable(label(card, "problemText")));
    auto *fix = card->findChild<QPushButton *>(QStringLiteral("problemFix"));
    QVERIFY(fix && fix->isVisible());
    QCOMPARE(fix->text(), QStringLiteral("Allow ") + entry);
    // The CLI's words are behind Details, selectable and copyable, and read nowhere else.
    auto *details = card->findChild<QToolButton *>(QStringLiteral("problemDetails"));
    auto *raw = card->findChild<QLabel *>(QStringLiteral("problemRaw"));
    QVERIFY(details && details->isVisible() && raw);
    QVERIFY(!raw->isVisible());
    const QString hostWords = raw->text();
    QVERIFY(!hostWords.isEmpty());
    QVERIFY(!label(card, "problemText").contains(hostWords));
    const int cardHeight = card->height();
    QTest::mouseClick(details, Qt::LeftButton);
    QTRY_VERIFY(raw->isVisible());
    QTRY_VERIFY(card->height() > cardHeight); // the row grew with it: nothing overlaps
    QVERIFY(raw->textInteractionFlags() & Qt::TextSelectableByMouse);
    auto *copy = card->findChild<QPushButton *>(QStringLiteral("problemCopy"));
    QVERIFY(copy && copy->isVisible());
    QTest::mouseClick(copy, Qt::LeftButton);
    QCOMPARE(QGuiApplication::clipboard()->text(), hostWords);
    QVERIFY(UiTest::shoot(&view, QStringLiteral("agent-card-host")));
    QSignalSpy changed(&view, &AgentSessionView::sandboxChanged);
    QTest::mouseClick(fix, Qt::LeftButton);
    QVERIFY(changed.wait(15000));
    QCOMPARE(changed.first().first().value<SandboxInfo>().networkPolicy.allow, QStringList{entry});

    // 2. The model server refuses the call without a key: the card asks for it (one card: the
    // CLI's text, its error event and the failed run say the same thing once).
    QVERIFY(run(QStringLiteral("[[write:/workspace/card.txt|carded]]")));
    card = lastCard(view, &row);
    QVERIFY2(card, qPrintable(titles().join(u'\n')));
    QVERIFY2(label(card, "problemTitle").contains(QLatin1String("No valid model key")),
             qPrintable(label(card, "problemTitle")));
    const QString keyText = label(card, "problemText");
    QVERIFY2(keyText.contains(QLatin1String("ANTHROPIC_API_KEY")), qPrintable(keyText));
    for (const char *api : {"/login", "401", "x-api-key", "Invalid API key"})
        QVERIFY2(!keyText.contains(QLatin1String(api)), qPrintable(keyText));
    const QString keyWords = label(card, "problemRaw");
    QVERIFY(!keyWords.isEmpty());
    int prompt = model->rowCount() - 1;
    while (prompt > 0
           && AgentTranscriptModel::Kind(
                  model->index(prompt).data(AgentTranscriptModel::KindRole).toInt())
                  != AgentTranscriptModel::Kind::Prompt)
        --prompt;
    for (int r = prompt + 1; r < model->rowCount(); ++r) {
        const QString shown = model->index(r).data(AgentTranscriptModel::TitleRole).toString()
                              + u'\n'
                              + model->index(r).data(AgentTranscriptModel::BodyRole).toString();
        QVERIFY2(!shown.contains(keyWords), qPrintable(shown));
    }
    fix = card->findChild<QPushButton *>(QStringLiteral("problemFix"));
    QVERIFY(fix && fix->isVisible());
    QCOMPARE(fix->text(), QStringLiteral("Set the Model Key…"));
    QTest::mouseClick(card->findChild<QToolButton *>(QStringLiteral("problemDetails")),
                      Qt::LeftButton);
    QVERIFY(UiTest::shoot(&view, QStringLiteral("agent-card-modelkey")));
    QTest::mouseClick(fix, Qt::LeftButton);
    auto *dialog = view.findChild<QInputDialog *>(QStringLiteral("modelKeyDialog"));
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->isVisible());
    QCOMPARE(dialog->textEchoMode(), QLineEdit::Password);
    auto *field = dialog->findChild<QLineEdit *>();
    QVERIFY(field);
    QTest::keyClicks(field, QString::fromLatin1(key));
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY(view.hasModelKey());

    // 3. An error the page does not know: its words as they are, under a generic title, with
    // no fix and nothing hidden.
    QVERIFY(run(QStringLiteral("[[fail:418]]")));
    card = lastCard(view, &row);
    QVERIFY2(card, qPrintable(titles().join(u'\n')));
    QVERIFY2(label(card, "problemTitle").contains(QLatin1String("The agent reported an error")),
             qPrintable(label(card, "problemTitle")));
    QVERIFY2(label(card, "problemText").contains(QLatin1String("mock failure 418")),
             qPrintable(label(card, "problemText")));
    QVERIFY(!card->findChild<QPushButton *>(QStringLiteral("problemFix"))->isVisible());
    QVERIFY(!card->findChild<QToolButton *>(QStringLiteral("problemDetails"))->isVisible());
    QVERIFY(card->findChild<QLabel *>(QStringLiteral("problemText"))->textInteractionFlags()
            & Qt::TextSelectableByMouse);
    QVERIFY(UiTest::shoot(&view, QStringLiteral("agent-card-unknown")));
}

// A session bus of the test's own (dbus-daemon), so that notifications go nowhere else.
int main(int argc, char **argv)
{
    FILE *daemon = ::popen("dbus-daemon --session --fork --print-address=1 --print-pid=1", "r");
    char address[512] = {0};
    char pid[32] = {0};
    if (!daemon || !std::fgets(address, sizeof address, daemon)
        || !std::fgets(pid, sizeof pid, daemon)) {
        std::fprintf(stderr, "cannot start dbus-daemon\n");
        return 1;
    }
    ::pclose(daemon);
    QByteArray bus(address);
    ::setenv("DBUS_SESSION_BUS_ADDRESS", bus.trimmed().constData(), 1);
    int status = 0;
    {
        QApplication app(argc, argv);
        tst_AgentSessionView test;
        status = QTest::qExec(&test, argc, argv);
    }
    ::kill(pid_t(std::atoi(pid)), SIGTERM);
    return status;
}
// Every sandbox has its own network since egress: the header names the policy and whether the
// model calls go through the engine, never "shared with the host".
void tst_AgentSessionView::headerSaysWhereTheNetworkGoes_data()
{
    QTest::addColumn<bool>("gateway");
    QTest::addColumn<QJsonValue>("policy");
    QTest::addColumn<QString>("says");
    QTest::addColumn<QString>("notSays");
    QTest::newRow("gateway, no network")
        << true << QJsonValue(false) << QStringLiteral("model calls through the engine")
        << QStringLiteral("cannot reach its model API");
    QTest::newRow("own calls, the internet")
        << false << QJsonValue(true) << QStringLiteral("the public internet")
        << QStringLiteral("through the engine");
    QTest::newRow("own calls, no network")
        << false << QJsonValue(false) << QStringLiteral("cannot reach its model API")
        << QStringLiteral("through the engine");
}

void tst_AgentSessionView::headerSaysWhereTheNetworkGoes()
{
    QFETCH(bool, gateway);
    QFETCH(QJsonValue, policy);
    QFETCH(QString, says);
    QFETCH(QString, notSays);
    SandboxInfo info = m_sandbox;
    info.gateway = gateway;
    info.networkPolicy = NetworkPolicy::fromJson(policy).value();
    info.network = policy.toBool();
    AgentSessionView view(m_client, info);
    const auto *header = view.findChild<QLabel *>(QStringLiteral("sessionHeader"));
    QVERIFY(header);
    QVERIFY2(header->text().contains(says), qPrintable(header->text()));
    QVERIFY2(!header->text().contains(notSays), qPrintable(header->text()));
    QVERIFY2(!header->text().contains(QLatin1String("shared with the host")),
             qPrintable(header->text()));
}

#include "tst_agentsessionview.moc"
