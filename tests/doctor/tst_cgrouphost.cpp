// Where the engine makes its sandboxes' cgroups, against prepared trees: root on v1/hybrid and v2,
// a normal user with a systemd-delegated v2 subtree (sandboxd.service, Delegate=yes), with a
// partial delegation, and without one. What the Sandbox object then says comes from
// CgroupHost::enforcement().
#include "doctor/hostfacts.h"
#include "hosttree.h"
#include "runtime/cgroup.h"

#include <QDir>
#include <QFile>
#include <QJsonObject>
#include <QTest>

#include <unistd.h>

using namespace Sandbox::Engine;

namespace {

const QString kService = QStringLiteral(
    "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/"
    "sandboxd.service");

QByteArray contentOf(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray("<missing>");
}

// A file of the fake hierarchy, as a kernel that has it would show it.
bool writeTo(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

} // namespace

class TestCgroupHost : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void rootOnHybridV1();
    void rootOnV2();
    void userOnHybridV1HasNoLimits();
    void userWithDelegatedSubtree();
    void userWithoutCpuDelegation();
    void userWhoseCgroupIsNotDelegated();
    void userInAScopeOfRoot();
    void failedEnableMovesTheEngineBack();
    void disabled();
};

void TestCgroupHost::rootOnHybridV1()
{
    HostTree tree({QStringLiteral("hybrid-v1")});
    QVERIFY2(tree.isValid(), qPrintable(tree.error()));
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 0);
    QCOMPARE(host.version(), CgroupHost::Version::V1);
    QCOMPARE(host.parentDir(QStringLiteral("memory")),
             tree.path(QStringLiteral("/sys/fs/cgroup/memory/sandboxd")));
    QCOMPARE(host.parentDir(QStringLiteral("freezer")),
             tree.path(QStringLiteral("/sys/fs/cgroup/freezer/sandboxd")));
    for (const QString &c : limitControllers()) {
        QVERIFY(host.enforcement(c).enforced);
        QCOMPARE(host.enforcement(c).by, QStringLiteral("cgroup v1"));
    }

    ResourceLimits limits;
    limits.memoryMb = 256;
    limits.pids = 128;
    const auto group = Cgroup::create(host, QStringLiteral("sb_1"), limits);
    QVERIFY2(group, group ? "" : qPrintable(group.error().message));
    QCOMPARE(group->procsFiles().size(), 3);
    QCOMPARE(contentOf(tree.path(
                 QStringLiteral("/sys/fs/cgroup/memory/sandboxd/sb_1/memory.limit_in_bytes"))),
             QByteArray::number(256 * 1024 * 1024));
    QCOMPARE(contentOf(tree.path(QStringLiteral("/sys/fs/cgroup/pids/sandboxd/sb_1/pids.max"))),
             QByteArray("128"));
    QVERIFY(group->setCpuLimit(0.0625));
    QCOMPARE(contentOf(
                 tree.path(QStringLiteral("/sys/fs/cgroup/cpu/sandboxd/sb_1/cpu.cfs_quota_us"))),
             QByteArray("6250"));
    // A kernel without CFS burst has no file for it, and gets none.
    const QString burst = tree.path(
        QStringLiteral("/sys/fs/cgroup/cpu/sandboxd/sb_1/cpu.cfs_burst_us"));
    QVERIFY(!QFile::exists(burst));
    // One with it: a burst of the quota again, set after the quota (the kernel refuses a burst
    // above the quota), so that a size made smaller is accepted too.
    QVERIFY(writeTo(burst, "0"));
    QVERIFY(group->setCpuLimit(0.25));
    QCOMPARE(contentOf(burst), QByteArray("25000"));
    QVERIFY(group->setCpuLimit(0.0625));
    QCOMPARE(contentOf(burst), QByteArray("6250"));
    // Killing the group lifts its quota first: the dying get the CPU to exit at once.
    group->killAll();
    QCOMPARE(contentOf(
                 tree.path(QStringLiteral("/sys/fs/cgroup/cpu/sandboxd/sb_1/cpu.cfs_quota_us"))),
             QByteArray("-1"));
    QCOMPARE(Cgroup::existing(host, QStringLiteral("sb_1")).procsFiles(), group->procsFiles());
}

