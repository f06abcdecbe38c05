// The store of agent-run transcripts on its own: ordering, paging, the per-run and per-sandbox
// bounds, a run left running by a dead engine, and forgetting a deleted sandbox's runs.
#include "state/runstore.h"

#include <QJsonArray>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using Sandbox::Engine::RunStore;

namespace {

QJsonObject textEvent(int i)
{
    return {{QStringLiteral("type"), QStringLiteral("text")},
            {QStringLiteral("turn"), 0},
            {QStringLiteral("text"), QStringLiteral("message %1").arg(i)}};
}

QJsonObject answer(bool success, const QString &text)
{
    return {{QStringLiteral("success"), success},
            {QStringLiteral("result"), text},
            {QStringLiteral("stdout"), QStringLiteral("{\"raw\":1}\n")},
            {QStringLiteral("sessionId"), QStringLiteral("ses_1")},
            {QStringLiteral("usage"),
             QJsonObject{{QStringLiteral("inputTokens"), 10}, {QStringLiteral("outputTokens"), 5}}},
            {QStringLiteral("costUsd"), 0.25},
            {QStringLiteral("durationMs"), 1200},
            {QStringLiteral("needsInput"), QJsonValue()}};
}

} // namespace

class tst_RunStore : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void eventsComeBackInOrderAndInPages();
    void finishedRunKeepsItsAnswerWithoutStdout();
    void eventsBeyondTheCapAreCounted();
    void oldestRunsGoFirst();
    void runsOfADeadEngineAreInterrupted();
    void runsOfAnotherSandboxAreNotFound();
    void removeSandboxForgetsItsRuns();
};

void tst_RunStore::eventsComeBackInOrderAndInPages()
{
    QTemporaryDir dir;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")));
    QVERIFY(store);
    RunStore &s = *store.value();
    const QString run = s.begin({QStringLiteral("sb_1"),
                                 QStringLiteral("agents.run"),
                                 {QStringLiteral("hello")},
                                 {},
                                 QStringLiteral("st_1")});
    QVERIFY(run.startsWith(QLatin1String("run_")));
    for (int i = 1; i <= 25; ++i)
        s.event(run, textEvent(i));
    // Before the flush the events are served from memory, after it from the file: the same.
    auto first = s.events(QStringLiteral("sb_1"), run, 0, 10);
    QVERIFY(first);
    QCOMPARE(first->value(QStringLiteral("events")).toArray().size(), 10);
    QCOMPARE(first->value(QStringLiteral("more")).toBool(), true);
    QCOMPARE(first->value(QStringLiteral("done")).toBool(), false);
    QCOMPARE(first->value(QStringLiteral("last")).toInt(), 25);
    s.flush();
    auto rest = s.events(QStringLiteral("sb_1"), run, 10, 100);
    QVERIFY(rest);
    const QJsonArray events = rest->value(QStringLiteral("events")).toArray();
    QCOMPARE(events.size(), 15);
    for (int i = 0; i < events.size(); ++i) {
        const QJsonObject e = events.at(i).toObject();
        QCOMPARE(e.value(QStringLiteral("seq")).toInt(), 11 + i);
        QCOMPARE(e.value(QStringLiteral("event")).toObject(), textEvent(11 + i));
    }
    QCOMPARE(rest->value(QStringLiteral("more")).toBool(), false);
    // Half flushed, half pending: still one sequence without holes.
    for (int i = 26; i <= 30; ++i)
        s.event(run, textEvent(i));
    auto tail = s.events(QStringLiteral("sb_1"), run, 20, 100);
    QCOMPARE(tail->value(QStringLiteral("events")).toArray().size(), 10);
    QCOMPARE(tail->value(QStringLiteral("events"))
                 .toArray()
                 .last()
                 .toObject()
                 .value(QStringLiteral("seq")),
             QJsonValue(30));
}

