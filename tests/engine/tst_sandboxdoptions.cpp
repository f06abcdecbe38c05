// sandboxd's command line: `--help` as the golden file says, and every wrong option refused with
// its own message before the engine touches its data dir (no state, no key file, no lock).
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

namespace {

const QString kGolden = QStringLiteral(SANDBOX_SOURCE_DIR "/tests/engine/sandboxd-help.txt");

struct Run
{
    int exitCode = -1;
    QString out;
    QString err;
};

Run sandboxd(const QStringList &arguments, const QProcessEnvironment &env)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(SANDBOXD_BIN), arguments);
    Run run;
    if (!p.waitForFinished(30000) || p.exitStatus() != QProcess::NormalExit)
        return run;
    run.exitCode = p.exitCode();
    run.out = QString::fromUtf8(p.readAllStandardOutput());
    run.err = QString::fromUtf8(p.readAllStandardError());
    return run;
}

} // namespace

class tst_SandboxdOptions : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void helpIsAsDocumented();
    void wrongOptionsAreRefusedBeforeTheDataDir_data();
    void wrongOptionsAreRefusedBeforeTheDataDir();

private:
    QTemporaryDir m_dir;
    QProcessEnvironment m_env = QProcessEnvironment::systemEnvironment();
};

void tst_SandboxdOptions::initTestCase()
{
    QVERIFY(m_dir.isValid());
    // The default data dir (in --help) of a user who is not root: below XDG_DATA_HOME.
    m_env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("share")));
    m_env.remove(QStringLiteral("SANDBOXD_API_KEY"));
    QFile notPem(m_dir.filePath(QStringLiteral("not-a-certificate.pem")));
    QVERIFY(notPem.open(QIODevice::WriteOnly));
    notPem.write("not a certificate\n");
}

// The golden file has @PROGRAM@ for the path the engine was started as and @DATA_DIR@ for its
// default data dir; SANDBOX_UPDATE_GOLDEN=1 writes it from what the engine prints.
void tst_SandboxdOptions::helpIsAsDocumented()
{
    const Run run = sandboxd({QStringLiteral("--help")}, m_env);
    QCOMPARE(run.exitCode, 0);
    const QString dataDir = ::geteuid() == 0 ? QStringLiteral("/var/lib/sandboxd")
                                             : m_dir.filePath(QStringLiteral("share/sandboxd"));
    const QString help = QString(run.out)
                             .replace(QStringLiteral(SANDBOXD_BIN), QStringLiteral("@PROGRAM@"))
                             .replace(dataDir, QStringLiteral("@DATA_DIR@"));
    QFile golden(kGolden);
    if (qEnvironmentVariableIntValue("SANDBOX_UPDATE_GOLDEN") == 1) {
        QVERIFY(golden.open(QIODevice::WriteOnly));
        golden.write(help.toUtf8());
        return;
    }
    QVERIFY2(golden.open(QIODevice::ReadOnly), qPrintable(kGolden));
    // Word by word: where a description wraps depends on the length of the default data dir.
    QCOMPARE(help.simplified(), QString::fromUtf8(golden.readAll()).simplified());
}

