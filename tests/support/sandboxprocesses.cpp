#include "sandboxprocesses.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

QList<int> sandboxProcesses(const QString &id)
{
    QList<int> out;
    const QByteArray needle = "/sandboxd/" + id.toUtf8();
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool isPid = false;
        const int pid = e.toInt(&isPid);
        if (!isPid)
            continue;
        const QByteArray cg = readAll(QStringLiteral("/proc/%1/cgroup").arg(pid));
        for (const QByteArray &line : cg.split('\n')) {
            if (line.endsWith(needle)) {
                out.append(pid);
                break;
            }
        }
    }
    return out;
}

qsizetype mostSandboxProcesses(const QString &id, qsizetype count, int timeoutMs)
{
    const QDeadlineTimer deadline(timeoutMs);
    qsizetype most = 0;
    for (;;) {
        most = std::max(most, sandboxProcesses(id).size());
        if (most >= count || deadline.hasExpired())
            return most;
        QEventLoop wait;
        QTimer::singleShot(50, &wait, &QEventLoop::quit);
        wait.exec();
    }
}

int supervisorPid(const QString &id)
{
    for (int pid : sandboxProcesses(id)) {
        const QString exe
            = QFileInfo(QFile::symLinkTarget(QStringLiteral("/proc/%1/exe").arg(pid))).fileName();
        if (exe == QLatin1String("sandbox-supervisor"))
            return pid;
    }
    return -1;
}
