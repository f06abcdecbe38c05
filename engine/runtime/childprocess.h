#pragma once

#include "protocol/result.h"
#include "uniquefd.h"

#include <QObject>
#include <QPointer>
#include <QStringList>

#include <functional>

#include <sys/types.h>

namespace Sandbox::Engine {

class FdPoller;

// One child process (a sandbox's bubblewrap), its end seen through a pidfd on the engine's
// FdPoller: unlike QProcess, which keeps a notifier of its own per process that Qt polls on every
// event-loop turn, a thousand idle children cost the loop nothing. stdin and stdout are
// /dev/null, stderr too unless the modifier replaces it. Not thread-safe; lives in the engine's
// thread.
class ChildProcess final : public QObject
{
    Q_OBJECT

public:
    struct Spec
    {
        QString program;
        QStringList arguments;
        QStringList environment;  // NAME=value, the whole environment
        QString workingDirectory; // empty: the engine's
        // Runs in the child between fork and exec (async-signal-safe calls only); it may _exit().
        std::function<void()> modifier;
    };

    // `poller`: the engine's one (null: one of its own).
    explicit ChildProcess(FdPoller *poller = nullptr, QObject *parent = nullptr);
    // Kills a child still running and reaps it (waiting up to a second).
    ~ChildProcess() override;

    // Forks and execs; an error (why, e.g. "No such file or directory") when it could not.
    // Once only.
    Result<bool> start(const Spec &spec);
    bool isRunning() const { return m_pid > 0; }
    qint64 pid() const { return m_pid; }
    void kill();

Q_SIGNALS:
    // Once, after a successful start(): the exit code, or crashed when a signal ended it.
    void finished(int exitCode, bool crashed);

private:
    void onExited();
    // Reaps the child if it has ended (waiting up to `waitMs`); false while it runs.
    bool reap(int waitMs);

    QPointer<FdPoller> m_poller; // not owned, unless it is a child
    UniqueFd m_pidfd;
    pid_t m_pid = 0;
    int m_exitCode = 0;
    bool m_crashed = false;
};

} // namespace Sandbox::Engine