void TestCgroupHost::rootOnV2()
{
    HostTree tree({QStringLiteral("debian-12")});
    QVERIFY2(tree.isValid(), qPrintable(tree.error()));
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 0);
    QCOMPARE(host.version(), CgroupHost::Version::V2);
    QCOMPARE(host.parentDir(QString()), tree.path(QStringLiteral("/sys/fs/cgroup/sandboxd")));
    QCOMPARE(contentOf(tree.path(QStringLiteral("/sys/fs/cgroup/cgroup.subtree_control"))),
             QByteArray("+memory +pids +cpu"));
    QVERIFY(host.enforcement(QStringLiteral("cpu")).enforced);
}

void TestCgroupHost::userOnHybridV1HasNoLimits()
{
    HostTree tree({QStringLiteral("hybrid-v1")});
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QVERIFY(!host.isUsable());
    for (const QString &c : limitControllers()) {
        const LimitEnforcement e = host.enforcement(c);
        QVERIFY(!e.enforced);
        QVERIFY2(e.reason.contains(QLatin1String("hybrid"))
                     && e.reason.contains(QLatin1String("systemd.unified_cgroup_hierarchy=1")),
                 qPrintable(e.reason));
    }
    // Nothing was written into the v1 hierarchies.
    QVERIFY(!QFile::exists(tree.path(QStringLiteral("/sys/fs/cgroup/memory/sandboxd"))));
}

void TestCgroupHost::userWithDelegatedSubtree()
{
    if (::geteuid() != 0)
        QSKIP("needs root to hand the tree's cgroup to uid 1000");
    HostTree tree({QStringLiteral("debian-12")});
    QVERIFY(tree.chown(kService, 1000));
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QCOMPARE(host.version(), CgroupHost::Version::V2);
    // The engine moved into a leaf of its own, then gave the controllers to its children.
    QCOMPARE(contentOf(tree.path(kService + QStringLiteral("/engine/cgroup.procs"))),
             QByteArray::number(qint64(::getpid())));
    QCOMPARE(contentOf(tree.path(kService + QStringLiteral("/cgroup.subtree_control"))),
             QByteArray("+memory +pids +cpu"));
    QCOMPARE(contentOf(tree.path(kService + QStringLiteral("/sandboxes/cgroup.subtree_control"))),
             QByteArray("+memory +pids +cpu"));
    QCOMPARE(host.parentDir(QStringLiteral("pids")),
             tree.path(kService + QStringLiteral("/sandboxes")));
    for (const QString &c : limitControllers()) {
        QVERIFY(host.enforcement(c).enforced);
        QVERIFY2(host.enforcement(c).by.contains(QLatin1String("delegated")),
                 qPrintable(host.enforcement(c).by));
    }
    // Nothing at the top of the hierarchy: a normal user cannot write there.
    QVERIFY(!QFile::exists(tree.path(QStringLiteral("/sys/fs/cgroup/sandboxd"))));

    ResourceLimits limits;
    limits.memoryMb = 1024;
    limits.pids = 256;
    const auto group = Cgroup::create(host, QStringLiteral("sb_2"), limits);
    QVERIFY2(group, group ? "" : qPrintable(group.error().message));
    const QString dir = tree.path(kService + QStringLiteral("/sandboxes/sb_2"));
    QCOMPARE(contentOf(dir + QStringLiteral("/memory.max")), QByteArray::number(1024LL << 20));
    QCOMPARE(contentOf(dir + QStringLiteral("/pids.max")), QByteArray("256"));
    QCOMPARE(contentOf(dir + QStringLiteral("/cpu.max")), QByteArray("max 100000"));
    QVERIFY(writeTo(dir + QStringLiteral("/cpu.max.burst"), "0"));
    QVERIFY(group->setCpuLimit(0.25));
    QCOMPARE(contentOf(dir + QStringLiteral("/cpu.max")), QByteArray("25000 100000"));
    QCOMPARE(contentOf(dir + QStringLiteral("/cpu.max.burst")), QByteArray("25000"));
    QCOMPARE(group->procsFiles(),
             QList<QByteArray>{QFile::encodeName(dir + QStringLiteral("/cgroup.procs"))});
    QVERIFY(Cgroup::existing(host, QStringLiteral("sb_2")).isValid());
}

