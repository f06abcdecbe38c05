// Many clients: N WebSocket connections, each running `/bin/true` in its own sandbox in a loop
// (the next request as soon as the answer comes), for a few seconds. Throughput against one
// client's in the same run, and each run's p50/p99 round trip. The clients run in this process,
// on the same cores as the engine and the sandboxes.
#include "enginefixture.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkRequest>
#include <QTest>
#include <QWebSocket>

#include <algorithm>
#include <memory>

namespace {

struct Looper
{
    std::unique_ptr<QWebSocket> socket;
    QByteArray request;
    QElapsedTimer sent;
    int nextId = 1;
};

struct Run
{
    double perSecond = 0;
    double p50 = 0;
    double p99 = 0;
    int errors = 0;
    double engineCpuUsPerExec = 0; // the engine's own work per exec
    double engineCores = 0;        // the engine's CPU time / wall time (its one event loop: <= 1)
};

} // namespace

class bench_Clients : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void manyClients();

private:
    Run loop(int clients, int seconds);

    EngineFixture m_engine;
    QStringList m_ids;
};

void bench_Clients::initTestCase()
{
    QVERIFY2(m_engine.start({QStringLiteral("--max-running"), QStringLiteral("64"),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("100000000")}),
             qPrintable(m_engine.process().log()));
    for (int i = 0; i < 32; ++i) {
        const QString id = m_engine.rpc()
                               .result(QStringLiteral("agents.create"),
                                       {{QStringLiteral("type"), QStringLiteral("codex")},
                                        {QStringLiteral("size"), QStringLiteral("standard-2")}},
                                       120000)
                               .value(QStringLiteral("id"))
                               .toString();
        QVERIFY(!id.isEmpty());
        m_ids.append(id);
    }
}

Run bench_Clients::loop(int clients, int seconds)
{
    std::vector<std::unique_ptr<Looper>> loopers;
    QList<double> rtts;
    int errors = 0;
    bool running = false;
    int open = 0;
    for (int i = 0; i < clients; ++i) {
        auto l = std::make_unique<Looper>();
        l->socket = std::make_unique<QWebSocket>();
        Looper *raw = l.get();
        raw->request = QJsonDocument(
                           QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                       {QStringLiteral("id"), 1},
                                       {QStringLiteral("method"), QStringLiteral("agents.exec")},
                                       {QStringLiteral("params"),
                                        QJsonObject{{QStringLiteral("id"), m_ids.at(i)},
                                                    {QStringLiteral("command"),
                                                     QJsonArray{QStringLiteral("/bin/true")}}}}})
                           .toJson(QJsonDocument::Compact);
        connect(raw->socket.get(), &QWebSocket::connected, this, [&open] { ++open; });
        connect(raw->socket.get(), &QWebSocket::textMessageReceived, this,
                [&, raw](const QString &text) {
                    const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
                    if (!m.contains(QStringLiteral("id")))
                        return; // a notification
                    if (m.contains(QStringLiteral("error")))
                        ++errors;
                    else
                        rtts.append(double(raw->sent.nsecsElapsed()) / 1e6);
                    if (!running)
                        return;
                    raw->sent.start();
                    raw->socket->sendTextMessage(QString::fromUtf8(raw->request));
                });
        QNetworkRequest request(m_engine.process().wsUrl());
        request.setRawHeader("Authorization", "Bearer " + m_engine.process().key().toUtf8());
        raw->socket->open(request);
        loopers.push_back(std::move(l));
    }
    if (!QTest::qWaitFor([&] { return open == clients; }, 20000))
        return {};
    running = true;
    const double cpuBefore = m_engine.process().cpuMs();
    QElapsedTimer total;
    total.start();
    for (auto &l : loopers) {
        l->sent.start();
        l->socket->sendTextMessage(QString::fromUtf8(l->request));
    }
    QTest::qWait(seconds * 1000); // on purpose: the clients run for the span that is measured
    running = false;
    const double elapsed = double(total.nsecsElapsed()) / 1e9;
    const double cpu = m_engine.process().cpuMs() - cpuBefore;
    const qsizetype done = rtts.size();
    QTest::qWait(500); // on purpose: the answers still in flight land before the sockets close
    for (auto &l : loopers)
        l->socket->close();
    if (rtts.isEmpty())
        return {};
    std::sort(rtts.begin(), rtts.end());
    return {double(done) / elapsed,
            rtts[rtts.size() / 2],
            rtts[qMin(rtts.size() - 1, qsizetype(rtts.size() * 99 / 100))],
            errors,
            cpu * 1000.0 / double(qMax<qsizetype>(1, done)),
            cpu / 1000.0 / elapsed};
}

void bench_Clients::manyClients()
{
    const Run one = loop(1, 4);
    QVERIFY(one.perSecond > 0);
    for (const int n : {1, 8, 32}) {
        const Run r = n == 1 ? one : loop(n, 6);
        QVERIFY(r.perSecond > 0);
        QCOMPARE(r.errors, 0);
        std::printf(
            "BENCH %2d clients exec loop  %7.0f execs/s  p50 %7.2f ms  p99 %7.2f ms  engine "
            "%4.0f us CPU per exec, %3.0f%% of a core | baseline 1 client %7.0f execs/s | "
            "ratio %.2fx\n",
            n, r.perSecond, r.p50, r.p99, r.engineCpuUsPerExec, r.engineCores * 100, one.perSecond,
            r.perSecond / one.perSecond);
        std::fflush(stdout);
    }
}

QTEST_GUILESS_MAIN(bench_Clients)
#include "bench_clients.moc"
