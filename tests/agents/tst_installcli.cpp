// agents.installCli (docs/protocol.md 4.7.3): a real engine whose data dir and CLI directory are
// empty, as a user of the .deb has it, installs OpenCode (the smallest of the three CLIs, ~121 MB
// from npm) from the real npm registry with its progress as stream events, then runs it in a
// real sandbox against the mock model server; with the registry unreachable the install fails
// with an error that says so, quickly, and leaves nothing behind.
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

using Sandbox::Mocks::MockModelServer;

namespace {

const QString kType = QStringLiteral("opencode");

// The pinned "PACKAGE@VERSION" of a type, read from the one list (engine/agents/agent-clis.txt).
QString pinnedSpec(const QString &type)
{
    QFile f(QStringLiteral(SANDBOX_SOURCE_DIR "/engine/agents/agent-clis.txt"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    while (!f.atEnd()) {
        const QStringList parts = QString::fromUtf8(f.readLine()).simplified().split(u' ');
        if (parts.size() >= 3 && parts.at(0) == type)
            return parts.at(1) + u'@' + parts.at(2);
    }
    return {};
}

QList<QJsonObject> streamEvents(const RpcTestClient &rpc, const QString &streamId)
{
    QList<QJsonObject> out;
    for (const QJsonObject &n : rpc.notifications) {
        const QJsonObject p = n.value(QStringLiteral("params")).toObject();
        if (p.value(QStringLiteral("streamId")).toString() == streamId
            && n.value(QStringLiteral("method")).toString() == QLatin1String("stream.event"))
            out.append(p.value(QStringLiteral("event")).toObject());
    }
    return out;
}

} // namespace

class tst_InstallCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void missingCliSaysHowToInstallIt();
    void installsFromNpmWithProgressThenRuns();
    void secondInstallAnswersAtOnce();
    void nonAdminKeyIsRefused();
    void withoutNetworkTheErrorSaysSo();

private:
    QTemporaryDir m_emptyAgents; // --agents-dir: nothing there, as in a package
    EngineFixture m_engine;
    MockModelServer m_mock;
};

void tst_InstallCli::initTestCase()
{
    QVERIFY(!pinnedSpec(kType).isEmpty());
    QVERIFY(m_mock.listen());
    QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"), m_emptyAgents.path()}),
             qPrintable(m_engine.process().log()));
}

void tst_InstallCli::missingCliSaysHowToInstallIt()
{
    const QJsonObject clis = m_engine.rpc().result(QStringLiteral("agents.clis"), {});
    const QJsonArray list = clis.value(QStringLiteral("clis")).toArray();
    QCOMPARE(list.size(), 3);
    for (const QJsonValue &v : list) {
        const QJsonObject c = v.toObject();
        QCOMPARE(c.value(QStringLiteral("installed")).toBool(), false);
        QCOMPARE(c.value(QStringLiteral("canInstall")).toBool(), true);
        QVERIFY(c.value(QStringLiteral("downloadBytes")).toDouble() > 50e6);
        if (c.value(QStringLiteral("type")).toString() == kType)
            QCOMPARE(c.value(QStringLiteral("package")).toString() + u'@'
                         + c.value(QStringLiteral("version")).toString(),
                     pinnedSpec(kType));
    }
    // A run of a sandbox without its CLI: the error names the fix, not scripts/setup.sh.
    const QJsonObject sb = m_engine.create(QStringLiteral("agents.create"),
                                           {{QStringLiteral("type"), kType}});
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const QString id = sb.value(QStringLiteral("id")).toString();
    const QJsonObject answer = m_engine.rpc().call(QStringLiteral("agents.run"),
                                                   {{QStringLiteral("id"), id},
                                                    {QStringLiteral("prompt"),
                                                     QStringLiteral("hi")}});
    const QJsonObject error = answer.value(QStringLiteral("error")).toObject();
    QCOMPARE(error.value(QStringLiteral("code")).toInt(), -32011);
    QCOMPARE(error.value(QStringLiteral("data")).toObject().value(QStringLiteral("reason")),
             QStringLiteral("cliMissing"));
    const QString message = error.value(QStringLiteral("message")).toString();
    QVERIFY2(message.contains(QLatin1String("sandboxctl agents install-cli opencode")),
             qPrintable(message));
    QVERIFY2(!message.contains(QLatin1String("setup.sh")), qPrintable(message));
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}})
                 .isEmpty());
}

