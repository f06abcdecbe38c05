// Issue 9, item 9: a sandboxd that is not root used to run sandboxes without any cgroup while the
// Sandbox object still showed `limits`. Now every Sandbox object says which limits hold
// (`limits.enforced`, `limits.enforcement`), checked here on real engines: one run as a normal
// user (through setpriv, as the README's normal user would), one as root, one with --no-cgroups.
#include "enginefixture.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTest>

#include <unistd.h>

namespace {

constexpr uid_t kTestUid = 54329; // no account needed: setpriv runs the engine as this uid

QJsonObject createAgent(EngineFixture &engine)
{
    return engine.create(QStringLiteral("agents.create"),
                         {{QStringLiteral("type"), QStringLiteral("claude-code")},
                          {QStringLiteral("size"), QStringLiteral("basic")}});
}

} // namespace

class TestLimits : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nonRootEngineSaysLimitsDoNotHold();
    void rootEngineSaysWhatHolds();
    void noCgroupsSaysSo();
};

void TestLimits::nonRootEngineSaysLimitsDoNotHold()
{
    EngineFixture engine;
    if (::geteuid() == 0)
        engine.process().setRunAsUid(kTestUid);
    QVERIFY2(engine.start({QStringLiteral("--sleep-after"), QStringLiteral("600000")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    const QJsonObject sandbox = createAgent(engine);
    const QString id = sandbox.value(QStringLiteral("id")).toString();
    QVERIFY2(!id.isEmpty(), dump(rpc.lastError()).constData());

    // It really runs as that user (no uid drop without root)...
    const QJsonObject idu = rpc.result(QStringLiteral("agents.exec"),
                                       {{QStringLiteral("id"), id},
                                        {QStringLiteral("command"), QStringLiteral("id -u")}});
    if (::geteuid() == 0)
        QCOMPARE(idu.value(QStringLiteral("stdout")).toString().trimmed(),
                 QString::number(kTestUid));

    // ...and its Sandbox object says that no cgroup limits it: started through setpriv from a
    // root test, its cgroup is root's, not delegated to it, on any host. (A test run by a normal
    // user starts the engine in that user's own cgroup, which may be delegated: there only the
    // reasons are checked, not which limits hold.)
    const bool fromRoot = ::geteuid() == 0;
    for (const QJsonObject &object :
         {sandbox, rpc.result(QStringLiteral("agents.get"), {{QStringLiteral("id"), id}}),
          rpc.result(QStringLiteral("agents.list"), {})
              .value(QStringLiteral("agents"))
              .toArray()
              .first()
              .toObject()}) {
        const QJsonObject limits = object.value(QStringLiteral("limits")).toObject();
        QCOMPARE(limits.value(QStringLiteral("memoryMb")).toInt(), 1024); // the size's figures stay
        QVERIFY2(limits.contains(QStringLiteral("enforced")), dump(limits).constData());
        QCOMPARE(limits.value(QStringLiteral("enforced")), QJsonValue(false)); // disk at least
        const QJsonObject detail = limits.value(QStringLiteral("enforcement")).toObject();
        for (const QString &limit : {QStringLiteral("memory"), QStringLiteral("pids"),
                                     QStringLiteral("cpu"), QStringLiteral("disk")}) {
            const QJsonObject e = detail.value(limit).toObject();
            const bool enforced = e.value(QStringLiteral("enforced")).toBool();
            QVERIFY2(enforced ? !e.value(QStringLiteral("by")).toString().isEmpty()
                              : !e.value(QStringLiteral("reason")).toString().isEmpty(),
                     qPrintable(limit));
            if (limit == QLatin1String("disk") || fromRoot)
                QCOMPARE(e.value(QStringLiteral("enforced")), QJsonValue(false));
            const QString reason = e.value(QStringLiteral("reason")).toString();
            if (fromRoot && limit != QLatin1String("disk"))
                QVERIFY2(reason.contains(QLatin1String("v1 controllers"))
                             || reason.contains(QLatin1String("not delegated")),
                         qPrintable(reason));
        }
    }
    QVERIFY(engine.process().log().contains(QLatin1String("sandboxd")));
}

void TestLimits::rootEngineSaysWhatHolds()
{
    if (::geteuid() != 0)
        QSKIP("needs root: a root engine makes the cgroups itself");
    EngineFixture engine;
    QVERIFY2(engine.start(), qPrintable(engine.process().log()));
    const QJsonObject sandbox = createAgent(engine);
    const QString id = sandbox.value(QStringLiteral("id")).toString();
    QVERIFY(!id.isEmpty());
    const QJsonObject limits = sandbox.value(QStringLiteral("limits")).toObject();
    const QJsonObject detail = limits.value(QStringLiteral("enforcement")).toObject();
    for (const QString &limit :
         {QStringLiteral("memory"), QStringLiteral("pids"), QStringLiteral("cpu")}) {
        const QJsonObject e = detail.value(limit).toObject();
        QCOMPARE(e.value(QStringLiteral("enforced")), QJsonValue(true));
        QVERIFY(e.value(QStringLiteral("by")).toString().startsWith(QLatin1String("cgroup v")));
    }
    // What it claims holds: the sandbox's group carries its size's memory limit.
    const QString by
        = detail.value(QStringLiteral("memory")).toObject().value(QStringLiteral("by")).toString();
    const QString memFile = by == QLatin1String("cgroup v1")
                                ? QStringLiteral(
                                    "/sys/fs/cgroup/memory/sandboxd/%1/memory.limit_in_bytes")
                                : QStringLiteral("/sys/fs/cgroup/sandboxd/%1/memory.max");
    QFile f(memFile.arg(id));
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
    QCOMPARE(f.readAll().trimmed().toLongLong(), 1024LL * 1024 * 1024);
    // An agent's home lives on the sandbox's disk image with its workspace (issue 9, attack 7):
    // where the engine can make images (loop devices), the whole disk limit holds, and says so.
    const QJsonObject disk = detail.value(QStringLiteral("disk")).toObject();
    if (QFile::exists(QStringLiteral("/dev/loop-control"))
        && QFile::exists(QStringLiteral("/usr/sbin/mkfs.ext4")))
        QVERIFY2(disk.value(QStringLiteral("enforced")) == QJsonValue(true)
                     && disk.value(QStringLiteral("by"))
                            .toString()
                            .contains(QLatin1String("ext4 image")),
                 dump(disk).constData());
    else
        QVERIFY2(!disk.value(QStringLiteral("reason")).toString().isEmpty(), dump(disk).constData());
    QCOMPARE(limits.value(QStringLiteral("enforced")).toBool(),
             disk.value(QStringLiteral("enforced")).toBool());
}

void TestLimits::noCgroupsSaysSo()
{
    EngineFixture engine;
    QVERIFY2(engine.start({QStringLiteral("--no-cgroups")}), qPrintable(engine.process().log()));
    const QJsonObject sandbox = createAgent(engine);
    const QJsonObject memory = sandbox.value(QStringLiteral("limits"))
                                   .toObject()
                                   .value(QStringLiteral("enforcement"))
                                   .toObject()
                                   .value(QStringLiteral("memory"))
                                   .toObject();
    QCOMPARE(memory.value(QStringLiteral("enforced")), QJsonValue(false));
    QVERIFY2(memory.value(QStringLiteral("reason"))
                 .toString()
                 .contains(QLatin1String("--no-cgroups")),
             dump(memory).constData());
}

QTEST_GUILESS_MAIN(TestLimits)
#include "tst_limits.moc"
