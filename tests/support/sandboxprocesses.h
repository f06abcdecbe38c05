#pragma once

#include <QList>
#include <QString>

// Host pids of the processes in sandbox `id`'s cgroup (sandboxd's own cgroup layout), found
// through /proc/PID/cgroup; for tests that look at a real sandbox from outside (as root).
QList<int> sandboxProcesses(const QString &id);
// Looks at sandbox `id`'s processes every 50 ms (the event loop running meanwhile) until it had
// `count` at one look or `timeoutMs` passed, and answers the most it saw. A fork bomb's count
// rises and falls: QTRY_VERIFY looks again after its wait succeeded, and so failed at once when
// the bomb had fewer processes by then.
qsizetype mostSandboxProcesses(const QString &id, qsizetype count, int timeoutMs);
// The host pid of the sandbox's supervisor, or -1.
int supervisorPid(const QString &id);
