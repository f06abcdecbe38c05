// The /health probe the hostile suites judge the engine by: its verdict must pass an engine that
// answers at once, and fail one whose event loop stops (here: the whole engine, with SIGSTOP)
// for longer than the verdict's bound, on a fresh connection per request and on a kept-alive one.
#include "enginefixture.h"
#include "healthprobe.h"

#include <QTest>

#include <csignal>

class tst_HealthProbe : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void verdict_data();
    void verdict();

private:
    EngineFixture m_engine;
};

void tst_HealthProbe::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
}

void tst_HealthProbe::cleanupTestCase()
{
    m_engine.cleanup();
}

void tst_HealthProbe::verdict_data()
{
    QTest::addColumn<bool>("keptAlive");
    QTest::addColumn<int>("stopMs");
    QTest::newRow("fresh connections, engine answering") << false << 0;
    QTest::newRow("fresh connections, engine stopped 1.5 s") << false << 1500;
    QTest::newRow("kept-alive connection, engine answering") << true << 0;
    QTest::newRow("kept-alive connection, engine stopped 1.5 s") << true << 1500;
}

void tst_HealthProbe::verdict()
{
    QFETCH(bool, keptAlive);
    QFETCH(int, stopMs);
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 20);
    if (keptAlive)
        probe.keepOneConnectionFrom(QStringLiteral("127.0.0.250"));
    probe.start();
    QTRY_VERIFY(probe.samples() >= 10);
    if (stopMs > 0) {
        QCOMPARE(::kill(pid_t(m_engine.process().pid()), SIGSTOP), 0);
        QTest::qWait(stopMs); // on purpose: the stall is a span of time
        QCOMPARE(::kill(pid_t(m_engine.process().pid()), SIGCONT), 0);
    }
    const int before = probe.samples();
    QTRY_VERIFY(probe.samples() >= before + 10);
    probe.stop();
    const QString stall = probe.stall();
    qInfo("%s -> %s", qPrintable(probe.summary()), stall.isEmpty() ? "no stall" : qPrintable(stall));
    QCOMPARE(stall.isEmpty(), stopMs == 0);
}

QTEST_GUILESS_MAIN(tst_HealthProbe)
#include "tst_healthprobe.moc"
