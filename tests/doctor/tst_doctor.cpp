// `sandboxd doctor` against prepared trees of the hosts people run (Ubuntu 24.04, Debian 12,
// Fedora 40, a host without cgroup delegation, our hybrid CI machines): every check's verdict and
// fix, and the command itself (exit status, text and JSON).
#include "doctor/agentclis.h"
#include "doctor/doctor.h"
#include "hosttree.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

using namespace Sandbox::Engine;
using Verdict = DoctorCheck::Verdict;

namespace {

const QString kDbhost = QStringLiteral("/usr/libexec/sandbox-desktop/dbhost");

DoctorOptions optionsFor(const HostTree &tree, uid_t uid, const QString &exe = {})
{
    DoctorOptions o;
    o.root = tree.root();
    o.uid = uid;
    o.dataDir = uid == 0 ? QStringLiteral("/var/lib/sandboxd")
                         : QStringLiteral("/home/alice/.local/share/sandboxd");
    o.executable = exe.isEmpty() ? QStringLiteral("/usr/bin/sandboxd") : exe;
    // As the packaged sandboxd looks: /usr/agents, the data dir, /usr/libexec/sandbox-desktop.
    o.agentsDirs = AgentClis::searchDirs(QStringLiteral("/usr/bin"), o.dataDir);
    o.dbhostDir = kDbhost;
    return o;
}

// "id:verdict:text" expectations, text a part of summary + fix.
struct Expect
{
    QString id;
    Verdict verdict;
    QString text;
};

} // namespace

Q_DECLARE_METATYPE(Expect)
Q_DECLARE_METATYPE(QList<Expect>)

class TestDoctor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void trees_data();
    void trees();
    void freeDisk_data();
    void freeDisk();
    void commandOnATree();
    void reportFormats();
    void readmeExamples();
};