void tst_InstallCli::installsFromNpmWithProgressThenRuns()
{
    m_engine.rpc().notifications.clear();
    QElapsedTimer clock;
    clock.start();
    const QJsonObject answer = m_engine.rpc().call(QStringLiteral("agents.installCli"),
                                                   {{QStringLiteral("type"), kType}}, 600000);
    const qint64 tookMs = clock.elapsed();
    const QJsonObject r = answer.value(QStringLiteral("result")).toObject();
    QVERIFY2(!r.isEmpty(), QJsonDocument(answer).toJson().constData());
    qInfo("installed %s in %lld ms (%.0f MB downloaded, %.0f MB on disk)",
          qPrintable(pinnedSpec(kType)), tookMs,
          r.value(QStringLiteral("downloadedBytes")).toDouble() / 1e6,
          r.value(QStringLiteral("installedBytes")).toDouble() / 1e6);
    QCOMPARE(r.value(QStringLiteral("alreadyInstalled")).toBool(), false);
    const QString dir = m_engine.process().dataDir() + QStringLiteral("/agents/opencode");
    QCOMPARE(r.value(QStringLiteral("dir")).toString(), dir);
    QVERIFY(r.value(QStringLiteral("installedBytes")).toDouble() > 10e6);

    // The progress came as stream events while npm worked: sizes that grow, and npm's lines.
    const QList<QJsonObject> events = streamEvents(m_engine.rpc(),
                                                   r.value(QStringLiteral("streamId")).toString());
    double lastDownloaded = -1, maxDownloaded = 0;
    int progress = 0, logs = 0;
    for (const QJsonObject &e : events) {
        if (e.value(QStringLiteral("type")) == QLatin1String("log")) {
            ++logs;
            continue;
        }
        QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("progress"));
        ++progress;
        const double d = e.value(QStringLiteral("downloadedBytes")).toDouble();
        QVERIFY2(d >= lastDownloaded, "the download's progress went backwards");
        lastDownloaded = d;
        maxDownloaded = qMax(maxDownloaded, d);
        QVERIFY(e.value(QStringLiteral("expectedBytes")).toDouble() > 50e6);
    }
    QVERIFY2(progress >= 2, qPrintable(QStringLiteral("%1 progress events").arg(progress)));
    QVERIFY2(maxDownloaded > 10e6, "no progress event saw the download");
    QVERIFY(logs >= 1);

    // In place, the engine's own, readable by the sandboxes' uids, nothing left of npm's work.
    QFile marker(dir + QStringLiteral("/.installed"));
    QVERIFY(marker.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(marker.readAll()).trimmed(), pinnedSpec(kType));
    QVERIFY(QFileInfo::exists(dir + QStringLiteral("/node_modules/.bin/opencode")));
    const QStringList left = QDir(m_engine.process().dataDir() + QStringLiteral("/agents"))
                                 .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
    QCOMPARE(left, QStringList{kType});
    QDirIterator it(dir, QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    int checked = 0;
    while (it.hasNext()) {
        const QByteArray path = QFile::encodeName(it.next());
        struct stat st;
        QVERIFY(::lstat(path.constData(), &st) == 0);
        QVERIFY2(st.st_uid == ::geteuid(), path.constData()); // not npm's uid
        if (!S_ISLNK(st.st_mode))
            QVERIFY2((st.st_mode & 0004) != 0, path.constData());
        QVERIFY2((st.st_mode & 0002) == 0 || S_ISLNK(st.st_mode), path.constData());
        ++checked;
    }
    QVERIFY(checked > 3);

    const QJsonObject clis = m_engine.rpc().result(QStringLiteral("agents.clis"), {});
    for (const QJsonValue &v : clis.value(QStringLiteral("clis")).toArray()) {
        const QJsonObject c = v.toObject();
        QCOMPARE(c.value(QStringLiteral("installed")).toBool(),
                 c.value(QStringLiteral("type")).toString() == kType);
    }

    // And it runs: a new sandbox gets it at /opt/agent, against the mock model server.
    const QString base = m_mock.baseUrl().toString();
    const QJsonObject sb = m_engine.create(
        QStringLiteral("agents.create"),
        {{QStringLiteral("type"), kType},
         {QStringLiteral("size"), QStringLiteral("standard-3")},
         {QStringLiteral("network"),
          QJsonObject{{QStringLiteral("allow"),
                       QJsonArray{QStringLiteral("127.0.0.1:%1").arg(m_mock.port())}}}},
         {QStringLiteral("env"),
          QJsonObject{{QStringLiteral("OPENAI_API_KEY"), QStringLiteral("sk-test-install")},
                      {QStringLiteral("OPENAI_BASE_URL"), QString(base + QStringLiteral("/v1"))}}}});
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const QString id = sb.value(QStringLiteral("id")).toString();
    const QJsonObject run = m_engine.rpc().call(
        QStringLiteral("agents.run"),
        {{QStringLiteral("id"), id},
         {QStringLiteral("prompt"),
          QStringLiteral("Please [[write:/workspace/installed.txt|from an installed CLI]]")}},
        300000);
    const QJsonObject rr = run.value(QStringLiteral("result")).toObject();
    QVERIFY2(rr.value(QStringLiteral("success")).toBool(), QJsonDocument(run).toJson().constData());
    const QJsonObject file = m_engine.rpc().result(QStringLiteral("agents.readFile"),
                                                   {{QStringLiteral("id"), id},
                                                    {QStringLiteral("path"),
                                                     QStringLiteral("/workspace/installed.txt")}});
    QCOMPARE(file.value(QStringLiteral("content")).toString().trimmed(),
             QStringLiteral("from an installed CLI"));
}

