// sandbox-supervisor: the process inside each sandbox that runs execs and file operations for
// the engine, speaking frames over the socket it inherits as --channel-fd (see PROTOCOL.md).

#include "guard.h"
#include "paths.h"
#include "supervisor.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/close_range.h>
#include <string>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

int usage()
{
    std::fprintf(
        stderr,
        "usage: sandbox-supervisor --channel-fd N [--workspace DIR] [--no-openat2]\n"
        "                          [--spare-reaper-idle-ms MS] [--started-event-delay-ms MS]\n"
        "  --channel-fd N   the engine's socket (an AF_UNIX stream socket; 3 under sandboxd)\n"
        "  --workspace DIR  the directory that plays /workspace (default /workspace; for tests)\n"
        "  --no-openat2     resolve paths with the O_NOFOLLOW walk only (for tests)\n"
        "  --spare-reaper-idle-ms MS  keep the reaper forked ahead this long without an exec\n"
        "                   (default 60000; for tests)\n"
        "  --started-event-delay-ms MS  hold an exec's EVENT this long for its RESPONSE\n"
        "                   (default 20; for tests)\n");
    return 2;
}

// Drops every inherited descriptor but 0..2 and the channel (bwrap's --args/--seccomp fds,
// anything a launcher leaked).
void closeOthers(int keep)
{
    if (keep > 3)
        ::syscall(SYS_close_range, 3U, unsigned(keep - 1), 0U);
    ::syscall(SYS_close_range, unsigned(keep + 1), ~0U, 0U);
}

} // namespace

int main(int argc, char **argv)
{
    std::string workspace(Paths::kRoot);
    bool useOpenat2 = true;
    int channelFd = -1;
    std::chrono::milliseconds spareIdle = ExecRunner::kSpareIdle;
    std::chrono::milliseconds startedDelay = ExecRunner::kStartedDelay;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--workspace" && i + 1 < argc) {
            workspace = argv[++i];
        } else if (arg == "--channel-fd" && i + 1 < argc) {
            char *end = nullptr;
            const long fd = std::strtol(argv[++i], &end, 10);
            if (!end || *end != '\0' || fd < 3 || fd > INT_MAX)
                return usage();
            channelFd = int(fd);
        } else if (arg == "--no-openat2") {
            useOpenat2 = false;
        } else if ((arg == "--spare-reaper-idle-ms" || arg == "--started-event-delay-ms")
                   && i + 1 < argc) {
            char *end = nullptr;
            const long ms = std::strtol(argv[++i], &end, 10);
            if (!end || *end != '\0' || ms < 0 || ms > 24L * 3600 * 1000)
                return usage();
            (arg == "--spare-reaper-idle-ms" ? spareIdle : startedDelay)
                = std::chrono::milliseconds(ms);
        } else {
            return usage();
        }
    }
    if (channelFd < 0)
        return usage();

    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(channelFd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
        std::fprintf(stderr, "sandbox-supervisor: fd %d is not the engine's stream socket\n",
                     channelFd);
        return 1;
    }
    closeOthers(channelFd);
    ::fcntl(channelFd, F_SETFD, FD_CLOEXEC);

    // Make sure 0..2 exist so that no pipe of ours ever lands there.
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) < 0)
            ::open("/dev/null", O_RDWR);

    // Our own oom_score_adj, for the reapers' (ChildOomScore), while /proc/self is still ours to
    // open; then nothing the sandbox runs may read this process's memory or take its
    // descriptors. (Nothing of the sandbox runs before this process starts it.)
    Guard::ChildOomScore oomScore;
    if (!oomScore.open())
        std::fprintf(stderr, "sandbox-supervisor: /proc/self/oom_score_adj: %s\n",
                     std::strerror(errno));
    if (!Guard::makeUndumpable()) {
        std::fprintf(stderr, "sandbox-supervisor: PR_SET_DUMPABLE: %s\n", std::strerror(errno));
        return 1;
    }

    // Every disposition to its default, once (whatever bwrap and the engine left ignored), so
    // that a command needs only SIGPIPE back (Reaper::execCommand); handlers do not survive
    // execve() anyway. Then SIGPIPE ignored: a write to a closed pipe is an error, not an exit.
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP)
            std::signal(sig, SIG_DFL);
    std::signal(SIGPIPE, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld, nullptr);

    Paths paths;
    if (!paths.openRoot(workspace, useOpenat2)) {
        std::fprintf(stderr, "sandbox-supervisor: cannot open workspace %s: %s\n",
                     workspace.c_str(), std::strerror(errno));
        return 1;
    }
    Supervisor supervisor(channelFd, paths, useOpenat2, oomScore);
    supervisor.setSpareReaperIdle(spareIdle);
    supervisor.setStartedEventDelay(startedDelay);
    return supervisor.run();
}
