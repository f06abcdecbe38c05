// The agents' item models and transcript view, offscreen: model consistency
// (QAbstractItemModelTester), tool results merged into their calls, collapsing, the dashboard's
// bookkeeping, and a 10 000-event transcript that stays quick to append to and to scroll.
#include <agents/agentdashboard.h>
#include <agents/agentdashboardmodel.h>
#include <agents/agentproblem.h>
#include <agents/agenttranscriptmodel.h>
#include <agents/agenttranscriptview.h>
#include <agents/diffmodel.h>
#include <agents/problemcard.h>
#include <agents/runnotifier.h>
#include <common/uistyle.h>

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QImage>
#include <QJsonObject>
#include <QLabel>
#include <QLocalServer>
#include <QLocalSocket>
#include <QLocale>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {

AgentEvent ev(const QJsonObject &o)
{
    return AgentEvent::fromJson(o).value();
}

AgentEvent text(const QString &t, int turn = 0)
{
    return ev({{QStringLiteral("type"), QStringLiteral("text")},
               {QStringLiteral("text"), t},
               {QStringLiteral("turn"), turn}});
}

AgentEvent toolCall(const QString &id, const QString &path)
{
    return ev(
        {{QStringLiteral("type"), QStringLiteral("tool_call")},
         {QStringLiteral("id"), id},
         {QStringLiteral("name"), QStringLiteral("Write")},
         {QStringLiteral("input"), QJsonObject{{QStringLiteral("file_path"), path},
                                               {QStringLiteral("content"), QStringLiteral("x")}}}});
}

AgentEvent toolResult(const QString &id, const QString &output, bool isError)
{
    return ev({{QStringLiteral("type"), QStringLiteral("tool_result")},
               {QStringLiteral("id"), id},
               {QStringLiteral("name"), QStringLiteral("Write")},
               {QStringLiteral("output"), output},
               {QStringLiteral("isError"), isError}});
}

AgentEvent fileChange(const QString &path, bool ok)
{
    return ev({{QStringLiteral("type"), QStringLiteral("file_change")},
               {QStringLiteral("path"), path},
               {QStringLiteral("kind"), QStringLiteral("add")},
               {QStringLiteral("status"), ok ? QStringLiteral("ok") : QStringLiteral("failed")},
               {QStringLiteral("diff"),
                QStringLiteral("--- /dev/null\n+++ %1\n@@ -0,0 +1 @@\n+x\n").arg(path)}});
}

SandboxInfo sandbox(const QString &id, const QString &status = QStringLiteral("running"))
{
    SandboxInfo s;
    s.id = id;
    s.type = QStringLiteral("claude-code");
    s.status = status;
    s.network = true;
    s.lastActiveAt = QDateTime::currentDateTimeUtc();
    return s;
}

} // namespace

class tst_AgentsUi : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void transcriptRowsFollowTheEvents();
    void aFailureIsOneCardInTheUsersTerms();
    void toolResultsMergeIntoTheirCall_data();
    void toolResultsMergeIntoTheirCall();
    void collapsibleRowsToggle();
    void dashboardMergesAndCounts();
    void dashboardTotalsPerEndpointAndDay();
    void contextTrackIsVisibleOnDarkPalettes_data();
    void contextTrackIsVisibleOnDarkPalettes();
    void tenThousandEventsStaySmooth();
    void diffUnifiedAndSideBySide();
    void trayIconCountsTheSessionsThatNeedTheUser();
    void firstNotificationDoesNotWaitForTheBus();
};

