// Idle density: 0, 25, 50, 100, 150 and 200 idle sandboxes beside one busy one. At each step:
//   the engine's own memory (RSS; per idle sandbox against the step with none), its open files
//   and threads, what the sandboxes' processes take (PSS of bubblewrap and the supervisors, and
//   their cgroups' memory), and the exec round trip on the busy sandbox (and the engine's CPU time
//   per exec, which the machine's other load does not change) against the same figures with no
//   idle sandbox beside it (same run).
// Prints BENCH lines and writes a CSV (SANDBOX_DENSITY_CSV, default density.csv in the build
// directory) that plot_density turns into a PNG (scripts/bench.sh does).
// For a profile: SANDBOX_DENSITY_STEPS (e.g. "0,200") and SANDBOX_DENSITY_RUNS (execs per step,
// 200) make the steps fewer and the measurements longer; "measuring N idle" goes to stderr as
// each step's execs begin (attach perf then).
#include "enginefixture.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <algorithm>

namespace {

struct Rtt
{
    double median = 0;
    double p99 = 0;
};

qint64 statusKb(qint64 pid, const QByteArray &field)
{
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith(QByteArray(field + ':')))
            return line.mid(field.size() + 1).trimmed().split(' ').value(0).toLongLong();
    }
    return -1;
}

// Every process below `root` (bubblewrap and the supervisors, and what they run).
QList<qint64> descendants(qint64 root)
{
    QHash<qint64, qint64> parent;
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool ok = false;
        const qint64 pid = e.toLongLong(&ok);
        if (!ok)
            continue;
        QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
        if (!stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray s = stat.readAll();
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        const QList<QByteArray> f = s.mid(s.lastIndexOf(')') + 2).split(' ');
        parent.insert(pid, f.value(1).toLongLong());
    }
    QList<qint64> out;
    for (auto it = parent.cbegin(); it != parent.cend(); ++it) {
        for (qint64 p = it.value(), hops = 0; p > 1 && hops < 64; p = parent.value(p), ++hops) {
            if (p == root) {
                out.append(it.key());
                break;
            }
        }
    }
    return out;
}

qint64 pssKb(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/smaps_rollup").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("Pss:"))
            return line.mid(4).trimmed().split(' ').value(0).toLongLong();
    }
    return 0;
}

qint64 cgroupBytes(const QStringList &ids)
{
    qint64 total = 0;
    for (const QString &id : ids) {
        // cgroup v2, else v1's memory hierarchy.
        QFile f(QStringLiteral("/sys/fs/cgroup/sandboxd/%1/memory.current").arg(id));
        if (!f.exists())
            f.setFileName(
                QStringLiteral("/sys/fs/cgroup/memory/sandboxd/%1/memory.usage_in_bytes").arg(id));
        if (!f.open(QIODevice::ReadOnly))
            return -1;
        total += f.readAll().trimmed().toLongLong();
    }
    return total;
}

Rtt execRtt(RpcTestClient &rpc, const QString &id, int runs)
{
    QList<double> ms;
    const QJsonObject params{{QStringLiteral("id"), id},
                             {QStringLiteral("command"), QJsonArray{QStringLiteral("/bin/true")}}};
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer t;
        t.start();
        const QJsonObject r = rpc.result(QStringLiteral("agents.exec"), params);
        if (r.value(QStringLiteral("exitCode")).toInt(-1) != 0)
            return {};
        ms.append(double(t.nsecsElapsed()) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms[qMin(ms.size() - 1, qsizetype(ms.size() * 99 / 100))]};
}

} // namespace

class bench_Density : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void idleSandboxes();
};