void tst_RunStore::finishedRunKeepsItsAnswerWithoutStdout()
{
    QTemporaryDir dir;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")));
    RunStore &s = *store.value();
    const QString run = s.begin({QStringLiteral("sb_1"),
                                 QStringLiteral("agents.run"),
                                 {QStringLiteral("write a file")},
                                 {{QStringLiteral("model"), QStringLiteral("m1")}},
                                 {}});
    s.event(run, {{QStringLiteral("type"), QStringLiteral("usage")},
                  {QStringLiteral("inputTokens"), 3},
                  {QStringLiteral("costUsd"), 0.1}});
    // While it runs, the listing shows the totals so far.
    QJsonObject listed = s.runs(QStringLiteral("sb_1"), 10).first().toObject();
    QCOMPARE(listed.value(QStringLiteral("status")).toString(), QStringLiteral("running"));
    QCOMPARE(listed.value(QStringLiteral("usage")).toObject().value(QStringLiteral("inputTokens")),
             QJsonValue(3));
    QCOMPARE(listed.value(QStringLiteral("costUsd")).toDouble(), 0.1);
    QCOMPARE(listed.value(QStringLiteral("lastEventType")).toString(), QStringLiteral("usage"));

    s.finish(run, QStringLiteral("succeeded"), answer(true, QStringLiteral("All done.")));
    listed = s.runs(QStringLiteral("sb_1"), 10).first().toObject();
    QCOMPARE(listed.value(QStringLiteral("status")).toString(), QStringLiteral("succeeded"));
    QCOMPARE(listed.value(QStringLiteral("prompt")).toString(), QStringLiteral("write a file"));
    QCOMPARE(listed.value(QStringLiteral("options")).toObject().value(QStringLiteral("model")),
             QJsonValue(QStringLiteral("m1")));
    QCOMPARE(listed.value(QStringLiteral("sessionId")).toString(), QStringLiteral("ses_1"));
    QCOMPARE(listed.value(QStringLiteral("costUsd")).toDouble(), 0.25);
    QCOMPARE(listed.value(QStringLiteral("usage")).toObject().value(QStringLiteral("outputTokens")),
             QJsonValue(5));
    const QJsonObject a = listed.value(QStringLiteral("answer")).toObject();
    QCOMPARE(a.value(QStringLiteral("result")).toString(), QStringLiteral("All done."));
    QVERIFY(!a.contains(QStringLiteral("stdout")));
    QVERIFY(!listed.value(QStringLiteral("endedAt")).toString().isEmpty());
    QCOMPARE(listed.value(QStringLiteral("durationMs")).toInt(), 1200);
    auto events = s.events(QStringLiteral("sb_1"), run, 0, 10);
    QCOMPARE(events->value(QStringLiteral("done")).toBool(), true);
    QCOMPARE(events->value(QStringLiteral("events")).toArray().size(), 1);
}

void tst_RunStore::eventsBeyondTheCapAreCounted()
{
    QTemporaryDir dir;
    RunStore::Limits limits;
    limits.eventsPerRun = 5;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")), limits);
    RunStore &s = *store.value();
    const QString run = s.begin({QStringLiteral("sb_1"), QStringLiteral("agents.run"), {}, {}, {}});
    for (int i = 1; i <= 12; ++i)
        s.event(run, textEvent(i));
    s.finish(run, QStringLiteral("succeeded"), answer(true, QStringLiteral("ok")));
    const QJsonObject listed = s.runs(QStringLiteral("sb_1"), 10).first().toObject();
    QCOMPARE(listed.value(QStringLiteral("eventCount")).toInt(), 5);
    QCOMPARE(listed.value(QStringLiteral("eventsDropped")).toInt(), 7);
    QCOMPARE(s.events(QStringLiteral("sb_1"), run, 0, 100)
                 ->value(QStringLiteral("events"))
                 .toArray()
                 .size(),
             5);
}

