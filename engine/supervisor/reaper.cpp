#include "reaper.h"

#include "guard.h"
#include "pty.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <sched.h>
#include <string_view>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>

extern char **environ;

void Reaper::closeFrom(int first)
{
    if (::close_range(unsigned(first), ~0u, 0) == 0)
        return;
    const long max = ::sysconf(_SC_OPEN_MAX);
    for (long fd = first; fd < (max > 0 ? max : 65536); ++fd)
        ::close(int(fd));
}

// Everything the command's start needs, made by the reaper before the command is spawned: the
// command shares the reaper's memory until it execs, so it only makes system calls.
struct Reaper::Launch
{
    const ReaperSpec *spec = nullptr;
    int cwdErrno = 0; // the reaper is in the command's cwd, or this says why not
    std::vector<std::string> envStrings;
    std::vector<char *> envp;
    std::vector<char *> argv;
    std::vector<sock_filter> filter; // Guard::childFilter(), empty for none
};

Reaper::Launch Reaper::prepare(const ReaperSpec &spec)
{
    Launch l;
    l.spec = &spec;
    // The command inherits the reaper's working directory (the reaper needs none).
    l.cwdErrno = spec.cwdErrno != 0 ? spec.cwdErrno : (::fchdir(CwdFd) < 0 ? errno : 0);
    // The supervisor's own (fixed) environment, then PWD, then the request's: later ones win.
    // Built in one pass: setenv() per variable is quadratic in a huge environment.
    std::map<std::string, std::string> env;
    for (char **e = environ; e && *e; ++e) {
        const std::string_view kv(*e);
        const size_t eq = kv.find('=');
        if (eq != std::string_view::npos && eq > 0)
            env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    char cwd[4096];
    if (l.cwdErrno == 0 && ::getcwd(cwd, sizeof cwd))
        env["PWD"] = cwd;
    for (const auto &[key, value] : spec.env)
        env[key] = value;
    l.envStrings.reserve(env.size());
    for (const auto &[key, value] : env)
        l.envStrings.push_back(key + '=' + value);
    for (auto &kv : l.envStrings)
        l.envp.push_back(kv.data());
    l.envp.push_back(nullptr);
    for (const auto &arg : spec.argv)
        l.argv.push_back(const_cast<char *>(arg.c_str()));
    l.argv.push_back(nullptr);
    if (spec.supervisor > 0)
        l.filter = Guard::childFilter(spec.supervisor);
    environ = l.envp.data(); // execvp() searches the new PATH; the reaper needs its own no more
    return l;
}

char *Reaper::mapCommandStack()
{
    void *stack = ::mmap(nullptr, kCommandStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    return stack == MAP_FAILED ? nullptr : static_cast<char *>(stack);
}

pid_t Reaper::spawn(Launch &launch, char *stack)
{
    // Like posix_spawn: the command shares the reaper's memory until it execs (CLONE_VM |
    // CLONE_VFORK, the reaper waiting meanwhile), on a stack of its own. No page tables are
    // copied and neither side takes copy-on-write faults, which a fork cost on every exec.
    // A stack the reaper keeps has its pages already: mapping one, faulting its first page in and
    // unmapping it made a spawn 0.1-0.4 ms slower here (a paravirtualized guest).
    char *const own = stack ? nullptr : mapCommandStack();
    if (!stack && !own)
        return -1;
    const pid_t pid
        = ::clone([](void *arg) -> int { execCommand(*static_cast<const Launch *>(arg)); },
                  (stack ? stack : own) + kCommandStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &launch);
    const int err = errno;
    if (own)
        ::munmap(own, kCommandStack); // the command has exec'd (or exited) by now
    errno = err;
    return pid;
}

void Reaper::run(const ReaperSpec &spec, int sock, char *stack)
{
    char **const baseEnv = environ; // prepare() points it at the command's: restored for the next
    // Move everything we keep to fixed numbers (those below them via copies above 10, so they
    // cannot collide: one at kKept or above is never a target), then drop every other
    // descriptor the supervisor had: engine pipes, other execs' pipes.
    const int stdinFd = spec.stdinFd >= 0 ? spec.stdinFd
                                          : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int sources[] = {stdinFd,       spec.stdoutFd, spec.stderrFd, spec.controlFd,
                           spec.statusFd, spec.cwdFd,    STDERR_FILENO, sock};
    constexpr int kKept = SockFd + 1;
    int copies[kKept];
    for (int i = 0; i < kKept; ++i)
        copies[i] = sources[i] < 0        ? -1
                    : sources[i] >= kKept ? sources[i]
                                          : ::fcntl(sources[i], F_DUPFD_CLOEXEC, 10);
    // The reaper's own (3 and up) close on exec, set as they are placed: a system call each fewer
    // on the way to the command than setting it afterwards.
    for (int i = 0; i < kKept; ++i) {
        if (copies[i] >= 0)
            ::dup3(copies[i], i, i >= ControlFd ? O_CLOEXEC : 0);
        else
            ::close(i);
    }
    closeFrom(kKept);

    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::setsid(); // a reaper serving again leads its session already (EPERM)

    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld, nullptr); // already blocked by the supervisor; be explicit
    const int signalFd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);

    bool gone = false;
    {
        Launch launch = prepare(spec);
        const pid_t command = spawn(launch, stack);
        Reaper reaper(command);
        if (command < 0) {
            dprintf(ErrFd, "sandbox-supervisor: clone: %s\n", std::strerror(errno));
            reaper.m_status = W_EXITCODE(127, 0);
            reaper.report(false);
            ::_exit(0);
        }
        // The command owns the pipes now: the reaper must not keep them open.
        const int devNull = ::open("/dev/null", O_RDWR);
        for (int fd = InFd; fd <= ErrFd; ++fd)
            ::dup2(devNull, fd);
        if (devNull > ErrFd)
            ::close(devNull);
        ::close(CwdFd);
        if (signalFd < 0) {
            dprintf(LogFd, "sandbox-supervisor: reaper: signalfd: %s\n", std::strerror(errno));
            reaper.killTree();
            reaper.report(false);
            ::_exit(1);
        }
        gone = reaper.loop(signalFd);
    }
    environ = baseEnv;
    if (!gone || sock < 0)
        ::_exit(0);
    // Nothing of this exec is left: back to a waiting spare's descriptors, in no directory of it.
    ::dup2(LogFd, STDERR_FILENO);
    ::dup2(SockFd, 3);
    closeFrom(4);
    [[maybe_unused]] const int rc = ::chdir("/");
}

