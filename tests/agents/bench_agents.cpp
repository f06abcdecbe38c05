// Benchmark (label bench): agent sandbox create -> CLI ready, and the engine's overhead per run
// around the CLI, against the same CLI with the same command line run directly on the host on the
// same mock model server (the baseline, measured in the same run).
#include "agents/agentadapter.h"
#include "enginefixture.h"
#include "mockmodelserver.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

using Sandbox::Engine::AgentAdapter;
using Sandbox::Engine::AgentRunOptions;
using Sandbox::Mocks::MockModelServer;

namespace {

double median(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty()    ? 0
           : v.size() % 2 ? v[v.size() / 2]
                          : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const QString kKey = QStringLiteral("sk-bench-0123456789abcdef");

} // namespace

class bench_Agents : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void createToCliReady_data();
    void createToCliReady();
    void runOverhead_data();
    void runOverhead();

private:
    QJsonObject envFor(const QString &type) const;
    QString createSandbox(const QString &type);

    EngineFixture m_engine;
    MockModelServer m_mock;
};

void bench_Agents::initTestCase()
{
    QVERIFY(m_mock.listen());
    QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"),
                             QStringLiteral(SANDBOX_BINARY_DIR "/agents"),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("1000000"),
                             QStringLiteral("--max-running"), QStringLiteral("64")}),
             qPrintable(m_engine.process().log()));
}

QJsonObject bench_Agents::envFor(const QString &type) const
{
    const QString base = m_mock.baseUrl().toString();
    if (type == QLatin1String("claude-code"))
        return {{QStringLiteral("ANTHROPIC_API_KEY"), kKey},
                {QStringLiteral("ANTHROPIC_BASE_URL"), base}};
    return {{QStringLiteral("OPENAI_API_KEY"), kKey},
            {QStringLiteral("OPENAI_BASE_URL"), QString(base + QStringLiteral("/v1"))}};
}

QString bench_Agents::createSandbox(const QString &type)
{
    // The mock model API is on this computer's loopback: only an exact entry reaches it
    // (docs/protocol.md 3.5).
    const QJsonObject network{
        {QStringLiteral("allow"), QJsonArray{QStringLiteral("127.0.0.1:%1").arg(m_mock.port())}}};
    return m_engine.createAgent(type, QStringLiteral("standard-3"),
                                {{QStringLiteral("network"), network},
                                 {QStringLiteral("env"), envFor(type)}});
}

void bench_Agents::createToCliReady_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("cli");
    QTest::newRow("claude-code") << QStringLiteral("claude-code") << QStringLiteral("claude");
    QTest::newRow("codex") << QStringLiteral("codex") << QStringLiteral("codex");
    QTest::newRow("opencode") << QStringLiteral("opencode") << QStringLiteral("opencode");
}

void bench_Agents::createToCliReady()
{
    QFETCH(QString, type);
    QFETCH(QString, cli);
    constexpr int rounds = 3;
    QList<double> create, ready, direct;
    const QString exe = QStringLiteral("/opt/agent/node_modules/.bin/") + cli;
    const QString hostExe = QStringLiteral(SANDBOX_BINARY_DIR "/agents/") + type
                            + QStringLiteral("/node_modules/.bin/") + cli;
    for (int i = 0; i < rounds; ++i) {
        QElapsedTimer t;
        t.start();
        const QString id = createSandbox(type);
        QVERIFY(!id.isEmpty());
        create.append(t.nsecsElapsed() / 1e6);
        const QJsonObject r = m_engine.rpc().result(
            QStringLiteral("agents.exec"),
            {{QStringLiteral("id"), id},
             {QStringLiteral("command"), QJsonArray{exe, QStringLiteral("--version")}},
             {QStringLiteral("options"),
              QJsonObject{{QStringLiteral("env"),
                           QJsonObject{{QStringLiteral("HOME"), QStringLiteral("/home/agent")}}}}}},
            120000);
        QVERIFY2(r.value(QStringLiteral("exitCode")).toInt() == 0,
                 QJsonDocument(r).toJson().constData());
        ready.append(t.nsecsElapsed() / 1e6);
        m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}});

        // Baseline: the same `--version` on the host, no sandbox.
        QTemporaryDir home;
        QProcess p;
        QProcessEnvironment env;
        env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin"));
        env.insert(QStringLiteral("HOME"), home.path());
        p.setProcessEnvironment(env);
        p.setStandardInputFile(QProcess::nullDevice());
        QElapsedTimer d;
        d.start();
        p.start(hostExe, {QStringLiteral("--version")});
        QVERIFY(p.waitForFinished(120000));
        direct.append(d.nsecsElapsed() / 1e6);
    }
    const double readyMs = median(ready), directMs = median(direct);
    qInfo().noquote() << QStringLiteral(
                             "%1: create %2 ms, create -> CLI ready (%3 --version) %4 ms; "
                             "the CLI alone on the host %5 ms; ratio %6 (median of %7)")
                             .arg(type)
                             .arg(median(create), 0, 'f', 1)
                             .arg(cli)
                             .arg(readyMs, 0, 'f', 1)
                             .arg(directMs, 0, 'f', 1)
                             .arg(readyMs / directMs, 0, 'f', 2)
                             .arg(rounds);
}

