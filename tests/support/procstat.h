#pragma once

// CPU time of a process or one of its threads from /proc, for tests and benchmarks that show
// what a piece of the engine spends. Header-only, so that tests that link no engine can use it.

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QString>

#include <unistd.h>

namespace ProcStat {

// User + system CPU seconds from a /proc/PID/stat or /proc/PID/task/TID/stat file, or -1.
inline double cpuSeconds(const QString &statPath)
{
    QFile stat(statPath);
    if (!stat.open(QIODevice::ReadOnly))
        return -1;
    const QByteArray text = stat.readAll();
    // "pid (comm) state ...": comm may hold spaces and parentheses; utime and stime are fields
    // 14 and 15, the 12th and 13th after "(comm) ".
    const QList<QByteArray> f = text.mid(text.lastIndexOf(')') + 2).split(' ');
    if (f.size() < 13)
        return -1;
    return double(f.at(11).toLongLong() + f.at(12).toLongLong()) / double(::sysconf(_SC_CLK_TCK));
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

} // namespace ProcStat
