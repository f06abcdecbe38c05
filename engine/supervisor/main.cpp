// sandbox-supervisor: the process inside each sandbox that runs execs and file operations for
// the engine, speaking frames over stdin/stdout (see PROTOCOL.md).

#include "paths.h"
#include "supervisor.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

int usage()
{
    std::fprintf(
        stderr,
        "usage: sandbox-supervisor [--workspace DIR] [--no-openat2]\n"
        "  --workspace DIR  the directory that plays /workspace (default /workspace; for tests)\n"
        "  --no-openat2     resolve paths with the O_NOFOLLOW walk only (for tests)\n");
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    std::string workspace(Paths::kRoot);
    bool useOpenat2 = true;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--workspace" && i + 1 < argc)
            workspace = argv[++i];
        else if (arg == "--no-openat2")
            useOpenat2 = false;
        else
            return usage();
    }

    // Make sure 0..2 exist so that no pipe of ours ever lands there.
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) < 0)
            ::open("/dev/null", O_RDWR);

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
    Supervisor supervisor(paths);
    return supervisor.run();
}