void tst_SandboxdOptions::wrongOptionsAreRefusedBeforeTheDataDir_data()
{
    const QString missing = m_dir.filePath(QStringLiteral("missing"));
    const QString notPem = m_dir.filePath(QStringLiteral("not-a-certificate.pem"));
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QString>("message");
    QTest::newRow("--listen without a port")
        << QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1")}
        << QStringLiteral("--listen wants HOST:PORT with a numeric address, e.g. 127.0.0.1:7465, "
                          "not '127.0.0.1'");
    QTest::newRow("--listen with a name")
        << QStringList{QStringLiteral("--listen"), QStringLiteral("localhost:7465")}
        << QStringLiteral("--listen wants HOST:PORT with a numeric address, e.g. 127.0.0.1:7465, "
                          "not 'localhost:7465'");
    QTest::newRow("--isolation docker")
        << QStringList{QStringLiteral("--isolation"), QStringLiteral("docker")}
        << QStringLiteral("--isolation is bubblewrap or container, not 'docker'");
    QTest::newRow("--prepare sqlite")
        << QStringList{QStringLiteral("--prepare"), QStringLiteral("sqlite")}
        << QStringLiteral("--prepare takes postgres (the only type with something to prepare), "
                          "not 'sqlite'");
    QTest::newRow("--uid-base 999")
        << QStringList{QStringLiteral("--uid-base"), QStringLiteral("999")}
        << QStringLiteral("--uid-base must be 1000 or more");
    QTest::newRow("--max-sandboxes 0")
        << QStringList{QStringLiteral("--max-sandboxes"), QStringLiteral("0")}
        << QStringLiteral("--max-sandboxes wants a number of 1 or more");
    QTest::newRow("--spares 65") << QStringList{QStringLiteral("--spares"), QStringLiteral("65")}
                                 << QStringLiteral("--spares wants a number from 0 to 64");
    QTest::newRow("--spares x") << QStringList{QStringLiteral("--spares"), QStringLiteral("x")}
                                << QStringLiteral("--spares wants a number from 0 to 64");
    QTest::newRow("--spares-min-available-mb -1")
        << QStringList{QStringLiteral("--spares-min-available-mb"), QStringLiteral("-1")}
        << QStringLiteral("--spares-min-available-mb wants a number of MiB");
    const QString poolMessage = QStringLiteral(
        "--database-pool wants a number from 0 to 16, for "
        "every type or as TYPE=N (postgres, sqlite, duckdb)");
    QTest::newRow("--database-pool 17")
        << QStringList{QStringLiteral("--database-pool"), QStringLiteral("17")} << poolMessage;
    QTest::newRow("--database-pool mysql=1")
        << QStringList{QStringLiteral("--database-pool"), QStringLiteral("postgres=2,mysql=1")}
        << poolMessage;
    QTest::newRow("--egress-hosts missing")
        << QStringList{QStringLiteral("--egress-hosts"), missing}
        << QStringLiteral("--egress-hosts: no file %1").arg(missing);
    QTest::newRow("--egress-dns without a port")
        << QStringList{QStringLiteral("--egress-dns"), QStringLiteral("192.0.2.53")}
        << QStringLiteral("--egress-dns wants ADDRESS:PORT, not '192.0.2.53'");
    QTest::newRow("--egress-ca missing")
        << QStringList{QStringLiteral("--egress-ca"), missing}
        << QStringLiteral("--egress-ca: cannot read %1").arg(missing);
    QTest::newRow("--egress-ca not PEM")
        << QStringList{QStringLiteral("--egress-ca"), notPem}
        << QStringLiteral("--egress-ca: no PEM certificate in %1").arg(notPem);
    QTest::newRow("--max-connections 0")
        << QStringList{QStringLiteral("--max-connections"), QStringLiteral("0")}
        << QStringLiteral("--max-connections and --max-connections-per-address want a number "
                          "of 1 or more");
}

void tst_SandboxdOptions::wrongOptionsAreRefusedBeforeTheDataDir()
{
    QFETCH(QStringList, arguments);
    QFETCH(QString, message);
    const QString dataDir = m_dir.filePath(
        QStringLiteral("data-%1").arg(QString::fromUtf8(QTest::currentDataTag())));
    // --no-cgroups: nothing of the host's is touched either, whatever the option checked.
    const Run run = sandboxd(arguments
                                 + QStringList{QStringLiteral("--data-dir"), dataDir,
                                               QStringLiteral("--no-cgroups")},
                             m_env);
    QCOMPARE(run.err, QStringLiteral("sandboxd: %1\n").arg(message));
    QCOMPARE(run.exitCode, 1);
    QVERIFY2(!QFileInfo::exists(dataDir), "the engine made its data dir for a wrong command line");
}

QTEST_GUILESS_MAIN(tst_SandboxdOptions)
#include "tst_sandboxdoptions.moc"
