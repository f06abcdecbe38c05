// The app starts the engine as the systemd user service (packaging/systemd/sandboxd.service,
// Delegate=yes) when that unit is installed and serves the app's local profile, and falls back to
// a sandboxd of its own otherwise. The engine is the real sandboxd; `systemctl` is a small script
// standing in for the user's systemd (no user manager runs on the test machines): it records its
// arguments and starts the unit's ExecStart, as `systemctl --user start` would.
#include "client/localengine.h"

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using namespace Sandbox;

namespace {

quint16 freePort()
{
    QTcpServer s;
    s.listen(QHostAddress::LocalHost);
    return s.serverPort();
}

bool writeFile(const QString &path, const QByteArray &content, QFile::Permissions perms = {})
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(content) != content.size())
        return false;
    f.close();
    return perms == QFile::Permissions() || f.setPermissions(perms);
}

} // namespace

class TestLocalService : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void startsTheUserService();
    void fallsBackWhenTheServiceDoesNotStart();
    void ignoresAUnitForAnotherEngine();
    void ignoresAMaskedUnit();

private:
    // Writes sandboxd.service (ExecStart on `port`, `dataDir`) and the systemctl stand-in,
    // which exits with `systemctlStatus`.
    void prepare(quint16 port, const QString &dataDir, int systemctlStatus);
    ConnectionProfile profile(quint16 port) const;
    QStringList systemctlCalls() const;

    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_units;
    QString m_systemctl;
    QString m_dataDir;
    QList<qint64> m_pids;
};

void TestLocalService::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    m_units = m_dir->filePath(QStringLiteral("units"));
    m_dataDir = m_dir->filePath(QStringLiteral("data"));
    QVERIFY(QDir().mkpath(m_units));
    QVERIFY(QDir().mkpath(m_dataDir));
    m_systemctl = m_dir->filePath(QStringLiteral("systemctl"));
    m_pids.clear();
}

void TestLocalService::cleanup()
{
    // The engines this test started (by either way).
    QFile pids(m_dir->filePath(QStringLiteral("service.pid")));
    if (pids.open(QIODevice::ReadOnly))
        m_pids.append(pids.readAll().trimmed().toLongLong());
    for (qint64 pid : std::as_const(m_pids)) {
        if (pid > 0)
            ::kill(pid_t(pid), SIGTERM);
    }
    for (qint64 pid : std::as_const(m_pids)) {
        if (pid > 0 && !QTest::qWaitFor([pid] { return ::kill(pid_t(pid), 0) != 0; }, 5000))
            qWarning("engine %lld did not stop within 5 s", pid);
    }
    m_dir.reset();
}