void tst_AgentsUi::aFailureIsOneCardInTheUsersTerms()
{
    // Claude Code says a refused key three times: as the model's text, as an error and as the
    // run's result. The transcript shows one card that says it in the user's terms, with the
    // fix, and keeps the CLI's words behind its Details.
    AgentTranscriptModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setAgentType(QStringLiteral("claude-code"));
    model.addPrompt(QStringLiteral("hello"));
    const QString words = QStringLiteral("Invalid API key · Please run /login");
    model.addEvent(text(words));
    model.addEvent(ev(
        {{QStringLiteral("type"), QStringLiteral("error")}, {QStringLiteral("message"), words}}));
    AgentRunResult r;
    r.success = false;
    r.error = words;
    model.addRunEnd(r);
    QCOMPARE(model.rowCount(), 3); // the prompt, the card, "Failed after"
    const QModelIndex card = model.index(1);
    QCOMPARE(card.data(AgentTranscriptModel::ProblemRole).toInt(),
             int(AgentProblem::Kind::NoModelKey));
    QCOMPARE(card.data(AgentTranscriptModel::TitleRole).toString(),
             QStringLiteral("No valid model key"));
    QVERIFY(card.data(AgentTranscriptModel::BodyRole)
                .toString()
                .contains(QLatin1String("ANTHROPIC_API_KEY")));
    QCOMPARE(card.data(AgentTranscriptModel::RawTextRole).toString(), words);
    QCOMPARE(card.data(AgentTranscriptModel::FixRole).toString(),
             QStringLiteral("Set the Model Key…"));
    for (int row = 0; row < model.rowCount(); ++row) {
        QVERIFY(!model.index(row)
                     .data(AgentTranscriptModel::TitleRole)
                     .toString()
                     .contains(QLatin1String("/login")));
        QVERIFY(!model.index(row)
                     .data(AgentTranscriptModel::BodyRole)
                     .toString()
                     .contains(QLatin1String("/login")));
    }
    QCOMPARE(model.index(2).data(AgentTranscriptModel::ProblemRole).toInt(), -1);
    QVERIFY(model.index(2)
                .data(AgentTranscriptModel::TitleRole)
                .toString()
                .startsWith(QLatin1String("Failed after")));

    // A host the network refused during the run explains the failed connection after it; the
    // next prompt starts with none refused.
    model.addPrompt(QStringLiteral("again"));
    model.addEvent(ev({{QStringLiteral("type"), QStringLiteral("network.denied")},
                       {QStringLiteral("allowWith"), QStringLiteral("api.anthropic.com:443")}}));
    model.addEvent(
        ev({{QStringLiteral("type"), QStringLiteral("error")},
            {QStringLiteral("message"), QStringLiteral("API Error: Connection error.")}}));
    const QModelIndex host = model.index(model.rowCount() - 1);
    QCOMPARE(host.data(AgentTranscriptModel::ProblemRole).toInt(),
             int(AgentProblem::Kind::HostDenied));
    QCOMPARE(host.data(AgentTranscriptModel::HostsRole).toStringList(),
             QStringList{QStringLiteral("api.anthropic.com:443")});
    QCOMPARE(host.data(AgentTranscriptModel::FixRole).toString(),
             QStringLiteral("Allow api.anthropic.com:443"));
    model.addPrompt(QStringLiteral("once more"));
    QVERIFY(model.deniedHosts().isEmpty());

    // The view gives each card row a widget of its own, as high as it needs at the view's width.
    AgentTranscriptView view;
    view.setTranscript(&model);
    view.resize(600, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(view.cardAt(1));
    QVERIFY(!view.cardAt(0) && !view.cardAt(2));
    QTRY_VERIFY(view.cardAt(1)->isVisible());
    QTRY_COMPARE(view.cardAt(1)->height(), view.visualRect(model.index(1)).height() - 4);
}

void tst_AgentsUi::trayIconCountsTheSessionsThatNeedTheUser()
{
    const auto corner = [](const QIcon &icon) {
        const QImage image = icon.pixmap(32).toImage();
        return image.pixelColor(image.width() - 6, 6); // inside the badge
    };
    AgentDashboardModel::Totals quiet;
    const QColor plain = corner(RunNotifier::trayIconFor(quiet));
    AgentDashboardModel::Totals waiting;
    waiting.needsInput = 2;
    QCOMPARE(corner(RunNotifier::trayIconFor(waiting)), QColor(0xf5, 0x9e, 0x0b));
    AgentDashboardModel::Totals failed = waiting;
    failed.failed = 1;
    QCOMPARE(corner(RunNotifier::trayIconFor(failed)), QColor(0xd3, 0x2f, 0x2f));
    QVERIFY(plain != QColor(0xf5, 0x9e, 0x0b) && plain != QColor(0xd3, 0x2f, 0x2f));
    // The count is written on the badge: 2 and 3 differ.
    AgentDashboardModel::Totals three = waiting;
    three.needsInput = 3;
    QVERIFY(RunNotifier::trayIconFor(three).pixmap(32).toImage()
            != RunNotifier::trayIconFor(waiting).pixmap(32).toImage());
}

void tst_AgentsUi::firstNotificationDoesNotWaitForTheBus()
{
    // A session bus that accepts the connection and then says nothing: connecting to it would
    // stall whoever waits for it.
    QTemporaryDir dir;
    QLocalServer bus;
    QVERIFY(bus.listen(dir.filePath(QStringLiteral("bus"))));
    qputenv("DBUS_SESSION_BUS_ADDRESS",
            QByteArray("unix:path=") + QFile::encodeName(bus.fullServerName()));
    RunNotifier notifier;
    QVERIFY(notifier.notify(QStringLiteral("sb_1"), QStringLiteral("one"),
                            AgentDashboardModel::State::Done, QStringLiteral("finished")));
    // notify() came back while the bus has not answered: the client still waits on its socket.
    QTRY_VERIFY_WITH_TIMEOUT(bus.hasPendingConnections(), 10000);
    QLocalSocket *client = bus.nextPendingConnection();
    QTRY_VERIFY(client->bytesAvailable() > 0); // its authentication, unanswered
    QVERIFY(client->state() == QLocalSocket::ConnectedState);
    QVERIFY(!notifier.busChecked());
    // The bus goes away: the notifier learns it without a notification server, and says nothing.
    QSignalSpy notified(&notifier, &RunNotifier::notified);
    client->abort();
    QTRY_VERIFY_WITH_TIMEOUT(notifier.busChecked(), 30000);
    QCOMPARE(notified.size(), 0);
}

void tst_AgentsUi::diffUnifiedAndSideBySide()
{
    DiffModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDiff(QStringLiteral("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n one\n-two\n-three\n"
                                 "+TWO\n+THREE\n+four\n@@ -10,2 +11,1 @@\n ten\n-eleven\n"
                                 "\\ No newline at end of file\n"));
    // Unified: one row per line; numbers before and after.
    QCOMPARE(model.rowCount(), 10);
    QCOMPARE(model.index(0, DiffModel::UnifiedText).data().toString(),
             QStringLiteral("@@ -1,3 +1,4 @@"));
    QCOMPARE(model.index(1, DiffModel::UnifiedOld).data().toString(), QStringLiteral("1"));
    QCOMPARE(model.index(1, DiffModel::UnifiedNew).data().toString(), QStringLiteral("1"));
    QCOMPARE(model.index(2, DiffModel::UnifiedText).data().toString(), QStringLiteral("-two"));
    QCOMPARE(model.index(2, DiffModel::UnifiedOld).data().toString(), QStringLiteral("2"));
    QVERIFY(model.index(2, DiffModel::UnifiedNew).data().toString().isEmpty());
    QCOMPARE(model.index(6, DiffModel::UnifiedNew).data().toString(), QStringLiteral("4"));
    QCOMPARE(model.index(8, DiffModel::UnifiedOld).data().toString(), QStringLiteral("10"));
    QCOMPARE(model.index(8, DiffModel::UnifiedNew).data().toString(), QStringLiteral("11"));
    QVERIFY(model.index(9, DiffModel::UnifiedText)
                .data()
                .toString()
                .contains(QLatin1String("no newline")));
    bool isNew = false;
    QCOMPARE(model.lineAt(model.index(5, DiffModel::UnifiedText), &isNew), std::optional<int>(3));
    QVERIFY(isNew);
    QCOMPARE(model.lineAt(model.index(9, DiffModel::UnifiedText), &isNew), std::optional<int>(11));
    QVERIFY(!isNew);
    QVERIFY(!model.lineAt(model.index(0, DiffModel::UnifiedText), &isNew));

    // Side by side: two removed lines face the three added ones.
    model.setLayout(DiffModel::Layout::SideBySide);
    QCOMPARE(model.columnCount(), 4);
    QCOMPARE(model.rowCount(), 8);
    QCOMPARE(model.index(2, DiffModel::OldText).data().toString(), QStringLiteral("two"));
    QCOMPARE(model.index(2, DiffModel::NewText).data().toString(), QStringLiteral("TWO"));
    QCOMPARE(model.index(4, DiffModel::OldText).data().toString(), QString());
    QCOMPARE(model.index(4, DiffModel::NewText).data().toString(), QStringLiteral("four"));
    QCOMPARE(model.index(4, DiffModel::OldText).data(DiffModel::KindRole).toInt(),
             int(DiffModel::Kind::Empty));
    model.setCommentedLines({4}, {});
    QCOMPARE(model.index(4, DiffModel::NewNumber).data().toString(), QStringLiteral("● 4"));
}

void tst_AgentsUi::transcriptRowsFollowTheEvents()
{
    AgentTranscriptModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.addPrompt(QStringLiteral("write a file"));
    model.addEvent(ev({{QStringLiteral("type"), QStringLiteral("session")},
                       {QStringLiteral("sessionId"), QStringLiteral("s1")}}));
    model.addEvent(ev({{QStringLiteral("type"), QStringLiteral("thinking")},
                       {QStringLiteral("text"), QStringLiteral("hmm")}}));
    model.addEvent(toolCall(QStringLiteral("t1"), QStringLiteral("/workspace/a.txt")));
    model.addEvent(toolResult(QStringLiteral("t1"), QStringLiteral("ok"), false));
    model.addEvent(fileChange(QStringLiteral("/workspace/a.txt"), true));
    model.addEvent(text(QStringLiteral("**Done.**")));
    model.addEvent(ev(
        {{QStringLiteral("type"), QStringLiteral("usage")}, {QStringLiteral("inputTokens"), 5}}));
    AgentRunResult r;
    r.success = false;
    r.error = QStringLiteral("the model API is unreachable");
    model.addRunEnd(r);
    // session and usage make no rows; the tool result went into its call's row.
    QCOMPARE(model.rowCount(), 6);
    using K = AgentTranscriptModel::Kind;
    const QList<K> kinds{K::Prompt, K::Thinking, K::ToolCall, K::FileChange, K::Text, K::Result};
    for (int i = 0; i < kinds.size(); ++i)
        QCOMPARE(K(model.index(i).data(AgentTranscriptModel::KindRole).toInt()), kinds[i]);
    QCOMPARE(model.index(2).data(AgentTranscriptModel::TitleRole).toString(),
             QStringLiteral("Write /workspace/a.txt"));
    QVERIFY(
        model.index(3).data(AgentTranscriptModel::BodyRole).toString().contains(QLatin1String("+x")));
    QCOMPARE(model.index(4).data(AgentTranscriptModel::BodyRole).toString(),
             QStringLiteral("**Done.**"));
    QVERIFY(model.index(5).data(AgentTranscriptModel::IsErrorRole).toBool());
    // The failure in the user's terms, the engine's words behind Details.
    QVERIFY2(model.index(5)
                 .data(AgentTranscriptModel::BodyRole)
                 .toString()
                 .contains(QLatin1String("could not reach the model's API")),
             qPrintable(model.index(5).data(AgentTranscriptModel::BodyRole).toString()));
    QCOMPARE(model.index(5).data(AgentTranscriptModel::RawTextRole).toString(),
             QStringLiteral("the model API is unreachable"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
}

void tst_AgentsUi::toolResultsMergeIntoTheirCall_data()
{
    QTest::addColumn<bool>("isError");
    QTest::newRow("succeeded") << false;
    QTest::newRow("failed") << true;
}

void tst_AgentsUi::toolResultsMergeIntoTheirCall()
{
    QFETCH(bool, isError);
    AgentTranscriptModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.addEvent(toolCall(QStringLiteral("a"), QStringLiteral("/workspace/1")));
    model.addEvent(toolCall(QStringLiteral("b"), QStringLiteral("/workspace/2")));
    QVERIFY(model.index(0).data(AgentTranscriptModel::PendingRole).toBool());
    model.addEvent(toolResult(QStringLiteral("a"), QStringLiteral("result of a"), isError));
    QCOMPARE(model.rowCount(), 2);
    QVERIFY(!model.index(0).data(AgentTranscriptModel::PendingRole).toBool());
    QVERIFY(model.index(1).data(AgentTranscriptModel::PendingRole).toBool());
    QCOMPARE(model.index(0).data(AgentTranscriptModel::IsErrorRole).toBool(), isError);
    QVERIFY(model.index(0)
                .data(AgentTranscriptModel::BodyRole)
                .toString()
                .contains(QLatin1String("result of a")));
    QVERIFY(!model.index(1)
                 .data(AgentTranscriptModel::BodyRole)
                 .toString()
                 .contains(QLatin1String("result of a")));
    // The same in one batch (a replay).
    AgentTranscriptModel batch;
    batch.addEvents({toolCall(QStringLiteral("c"), QStringLiteral("/workspace/3")),
                     toolResult(QStringLiteral("c"), QStringLiteral("r"), isError)});
    QCOMPARE(batch.rowCount(), 1);
    QCOMPARE(batch.index(0).data(AgentTranscriptModel::IsErrorRole).toBool(), isError);
}

void tst_AgentsUi::collapsibleRowsToggle()
{
    AgentTranscriptModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.addEvent(toolCall(QStringLiteral("a"), QStringLiteral("/workspace/1")));
    model.addEvent(text(QStringLiteral("plain")));
    QVERIFY(!model.index(0).data(AgentTranscriptModel::ExpandedRole).toBool());
    model.toggleExpanded(0);
    QVERIFY(model.index(0).data(AgentTranscriptModel::ExpandedRole).toBool());
    model.toggleExpanded(1); // text is not collapsible
    QVERIFY(!model.index(1).data(AgentTranscriptModel::CollapsibleRole).toBool());

    // In the view, a click on the header opens the row and makes it taller.
    AgentTranscriptView view;
    view.resize(600, 400);
    view.setTranscript(&model);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int open = view.visualRect(model.index(0)).height();
    QTest::mouseClick(view.viewport(), Qt::LeftButton, {},
                      view.visualRect(model.index(0)).topLeft() + QPoint(10, 5));
    QVERIFY(!model.index(0).data(AgentTranscriptModel::ExpandedRole).toBool());
    QTRY_VERIFY(view.visualRect(model.index(0)).height() < open);
}

static AgentRunRecord runRecord(const QString &runId, const QString &status,
                                const QString &startedAt, double cost,
                                const QJsonObject &extra = {})
{
    QJsonObject o{{QStringLiteral("runId"), runId},
                  {QStringLiteral("method"), QStringLiteral("agents.run")},
                  {QStringLiteral("prompt"), QStringLiteral("p")},
                  {QStringLiteral("options"),
                   QJsonObject{{QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5")}}},
                  {QStringLiteral("status"), status},
                  {QStringLiteral("startedAt"), startedAt},
                  {QStringLiteral("usage"), QJsonObject{{QStringLiteral("inputTokens"), 100},
                                                        {QStringLiteral("outputTokens"), 20}}},
                  {QStringLiteral("costUsd"), cost},
                  {QStringLiteral("streamId"), QString(QStringLiteral("st_") + runId)}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        o.insert(it.key(), it.value());
    auto r = AgentRunRecord::fromJson(o);
    if (!r)
        qFatal("bad run record: %s", qPrintable(r.error().message));
    return r.value();
}

void tst_AgentsUi::dashboardMergesAndCounts()
{
    AgentDashboardModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy ended(&model, &AgentDashboardModel::runEnded);
    model.setSandboxes({sandbox(QStringLiteral("sb_a")), sandbox(QStringLiteral("sb_b"))});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.staleIds(), (QStringList{QStringLiteral("sb_a"), QStringLiteral("sb_b")}));
    const auto cell = [&model](const char *id, int column) {
        return model.index(model.rowOf(QString::fromLatin1(id)), column).data().toString();
    };
    QCOMPARE(cell("sb_a", AgentDashboardModel::Status), QStringLiteral("idle"));

    // History read at start: shown, not announced. An old run of yesterday, a failed one today.
    const QString today = QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs);
    const QString later = QDateTime::currentDateTimeUtc().addSecs(1).toString(Qt::ISODateWithMs);
    const QString yesterday = QDateTime::currentDateTimeUtc().addDays(-1).toString(
        Qt::ISODateWithMs);
    model.setRuns(QStringLiteral("sb_b"),
                  {runRecord(QStringLiteral("r2"), QStringLiteral("failed"), today, 0.25,
                             {{QStringLiteral("answer"),
                               QJsonObject{{QStringLiteral("success"), false},
                                           {QStringLiteral("error"), QStringLiteral("boom")}}}}),
                   runRecord(QStringLiteral("r1"), QStringLiteral("succeeded"), yesterday, 0.5)});
    QCOMPARE(ended.count(), 0);
    QCOMPARE(cell("sb_b", AgentDashboardModel::Status), QStringLiteral("failed: boom"));
    QCOMPARE(model.stateAt(model.rowOf(QStringLiteral("sb_b"))), AgentDashboardModel::State::Failed);
    QCOMPARE(cell("sb_b", AgentDashboardModel::Runs), QStringLiteral("2 (1 failed)"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Cost), QStringLiteral("$0.7500"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Tokens), QStringLiteral("200 / 40"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Model), QStringLiteral("claude-sonnet-4-5"));
    QCOMPARE(cell("sb_a", AgentDashboardModel::Cost), QStringLiteral("—"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Network), QStringLiteral("host network"));
    AgentDashboardModel::Totals t = model.totals();
    QCOMPARE(t.costUsd, 0.75);
    QCOMPARE(t.costTodayUsd, 0.25);
    QCOMPARE(t.failed, 1);

    // A new run starts (seen in the history), its live events move the row.
    model.setRuns(QStringLiteral("sb_b"),
                  {runRecord(QStringLiteral("r3"), QStringLiteral("running"), later, 0)});
    QCOMPARE(model.stateAt(model.rowOf(QStringLiteral("sb_b"))),
             AgentDashboardModel::State::Running);
    QVERIFY(
        cell("sb_b", AgentDashboardModel::Status).startsWith(QLatin1String("running a prompt 0:0")));
    QVERIFY(!model.streamEvent(QStringLiteral("st_unknown"), text(QStringLiteral("x"))));
    QVERIFY(model.streamEvent(QStringLiteral("st_r3"),
                              ev({{QStringLiteral("type"), QStringLiteral("tool_call")},
                                  {QStringLiteral("id"), QStringLiteral("t1")},
                                  {QStringLiteral("name"), QStringLiteral("Write")},
                                  {QStringLiteral("input"), QJsonObject{}}})));
    QVERIFY2(cell("sb_b", AgentDashboardModel::Status).endsWith(QStringLiteral("· tool_call Write")),
             qPrintable(cell("sb_b", AgentDashboardModel::Status)));
    QVERIFY(model.streamEvent(QStringLiteral("st_r3"),
                              ev({{QStringLiteral("type"), QStringLiteral("usage")},
                                  {QStringLiteral("inputTokens"), 1000},
                                  {QStringLiteral("outputTokens"), 7},
                                  {QStringLiteral("costUsd"), 1.0}})));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Cost), QStringLiteral("$1.7500"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Tokens),
             QLocale().toString(1200) + QStringLiteral(" / ") + QLocale().toString(47));
    QCOMPARE(model.totals().running, 1);
    // The context in use: empty (not 0) until the CLI says it; a count alone without the window;
    // then the share.
    QCOMPARE(cell("sb_b", AgentDashboardModel::Context), QString());
    QVERIFY(!model.index(model.rowOf(QStringLiteral("sb_b")), AgentDashboardModel::Context)
                 .data(AgentDashboardModel::ContextRole)
                 .isValid());
    QVERIFY(model.streamEvent(QStringLiteral("st_r3"),
                              ev({{QStringLiteral("type"), QStringLiteral("usage")},
                                  {QStringLiteral("inputTokens"), 1000},
                                  {QStringLiteral("outputTokens"), 7},
                                  {QStringLiteral("costUsd"), 1.0},
                                  {QStringLiteral("contextTokens"), 30000},
                                  {QStringLiteral("contextWindow"), QJsonValue()}})));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Context),
             QLocale().toString(30000) + QStringLiteral(" tokens"));
    QVERIFY(model.streamEvent(QStringLiteral("st_r3"),
                              ev({{QStringLiteral("type"), QStringLiteral("usage")},
                                  {QStringLiteral("inputTokens"), 1000},
                                  {QStringLiteral("outputTokens"), 7},
                                  {QStringLiteral("costUsd"), 1.0},
                                  {QStringLiteral("contextTokens"), 50000},
                                  {QStringLiteral("contextWindow"), 200000}})));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Context), QStringLiteral("25%"));
    QCOMPARE(model.index(model.rowOf(QStringLiteral("sb_b")), AgentDashboardModel::Context)
                 .data(AgentDashboardModel::ContextRole)
                 .toDouble(),
             0.25);
    QVERIFY(model.index(model.rowOf(QStringLiteral("sb_b")), AgentDashboardModel::Context)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QLocale().toString(200000)));
    QCOMPARE(ended.count(), 0);

    // It ends waiting for the user: said once, however often the history is read again.
    const QJsonObject question{
        {QStringLiteral("needsInput"),
         QJsonObject{{QStringLiteral("reason"), QStringLiteral("question")},
                     {QStringLiteral("question"), QStringLiteral("Which file should I edit?")}}}};
    for (int i = 0; i < 2; ++i)
        model.setRuns(QStringLiteral("sb_b"),
                      {runRecord(QStringLiteral("r3"), QStringLiteral("succeeded"), later, 1.0,
                                 question)});
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.at(0).at(0).toString(), QStringLiteral("sb_b"));
    QCOMPARE(ended.at(0).at(2).value<AgentDashboardModel::State>(),
             AgentDashboardModel::State::NeedsInput);
    QCOMPARE(ended.at(0).at(3).toString(), QStringLiteral("Which file should I edit?"));
    QCOMPARE(cell("sb_b", AgentDashboardModel::Status),
             QStringLiteral("needs input: Which file should I edit?"));
    QCOMPARE(model.totals().needsInput, 1);

    // A run of this app's session view: running at once, announced when it finishes.
    model.runStarted(QStringLiteral("sb_a"));
    QVERIFY(cell("sb_a", AgentDashboardModel::Status).startsWith(QLatin1String("running a prompt")));
    AgentRunResult r;
    r.success = true;
    r.result = QStringLiteral("All done.");
    r.usage.inputTokens = 10;
    r.usage.outputTokens = 2;
    r.usage.costUsd = 0.125;
    r.streamId = QStringLiteral("st_local");
    model.runFinished(QStringLiteral("sb_a"), r);
    QCOMPARE(cell("sb_a", AgentDashboardModel::Status), QStringLiteral("done"));
    QCOMPARE(cell("sb_a", AgentDashboardModel::Cost), QStringLiteral("$0.1250"));
    QCOMPARE(ended.count(), 2);
    QCOMPARE(ended.at(1).at(2).value<AgentDashboardModel::State>(),
             AgentDashboardModel::State::Done);
    QCOMPARE(ended.at(1).at(3).toString(), QStringLiteral("All done."));

    // A run that could not even start (the engine refused it): failed, with the reason.
    const int failedBefore = model.totals().failed;
    model.runStarted(QStringLiteral("sb_a"));
    model.runFailed(QStringLiteral("sb_a"), QStringLiteral("the engine is not reachable"));
    QCOMPARE(cell("sb_a", AgentDashboardModel::Status),
             QStringLiteral("failed: the engine is not reachable"));
    QCOMPARE(model.totals().failed, failedBefore + 1);
    QVERIFY(AgentDashboardModel::stateCounts(model.totals())
                .contains(QStringLiteral("%1 failed").arg(failedBefore + 1)));

    // Sortable: by cost, sb_b (1.75) above sb_a (0.125) in descending order.
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(AgentDashboardModel::SortRole);
    proxy.sort(AgentDashboardModel::Cost, Qt::DescendingOrder);
    QCOMPARE(proxy.index(0, 0).data(AgentDashboardModel::IdRole).toString(),
             QStringLiteral("sb_b"));
    proxy.sort(AgentDashboardModel::Cost, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, 0).data(AgentDashboardModel::IdRole).toString(),
             QStringLiteral("sb_a"));

    // A new list: sb_a went away, sb_c came, sb_b kept its numbers.
    model.setSandboxes({sandbox(QStringLiteral("sb_b"), QStringLiteral("sleeping")),
                        sandbox(QStringLiteral("sb_c"), QStringLiteral("sleeping"))});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.rowOf(QStringLiteral("sb_a")), -1);
    QCOMPARE(cell("sb_b", AgentDashboardModel::Cost), QStringLiteral("$1.7500"));
    QCOMPARE(cell("sb_c", AgentDashboardModel::Status), QStringLiteral("sleeping"));
}