void TestDoctor::trees_data()
{
    QTest::addColumn<QStringList>("fixtures");
    QTest::addColumn<QStringList>("removed");
    QTest::addColumn<int>("uid");
    QTest::addColumn<QString>("executable");
    QTest::addColumn<QList<Expect>>("expected");

    const Verdict ok = Verdict::Ok, warn = Verdict::Warn, fail = Verdict::Fail,
                  skip = Verdict::Skip;
    const QStringList none;

    QTest::newRow("ubuntu 24.04, normal user, no .deb: the AppArmor restriction fails with the fix")
        << QStringList{QStringLiteral("ubuntu-24.04")} << none << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("userns"), ok, QStringLiteral("max_user_namespaces = 63704")},
               {QStringLiteral("apparmor"), fail,
                QStringLiteral("kernel.apparmor_restrict_unprivileged_userns = 1")},
               {QStringLiteral("apparmor"), fail,
                QStringLiteral("sudo install -m 0644 packaging/apparmor/sandboxd "
                               "/etc/apparmor.d/sandboxd && sudo apparmor_parser -r "
                               "/etc/apparmor.d/sandboxd")},
               {QStringLiteral("bubblewrap"), warn,
                QStringLiteral(
                    "bubblewrap 0.9.0 is older than 0.12.0, which fixes CVE-2026-87766")},
               {QStringLiteral("bubblewrap"), warn,
                QStringLiteral("sudo apt-get install --only-upgrade bubblewrap")},
               {QStringLiteral("sandbox"), skip, QStringLiteral("prepared tree")},
               {QStringLiteral("cgroups"), ok, QStringLiteral("delegates memory, pids and cpu")},
               {QStringLiteral("seccomp"), ok, QStringLiteral("kill_process")},
               {QStringLiteral("openat2"), ok, QStringLiteral("6.8.0-31-generic")},
               {QStringLiteral("disk-caps"), warn, QStringLiteral("normal user")},
               {QStringLiteral("agents"), warn,
                QStringLiteral("no agent CLI is installed yet (Claude Code, Codex, OpenCode are "
                               "installed on first use)")},
               {QStringLiteral("agents"), warn,
                QStringLiteral("the app installs a CLI (from npm, into "
                               "/home/alice/.local/share/sandboxd/agents) when an agent first "
                               "needs it; to install it now: sandboxctl agents install-cli "
                               "claude-code && sandboxctl agents install-cli codex")},
               {QStringLiteral("databases"), warn,
                QStringLiteral("PostgreSQL 15 (/usr/lib/postgresql/15/bin)")},
               {QStringLiteral("free-disk"), ok,
                QStringLiteral("/home/alice/.local/share/sandboxd")},
           };

    QTest::newRow("ubuntu 24.04 with the .deb: the profile is loaded, agents and dbhost are there")
        << QStringList{QStringLiteral("ubuntu-24.04"), QStringLiteral("ubuntu-24.04-deb")} << none
        << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("apparmor"), ok, QStringLiteral("sandboxd profile")},
               {QStringLiteral("agents"), ok, QStringLiteral("Claude Code, Codex and OpenCode")},
               {QStringLiteral("databases"), warn,
                QStringLiteral("missing: PostgreSQL 15 (/usr/lib/postgresql/15/bin) (SQLite, "
                               "DuckDB work)")},
               {QStringLiteral("databases"), warn,
                QStringLiteral("sudo apt-get install postgresql-15")},
           };

    QTest::newRow("ubuntu 24.04 with the .deb, the profile list unreadable (not root): warns")
        << QStringList{QStringLiteral("ubuntu-24.04"), QStringLiteral("ubuntu-24.04-deb")}
        << QStringList{QStringLiteral("/sys/kernel/security/apparmor/profiles")} << 1000
        << QString()
        << QList<Expect>{{QStringLiteral("apparmor"), warn,
                          QStringLiteral("only root can see whether it is loaded")}};

    QTest::newRow("ubuntu 24.04, the .deb, but a sandboxd from a build tree: not covered")
        << QStringList{QStringLiteral("ubuntu-24.04"), QStringLiteral("ubuntu-24.04-deb")} << none
        << 1000 << QStringLiteral("/home/alice/src/build/bin/sandboxd")
        << QList<Expect>{
               {QStringLiteral("apparmor"), fail, QStringLiteral("covers only /usr/bin/sandboxd")},
               {QStringLiteral("apparmor"), fail,
                QStringLiteral("profile sandboxd-local /home/alice/src/build/bin/sandboxd")},
           };

    QTest::newRow("debian 12, normal user: AppArmor does not restrict, v2 delegates everything")
        << QStringList{QStringLiteral("debian-12")} << none << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("userns"), ok,
                QStringLiteral("kernel.unprivileged_userns_clone = 1")},
               {QStringLiteral("apparmor"), ok, QStringLiteral("does not restrict")},
               {QStringLiteral("bubblewrap"), warn, QStringLiteral("0.8.0")},
               {QStringLiteral("cgroups"), ok, QStringLiteral("systemctl --user start sandboxd")},
               {QStringLiteral("openat2"), ok, QStringLiteral("6.1.0-18-amd64")},
               {QStringLiteral("databases"), warn,
                QStringLiteral("SQLite (sandbox-dbhost in /usr/libexec/sandbox-desktop/dbhost)")},
               {QStringLiteral("databases"), warn, QStringLiteral("(PostgreSQL work)")},
           };

    QTest::newRow("debian 12 with the .deb: sandboxes work, two warnings")
        << QStringList{QStringLiteral("debian-12"), QStringLiteral("debian-12-deb")} << none << 1000
        << QString()
        << QList<Expect>{
               {QStringLiteral("apparmor"), ok, QStringLiteral("does not restrict")},
               {QStringLiteral("agents"), ok, QStringLiteral("Claude Code, Codex and OpenCode")},
               {QStringLiteral("databases"), ok, QStringLiteral("PostgreSQL 15, SQLite and DuckDB")},
               {QStringLiteral("cgroups"), ok, QStringLiteral("delegates memory, pids and cpu")},
               {QStringLiteral("bubblewrap"), warn, QStringLiteral("0.8.0")},
               {QStringLiteral("disk-caps"), warn, QStringLiteral("normal user")},
           };

    QTest::newRow("debian 12 as root: limits and disk caps hold")
        << QStringList{QStringLiteral("debian-12")} << none << 0 << QString()
        << QList<Expect>{
               {QStringLiteral("cgroups"), ok, QStringLiteral("the engine runs as root")},
               {QStringLiteral("disk-caps"), ok, QStringLiteral("ext4 image")},
           };

    QTest::newRow("debian 12 with kernel.unprivileged_userns_clone=0")
        << QStringList{QStringLiteral("debian-12"), QStringLiteral("userns-off")} << none << 1000
        << QString()
        << QList<Expect>{{QStringLiteral("userns"), fail,
                          QStringLiteral("sudo sysctl -w kernel.unprivileged_userns_clone=1 && "
                                         "echo kernel.unprivileged_userns_clone=1 | sudo tee "
                                         "/etc/sysctl.d/60-sandbox-desktop.conf")}};

    QTest::newRow("fedora 40: no AppArmor, dnf, PostgreSQL outside Debian's layout")
        << QStringList{QStringLiteral("fedora-40")} << none << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("apparmor"), ok, QStringLiteral("not active")},
               {QStringLiteral("bubblewrap"), warn, QStringLiteral("sudo dnf upgrade bubblewrap")},
               {QStringLiteral("cgroups"), ok, QStringLiteral("delegates memory, pids and cpu")},
               {QStringLiteral("databases"), warn, QStringLiteral("Debian's layout")},
               {QStringLiteral("disk-caps"), warn, QStringLiteral("run sandboxd as root")},
           };

    QTest::newRow("fedora 40 without bubblewrap: fails with dnf install")
        << QStringList{QStringLiteral("fedora-40")} << QStringList{QStringLiteral("/usr/bin/bwrap")}
        << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("bubblewrap"), fail, QStringLiteral("sudo dnf install bubblewrap")}};

    QTest::newRow("a host without delegation: the user's systemd delegates nothing")
        << QStringList{QStringLiteral("no-delegation")} << none << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("cgroups"), fail, QStringLiteral("delegates none")},
               {QStringLiteral("cgroups"), fail,
                QStringLiteral("Delegate=cpu cpuset io memory pids")},
               {QStringLiteral("bubblewrap"), ok, QStringLiteral("0.12.1")},
               {QStringLiteral("apparmor"), ok, QStringLiteral("not active")},
           };

    QTest::newRow("partial delegation: memory and pids, not cpu")
        << QStringList{QStringLiteral("fedora-40"), QStringLiteral("no-cpu")} << none << 1000
        << QString()
        << QList<Expect>{{QStringLiteral("cgroups"), warn,
                          QStringLiteral("delegates memory, pids but not cpu")}};

    QTest::newRow("no systemd user manager: nothing delegates")
        << QStringList{QStringLiteral("debian-12")}
        << QStringList{QStringLiteral(
               "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service")}
        << 1000 << QString()
        << QList<Expect>{{QStringLiteral("cgroups"), fail,
                          QStringLiteral("no systemd user manager for uid 1000")},
                         {QStringLiteral("cgroups"), fail, QStringLiteral("enable-linger")}};

    QTest::newRow("hybrid v1 (our CI machines), normal user: no limits, the fix is cgroup v2")
        << QStringList{QStringLiteral("hybrid-v1")} << none << 1000 << QString()
        << QList<Expect>{
               {QStringLiteral("cgroups"), fail, QStringLiteral("hybrid")},
               {QStringLiteral("cgroups"), fail,
                QStringLiteral("systemd.unified_cgroup_hierarchy=1")},
               {QStringLiteral("apparmor"), ok, QStringLiteral("not active")},
           };

    QTest::newRow("hybrid v1 as root: v1 limits hold")
        << QStringList{QStringLiteral("hybrid-v1")} << none << 0 << QString()
        << QList<Expect>{{QStringLiteral("cgroups"), ok, QStringLiteral("hybrid")}};

    QTest::newRow("ubuntu 22.04's bubblewrap 0.6.1 is too old for --disable-userns")
        << QStringList{QStringLiteral("ubuntu-24.04"), QStringLiteral("bwrap-0.6")} << none << 1000
        << QString()
        << QList<Expect>{
               {QStringLiteral("bubblewrap"), fail, QStringLiteral("needs 0.8.0 or newer")}};

    QTest::newRow("a kernel older than 5.6 has no openat2")
        << QStringList{QStringLiteral("debian-12"), QStringLiteral("old-kernel")} << none << 1000
        << QString()
        << QList<Expect>{{QStringLiteral("openat2"), fail, QStringLiteral("5.4.0-42-generic")}};
}

