#pragma once

#include <QList>
#include <QString>

// Host pids of the processes in sandbox `id`'s cgroup (sandboxd's own cgroup layout), found
// through /proc/PID/cgroup; for tests that look at a real sandbox from outside (as root).
QList<int> sandboxProcesses(const QString &id);
// The host pid of the sandbox's supervisor, or -1.
int supervisorPid(const QString &id);