// The app holds one connection at a time: the totals line names its endpoint, says today's runs,
// tokens and cost, and "By day" lists each day's runs (by their start, local time).
void tst_AgentsUi::dashboardTotalsPerEndpointAndDay()
{
    AgentDashboard dashboard(nullptr);
    dashboard.setEndpointName(QStringLiteral("local engine"));
    AgentDashboardModel *model = dashboard.model();
    model->setSandboxes({sandbox(QStringLiteral("sb_a")), sandbox(QStringLiteral("sb_b"))});
    const QDateTime now = QDateTime::currentDateTime();
    const auto at = [](const QDateTime &t) { return t.toUTC().toString(Qt::ISODateWithMs); };
    // Noon local time keeps "yesterday" and "three days ago" on their days whatever the hour.
    const QDateTime noon(now.date(), QTime(12, 0));
    model->setRuns(QStringLiteral("sb_a"),
                   {runRecord(QStringLiteral("a2"), QStringLiteral("succeeded"), at(now), 0.25),
                    runRecord(QStringLiteral("a1"), QStringLiteral("succeeded"),
                              at(noon.addDays(-1)), 0.5)});
    model->setRuns(QStringLiteral("sb_b"),
                   {runRecord(QStringLiteral("b2"), QStringLiteral("failed"), at(now), 0.125),
                    runRecord(QStringLiteral("b1"), QStringLiteral("succeeded"),
                              at(noon.addDays(-3)), 1.0)});
    const AgentDashboardModel::Totals t = model->totals();
    QCOMPARE(t.runs, 4);
    QCOMPARE(t.runsToday, 2);
    QCOMPARE(t.costTodayUsd, 0.375);
    QCOMPARE(t.tokensToday, 240);

    QLabel *line = dashboard.totalsLabel();
    QTRY_VERIFY2(line->text().startsWith(QLatin1String("Totals of local engine: 2 agent session")),
                 qPrintable(line->text()));
    // The line follows the model once per pass of the event loop.
    QTRY_VERIFY2(line->text().contains(QLatin1String("cost $1.8750")), qPrintable(line->text()));
    QVERIFY2(line->text().contains(QLatin1String("today: 2 run(s), 240 tokens, $0.3750")),
             qPrintable(line->text()));

    const QList<AgentDashboardModel::DayTotals> days = model->byDay(31);
    QCOMPARE(days.size(), 3);
    QCOMPARE(days[0].day, now.date());
    QCOMPARE(days[0].runs, 2);
    QCOMPARE(days[1].day, now.date().addDays(-1));
    QCOMPARE(days[1].costUsd, 0.5);
    QCOMPARE(days[2].day, now.date().addDays(-3));
    QCOMPARE(days[2].tokensIn, 100);
    QCOMPARE(model->byDay(2).size(), 2);

    // The table shows them when asked, newest first.
    dashboard.resize(900, 500);
    dashboard.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dashboard));
    QTableWidget *table = dashboard.byDayTable();
    QVERIFY(!table->isVisible());
    dashboard.byDayButton()->click();
    QVERIFY(table->isVisible());
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("Today"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("2"));
    QCOMPARE(table->item(0, 4)->text(), QStringLiteral("$0.3750"));
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("Yesterday"));
    QCOMPARE(table->item(2, 4)->text(), QStringLiteral("$1.0000"));
    // A new run today moves the table with the totals.
    model->setRuns(QStringLiteral("sb_b"),
                   {runRecord(QStringLiteral("b3"), QStringLiteral("succeeded"), at(now), 2.0)});
    QTRY_COMPARE(table->item(0, 1)->text(), QStringLiteral("3"));
    dashboard.byDayButton()->click();
    QVERIFY(!table->isVisible());
}