void bench_Agents::runOverhead_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<int>("rounds");
    QTest::newRow("claude-code") << QStringLiteral("claude-code") << 5;
    QTest::newRow("codex") << QStringLiteral("codex") << 5;
    QTest::newRow("opencode") << QStringLiteral("opencode") << 3;
}

void bench_Agents::runOverhead()
{
    QFETCH(QString, type);
    QFETCH(int, rounds);
    const QString id = createSandbox(type);
    QVERIFY(!id.isEmpty());
    const QString prompt = QStringLiteral("[[write:%1|bench]]");
    QJsonObject runOptions{{QStringLiteral("newSession"), true}};
    if (type == QLatin1String("claude-code"))
        runOptions.insert(QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5"));

    // Warm up both paths once (page cache, the CLI's first-run files).
    QList<double> engine, direct;
    for (int i = 0; i <= rounds; ++i) {
        QElapsedTimer t;
        t.start();
        const QJsonObject r
            = m_engine.rpc().result(QStringLiteral("agents.run"),
                                    {{QStringLiteral("id"), id},
                                     {QStringLiteral("prompt"),
                                      prompt.arg(QStringLiteral("/workspace/e%1.txt").arg(i))},
                                     {QStringLiteral("options"), runOptions}},
                                    180000);
        const double ms = t.nsecsElapsed() / 1e6;
        QVERIFY2(r.value(QStringLiteral("success")).toBool(), QJsonDocument(r).toJson().constData());
        if (i > 0)
            engine.append(ms);
    }

    // The baseline: the adapter's own command line, on the host, with a private home.
    QTemporaryDir home, work;
    const QString hostCliDir = QStringLiteral(SANDBOX_BINARY_DIR "/agents/") + type;
    for (int i = 0; i <= rounds; ++i) {
        AgentRunOptions o;
        o.prompt = prompt.arg(work.path() + QStringLiteral("/d%1.txt").arg(i));
        o.model = runOptions.value(QStringLiteral("model")).toString();
        const QJsonObject env = envFor(type);
        for (auto it = env.begin(); it != env.end(); ++it)
            o.env.insert(it.key(), it.value().toString());
        const auto adapter = AgentAdapter::create(type);
        auto inv = adapter->invocation(o);
        QStringList argv;
        for (QString a : inv.argv)
            argv.append(a.replace(QLatin1String(AgentAdapter::CliDir), hostCliDir));
        // The sandbox's own environment, not this process's: the same CLI, the same inputs.
        QProcessEnvironment penv;
        penv.insert(QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin"));
        penv.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
        penv.insert(QStringLiteral("TERM"), QStringLiteral("xterm-256color"));
        penv.insert(QStringLiteral("USER"), QStringLiteral("sandbox"));
        for (auto it = o.env.cbegin(); it != o.env.cend(); ++it)
            penv.insert(it.key(), it.value());
        for (auto it = inv.env.cbegin(); it != inv.env.cend(); ++it)
            penv.insert(it.key(), QString(it.value())
                                      .replace(QLatin1String(AgentAdapter::HomeDir), home.path()));
        for (const QString &dir : adapter->homeDirectories())
            QDir(home.path()).mkpath(dir);
        QProcess p;
        p.setProcessEnvironment(penv);
        p.setWorkingDirectory(work.path());
        p.setStandardInputFile(QProcess::nullDevice());
        QElapsedTimer t;
        t.start();
        // Not waitForFinished(): the mock model server needs this thread's event loop.
        QSignalSpy exited(&p, &QProcess::finished);
        p.start(argv.takeFirst(), argv);
        QVERIFY(exited.wait(180000));
        const double ms = t.nsecsElapsed() / 1e6;
        adapter->feedStdout(p.readAllStandardOutput());
        const QJsonObject result = adapter->finish({p.exitCode(), false, 0, qint64(ms), {}});
        QVERIFY2(result.value(QStringLiteral("success")).toBool(),
                 QJsonDocument(result).toJson().constData());
        if (i > 0)
            direct.append(ms);
    }
    const double e = median(engine), d = median(direct);
    qInfo().noquote()
        << QStringLiteral("%1: agents.run through sandboxd %2 ms, the same CLI run directly %3 ms; "
                          "engine overhead %4 ms per run, ratio %5 (median of %6)")
               .arg(type)
               .arg(e, 0, 'f', 1)
               .arg(d, 0, 'f', 1)
               .arg(e - d, 0, 'f', 1)
               .arg(e / d, 0, 'f', 2)
               .arg(rounds);
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}});
}

QTEST_GUILESS_MAIN(bench_Agents)
#include "bench_agents.moc"
