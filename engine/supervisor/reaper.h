#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

// What the per-exec reaper needs to start its command. All fds belong to the forked child.
struct ReaperSpec
{
    std::vector<std::string> argv;
    std::vector<std::pair<std::string, std::string>> env;
    int stdinFd = -1;  // read end of the STDIN pipe, or -1 for /dev/null
    int stdoutFd = -1; // write ends of the output pipes
    int stderrFd = -1;
    int controlFd = -1; // read end: any byte or EOF means "kill the whole tree"
    int statusFd = -1;  // write end: receives the command's wait status (an int), once
    int cwdFd = -1;     // O_PATH directory fd, or -1 with cwdErrno set
    int cwdErrno = 0;
    std::string cwdPath;
    pid_t supervisor = 0; // > 0: the command gets Guard::childFilter(supervisor)
    // stdin, stdout and stderr are a terminal's slave: the command gets a new session with it
    // as its controlling terminal.
    bool pty = false;
};

// What a reaper writes to its status pipe, once: the command's wait status, and whether its
// whole tree was gone by then (a reaper with a socket then serves the next exec).
struct ReaperStatus
{
    int waitStatus = 0;
    int treeGone = 0; // 1: no descendant was left
};

// The process between the supervisor and one exec's command: a child subreaper in its own
// session, so every descendant of the command (also one that calls setsid or is orphaned) stays
// below it. It reports the command's exit, keeps reaping background descendants until none is
// left, and on request (or when the supervisor goes away) SIGKILLs the whole tree.
class Reaper
{
public:
    // Runs `spec`'s command and reaps its tree. A reaper with a socket to the supervisor
    // (`sock`, a spare's) returns once the command's status is reported and its tree is gone,
    // with its descriptors as a waiting spare's (the log on 2, the socket on 3); it exits instead
    // when background descendants outlived the command (they keep it), and so does one without.
    // `stack` (mapCommandStack()): the command's stack until it execs, kept by a reaper that
    // serves exec after exec; null: one mapped for this command only.
    static void run(const ReaperSpec &spec, int sock, char *stack = nullptr);
    // Closes every descriptor from `first` up.
    static void closeFrom(int first);
    // The stack a command runs on while it shares its reaper's memory, mapped once: a reaper
    // that serves exec after exec keeps it, so that no exec maps, faults in and unmaps one.
    static constexpr size_t kCommandStack = 256 * 1024;
    static char *mapCommandStack();

private:
    enum Fds {
        InFd = 0,
        OutFd = 1,
        ErrFd = 2,
        ControlFd = 3,
        StatusFd = 4,
        CwdFd = 5,
        LogFd = 6,
        SockFd = 7
    };

    explicit Reaper(pid_t command)
        : m_command(command)
    {}
    struct Launch;
    static Launch prepare(const ReaperSpec &spec);
    static pid_t spawn(Launch &launch, char *stack);
    [[noreturn]] static void execCommand(const Launch &launch);
    bool loop(int signalFd); // returns once the tree is gone: true when reported so
    bool reap(bool block);   // true when no child is left
    void killTree();
    // Sends the command's wait status once it is known, saying whether the tree is gone.
    void report(bool treeGone);
    static std::vector<pid_t> liveDescendants(pid_t root);

    pid_t m_command;
    std::optional<int> m_status; // the command's wait status, once reaped
    bool m_reported = false;
    bool m_reportedGone = false; // reported with its tree gone: the reaper may serve again
};
