// A kill -9 of sandboxd loses nothing: the registry stays consistent, no sandbox process is left
// behind, and every sandbox comes back (asleep) with its /workspace intact.
#include "enginefixture.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {

// Host processes still running as a uid (the sandbox's).
int processesOfUid(uint uid)
{
    int n = 0;
    const QStringList entries
        = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool isPid = false;
        e.toInt(&isPid);
        if (!isPid)
            continue;
        QFile status(QStringLiteral("/proc/%1/status").arg(e));
        if (!status.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &line : status.readAll().split('\n')) {
            if (line.startsWith("Uid:")) {
                const QList<QByteArray> f = line.simplified().split(' ');
                if (f.size() > 1 && f[1].toUInt() == uid)
                    ++n;
            }
        }
    }
    return n;
}

} // namespace

class tst_EngineRestart : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void kill9LosesNothing_data();
    void kill9LosesNothing();
    void oneEnginePerDataDir();
    void aDeadEnginesLockNamingALiveSandboxdDoesNotStopTheNext();
};

void tst_EngineRestart::kill9LosesNothing_data()
{
    QTest::addColumn<bool>("crash");
    QTest::newRow("kill -9") << true;
    QTest::newRow("SIGTERM") << false;
}

void tst_EngineRestart::kill9LosesNothing()
{
    QFETCH(bool, crash);
    QTemporaryDir dir;
    EngineFixture engine;
    // Its own uid range, so that sandboxes of engines in other tests are not counted.
    const QStringList args{QStringLiteral("--uid-base"), QStringLiteral("450000")};
    QVERIFY2(engine.start(args, dir.path()), qPrintable(engine.process().log()));
    const QString key = engine.process().key();

    const QString id = engine.createAgent(QStringLiteral("opencode"), {});
    QVERIFY(!id.isEmpty());
    const QJsonObject r = engine.rpc().result(
        QStringLiteral("agents.exec"),
        {{QStringLiteral("id"), id},
         {QStringLiteral("command"),
          QStringLiteral("echo precious > data.txt; sleep 1000 > /dev/null 2>&1 & id -u")}});
    const uint uid = r.value(QStringLiteral("stdout")).toString().trimmed().toUInt();
    QVERIFY(uid > 0);
    if (::geteuid() == 0)
        QVERIFY(processesOfUid(uid) > 0);

    if (crash)
        engine.process().kill9();
    else
        engine.process().terminate();

    // Nothing of the sandbox outlives its engine.
    if (::geteuid() == 0)
        QTRY_COMPARE_WITH_TIMEOUT(processesOfUid(uid), 0, 10000);

    EngineFixture again;
    QVERIFY2(again.start(args, dir.path()), qPrintable(again.process().log()));
    QCOMPARE(again.process().key(), key); // the key file and the key registry survived
    RpcTestClient &rpc = again.rpc();
    // ... with the key's last use, written when the first engine let it in.
    const QJsonArray keys
        = rpc.result(QStringLiteral("keys.list"), {}).value(QStringLiteral("keys")).toArray();
    QCOMPARE(keys.size(), 1);
    QVERIFY2(QDateTime::fromString(keys.first()[QStringLiteral("lastUsedAt")].toString(),
                                   Qt::ISODateWithMs)
                 .isValid(),
             QJsonDocument(keys).toJson().constData());
    const QJsonObject info = rpc.result(QStringLiteral("agents.get"), {{QStringLiteral("id"), id}});
    QCOMPARE(info.value(QStringLiteral("status")).toString(), QStringLiteral("sleeping"));
    const QJsonObject cat = rpc.result(QStringLiteral("agents.exec"),
                                       {{QStringLiteral("id"), id},
                                        {QStringLiteral("command"),
                                         QStringLiteral("cat data.txt")}});
    QCOMPARE(cat.value(QStringLiteral("stdout")).toString(), QStringLiteral("precious\n"));
    QCOMPARE(rpc.result(QStringLiteral("agents.get"), {{QStringLiteral("id"), id}})
                 .value(QStringLiteral("status"))
                 .toString(),
             QStringLiteral("running"));
    // Deleting it leaves no mount and no files behind.
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}});
    QFile mounts(QStringLiteral("/proc/self/mountinfo"));
    QVERIFY(mounts.open(QIODevice::ReadOnly));
    QVERIFY(!mounts.readAll().contains(dir.path().toUtf8()));
    QVERIFY(!QFileInfo::exists(dir.path() + QStringLiteral("/sandboxes/") + id));
}

void tst_EngineRestart::oneEnginePerDataDir()
{
    QTemporaryDir dir;
    EngineFixture first;
    QVERIFY2(first.start({}, dir.path()), qPrintable(first.process().log()));
    EngineFixture second;
    QVERIFY(!second.start({}, dir.path()));
    QVERIFY2(second.process().log().contains(QStringLiteral("another sandboxd is using")),
             qPrintable(second.process().log()));
    // The first one still serves.
    QVERIFY(
        first.rpc().result(QStringLiteral("agents.list"), {}).contains(QStringLiteral("agents")));
}

// A container restarted after a kill -9 of its engine: the lock file left behind names a pid
// that is alive again and is a sandboxd (there, the new engine itself). The next engine starts.
void tst_EngineRestart::aDeadEnginesLockNamingALiveSandboxdDoesNotStopTheNext()
{
    QTemporaryDir dir, otherDir;
    EngineFixture dead;
    QVERIFY2(dead.start({}, dir.path()), qPrintable(dead.process().log()));
    dead.process().kill9();
    EngineFixture alive; // a live sandboxd, on another data dir
    QVERIFY2(alive.start({}, otherDir.path()), qPrintable(alive.process().log()));

    QFile lock(dir.filePath(QStringLiteral("sandboxd.lock")));
    QVERIFY(lock.open(QIODevice::ReadWrite));
    QList<QByteArray> lines = lock.readAll().split('\n');
    QVERIFY(lines.size() >= 3);
    QCOMPARE(lines.at(1), QByteArray("sandboxd"));
    lines[0] = QByteArray::number(alive.process().pid());
    QVERIFY(lock.resize(0));
    QVERIFY(lock.seek(0));
    lock.write(lines.join('\n'));
    lock.close();

    EngineFixture next;
    QVERIFY2(next.start({}, dir.path()), qPrintable(next.process().log()));
    QVERIFY(next.rpc().result(QStringLiteral("agents.list"), {}).contains(QStringLiteral("agents")));
    // The file now names the engine that holds it.
    QVERIFY(lock.open(QIODevice::ReadOnly));
    QCOMPARE(lock.readLine().trimmed(), QByteArray::number(next.process().pid()));
}

QTEST_GUILESS_MAIN(tst_EngineRestart)
#include "tst_enginerestart.moc"
