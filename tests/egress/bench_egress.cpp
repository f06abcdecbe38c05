// The cost of egress, each figure against a direct connection measured in the same run:
//   connection set-up (connect, one request byte, one answer byte) and bulk throughput
//   from inside a sandbox, through the forwarded loopback port and through the proxy's CONNECT
//   vs  the same client on the host connecting to the same server directly.
// One server (python3 on this host's loopback), one client script for every path. Prints
// figures; asserts only that they were measured (timings are not pass/fail here). With the
// figures, the CPU the relay spends per GB (the engine's egress thread) beside what the sending
// server spends per GB in the direct run: on loopback the relay's work is a second TCP
// connection's, which on a machine with as many busy threads as cores comes out of throughput.
// So the bulk rounds run twice: unpaced (loopback's own speed, as fast as two cores copy) and
// paced by the server at the rates of real links (SO_MAX_PACING_RATE, 1 and 2.5 Gbit/s), where
// the question is whether the relay keeps up with the network an agent's traffic comes from.
#include "enginefixture.h"
#include "procstat.h"
#include "samplestats.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTest>

#include <algorithm>
#include <unistd.h>

namespace {

const char *const kServer = R"(
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 0))
s.listen(512)
print(s.getsockname()[1], flush=True)
chunk = memoryview(b'x' * (1 << 20))
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = c.makefile('rb')
    line = f.readline()
    if line.startswith(b'P'):
        c.sendall(b'p')
    elif line.startswith(b'D'):
        words = line.split()
        n, rate = int(words[1]), int(words[2])
        if rate > 0:
            c.setsockopt(socket.SOL_SOCKET, 47, rate // 8)  # SO_MAX_PACING_RATE, bytes/s
        while n > 0:
            k = min(n, len(chunk))
            c.sendall(chunk[:k])
            n -= k
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
)";