void bench_Density::idleSandboxes()
{
    EngineFixture engine;
    // No spares: every sandbox counted here is one a user asked for.
    QVERIFY2(engine.start({QStringLiteral("--max-running"), QStringLiteral("400"),
                           QStringLiteral("--max-sandboxes"), QStringLiteral("400"),
                           QStringLiteral("--max-memory-mb"), QStringLiteral("100000000"),
                           QStringLiteral("--spares"), QStringLiteral("0")}),
             qPrintable(engine.process().log()));
    RpcTestClient &rpc = engine.rpc();
    const auto create = [&rpc](const QString &size) {
        return rpc
            .result(QStringLiteral("agents.create"),
                    {{QStringLiteral("type"), QStringLiteral("codex")},
                     {QStringLiteral("size"), size}},
                    120000)
            .value(QStringLiteral("id"))
            .toString();
    };
    // The busy sandbox is of a size whose CPU quota (2 CPUs) back-to-back execs do not run out
    // of: a lite one's (1/16 CPU) made every exec wait for the next 100 ms period, which hid what
    // the idle sandboxes beside it cost.
    const QString busy = create(QStringLiteral("standard-3"));
    QVERIFY(!busy.isEmpty());
    execRtt(rpc, busy, 20); // warm

    const QString csvPath = qEnvironmentVariable("SANDBOX_DENSITY_CSV",
                                                 QStringLiteral(SANDBOX_BINARY_DIR "/density.csv"));
    QFile csv(csvPath);
    QVERIFY2(csv.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(csvPath));
    csv.write("idle,engine_rss_kib,engine_fds,engine_threads,sandbox_pss_kib,cgroup_kib,"
              "exec_median_ms,exec_p99_ms,engine_cpu_us_per_exec\n");

    QStringList idle;
    qint64 rss0 = 0;
    Rtt rtt0;
    QList<int> steps{0, 25, 50, 100, 150, 200};
    if (qEnvironmentVariableIsSet("SANDBOX_DENSITY_STEPS")) {
        steps.clear();
        for (const QString &s : qEnvironmentVariable("SANDBOX_DENSITY_STEPS").split(u','))
            steps.append(s.toInt());
    }
    const int runs = qEnvironmentVariableIsSet("SANDBOX_DENSITY_RUNS")
                         ? qBound(20, qEnvironmentVariableIntValue("SANDBOX_DENSITY_RUNS"), 100000)
                         : 200;
    for (const int step : std::as_const(steps)) {
        while (idle.size() < step) {
            const QString id = create(QStringLiteral("lite"));
            QVERIFY2(!id.isEmpty(),
                     qPrintable(
                         QStringLiteral("sandbox %1: %2")
                             .arg(idle.size() + 1)
                             .arg(QString::fromUtf8(
                                 QJsonDocument(rpc.lastError()).toJson(QJsonDocument::Compact)))));
            idle.append(id);
        }
        QTest::qWait(1000); // the starts' threads and buffers settle
        std::fprintf(stderr, "measuring %d idle\n", step);
        const double cpuBefore = engine.process().cpuMs();
        const Rtt rtt = execRtt(rpc, busy, runs);
        const double cpuPerExecUs = (engine.process().cpuMs() - cpuBefore) * 1000.0 / runs;
        QVERIFY(rtt.median > 0);
        const qint64 rss = statusKb(engine.process().pid(), "VmRSS");
        const qint64 threads = statusKb(engine.process().pid(), "Threads");
        const qint64 fds = QDir(QStringLiteral("/proc/%1/fd").arg(engine.process().pid()))
                               .entryList(QDir::NoDotAndDotDot | QDir::System)
                               .size();
        qint64 pss = 0;
        for (const qint64 pid : descendants(engine.process().pid()))
            pss += pssKb(pid);
        const qint64 cgroup = cgroupBytes(idle + QStringList{busy});
        if (step == 0) {
            rss0 = rss;
            rtt0 = rtt;
        }
        csv.write(QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9\n")
                      .arg(step)
                      .arg(rss)
                      .arg(fds)
                      .arg(threads)
                      .arg(pss)
                      .arg(cgroup < 0 ? -1 : cgroup / 1024)
                      .arg(rtt.median, 0, 'f', 3)
                      .arg(rtt.p99, 0, 'f', 3)
                      .arg(cpuPerExecUs, 0, 'f', 1)
                      .toUtf8());
        csv.flush();
        const double perSandboxKib = step > 0 ? double(rss - rss0) / step : 0;
        const int sandboxes = step + 1;
        std::printf(
            "BENCH idle %3d: engine RSS %7.1f MiB (%+7.1f KiB per idle sandbox), %4lld fds, "
            "%3lld threads | sandboxes' processes PSS %7.1f MiB (%5.2f MiB each), "
            "cgroups %7.1f MiB | exec RTT median %6.2f ms p99 %6.2f ms, engine CPU %5.0f us "
            "per exec | baseline 0 idle median %6.2f ms | ratio %.2fx\n",
            step, rss / 1024.0, perSandboxKib, qint64(fds), threads, pss / 1024.0,
            pss / 1024.0 / sandboxes, cgroup < 0 ? -1.0 : cgroup / 1048576.0, rtt.median, rtt.p99,
            cpuPerExecUs, rtt0.median, rtt.median / rtt0.median);
        std::fflush(stdout);
    }
    std::printf("BENCH idle density csv: %s\n", qPrintable(QFileInfo(csvPath).absoluteFilePath()));
    for (const QString &id : std::as_const(idle) + QStringList{busy})
        rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}});
}

QTEST_GUILESS_MAIN(bench_Density)
#include "bench_density.moc"