void tst_AgentsUi::contextTrackIsVisibleOnDarkPalettes_data()
{
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
}

// The Context column's bar: its empty part (the track) stands out from the row on light and dark
// palettes, on plain and alternate rows.
void tst_AgentsUi::contextTrackIsVisibleOnDarkPalettes()
{
    QFETCH(bool, dark);
    AgentDashboard dashboard(nullptr);
    if (dark)
        dashboard.setPalette(Style::darkPalette());
    AgentDashboardModel *model = dashboard.model();
    model->setSandboxes({sandbox(QStringLiteral("sb_a")), sandbox(QStringLiteral("sb_b"))});
    const QJsonObject usage{{QStringLiteral("inputTokens"), 100},
                            {QStringLiteral("outputTokens"), 20},
                            {QStringLiteral("contextTokens"), 20000},
                            {QStringLiteral("contextWindow"), 200000}};
    const QString now = QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs);
    for (const char *id : {"sb_a", "sb_b"})
        model->setRuns(QString::fromLatin1(id),
                       {runRecord(QString::fromLatin1(id) + QStringLiteral("_r"),
                                  QStringLiteral("succeeded"), now, 0.1,
                                  {{QStringLiteral("usage"), usage}})});
    dashboard.resize(1000, 400);
    dashboard.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dashboard));
    QTableView *table = dashboard.table();
    QTest::qWait(200); // column widths settle
    const QImage shot = table->viewport()->grab().toImage();
    for (int row = 0; row < 2; ++row) {
        const QRect cell = table->visualRect(
            table->model()->index(row, AgentDashboardModel::Context));
        QVERIFY(cell.width() > 20);
        // The track runs along the cell's bottom, from 4 px in; 10 % of it is in use.
        const QColor background = shot.pixelColor(cell.left() + 1, cell.bottom() - 2);
        const QColor track = shot.pixelColor(cell.right() - 6, cell.bottom() - 2);
        const qreal c = Style::contrast(track, background);
        QVERIFY2(c >= 1.9, qPrintable(QStringLiteral("row %1: track %2 on %3, contrast %4")
                                          .arg(row)
                                          .arg(track.name(), background.name())
                                          .arg(c)));
    }
}

