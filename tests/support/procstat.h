#pragma once

// CPU time and page faults of a process or one of its threads from /proc, for tests and
// benchmarks that show what a piece of the engine spends. Header-only, so that tests that link
// no engine can use it.

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QString>

#include <unistd.h>

namespace ProcStat {

// The fields of a /proc/PID/stat or /proc/PID/task/TID/stat file after "(comm) ", from field 3
// (state) on: field N is at N - 3. Empty when the file cannot be read.
inline QList<QByteArray> statFields(const QString &statPath)
{
    QFile stat(statPath);
    if (!stat.open(QIODevice::ReadOnly))
        return {};
    const QByteArray text = stat.readAll();
    // "pid (comm) state ...": comm may hold spaces and parentheses.
    return text.mid(text.lastIndexOf(')') + 2).split(' ');
}

// User + system CPU seconds (fields 14 and 15), or -1.
inline double cpuSeconds(const QString &statPath)
{
    const QList<QByteArray> f = statFields(statPath);
    if (f.size() < 13)
        return -1;
    return double(f.at(11).toLongLong() + f.at(12).toLongLong()) / double(::sysconf(_SC_CLK_TCK));
}

// The CPU time of process `pid` ("self" for this one) in nanoseconds: the scheduler's own count
// of every thread's run time (/proc/PID/task/TID/schedstat), where cpuSeconds() counts in clock
// ticks (10 ms: a tenth of what a stream of 64 MiB costs a process). Threads that ended are not
// counted; -1 when there is no such process.
inline qint64 runNanoseconds(const QString &pid)
{
    const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
    if (!tasks.exists())
        return -1;
    qint64 total = 0;
    for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile stat(tasks.filePath(tid + QStringLiteral("/schedstat")));
        if (stat.open(QIODevice::ReadOnly))
            total += stat.readAll().split(' ').value(0).toLongLong();
    }
    return total;
}

// Minor page faults so far (field 10: first touches of memory, each a fault the kernel serves
// without I/O), or -1.
inline qint64 minorFaults(const QString &statPath)
{
    const QList<QByteArray> f = statFields(statPath);
    return f.size() < 13 ? -1 : f.at(7).toLongLong();
}

// The stat file of process `pid` ("self" for this one), or of its thread named `thread` (empty
// when there is none by that name).
inline QString statPath(const QString &pid, const QString &thread = {})
{
    if (thread.isEmpty())
        return QStringLiteral("/proc/%1/stat").arg(pid);
    const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
    for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile comm(tasks.filePath(tid + QStringLiteral("/comm")));
        if (comm.open(QIODevice::ReadOnly) && comm.readAll().trimmed() == thread.toUtf8())
            return tasks.filePath(tid + QStringLiteral("/stat"));
    }
    return {};
}

// A "VmXxx:" line of /proc/PID/status in KiB (VmRSS, VmHWM: the peak of VmRSS), or -1.
inline qint64 statusKb(const QString &pid, const char *field)
{
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    if (!status.open(QIODevice::ReadOnly))
        return -1;
    const QByteArray name = QByteArray(field) + ':';
    for (const QByteArray &line : status.readAll().split('\n')) {
        if (line.startsWith(name))
            return line.mid(name.size()).trimmed().split(' ').value(0).toLongLong();
    }
    return -1;
}

// Starts VmHWM afresh at the process's VmRSS now (proc(5), clear_refs "5").
inline bool resetPeak(const QString &pid)
{
    QFile refs(QStringLiteral("/proc/%1/clear_refs").arg(pid));
    return refs.open(QIODevice::WriteOnly) && refs.write("5") == 1;
}

// A process's peak memory from now on against what it had now (VmHWM reset to VmRSS).
class PeakSince
{
public:
    explicit PeakSince(qint64 pid)
        : m_pid(QString::number(pid))
        , m_reset(resetPeak(m_pid))
        , m_before(statusKb(m_pid, "VmRSS"))
    {}
    // Empty while the peak so far stayed less than `boundKb` above the start; else what it was.
    QString over(qint64 boundKb) const
    {
        const qint64 peak = statusKb(m_pid, "VmHWM");
        if (m_reset && m_before > 0 && peak > 0 && peak - m_before < boundKb)
            return {};
        return QStringLiteral("the memory of process %1 went from %2 to a peak of %3 KiB")
            .arg(m_pid)
            .arg(m_before)
            .arg(peak);
    }

private:
    QString m_pid;
    bool m_reset;
    qint64 m_before;
};

// The CFS periods of sandbox `id`'s cgroup so far, and in how many its CPU quota ran out
// (cpu.stat, where the engine makes the group as root; {-1, -1} elsewhere).
struct Throttling
{
    qint64 periods = -1;
    qint64 throttled = -1;
};

inline Throttling cpuThrottling(const QString &id)
{
    for (const QString &dir : {QStringLiteral("/sys/fs/cgroup/cpu/sandboxd/"),
                               QStringLiteral("/sys/fs/cgroup/sandboxd/")}) {
        QFile file(dir + id + QStringLiteral("/cpu.stat"));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        Throttling t;
        for (const QByteArray &line : file.readAll().split('\n')) {
            const QList<QByteArray> kv = line.split(' ');
            if (kv.size() == 2 && kv[0] == "nr_periods")
                t.periods = kv[1].toLongLong();
            else if (kv.size() == 2 && kv[0] == "nr_throttled")
                t.throttled = kv[1].toLongLong();
        }
        return t;
    }
    return {};
}

} // namespace ProcStat