void TestDoctor::trees()
{
    QFETCH(QStringList, fixtures);
    QFETCH(QStringList, removed);
    QFETCH(int, uid);
    QFETCH(QString, executable);
    QFETCH(QList<Expect>, expected);

    HostTree tree(fixtures);
    QVERIFY2(tree.isValid(), qPrintable(tree.error()));
    for (const QString &r : removed)
        QVERIFY(tree.remove(r));
    const DoctorReport report = runDoctor(optionsFor(tree, uid_t(uid), executable));
    QCOMPARE(report.checks.size(), 11);
    for (const DoctorCheck &c : report.checks)
        QVERIFY2(c.verdict == Verdict::Ok || c.verdict == Verdict::Skip || !c.fix.isEmpty(),
                 qPrintable(c.id + QStringLiteral(": a check that is not ok says how to fix it")));
    for (const Expect &e : expected) {
        const DoctorCheck *c = report.check(e.id);
        QVERIFY2(c, qPrintable(e.id));
        const QString text = c->summary + QStringLiteral(" | fix: ") + c->fix;
        QVERIFY2(c->verdict == e.verdict,
                 qPrintable(QStringLiteral("%1 is %2, expected %3: %4")
                                .arg(e.id, DoctorCheck::verdictName(c->verdict),
                                     DoctorCheck::verdictName(e.verdict), text)));
        QVERIFY2(text.contains(e.text), qPrintable(e.id + QStringLiteral(": ") + text));
    }
}

