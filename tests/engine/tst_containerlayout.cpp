// --isolation container's layout (engine/runtime/containerlayout.*): the sandbox's paths as links
// made only where the sandbox's uid cannot swap them, passwd entries replaced atomically, and
// every process of a uid killed when its sandbox ends. (The whole mode runs in
// scripts/test-containers.sh, inside real containers: it changes /, which a host test must not.)
#include "runtime/containerlayout.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace Sandbox::Engine;

namespace {

// The real uid a process runs as now (/proc/PID/status), or -1.
qint64 uidOf(pid_t pid)
{
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("Uid:"))
            return line.mid(4).simplified().split(' ').value(0).toLongLong();
    }
    return -1;
}

} // namespace

class tst_ContainerLayout : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void linkMakesParentsAndReplacesLinks();
    void linkRefusesWhatItMustNotTouch_data();
    void linkRefusesWhatItMustNotTouch();
    void replaceEntryKeepsTheOthers();
    void killAllOfEndsEveryProcessOfTheUid();

private:
    QString m_root; // a directory only we can change (inside the build tree)
    QTemporaryDir m_tmp{QStringLiteral(SANDBOX_BINARY_DIR "/tst_containerlayout-XXXXXX")};
};

void tst_ContainerLayout::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    m_root = m_tmp.path();
    QVERIFY(QFile::setPermissions(m_root, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner
                                              | QFile::ReadGroup | QFile::ExeGroup
                                              | QFile::ReadOther | QFile::ExeOther));
}

void tst_ContainerLayout::linkMakesParentsAndReplacesLinks()
{
    const QString link = m_root + QStringLiteral("/run/sandbox/dbhost");
    // Under the engine's umask (077) too: the sandbox's uid must pass through the parents.
    const mode_t oldMask = ::umask(077);
    const bool linked = bool(ContainerLayout::link(QStringLiteral("/first/target"), link));
    ::umask(oldMask);
    QVERIFY(linked);
    QCOMPARE(QFileInfo(link).symLinkTarget(), QStringLiteral("/first/target"));
    struct stat st = {};
    QCOMPARE(::lstat(QFile::encodeName(m_root + QStringLiteral("/run/sandbox")).constData(), &st),
             0);
    QCOMPARE(int(st.st_mode & 07777), 0755);
    // The next sandbox's start points it elsewhere.
    QVERIFY(ContainerLayout::link(QStringLiteral("/second/target"), link));
    QCOMPARE(QFileInfo(link).symLinkTarget(), QStringLiteral("/second/target"));
    QVERIFY(!QFileInfo::exists(link + QStringLiteral(".sandboxd-new")));
}

void tst_ContainerLayout::linkRefusesWhatItMustNotTouch_data()
{
    QTest::addColumn<QString>("setup"); // what is made first
    QTest::addColumn<QString>("link");
    QTest::newRow("a real directory at the path")
        << QStringLiteral("dir:home/agent") << QStringLiteral("home/agent");
    QTest::newRow("a parent others can write")
        << QStringLiteral("open:shared") << QStringLiteral("shared/db");
    QTest::newRow("a parent that is a link")
        << QStringLiteral("symlink:opt") << QStringLiteral("opt/agent");
    QTest::newRow("a relative path") << QString() << QStringLiteral("relative");
}

void tst_ContainerLayout::linkRefusesWhatItMustNotTouch()
{
    QFETCH(QString, setup);
    QFETCH(QString, link);
    const QString kind = setup.section(u':', 0, 0);
    const QString path = m_root + u'/' + setup.section(u':', 1);
    if (kind == QLatin1String("dir")) {
        QVERIFY(QDir().mkpath(path));
    } else if (kind == QLatin1String("open")) {
        QVERIFY(QDir().mkpath(path));
        QCOMPARE(::chmod(QFile::encodeName(path).constData(), 01777), 0);
    } else if (kind == QLatin1String("symlink")) {
        QVERIFY(QFile::link(m_root, path));
    }
    const QString full = link == QLatin1String("relative") ? link : m_root + u'/' + link;
    const auto r = ContainerLayout::link(QStringLiteral("/somewhere"), full);
    QVERIFY(!r);
    QVERIFY(!r.error().message.isEmpty());
    QVERIFY(!QFileInfo(full).isSymLink());
}

void tst_ContainerLayout::replaceEntryKeepsTheOthers()
{
    const QString passwd = m_root + QStringLiteral("/passwd");
    QFile f(passwd);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("root:x:0:0:root:/root:/bin/bash\n"
            "sandbox:x:200001:200001:Sandbox:/workspace:/bin/sh\n"
            "other:x:200002:200002::/:/bin/sh\n"
            "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin");
    f.close();
    QVERIFY(ContainerLayout::replaceEntry(passwd, "sandbox", 200002,
                                          "sandbox:x:200002:200002:Sandbox:/workspace:/bin/sh\n"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("root:x:0:0:root:/root:/bin/bash\n"
                                     "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                                     "sandbox:x:200002:200002:Sandbox:/workspace:/bin/sh\n"));
    QCOMPARE(QFileInfo(passwd).permissions() & (QFile::ReadOther | QFile::WriteOther),
             QFile::ReadOther);
}

void tst_ContainerLayout::killAllOfEndsEveryProcessOfTheUid()
{
    if (::geteuid() != 0)
        QSKIP("needs root: the engine kills as the sandbox's uid");
    const uid_t uid = 299917; // unused by anything else
    pid_t children[2];
    for (pid_t &child : children) {
        child = ::fork();
        if (child == 0) {
            if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)
                ::_exit(2);
            ::setsid(); // out of our process group, as a daemon would be
            ::pause();
            ::_exit(0);
        }
        QVERIFY(child > 0);
    }
    // Each child runs as the uid before the kill (a fork not yet past setresuid would survive it).
    for (pid_t child : children)
        QTRY_COMPARE(uidOf(child), qint64(uid));
    ContainerLayout::killAllOf(uid);
    for (pid_t child : children) {
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY(WIFSIGNALED(status));
        QCOMPARE(WTERMSIG(status), SIGKILL);
    }
    // The engine's own uid is never a target.
    ContainerLayout::killAllOf(::geteuid());
    ContainerLayout::killAllOf(0);
}

QTEST_GUILESS_MAIN(tst_ContainerLayout)
#include "tst_containerlayout.moc"