// argv: MODE(direct|connect) HOST PORT CONNECTIONS BYTES ROUNDS RATE (bit/s the server paces
// its sending at; 0 for as fast as it can)
const char *const kClient = R"(
import json, socket, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
n, size, rounds, rate = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
def open_():
    if mode == 'connect':
        c = socket.create_connection(('127.0.0.1', 3128))
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(('CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port, host, port)).encode())
        head = b''
        while b'\r\n\r\n' not in head:
            d = c.recv(1)
            if not d:
                raise SystemExit('proxy closed: %r' % head)
            head += d
        if head.split()[1] != b'200':
            raise SystemExit('proxy said %r' % head)
        return c
    c = socket.create_connection((host, port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c
lat = []
for i in range(n):
    t = time.perf_counter()
    c = open_()
    c.sendall(b'P\n')
    if c.recv(1) != b'p':
        raise SystemExit('no answer')
    lat.append((time.perf_counter() - t) * 1000)
    c.close()
buf = bytearray(1 << 20)
rates = []
for r in range(rounds):
    c = open_()
    t = time.perf_counter()
    c.sendall(b'D %d %d\n' % (size, rate))
    got = 0
    while True:
        k = c.recv_into(buf)
        if k == 0:
            break
        got += k
    dt = time.perf_counter() - t
    c.close()
    if got != size:
        raise SystemExit('short: %d' % got)
    rates.append(got / dt / 1e6)
print(json.dumps({'lat': lat, 'mbps': rates}))
)";

// What one run of the client measures: set-up of `connections` connections, then `rounds` bulk
// transfers of `bytes`, sent at `rate` bit/s (0: unpaced).
struct Load
{
    int connections = 0;
    qint64 bytes = 0;
    int rounds = 0;
    qint64 rate = 0;
};

constexpr Load kUnpaced{300, 512ll * 1024 * 1024, 5, 0};

// Two seconds of data per round at a link of `bitsPerSecond`.
constexpr Load paced(qint64 bitsPerSecond)
{
    return {0, bitsPerSecond / 8 * 2, 3, bitsPerSecond};
}

using SampleStats::median;

double p90(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v[qMin(v.size() - 1, qsizetype(v.size() * 9 / 10))];
}

struct Figures
{
    QList<double> latencyMs;
    QList<double> mbps;
    double cpuSeconds = 0; // of the relaying thread (the engine's egress) or, direct, the server
    bool ok(const Load &load) const
    {
        return latencyMs.size() == load.connections && mbps.size() == load.rounds;
    }
};

// CPU seconds (user + system) of process `pid`, or of its thread named `thread`; 0 if gone.
double cpuSeconds(qint64 pid, const QString &thread = {})
{
    return qMax(0.0, ProcStat::cpuSeconds(ProcStat::statPath(QString::number(pid), thread)));
}

Figures parse(const QByteArray &out)
{
    const QJsonObject o = QJsonDocument::fromJson(out.trimmed().split('\n').last()).object();
    Figures f;
    for (const QJsonValue &v : o.value(QStringLiteral("lat")).toArray())
        f.latencyMs.append(v.toDouble());
    for (const QJsonValue &v : o.value(QStringLiteral("mbps")).toArray())
        f.mbps.append(v.toDouble());
    return f;
}

void report(const char *path, const Figures &f, const Figures &direct)
{
    constexpr double kGb = double(kUnpaced.bytes) * kUnpaced.rounds / 1e9;
    std::printf("BENCH egress %-16s set-up median %6.3f ms p90 %6.3f ms (direct %6.3f ms, +%6.3f "
                "ms) | throughput median %8.1f MB/s (direct %8.1f MB/s, ratio %.2fx) | relay CPU "
                "%.2f s/GB (the sending server's, direct: %.2f s/GB)\n",
                path, median(f.latencyMs), p90(f.latencyMs), median(direct.latencyMs),
                median(f.latencyMs) - median(direct.latencyMs), median(f.mbps), median(direct.mbps),
                median(f.mbps) / median(direct.mbps), f.cpuSeconds / kGb, direct.cpuSeconds / kGb);
    std::fflush(stdout);
}

void reportPaced(const Load &load, const char *path, const Figures &f, const Figures &direct)
{
    const double gb = double(load.bytes) * load.rounds / 1e9;
    std::printf("BENCH egress at a %.1f Gbit/s link (%.1f MB/s), %-16s throughput median %8.1f "
                "MB/s (direct %8.1f MB/s, ratio %.2fx) | relay CPU %.2f s/GB\n",
                double(load.rate) / 1e9, double(load.rate) / 8e6, path, median(f.mbps),
                median(direct.mbps), median(f.mbps) / median(direct.mbps), f.cpuSeconds / gb);
    std::fflush(stdout);
}

QStringList clientArguments(const QString &mode, const QString &host, quint16 port, const Load &load)
{
    return {QStringLiteral("-c"),
            QString::fromUtf8(kClient),
            mode,
            host,
            QString::number(port),
            QString::number(load.connections),
            QString::number(load.bytes),
            QString::number(load.rounds),
            QString::number(load.rate)};
}

} // namespace

class bench_Egress : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void throughTheProxyVsDirect();

private:
    Figures inSandbox(const QString &mode, const QString &host, const Load &load);
    Figures onHost(const Load &load);

    EngineFixture m_engine;
    QProcess m_server;
    quint16 m_port = 0;
    QString m_id;
};

void bench_Egress::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("needs root (sandboxd drops each sandbox to its own uid)");
    m_server.start(QStringLiteral("/usr/bin/python3"),
                   {QStringLiteral("-c"), QString::fromUtf8(kServer)});
    QVERIFY(m_server.waitForReadyRead(10000));
    m_port = quint16(m_server.readLine().trimmed().toUInt());
    QVERIFY(m_port != 0);
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    const QJsonObject sb
        = m_engine.create(QStringLiteral("agents.create"),
                          {{QStringLiteral("type"), QStringLiteral("claude-code")},
                           {QStringLiteral("size"), QStringLiteral("standard-2")},
                           {QStringLiteral("gateway"), false},
                           {QStringLiteral("network"),
                            QJsonObject{{QStringLiteral("allow"),
                                         QJsonArray{QStringLiteral("127.0.0.1:%1").arg(m_port)}}}}},
                          120000);
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    m_id = sb.value(QStringLiteral("id")).toString();
}

