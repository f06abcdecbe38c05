#pragma once

#include "guard.h"
#include "reaper.h"

#include <cstddef>
#include <sys/types.h>

// One exec reaper ready for the next exec (PROTOCOL.md, "Process trees"): forked ahead (once
// configured, and after an exec answered when its reaper did not come back), or the reaper of an
// exec that answered with nothing of its tree left, which serves again. The next exec hands it
// its spec and descriptors over a socket instead of forking on the request's path. The spare
// keeps only the log (fd 2) and its socket: never a copy of another exec's pipes. A spec bigger
// than one message, or a spare that is gone, falls back to forking as before.
class SpareReaper
{
public:
    // What one hand-off carries at most (argv, env, cwd); bigger specs fork their own reaper.
    static constexpr size_t kMaxSpecBytes = 64 * 1024;

    explicit SpareReaper(const Guard::ChildOomScore &oomScore)
        : m_oomScore(oomScore)
    {}
    ~SpareReaper(); // the spare sees its socket close and exits
    SpareReaper(const SpareReaper &) = delete;
    SpareReaper &operator=(const SpareReaper &) = delete;

    // Forks a spare unless there is one. false: the fork failed (execs fork their own).
    bool refill();
    // Hands `spec` to the spare, which becomes that exec's reaper: its pid, with its socket in
    // `sock` (the caller's, for adopt() once the exec answered), or -1 when there is no spare or
    // it cannot take this spec (the caller forks). Either way the spec's descriptors stay the
    // caller's to close.
    pid_t take(const ReaperSpec &spec, int *sock);
    // Takes back the reaper `pid` (its socket `sock`) as the spare: it reported its tree gone and
    // waits for the next exec. false when there is a spare already (the caller closes `sock`,
    // and that reaper exits).
    bool adopt(pid_t pid, int sock);
    // Lets the spare go (it sees its socket close and exits).
    void release();
    pid_t pid() const { return m_pid; }

private:
    [[noreturn]] static void waitForWork(int sock, pid_t supervisor);
    // The next exec's spec and descriptors; false when the socket closed.
    static bool receive(int sock, char *data, ReaperSpec &spec);

    const Guard::ChildOomScore m_oomScore; // forks the spare
    pid_t m_pid = -1;
    int m_sock = -1;
};