void tst_InstallCli::secondInstallAnswersAtOnce()
{
    QElapsedTimer clock;
    clock.start();
    const QJsonObject r = m_engine.rpc().result(QStringLiteral("agents.installCli"),
                                                {{QStringLiteral("type"), kType}});
    QVERIFY2(!r.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QCOMPARE(r.value(QStringLiteral("alreadyInstalled")).toBool(), true);
    QVERIFY(clock.elapsed() < 5000);
}

void tst_InstallCli::nonAdminKeyIsRefused()
{
    const QJsonObject key = m_engine.rpc().result(QStringLiteral("keys.create"),
                                                  {{QStringLiteral("name"),
                                                    QStringLiteral("user")}});
    QVERIFY(!key.isEmpty());
    RpcTestClient other;
    QVERIFY(other.open(m_engine.process().wsUrl(), key.value(QStringLiteral("key")).toString()));
    const QJsonObject answer = other.call(QStringLiteral("agents.installCli"),
                                          {{QStringLiteral("type"), QStringLiteral("codex")}});
    QCOMPARE(answer.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32001);
    QVERIFY(!QFileInfo::exists(m_engine.process().dataDir()
                               + QStringLiteral("/agents/.install-codex")));
}

void tst_InstallCli::withoutNetworkTheErrorSaysSo()
{
    // Nothing listens on port 9: npm's registry cannot be reached.
    QTemporaryDir emptyAgents;
    EngineFixture offline;
    offline.process().setEnvironmentValue(QStringLiteral("npm_config_registry"),
                                          QStringLiteral("http://127.0.0.1:9/"));
    QVERIFY2(offline.start({QStringLiteral("--agents-dir"), emptyAgents.path()}),
             qPrintable(offline.process().log()));
    RpcTestClient &rpc = offline.rpc();
    QElapsedTimer clock;
    clock.start();
    const QJsonObject answer = rpc.call(QStringLiteral("agents.installCli"),
                                        {{QStringLiteral("type"), QStringLiteral("claude-code")}},
                                        120000);
    const QJsonObject error = answer.value(QStringLiteral("error")).toObject();
    QVERIFY2(!error.isEmpty(), QJsonDocument(answer).toJson().constData());
    qInfo("offline install failed in %lld ms: %s", clock.elapsed(),
          qPrintable(error.value(QStringLiteral("message")).toString()));
    QVERIFY2(clock.elapsed() < 60000, "the failure took a minute or more");
    QCOMPARE(error.value(QStringLiteral("code")).toInt(), -32011);
    const QJsonObject data = error.value(QStringLiteral("data")).toObject();
    QCOMPARE(data.value(QStringLiteral("reason")).toString(),
             QStringLiteral("registryUnreachable"));
    QCOMPARE(data.value(QStringLiteral("registry")).toString(),
             QStringLiteral("http://127.0.0.1:9/"));
    const QString message = error.value(QStringLiteral("message")).toString();
    QVERIFY2(message.startsWith(QLatin1String("cannot reach the npm registry (http://127.0.0.1:9/) "
                                              "to install Claude Code")),
             qPrintable(message));
    // Nothing half-installed stays (the staging tree goes off the event loop: wait for it).
    const QString agents = offline.process().dataDir() + QStringLiteral("/agents");
    QTRY_COMPARE_WITH_TIMEOUT(QDir(agents).entryList(QDir::AllEntries | QDir::Hidden
                                                     | QDir::NoDotAndDotDot),
                              QStringList(), 10000);
    const QJsonObject clis = rpc.result(QStringLiteral("agents.clis"), {});
    for (const QJsonValue &v : clis.value(QStringLiteral("clis")).toArray())
        QCOMPARE(v.toObject().value(QStringLiteral("installed")).toBool(), false);
}

QTEST_GUILESS_MAIN(tst_InstallCli)
#include "tst_installcli.moc"