void TestCgroupHost::userWithoutCpuDelegation()
{
    if (::geteuid() != 0)
        QSKIP("needs root to hand the tree's cgroup to uid 1000");
    HostTree tree({QStringLiteral("fedora-40"), QStringLiteral("no-cpu")});
    QVERIFY(tree.chown(kService, 1000));
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QVERIFY(host.isUsable());
    QVERIFY(host.enforcement(QStringLiteral("memory")).enforced);
    QVERIFY(host.enforcement(QStringLiteral("pids")).enforced);
    const LimitEnforcement cpu = host.enforcement(QStringLiteral("cpu"));
    QVERIFY(!cpu.enforced);
    QVERIFY2(cpu.reason.contains(QLatin1String("Delegate=cpu cpuset io memory pids")),
             qPrintable(cpu.reason));
    QCOMPARE(contentOf(tree.path(kService + QStringLiteral("/cgroup.subtree_control"))),
             QByteArray("+memory +pids"));

    const auto group = Cgroup::create(host, QStringLiteral("sb_3"), ResourceLimits());
    QVERIFY(group);
    const QString dir = tree.path(kService + QStringLiteral("/sandboxes/sb_3"));
    QVERIFY(group->setCpuLimit(0.5)); // nothing to set, nothing claimed
    QVERIFY(!QFile::exists(dir + QStringLiteral("/cpu.max")));
    QVERIFY(QFile::exists(dir + QStringLiteral("/memory.max")));
}

void TestCgroupHost::userWhoseCgroupIsNotDelegated()
{
    // debian-12 as laid out: the service's cgroup belongs to root, not to uid 1000.
    HostTree tree({QStringLiteral("debian-12")});
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QVERIFY(!host.isUsable());
    const LimitEnforcement e = host.enforcement(QStringLiteral("memory"));
    QVERIFY2(e.reason.contains(QLatin1String("not delegated"))
                 && e.reason.contains(QLatin1String("systemctl --user start sandboxd")),
             qPrintable(e.reason));
    QVERIFY(!QFile::exists(tree.path(kService + QStringLiteral("/engine"))));
}

void TestCgroupHost::userInAScopeOfRoot()
{
    HostTree tree({QStringLiteral("no-delegation")});
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QVERIFY(!host.isUsable());
    QVERIFY2(host.enforcement(QStringLiteral("pids"))
                 .reason.contains(QLatin1String("session-3.scope")),
             qPrintable(host.enforcement(QStringLiteral("pids")).reason));
}

void TestCgroupHost::failedEnableMovesTheEngineBack()
{
    if (::geteuid() != 0)
        QSKIP("needs root to hand the tree's cgroup to uid 1000");
    HostTree tree({QStringLiteral("debian-12")});
    // A subtree_control that cannot be written (a directory in place of the file).
    QVERIFY(tree.remove(kService + QStringLiteral("/cgroup.subtree_control")));
    QVERIFY(QDir().mkpath(tree.path(kService + QStringLiteral("/cgroup.subtree_control"))));
    QVERIFY(tree.chown(kService, 1000));
    const CgroupHost host = CgroupHost::prepare(HostRoot(tree.root()), 1000);
    QVERIFY(!host.isUsable());
    QVERIFY2(host.enforcement(QStringLiteral("cpu")).reason.contains(QLatin1String("cannot enable")),
             qPrintable(host.enforcement(QStringLiteral("cpu")).reason));
    // Back where it came from (the tree keeps the leaf's files; cgroupfs removes the leaf).
    QCOMPARE(contentOf(tree.path(kService + QStringLiteral("/cgroup.procs"))),
             QByteArray::number(qint64(::getpid())));
}

void TestCgroupHost::disabled()
{
    const CgroupHost host = CgroupHost::disabled(
        QStringLiteral("sandboxd was started with --no-cgroups"));
    QVERIFY(!host.isUsable());
    QCOMPARE(host.enforcement(QStringLiteral("memory")).toJson(),
             (QJsonObject{{QStringLiteral("enforced"), false},
                          {QStringLiteral("reason"),
                           QStringLiteral("sandboxd was started with --no-cgroups")}}));
}

QTEST_GUILESS_MAIN(TestCgroupHost)
#include "tst_cgrouphost.moc"