void tst_RunStore::oldestRunsGoFirst()
{
    QTemporaryDir dir;
    RunStore::Limits limits;
    limits.runsPerSandbox = 3;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")), limits);
    RunStore &s = *store.value();
    QSignalSpy pruned(&s, &RunStore::runsPruned);
    QStringList ids;
    for (int i = 0; i < 5; ++i) {
        ids.append(s.begin({QStringLiteral("sb_1"),
                            QStringLiteral("agents.run"),
                            {QStringLiteral("prompt %1").arg(i)},
                            {},
                            {}}));
        s.event(ids.last(), textEvent(i));
        s.finish(ids.last(), QStringLiteral("succeeded"), answer(true, QStringLiteral("ok")));
        QTest::qWait(2); // distinct start times
    }
    const QJsonArray runs = s.runs(QStringLiteral("sb_1"), 100);
    QCOMPARE(runs.size(), 3);
    // Newest first.
    QCOMPARE(runs.at(0).toObject().value(QStringLiteral("runId")).toString(), ids.at(4));
    QCOMPARE(runs.at(2).toObject().value(QStringLiteral("runId")).toString(), ids.at(2));
    QVERIFY(!s.events(QStringLiteral("sb_1"), ids.at(0), 0, 10));
    QCOMPARE(pruned.size(), 2);
    // A run in progress is never pruned under its client.
    const QString running = s.begin(
        {QStringLiteral("sb_2"), QStringLiteral("agents.run"), {}, {}, {}});
    for (int i = 0; i < 4; ++i)
        s.finish(s.begin({QStringLiteral("sb_2"), QStringLiteral("agents.run"), {}, {}, {}}),
                 QStringLiteral("failed"), {});
    QVERIFY(s.hasRun(QStringLiteral("sb_2"), running));
}

void tst_RunStore::runsOfADeadEngineAreInterrupted()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.db"));
    QString run;
    {
        auto store = RunStore::open(path);
        run = store.value()->begin(
            {QStringLiteral("sb_1"), QStringLiteral("agents.run"), {}, {}, {}});
        store.value()->event(run, textEvent(1));
        store.value()->flush();
        // The engine dies here: the store is closed without finish().
    }
    auto store = RunStore::open(path);
    const QJsonObject listed = store.value()->runs(QStringLiteral("sb_1"), 10).first().toObject();
    QCOMPARE(listed.value(QStringLiteral("status")).toString(), QStringLiteral("interrupted"));
    QVERIFY(!listed.value(QStringLiteral("endedAt")).toString().isEmpty());
    QCOMPARE(store.value()
                 ->events(QStringLiteral("sb_1"), run, 0, 10)
                 ->value(QStringLiteral("events"))
                 .toArray()
                 .size(),
             1);
}

void tst_RunStore::runsOfAnotherSandboxAreNotFound()
{
    QTemporaryDir dir;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")));
    const QString run = store.value()->begin(
        {QStringLiteral("sb_1"), QStringLiteral("agents.run"), {}, {}, {}});
    const auto other = store.value()->events(QStringLiteral("sb_2"), run, 0, 10);
    QVERIFY(!other);
    QCOMPARE(other.error().code, Sandbox::ErrorCode::NotFound);
    QVERIFY(store.value()->runs(QStringLiteral("sb_2"), 10).isEmpty());
}

void tst_RunStore::removeSandboxForgetsItsRuns()
{
    QTemporaryDir dir;
    auto store = RunStore::open(dir.filePath(QStringLiteral("runs.db")));
    RunStore &s = *store.value();
    const QString a = s.begin({QStringLiteral("sb_1"), QStringLiteral("agents.run"), {}, {}, {}});
    s.event(a, textEvent(1));
    s.finish(a, QStringLiteral("succeeded"), answer(true, QStringLiteral("ok")));
    const QString b = s.begin({QStringLiteral("sb_2"), QStringLiteral("agents.run"), {}, {}, {}});
    s.finish(b, QStringLiteral("succeeded"), answer(true, QStringLiteral("ok")));
    s.removeSandbox(QStringLiteral("sb_1"));
    QVERIFY(s.runs(QStringLiteral("sb_1"), 10).isEmpty());
    QCOMPARE(s.runs(QStringLiteral("sb_2"), 10).size(), 1);
}

QTEST_GUILESS_MAIN(tst_RunStore)
#include "tst_runstore.moc"
