// Connecting: API keys kept out of the settings (keyring or a 0600 file), profiles, the
// connection dialog, and the connection manager against a real sandboxd — connected with the
// engine's version and quota, an engine started when none runs, a refused key, and a dropped
// connection with its reconnect countdown.
#include <tcpproxy.h>
#include <uitest.h>

#include <connection/connectiondialog.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <mainwindow/connectionstatus.h>

#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QLockFile>
#include <QSettings>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTest>

#include <csignal>
#include <sys/stat.h>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
constexpr auto kSecret = "sk-test-0123456789abcdef-very-secret";

int modeOf(const QString &path)
{
    struct stat st = {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return -1;
    return int(st.st_mode & 07777);
}

QByteArray settingsFileContents()
{
    QSettings settings;
    settings.sync();
    QFile f(settings.fileName());
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

std::optional<Error> writeSync(SecretStore &store, const QString &name, const QString &secret)
{
    bool done = false;
    std::optional<Error> error;
    store.write(name, secret, nullptr, [&](const std::optional<Error> &e) {
        error = e;
        done = true;
    });
    UiTest::waitFor([&] { return done; }, 60000);
    return error;
}

Result<QString> readSync(SecretStore &store, const QString &name)
{
    std::optional<Result<QString>> out;
    store.read(name, nullptr, [&](Result<QString> r) { out.emplace(std::move(r)); });
    UiTest::waitFor([&] { return out.has_value(); }, 60000);
    return out ? *out : Result<QString>(Error{ErrorCode::Timeout, QStringLiteral("timeout"), {}});
}

quint16 freePort()
{
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    return s.serverPort();
}
} // namespace

class TestConnection final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    }

    void secretFileIsPrivate()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("conf/sandbox-desktop/api-keys.json"));
        SecretStore store(SecretStore::Backend::File, path);
        QVERIFY(!writeSync(store, QStringLiteral("profile/a"), QString::fromLatin1(kSecret)));
        QCOMPARE(modeOf(path), 0600);
        QCOMPARE(modeOf(QFileInfo(path).path()), 0700);
        QCOMPARE(readSync(store, QStringLiteral("profile/a")).value(), QString::fromLatin1(kSecret));
        QVERIFY(!writeSync(store, QStringLiteral("profile/b"), QStringLiteral("other")));
        QCOMPARE(modeOf(path), 0600);
        QCOMPARE(readSync(store, QStringLiteral("profile/a")).value(), QString::fromLatin1(kSecret));
        bool removed = false;
        store.remove(QStringLiteral("profile/a"), nullptr,
                     [&](const std::optional<Error> &e) { removed = !e; });
        QVERIFY(UiTest::waitFor([&] { return removed; }));
        QCOMPARE(readSync(store, QStringLiteral("profile/a")).error().code, ErrorCode::NotFound);
        QCOMPARE(readSync(store, QStringLiteral("profile/b")).value(), QStringLiteral("other"));
    }

    // Whatever this machine offers (a keyring, or none as on a bare CI machine): the key comes
    // back, and it is never in the settings; in the file only when the keyring was not there.
    void automaticStoreNeverUsesTheSettings()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("api-keys.json"));
        SecretStore store(SecretStore::Backend::Automatic, path);
        QVERIFY(!writeSync(store, QStringLiteral("profile/auto"), QString::fromLatin1(kSecret)));
        QCOMPARE(readSync(store, QStringLiteral("profile/auto")).value(),
                 QString::fromLatin1(kSecret));
        QFile file(path);
        const QByteArray inFile = file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        if (store.lastWriteBackend() == SecretStore::Backend::File) {
            QVERIFY(inFile.contains(kSecret));
            QCOMPARE(modeOf(path), 0600);
            qInfo("no keyring here: the key went to the 0600 file");
        } else {
            QCOMPARE(store.lastWriteBackend(), SecretStore::Backend::Keyring);
            QVERIFY(!inFile.contains(kSecret));
            qInfo("the key went to the desktop keyring");
        }
        QVERIFY(!settingsFileContents().contains(kSecret));
        store.remove(QStringLiteral("profile/auto"), nullptr, [](const std::optional<Error> &) {});
    }

    void profilesRoundTrip()
    {
        ProfileStore profiles;
        QCOMPARE(profiles.profiles().size(), 1);
        QVERIFY(profiles.profiles().first().local);
        StoredProfile p;
        p.name = QStringLiteral("Team");
        p.url = QUrl(QStringLiteral("https://sandbox.example.workers.dev"));
        p = profiles.save(p);
        QVERIFY(!p.id.isEmpty());
        profiles.setLastUsedId(p.id);
        ProfileStore again;
        QCOMPARE(again.profiles().size(), 2);
        QCOMPARE(again.profile(p.id).url, p.url);
        QCOMPARE(again.lastUsedId(), p.id);
        QCOMPARE(again.profile(p.id).toConnectionProfile(QStringLiteral("k")).rpcUrl().toString(),
                 QStringLiteral("wss://sandbox.example.workers.dev/rpc"));
        again.remove(p.id);
        QCOMPARE(ProfileStore().profiles().size(), 1);
        QCOMPARE(ProfileStore().lastUsedId(), QStringLiteral("local"));
    }

    void dialogStoresTheKeyOutsideTheSettings()
    {
        QTemporaryDir dir;
        SecretStore secrets(SecretStore::Backend::File, dir.filePath(QStringLiteral("keys.json")));
        ProfileStore profiles;
        ConnectionDialog dialog(&profiles, &secrets, QStringLiteral("local"));
        dialog.addProfile();
        // Refused: http to a remote host (the key would travel in clear), a key in the URL.
        dialog.setFields(QStringLiteral("Team"), QStringLiteral("http://sandbox.example.com"),
                         QString::fromLatin1(kSecret));
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Rejected));
        dialog.setFields(QStringLiteral("Team"),
                         QStringLiteral("https://sandbox.example.com/?key=x"),
                         QString::fromLatin1(kSecret));
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Rejected));
        dialog.setFields(QStringLiteral("Team"), QStringLiteral("https://sandbox.example.com"),
                         QString::fromLatin1(kSecret));
        dialog.accept();
        QVERIFY(UiTest::waitFor([&] { return dialog.result() == QDialog::Accepted; }, 10000));
        const StoredProfile chosen = dialog.chosenProfile();
        QCOMPARE(chosen.url.host(), QStringLiteral("sandbox.example.com"));
        QCOMPARE(readSync(secrets, chosen.secretName()).value(), QString::fromLatin1(kSecret));
        QVERIFY(!settingsFileContents().contains(kSecret));
        QVERIFY(settingsFileContents().contains("sandbox.example.com"));
        profiles.remove(chosen.id);
    }

    void connectsWithVersionAndQuota()
    {
        ConnectionManager manager;
        ConnectionStatus status(&manager);
        QSignalSpy quota(&manager, &ConnectionManager::quotaChanged);
        QSignalSpy session(&manager, &ConnectionManager::sessionChanged);
        manager.connectTo(m_engine.localProfile());
        QVERIFY(
            UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Connected; },
                            15000));
        QVERIFY(session.wait(5000) || !session.isEmpty());
        QVERIFY(quota.size() > 0 || quota.wait(5000));
        QCOMPARE(manager.session()->version, QStringLiteral(SANDBOX_VERSION));
        QCOMPARE(manager.session()->backend, QStringLiteral("local"));
        QCOMPARE(manager.quota()->running.limit, 8);
        QCOMPARE(status.stateText(), QStringLiteral("Connected to the local engine"));
        QCOMPARE(status.versionText(), QStringLiteral("local engine " SANDBOX_VERSION));
        QVERIFY2(status.quotaText().startsWith(QStringLiteral("running 0/8 · memory")),
                 qPrintable(status.quotaText()));
    }

    void startsTheLocalEngineWhenNoneRuns()
    {
        QTemporaryDir data;
        ConnectionProfile profile = ConnectionProfile::local(data.path());
        profile.url = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(freePort()));
        ConnectionManager manager;
        manager.setEngineProgram(QStringLiteral(SANDBOXD_BIN));
        QSignalSpy states(&manager, &ConnectionManager::stateChanged);
        manager.connectTo(profile);
        const bool ok
            = UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Connected; },
                              20000);
        // Stop the engine we started (its pid is in its lock file).
        qint64 pid = 0;
        QString host, app;
        QLockFile(data.filePath(QStringLiteral("sandboxd.lock"))).getLockInfo(&pid, &host, &app);
        manager.disconnectFromServer();
        if (pid > 0) {
            ::kill(pid_t(pid), SIGTERM);
            UiTest::waitFor([&] { return ::kill(pid_t(pid), 0) != 0; },
                            10000); // gone before its dir is
        }
        QVERIFY2(ok, qPrintable(manager.stateText()));
        bool sawStarting = false;
        for (const auto &args : std::as_const(states))
            sawStarting = sawStarting
                          || args.first().value<ConnectionManager::State>()
                                 == ConnectionManager::State::StartingEngine;
        QVERIFY(sawStarting);
        QVERIFY(pid > 0);
        QVERIFY(QFile::exists(data.filePath(QStringLiteral("api-key"))));
        // Its output goes to a log in its data dir, not to our terminal.
        QFile log(data.filePath(QStringLiteral("sandboxd.log")));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains("sandboxd listening on"));
    }

    void anEngineInAnotherDataDirIsFoundOnceItIsGiven()
    {
        // The engine runs with its own data dir, not this user's default: the app says where
        // it looked and what to do, then connects once the Connect dialog's field names the dir.
        ConnectionProfile profile = ConnectionProfile::local();
        for (const QString &dir : profile.candidateDataDirs()) {
            if (QFile::exists(dir + QStringLiteral("/api-key")))
                QSKIP("an engine's key is in a default data dir of this machine");
        }
        profile.url = m_engine.process().url();
        ConnectionManager manager;
        manager.connectTo(profile);
        QTRY_VERIFY_WITH_TIMEOUT(manager.state() == ConnectionManager::State::Unauthorized
                                     || manager.state() == ConnectionManager::State::Failed,
                                 15000);
        QVERIFY2(manager.errorMessage().contains(QLatin1String("another data directory"))
                     && manager.errorMessage().contains(QLatin1String("File > Connect")),
                 qPrintable(manager.errorMessage()));

        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionDialog dialog(&profiles, &secrets, QString::fromLatin1(ProfileStore::LocalId));
        dialog.show();
        auto *dir = dialog.findChild<QLineEdit *>(QStringLiteral("localDataDir"));
        QVERIFY(dir && dir->isVisible());
        dir->setFocus();
        QTest::keyClicks(dir, m_engine.process().dataDir());
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(dialog.chosenProfile().dataDir, m_engine.process().dataDir());
        // Kept: the next start uses it without asking.
        QCOMPARE(profiles.profile(QString::fromLatin1(ProfileStore::LocalId)).dataDir,
                 m_engine.process().dataDir());
        ConnectionProfile chosen = dialog.chosenProfile().toConnectionProfile();
        chosen.url = m_engine.process().url();
        manager.connectTo(chosen);
        QTRY_COMPARE_WITH_TIMEOUT(manager.state(), ConnectionManager::State::Connected, 15000);
        profiles.save(ProfileStore::localProfile()); // back to the default for the other tests
    }

    void aWrongKeyIsRefused()
    {
        ConnectionManager manager;
        manager.connectTo(
            ConnectionProfile::remote(m_engine.process().url(), QStringLiteral("wrong-key")));
        QVERIFY(
            UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Unauthorized; },
                            15000));
        QVERIFY(manager.stateText().startsWith(QStringLiteral("Not authorized")));
    }

    void noEngineAndNoProgramFails()
    {
        QTemporaryDir data;
        ConnectionProfile profile = ConnectionProfile::local(data.path());
        profile.url = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(freePort()));
        ConnectionManager manager;
        manager.setEngineProgram(data.filePath(QStringLiteral("no-such-sandboxd")));
        manager.connectTo(profile);
        QVERIFY(UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Failed; },
                                20000));
        QVERIFY2(manager.stateText().startsWith(QStringLiteral("Cannot connect")),
                 qPrintable(manager.stateText()));
    }

    void droppedConnectionCountsDownAndComesBack()
    {
        TcpProxy proxy(m_engine.process().url());
        QVERIFY(proxy.listen());
        ConnectionManager manager;
        RpcClient::ReconnectPolicy policy;
        policy.initialDelayMs = 2000; // long enough to see the countdown
        policy.maxDelayMs = 2000;
        policy.jitter = 0;
        manager.setReconnectPolicy(policy);
        ConnectionStatus status(&manager);
        manager.connectTo(ConnectionProfile::remote(proxy.url(), m_engine.process().key()));
        QVERIFY(
            UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Connected; },
                            15000));

        proxy.setAccepting(false);
        proxy.dropAll();
        QVERIFY(
            UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Reconnecting; },
                            10000));
        QVERIFY(manager.msUntilReconnect() >= 0);
        QVERIFY2(status.stateText().startsWith(QStringLiteral("Connection lost: reconnecting in ")),
                 qPrintable(status.stateText()));
        const QString first = status.stateText();
        QVERIFY(
            UiTest::waitFor([&] { return status.stateText() != first; }, 3000)); // it counts down
        proxy.setAccepting(true);
        QVERIFY(
            UiTest::waitFor([&] { return manager.state() == ConnectionManager::State::Connected; },
                            15000));
        QCOMPARE(status.stateText(),
                 QStringLiteral("Connected to %1").arg(QStringLiteral("127.0.0.1")));
    }

private:
    UiTest::Engine m_engine;
};

QTEST_MAIN(TestConnection)
#include "tst_connection.moc"
