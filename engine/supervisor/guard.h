#pragma once

#include <linux/filter.h>
#include <sys/types.h>
#include <vector>

// What the supervisor does to itself and to what it starts so that the code it runs cannot reach
// it: no core dumps, ptrace or /proc/PID/{mem,fd} access (non-dumpable), and a seccomp filter,
// stacked on the sandbox's own, that refuses signals and pidfds aimed at the supervisor.
namespace Guard {

// PR_SET_DUMPABLE 0 for the calling process. False (errno set) on failure.
bool makeUndumpable();

// Commands get oom_score_adj 1000 (PROTOCOL.md, "Process trees"), which they cannot set
// themselves: a process that is not dumpable (the supervisor, its reapers, a command until it
// execs, which shares its reaper's memory) cannot open its own /proc files but as root. So the
// supervisor opens its own oom_score_adj while it still can and raises it for the moment it forks
// a reaper: the reaper inherits the value, and so does every command it starts.
class ChildOomScore
{
public:
    // Opens this process's oom_score_adj (before makeUndumpable()); the descriptor stays open
    // for the process's life. False (errno set) on failure.
    bool open();
    // fork(): the child starts with oom_score_adj 1000, this process's stays what it was. A plain
    // fork() when open() was not called or failed.
    pid_t fork() const;

private:
    int m_fd = -1;
    char m_own[16] = {};
    ssize_t m_ownSize = 0;
};

// The filter for a command the supervisor starts: it makes kill(), tkill(),
// tgkill(), rt_(tg)sigqueueinfo() and pidfd_open() aimed at `supervisor` (or at the sandbox's
// init, pid 1, or at everyone, kill(-1)) fail with EPERM; pidfd_send_signal() fails with ENOSYS
// (a /proc/PID directory fd is a pidfd too), as do the ways to hand a process's SIGIO to another
// (F_SETOWN at the supervisor, F_SETOWN_EX, FIOSETOWN, SIOCSPGRP). Needs no_new_privs (bwrap
// sets it).
std::vector<sock_filter> childFilter(pid_t supervisor);

// Installs `filter` in the calling process (a command about to exec). Allocates nothing, so that
// a child that shares its parent's memory until it execs can call it. False (errno set) on
// failure.
bool installFilter(const std::vector<sock_filter> &filter);

} // namespace Guard