// Runs in the command before it execs, in the reaper's memory (see spawn()): system calls only,
// nothing allocated, nothing of the reaper's changed.
void Reaper::execCommand(const Launch &l)
{
    const ReaperSpec &spec = *l.spec;
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // The supervisor set every other disposition to its default at start (main.cpp) and the
    // reaper changes none: one call instead of one per signal on every exec. (Dispositions are
    // the command's own copy: it shares the reaper's memory, not its signal handlers.)
    ::signal(SIGPIPE, SIG_DFL);
    // (oom_score_adj 1000 came with the reaper: Guard::ChildOomScore.)
    if (l.cwdErrno != 0) {
        dprintf(ErrFd, "sandbox-supervisor: cd %s: %s\n", spec.cwdPath.c_str(),
                std::strerror(l.cwdErrno));
        ::_exit(127);
    }
    closeFrom(ControlFd);
    if (spec.pty)
        Pty::becomeControllingTerminal();
    if (!l.filter.empty() && !Guard::installFilter(l.filter)) {
        dprintf(ErrFd, "sandbox-supervisor: cannot install the seccomp guard: %s\n",
                std::strerror(errno));
        ::_exit(126);
    }
    ::execvp(l.argv[0], l.argv.data());
    const int err = errno;
    dprintf(ErrFd, "sandbox-supervisor: %s: %s\n", l.argv[0], std::strerror(err));
    ::_exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

bool Reaper::loop(int signalFd)
{
    pollfd fds[2] = {{ControlFd, POLLIN, 0}, {signalFd, POLLIN, 0}};
    for (;;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents) {
            signalfd_siginfo info;
            while (::read(signalFd, &info, sizeof info) > 0) {
            }
            const bool none = reap(false);
            report(none);
            if (none && m_reported)
                return m_reportedGone; // the command and every background descendant are gone
        }
        if (fds[0].revents)
            break; // a kill request, or the supervisor is gone
    }
    killTree();
    report(true);
    return m_reportedGone;
}

bool Reaper::reap(bool block)
{
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, block ? 0 : WNOHANG);
        if (pid > 0) {
            if (pid == m_command)
                m_status = status;
            continue;
        }
        if (pid == 0)
            return false;
        if (errno == EINTR)
            continue;
        return true; // ECHILD
    }
}

void Reaper::report(bool treeGone)
{
    if (m_reported || !m_status)
        return;
    m_reported = true;
    m_reportedGone = treeGone;
    const ReaperStatus status{*m_status, treeGone ? 1 : 0};
    while (::write(StatusFd, &status, sizeof status) < 0 && errno == EINTR) {
    }
}

void Reaper::killTree()
{
    // Everything below us stays below us (we are a subreaper), so kill until a scan finds
    // nothing alive: a process forking while we kill shows up in the next round.
    // The command goes first, so that it dies of SIGKILL rather than seeing a child die.
    // Its status is reported (by the caller) only once the whole tree is gone.
    if (!m_status)
        ::kill(m_command, SIGKILL);
    long pauseNs = 1000000;
    for (;;) {
        const auto victims = liveDescendants(::getpid());
        if (victims.empty())
            break;
        for (pid_t pid : victims)
            ::kill(pid, SIGKILL);
        reap(false);
        timespec ts{0, pauseNs};
        ::nanosleep(&ts, nullptr);
        pauseNs = std::min(pauseNs * 2, 20000000L);
    }
    reap(true); // only zombies are left, all of them our children by now
}

std::vector<pid_t> Reaper::liveDescendants(pid_t root)
{
    struct Info
    {
        pid_t ppid;
        char state;
    };
    std::unordered_map<pid_t, Info> procs;
    if (DIR *dir = ::opendir("/proc")) {
        while (dirent *d = ::readdir(dir)) {
            char *end = nullptr;
            const long pid = std::strtol(d->d_name, &end, 10);
            if (pid <= 0 || *end != '\0')
                continue;
            char path[64], buf[512];
            std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
            const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                continue;
            const ssize_t n = ::read(fd, buf, sizeof buf - 1);
            ::close(fd);
            if (n <= 0)
                continue;
            buf[n] = '\0';
            const char *paren = std::strrchr(buf, ')'); // the command name may contain anything
            char state = 0;
            int ppid = 0;
            if (paren && std::sscanf(paren + 1, " %c %d", &state, &ppid) == 2)
                procs[pid_t(pid)] = {pid_t(ppid), state};
        }
        ::closedir(dir);
    }
    std::vector<pid_t> live;
    for (const auto &[pid, info] : procs) {
        if (info.state == 'Z' || info.state == 'X')
            continue;
        // Walk up the parent chain; the depth bound guards against a torn snapshot.
        pid_t p = info.ppid;
        for (int depth = 0; p > 0 && p != root && depth < 4096; ++depth) {
            const auto it = procs.find(p);
            p = it == procs.end() ? 0 : it->second.ppid;
        }
        if (p == root)
            live.push_back(pid);
    }
    return live;
}
