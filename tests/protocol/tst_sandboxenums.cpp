#include "protocol/sandboxenums.h"

#include <QTest>

using namespace Sandbox;

Q_DECLARE_METATYPE(Sandbox::SandboxKind)
Q_DECLARE_METATYPE(Sandbox::SandboxType)
Q_DECLARE_METATYPE(Sandbox::SandboxStatus)

// The wire strings are docs/protocol.md 3.1's, spelled out here once more on purpose: a renamed
// enum value must not change what goes over the wire.
class tst_SandboxEnums : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void kindRoundTrips_data();
    void kindRoundTrips();
    void typeRoundTrips_data();
    void typeRoundTrips();
    void statusRoundTrips_data();
    void statusRoundTrips();
    void unknownStringsGiveUnknown_data();
    void unknownStringsGiveUnknown();
    void unknownHasNoWireString();
};

void tst_SandboxEnums::kindRoundTrips_data()
{
    QTest::addColumn<SandboxKind>("value");
    QTest::addColumn<QString>("wire");
    QTest::newRow("agent") << SandboxKind::Agent << QStringLiteral("agent");
    QTest::newRow("database") << SandboxKind::Database << QStringLiteral("database");
}

void tst_SandboxEnums::kindRoundTrips()
{
    QFETCH(SandboxKind, value);
    QFETCH(QString, wire);
    QCOMPARE(toWire(value), wire);
    QCOMPARE(fromWire<SandboxKind>(wire), value);
}

void tst_SandboxEnums::typeRoundTrips_data()
{
    QTest::addColumn<SandboxType>("value");
    QTest::addColumn<QString>("wire");
    QTest::addColumn<SandboxKind>("kind");
    QTest::newRow("claude-code") << SandboxType::ClaudeCode << QStringLiteral("claude-code")
                                 << SandboxKind::Agent;
    QTest::newRow("opencode") << SandboxType::OpenCode << QStringLiteral("opencode")
                              << SandboxKind::Agent;
    QTest::newRow("codex") << SandboxType::Codex << QStringLiteral("codex") << SandboxKind::Agent;
    QTest::newRow("postgres") << SandboxType::Postgres << QStringLiteral("postgres")
                              << SandboxKind::Database;
    QTest::newRow("sqlite") << SandboxType::Sqlite << QStringLiteral("sqlite")
                            << SandboxKind::Database;
    QTest::newRow("duckdb") << SandboxType::DuckDb << QStringLiteral("duckdb")
                            << SandboxKind::Database;
}

void tst_SandboxEnums::typeRoundTrips()
{
    QFETCH(SandboxType, value);
    QFETCH(QString, wire);
    QFETCH(SandboxKind, kind);
    QCOMPARE(toWire(value), wire);
    QCOMPARE(fromWire<SandboxType>(wire), value);
    QCOMPARE(kindOf(value), kind);
}

void tst_SandboxEnums::statusRoundTrips_data()
{
    QTest::addColumn<SandboxStatus>("value");
    QTest::addColumn<QString>("wire");
    QTest::newRow("creating") << SandboxStatus::Creating << QStringLiteral("creating");
    QTest::newRow("starting") << SandboxStatus::Starting << QStringLiteral("starting");
    QTest::newRow("running") << SandboxStatus::Running << QStringLiteral("running");
    QTest::newRow("sleeping") << SandboxStatus::Sleeping << QStringLiteral("sleeping");
    QTest::newRow("stopped") << SandboxStatus::Stopped << QStringLiteral("stopped");
    QTest::newRow("error") << SandboxStatus::Error << QStringLiteral("error");
}

void tst_SandboxEnums::statusRoundTrips()
{
    QFETCH(SandboxStatus, value);
    QFETCH(QString, wire);
    QCOMPARE(toWire(value), wire);
    QCOMPARE(fromWire<SandboxStatus>(wire), value);
}

void tst_SandboxEnums::unknownStringsGiveUnknown_data()
{
    QTest::addColumn<QString>("wire");
    QTest::newRow("empty") << QString();
    QTest::newRow("another case") << QStringLiteral("Running");
    QTest::newRow("trailing space") << QStringLiteral("agent ");
    QTest::newRow("a status the protocol does not have") << QStringLiteral("deleted");
    QTest::newRow("a type the protocol does not have") << QStringLiteral("mysql");
    QTest::newRow("the enum's own name") << QStringLiteral("ClaudeCode");
    QTest::newRow("nul inside") << QString(QStringLiteral("codex") + QChar(0));
}

void tst_SandboxEnums::unknownStringsGiveUnknown()
{
    QFETCH(QString, wire);
    QCOMPARE(fromWire<SandboxKind>(wire), SandboxKind::Unknown);
    QCOMPARE(fromWire<SandboxType>(wire), SandboxType::Unknown);
    QCOMPARE(fromWire<SandboxStatus>(wire), SandboxStatus::Unknown);
}

void tst_SandboxEnums::unknownHasNoWireString()
{
    QCOMPARE(toWire(SandboxKind::Unknown), QString());
    QCOMPARE(toWire(SandboxType::Unknown), QString());
    QCOMPARE(toWire(SandboxStatus::Unknown), QString());
    QCOMPARE(kindOf(SandboxType::Unknown), SandboxKind::Unknown);
}

QTEST_GUILESS_MAIN(tst_SandboxEnums)
#include "tst_sandboxenums.moc"