void TestDoctor::freeDisk_data()
{
    QTest::addColumn<qint64>("bytes");
    QTest::addColumn<QString>("verdict");
    QTest::newRow("512 MiB fails") << 512LL * 1024 * 1024 << QStringLiteral("fail");
    QTest::newRow("4 GiB warns (below one default sandbox)")
        << 4LL * 1024 * 1024 * 1024 << QStringLiteral("warn");
    QTest::newRow("20 GiB is ok") << 20LL * 1024 * 1024 * 1024 << QStringLiteral("ok");
}

void TestDoctor::freeDisk()
{
    QFETCH(qint64, bytes);
    QFETCH(QString, verdict);
    const DoctorCheck c = freeDiskCheck(bytes, QStringLiteral("/data"));
    QCOMPARE(DoctorCheck::verdictName(c.verdict), verdict);
    QVERIFY(c.summary.contains(QLatin1String("/data")));
}

void TestDoctor::commandOnATree()
{
    HostTree tree({QStringLiteral("ubuntu-24.04")});
    QVERIFY2(tree.isValid(), qPrintable(tree.error()));
    QProcess p;
    p.start(QStringLiteral(SANDBOXD_BIN),
            {QStringLiteral("doctor"), QStringLiteral("--root"), tree.root(),
             QStringLiteral("--uid"), QStringLiteral("1000"), QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 1); // AppArmor fails there
    const QJsonObject json = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QVERIFY2(json.value(QStringLiteral("host")).toString().contains(QLatin1String("Ubuntu 24.04")),
             qPrintable(json.value(QStringLiteral("host")).toString()));
    QCOMPARE(json.value(QStringLiteral("failures")).toInt(), 1);
    bool sawAppArmor = false;
    for (const QJsonValue &v : json.value(QStringLiteral("checks")).toArray()) {
        const QJsonObject c = v.toObject();
        if (c.value(QStringLiteral("id")).toString() == QLatin1String("apparmor")) {
            sawAppArmor = true;
            QCOMPARE(c.value(QStringLiteral("verdict")).toString(), QStringLiteral("fail"));
            QVERIFY(c.value(QStringLiteral("fix"))
                        .toString()
                        .contains(QLatin1String("apparmor_parser -r")));
        }
    }
    QVERIFY(sawAppArmor);

    // The text form, on a host where nothing fails: exit 0.
    HostTree debian({QStringLiteral("debian-12")});
    p.start(QStringLiteral(SANDBOXD_BIN),
            {QStringLiteral("doctor"), QStringLiteral("--root"), debian.root(),
             QStringLiteral("--uid"), QStringLiteral("1000")});
    QVERIFY(p.waitForFinished(30000));
    const QString text = QString::fromUtf8(p.readAllStandardOutput());
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(text.contains(QLatin1String("WARN  bubblewrap")), qPrintable(text));
    QVERIFY2(text.contains(QLatin1String("0 failed")), qPrintable(text));

    // Bad usage.
    p.start(QStringLiteral(SANDBOXD_BIN),
            {QStringLiteral("doctor"), QStringLiteral("--frobnicate")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
}

void TestDoctor::reportFormats()
{
    HostTree tree({QStringLiteral("no-delegation")});
    const DoctorReport report = runDoctor(optionsFor(tree, 1000));
    const QString text = report.toText();
    // Every check on its own line, the fix below a check that is not ok.
    for (const DoctorCheck &c : report.checks)
        QVERIFY2(text.contains(c.title), qPrintable(c.title));
    QVERIFY(text.contains(QLatin1String("FAIL  Sandbox limits (cgroups)")));
    QVERIFY(text.contains(
        QLatin1String("      fix: sudo mkdir -p /etc/systemd/system/user@.service.d")));
    const QJsonObject json = report.toJson();
    QCOMPARE(json.value(QStringLiteral("checks")).toArray().size(), report.checks.size());
    QCOMPARE(json.value(QStringLiteral("failures")).toInt(), report.count(Verdict::Fail));
}

namespace {

// The report's lines without the host line and the free-disk check (its figure is the disk the
// test runs on, not the tree's).
QStringList comparableLines(const QString &text)
{
    QStringList out;
    bool skipFix = false;
    for (const QString &line : text.split(u'\n')) {
        if (line.startsWith(QLatin1String("sandboxd doctor: ")))
            continue;
        if (line.contains(QLatin1String("  Free disk  "))) {
            skipFix = true;
            continue;
        }
        if (skipFix && line.startsWith(QLatin1String("      fix: ")))
            continue;
        skipFix = false;
        out.append(line);
    }
    while (!out.isEmpty() && out.first().isEmpty())
        out.removeFirst();
    while (!out.isEmpty() && out.last().isEmpty())
        out.removeLast();
    return out;
}

// The README's fenced blocks that are doctor reports (or parts of one).
QList<QStringList> readmeReports()
{
    QFile f(QStringLiteral(SANDBOX_SOURCE_DIR "/README.md"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QList<QStringList> blocks;
    QStringList current;
    bool inBlock = false;
    for (const QString &line : QString::fromUtf8(f.readAll()).split(u'\n')) {
        if (line.startsWith(QLatin1String("```"))) {
            if (inBlock && !current.isEmpty()
                && (current.first().startsWith(QLatin1String("ok    "))
                    || current.first().startsWith(QLatin1String("FAIL  "))))
                blocks.append(comparableLines(current.join(u'\n')));
            inBlock = !inBlock;
            current.clear();
        } else if (inBlock) {
            current.append(line);
        }
    }
    return blocks;
}

} // namespace

void TestDoctor::readmeExamples()
{
    // The README's install section shows what doctor says on Ubuntu 24.04 and Debian 12 with the
    // .deb installed, and the AppArmor failure: each is what the prepared trees give today.
    const QList<QStringList> readme = readmeReports();
    QCOMPARE(readme.size(), 3);

    HostTree ubuntu({QStringLiteral("ubuntu-24.04"), QStringLiteral("ubuntu-24.04-deb")});
    QVERIFY2(ubuntu.isValid(), qPrintable(ubuntu.error()));
    const QStringList ubuntuLines = comparableLines(runDoctor(optionsFor(ubuntu, 1000)).toText());
    QCOMPARE(readme.at(0), ubuntuLines);

    // The same machine with the profile installed but not loaded (AppArmor came after the .deb).
    QVERIFY(ubuntu.write(QStringLiteral("/sys/kernel/security/apparmor/profiles"),
                         "firefox (unconfined)\nunprivileged_userns (enforce)\n"));
    const QStringList unloaded = comparableLines(runDoctor(optionsFor(ubuntu, 1000)).toText());
    for (const QString &line : readme.at(1))
        QVERIFY2(unloaded.contains(line), qPrintable(line));

    HostTree debian({QStringLiteral("debian-12"), QStringLiteral("debian-12-deb")});
    QVERIFY2(debian.isValid(), qPrintable(debian.error()));
    QCOMPARE(readme.at(2), comparableLines(runDoctor(optionsFor(debian, 1000)).toText()));
}

QTEST_GUILESS_MAIN(TestDoctor)
#include "tst_doctor.moc"