void bench_Egress::cleanupTestCase()
{
    m_engine.cleanup();
    m_server.kill();
    m_server.waitForFinished(5000);
}

Figures bench_Egress::inSandbox(const QString &mode, const QString &host, const Load &load)
{
    const double cpuBefore = cpuSeconds(m_engine.process().pid(), QStringLiteral("egress"));
    const QJsonObject r = m_engine.rpc().result(QStringLiteral("agents.exec"),
                                                {{QStringLiteral("id"), m_id},
                                                 {QStringLiteral("command"),
                                                  QJsonArray::fromStringList(
                                                      QStringList{QStringLiteral("python3")}
                                                      + clientArguments(mode, host, m_port, load))},
                                                 {QStringLiteral("options"),
                                                  QJsonObject{{QStringLiteral("timeout"), 600000}}}},
                                                660000);
    if (r.value(QStringLiteral("exitCode")).toInt() != 0)
        qWarning().noquote() << r.value(QStringLiteral("stderr")).toString();
    Figures f = parse(r.value(QStringLiteral("stdout")).toString().toUtf8());
    f.cpuSeconds = cpuSeconds(m_engine.process().pid(), QStringLiteral("egress")) - cpuBefore;
    return f;
}

Figures bench_Egress::onHost(const Load &load)
{
    const double cpuBefore = cpuSeconds(m_server.processId());
    QProcess p;
    p.start(QStringLiteral("/usr/bin/python3"),
            clientArguments(QStringLiteral("direct"), QStringLiteral("127.0.0.1"), m_port, load));
    if (!p.waitForFinished(600000) || p.exitCode() != 0)
        qWarning().noquote() << p.readAllStandardError();
    Figures f = parse(p.readAllStandardOutput());
    f.cpuSeconds = cpuSeconds(m_server.processId()) - cpuBefore;
    return f;
}

void bench_Egress::throughTheProxyVsDirect()
{
    const QString loopback = QStringLiteral("127.0.0.1");
    const QString direct = QStringLiteral("direct");
    const QString connect = QStringLiteral("connect");
    // Warm-up (python's start, the page cache), then each path in turn.
    inSandbox(direct, loopback, kUnpaced);
    const Figures onHostFigures = onHost(kUnpaced);
    const Figures forward = inSandbox(direct, loopback, kUnpaced);
    const Figures proxy = inSandbox(connect, loopback, kUnpaced);
    QVERIFY(onHostFigures.ok(kUnpaced));
    QVERIFY(forward.ok(kUnpaced));
    QVERIFY(proxy.ok(kUnpaced));
    // Every path needs more processes scheduled than the direct one: on a busy machine that shows.
    QFile load(QStringLiteral("/proc/loadavg"));
    if (load.open(QIODevice::ReadOnly))
        std::printf("BENCH egress load average: %s", load.readAll().constData());
    report("forwarded port", forward, onHostFigures);
    report("proxy CONNECT", proxy, onHostFigures);

    for (const qint64 rate : {1'000'000'000ll, 2'500'000'000ll}) {
        const Load load = paced(rate);
        const Figures pacedDirect = onHost(load);
        const Figures pacedForward = inSandbox(direct, loopback, load);
        const Figures pacedProxy = inSandbox(connect, loopback, load);
        QVERIFY(pacedDirect.ok(load));
        QVERIFY(pacedForward.ok(load));
        QVERIFY(pacedProxy.ok(load));
        reportPaced(load, "forwarded port", pacedForward, pacedDirect);
        reportPaced(load, "proxy CONNECT", pacedProxy, pacedDirect);
    }
}

QTEST_GUILESS_MAIN(bench_Egress)
#include "bench_egress.moc"