void tst_AgentsUi::tenThousandEventsStaySmooth()
{
    AgentTranscriptModel model;
    AgentTranscriptView view;
    view.resize(900, 700);
    view.setTranscript(&model);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));

    // Live: 10 000 events arriving in bursts of 50, the view repainting between bursts.
    QElapsedTimer clock;
    clock.start();
    qint64 worstBurstMs = 0;
    int n = 0;
    for (int burst = 0; burst < 200; ++burst) {
        QElapsedTimer b;
        b.start();
        for (int i = 0; i < 50; ++i, ++n) {
            switch (n % 5) {
            case 0:
                model.addEvent(text(
                    QStringLiteral(
                        "Step %1: *markdown* with `code` and a [link](http://x).\n\n- one\n- two")
                        .arg(n)));
                break;
            case 1:
                model.addEvent(toolCall(QStringLiteral("t%1").arg(n),
                                        QStringLiteral("/workspace/f%1.txt").arg(n)));
                break;
            case 2:
                model.addEvent(
                    toolResult(QStringLiteral("t%1").arg(n - 1), QStringLiteral("ok"), false));
                break;
            case 3:
                model.addEvent(fileChange(QStringLiteral("/workspace/f%1.txt").arg(n), true));
                break;
            case 4:
                model.addEvent(ev({{QStringLiteral("type"), QStringLiteral("thinking")},
                                   {QStringLiteral("text"), QStringLiteral("thinking %1").arg(n)}}));
                break;
            }
        }
        QCoreApplication::processEvents();
        worstBurstMs = qMax(worstBurstMs, b.elapsed());
    }
    const qint64 appendMs = clock.elapsed();
    QVERIFY(model.rowCount() >= 8000);
    // Every row is laid out (the batched layout finished) and it followed the newest one.
    QTRY_VERIFY_WITH_TIMEOUT(view.verticalScrollBar()->maximum() > model.rowCount() * 20, 20000);
    const qint64 layoutMs = clock.elapsed();
    QTRY_VERIFY(view.verticalScrollBar()->value() >= view.verticalScrollBar()->maximum() - 4);

    // Scrolling: jump to the top, page down 20 times, back to the bottom; each step painted.
    clock.restart();
    qint64 worstFrameMs = 0;
    const auto frame = [&](auto step) {
        QElapsedTimer f;
        f.start();
        step();
        view.viewport()->repaint();
        worstFrameMs = qMax(worstFrameMs, f.elapsed());
    };
    frame([&] { view.scrollToTop(); });
    // Really drawn: the first rows' text is on screen (dark pixels on the light background).
    const QImage top = view.viewport()->grab().toImage();
    int dark = 0;
    for (int y = 0; y < top.height(); y += 2)
        for (int x = 0; x < top.width(); x += 2)
            dark += qGray(top.pixel(x, y)) < 100;
    QVERIFY2(dark > 200, qPrintable(QString::number(dark)));
    QVERIFY(view.indexAt(QPoint(10, 10)).row() == 0);
    for (int i = 0; i < 20; ++i)
        frame([&] {
            view.verticalScrollBar()->setValue(view.verticalScrollBar()->value()
                                               + view.viewport()->height());
        });
    frame([&] { view.scrollToBottom(); });
    const qint64 scrollMs = clock.elapsed();
    qInfo().noquote()
        << QStringLiteral(
               "10 000 events: appended in %1 ms (worst burst of 50: %2 ms), all %5 rows laid out "
               "after %6 ms; 22 scroll steps in %3 ms (worst frame %4 ms)")
               .arg(appendMs)
               .arg(worstBurstMs)
               .arg(scrollMs)
               .arg(worstFrameMs)
               .arg(model.rowCount())
               .arg(layoutMs);
    // The times are figures for a person, not assertions: on a shared, loaded machine a wall-clock
    // bound fails at random (speed is shown by the benchmarks, label `bench`).
}

QTEST_MAIN(tst_AgentsUi)
#include "tst_agentsui.moc"