void TestLocalService::prepare(quint16 port, const QString &dataDir, int systemctlStatus)
{
    const QByteArray unit = "[Unit]\nDescription=Sandbox Desktop engine\n\n[Service]\nType=exec\n"
                            "ExecStart=" SANDBOXD_BIN " --listen 127.0.0.1:"
                            + QByteArray::number(port) + " --data-dir " + QFile::encodeName(dataDir)
                            + "\nDelegate=yes\n\n[Install]\nWantedBy=default.target\n";
    QVERIFY(writeFile(m_units + QStringLiteral("/sandboxd.service"), unit));
    const QByteArray script = "#!/bin/sh\n"
                              "echo \"$*\" >> '"
                              + QFile::encodeName(m_dir->filePath(QStringLiteral("calls")))
                              + "'\n"
                                "[ \"$*\" = '--user start sandboxd.service' ] || exit 2\n"
                                "exit_status="
                              + QByteArray::number(systemctlStatus)
                              + "\n"
                                "[ $exit_status = 0 ] || { echo 'Failed to connect to bus: No "
                                "medium found' >&2; exit $exit_status; }\n"
                                "cmd=$(sed -n 's/^ExecStart=//p' '"
                              + QFile::encodeName(m_units)
                              + "/sandboxd.service')\n"
                                "nohup $cmd >'"
                              + QFile::encodeName(m_dir->filePath(QStringLiteral("service.log")))
                              + "' 2>&1 </dev/null &\n"
                                "echo $! > '"
                              + QFile::encodeName(m_dir->filePath(QStringLiteral("service.pid")))
                              + "'\n";
    QVERIFY(writeFile(m_systemctl, script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
}

ConnectionProfile TestLocalService::profile(quint16 port) const
{
    ConnectionProfile p = ConnectionProfile::local(m_dataDir);
    p.url = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(port));
    return p;
}

QStringList TestLocalService::systemctlCalls() const
{
    QFile f(m_dir->filePath(QStringLiteral("calls")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts);
}

void TestLocalService::startsTheUserService()
{
    const quint16 port = freePort();
    prepare(port, m_dataDir, 0);
    LocalEngine engine(profile(port));
    engine.setSystemctl(m_systemctl);
    engine.setUserUnitDirs({m_units});
    engine.setProgram(m_dir->filePath(QStringLiteral("no-own-sandboxd"))); // must not be needed
    QCOMPARE(engine.userServiceUnit(), m_units + QStringLiteral("/sandboxd.service"));
    QSignalSpy ready(&engine, &LocalEngine::ready);
    QSignalSpy failed(&engine, &LocalEngine::failed);
    QSignalSpy service(&engine, &LocalEngine::serviceStarted);
    QSignalSpy own(&engine, &LocalEngine::engineStarted);
    engine.ensureRunning();
    QVERIFY2(ready.wait(20000), failed.isEmpty()
                                    ? "no answer"
                                    : qPrintable(failed.at(0).at(0).value<Error>().message));
    QCOMPARE(service.count(), 1);
    QCOMPARE(own.count(), 0);
    QCOMPARE(systemctlCalls(), QStringList{QStringLiteral("--user start sandboxd.service")});
    QVERIFY(!ready.at(0).at(0).value<ConnectionProfile>().apiKey.isEmpty());
}

void TestLocalService::fallsBackWhenTheServiceDoesNotStart()
{
    const quint16 port = freePort();
    prepare(port, m_dataDir, 1); // e.g. no user manager behind systemctl
    LocalEngine engine(profile(port));
    engine.setSystemctl(m_systemctl);
    engine.setUserUnitDirs({m_units});
    engine.setProgram(QStringLiteral(SANDBOXD_BIN));
    QSignalSpy ready(&engine, &LocalEngine::ready);
    QSignalSpy service(&engine, &LocalEngine::serviceStarted);
    QSignalSpy own(&engine, &LocalEngine::engineStarted);
    engine.ensureRunning();
    QVERIFY(ready.wait(20000));
    QCOMPARE(service.count(), 0);
    QCOMPARE(own.count(), 1);
    m_pids.append(own.at(0).at(0).toLongLong());
    QCOMPARE(systemctlCalls(), QStringList{QStringLiteral("--user start sandboxd.service")});
}

void TestLocalService::ignoresAUnitForAnotherEngine()
{
    const quint16 port = freePort();
    prepare(port, m_dir->filePath(QStringLiteral("another-data-dir")), 0);
    LocalEngine other(profile(port));
    other.setSystemctl(m_systemctl);
    other.setUserUnitDirs({m_units});
    QVERIFY(other.userServiceUnit().isEmpty()); // same port, another data dir

    prepare(quint16(port + 1), m_dataDir, 0);
    LocalEngine engine(profile(port));
    engine.setSystemctl(m_systemctl);
    engine.setUserUnitDirs({m_units});
    QVERIFY(engine.userServiceUnit().isEmpty()); // another port
    engine.setProgram(QStringLiteral(SANDBOXD_BIN));
    QSignalSpy ready(&engine, &LocalEngine::ready);
    QSignalSpy own(&engine, &LocalEngine::engineStarted);
    engine.ensureRunning();
    QVERIFY(ready.wait(20000));
    QCOMPARE(own.count(), 1);
    m_pids.append(own.at(0).at(0).toLongLong());
    QVERIFY(systemctlCalls().isEmpty());
}

void TestLocalService::ignoresAMaskedUnit()
{
    const quint16 port = freePort();
    prepare(port, m_dataDir, 0);
    LocalEngine engine(profile(port));
    engine.setSystemctl(m_systemctl);
    engine.setUserUnitDirs({m_units});
    QVERIFY(!engine.userServiceUnit().isEmpty());
    // `systemctl --user mask sandboxd` puts a link to /dev/null in the user's own unit dir.
    const QString userUnits = m_dir->filePath(QStringLiteral("user-units"));
    QVERIFY(QDir().mkpath(userUnits));
    QVERIFY(
        QFile::link(QStringLiteral("/dev/null"), userUnits + QStringLiteral("/sandboxd.service")));
    engine.setUserUnitDirs({userUnits, m_units});
    QVERIFY(engine.userServiceUnit().isEmpty());
}

QTEST_GUILESS_MAIN(TestLocalService)
#include "tst_localservice.moc"
