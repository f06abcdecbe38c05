#include "execrunner.h"

#include "frame.h"
#include "paths.h"
#include "reaper.h"
#include "reply.h"
#include "sparereaper.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using nlohmann::json;

namespace {

constexpr size_t kPipeBytes = 1024 * 1024;

void closeFd(int &fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

} // namespace

ExecRunner::ExecRunner(const Paths &paths, FrameChannel &channel,
                       const Guard::ChildOomScore &oomScore)
    : m_paths(paths)
    , m_channel(channel)
    , m_oomScore(oomScore)
    , m_spare(oomScore)
{}

ExecRunner::~ExecRunner()
{
    for (auto &[id, e] : m_execs)
        release(e);
    for (auto &[pid, fd] : m_lingering)
        ::close(fd);
    if (m_signalFd >= 0)
        ::close(m_signalFd);
}

bool ExecRunner::init()
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    m_signalFd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    return m_signalFd >= 0;
}

void ExecRunner::prepareNext()
{
    m_lastStart = Clock::now();
    m_spare.refill();
}

void ExecRunner::start(uint32_t id, const json &req)
{
    if (m_execs.count(id))
        throw RequestError("bad_request", "exec " + std::to_string(id) + " is already running");

    ReaperSpec spec;
    const bool hasArgv = req.contains("argv") && !req["argv"].is_null();
    const bool hasShell = req.contains("shell") && !req["shell"].is_null();
    if (hasArgv == hasShell)
        throw RequestError("bad_request", "exec needs exactly one of 'argv' and 'shell'");
    if (hasArgv) {
        const json &argv = req["argv"];
        if (!argv.is_array() || argv.empty())
            throw RequestError("bad_request", "'argv' must be a non-empty array of strings");
        for (const auto &arg : argv)
            spec.argv.push_back(checkedString(arg, "every 'argv' element"));
    } else {
        spec.argv = {"/bin/sh", "-c", checkedString(req["shell"], "'shell'")};
    }
    spec.env = m_baseEnv;
    appendEnv(req, spec.env);
    const uint64_t timeoutMs = optionalUnsigned(req, "timeoutMs").value_or(0);
    const uint64_t maxOutput = optionalUnsigned(req, "maxOutputBytes").value_or(kDefaultMaxOutput);
    const bool hasPty = req.contains("pty") && !req["pty"].is_null();
    const Pty::Spec ptySpec = hasPty ? Pty::parse(req["pty"]) : Pty::Spec{};
    const bool wantStdin = optionalBool(req, "stdin") && !hasPty;
    // Output paced by its reader (PROTOCOL.md, "Flow control"): always for a terminal.
    const bool windowed = hasPty || optionalBool(req, "window");
    // The output pipes go to the engine, which reads them itself (PROTOCOL.md, "Output pipes").
    const bool handOver = !hasPty && optionalBool(req, "pipes");
    if (hasPty) {
        spec.pty = true;
        spec.env.emplace_back("TERM", ptySpec.term);
        spec.env.emplace_back("COLORTERM", "truecolor");
    }

    std::string cwd(m_paths.root());
    if (req.contains("cwd") && !req["cwd"].is_null())
        cwd = checkedString(req["cwd"], "'cwd'");
    const auto rel = m_paths.normalise(cwd);
    if (!rel || cwd.empty())
        throw RequestError("path_not_allowed", "cwd '" + cwd + "' is outside " + m_paths.root());
    spec.cwdPath = m_paths.virtualPath(*rel);
    const int cwdFd = m_paths.openAt(*rel, O_PATH | O_DIRECTORY);
    if (cwdFd == -EXDEV)
        throw RequestError("path_not_allowed",
                           "cwd " + spec.cwdPath + " resolves outside " + m_paths.root());
    spec.cwdFd = cwdFd >= 0 ? cwdFd : -1;
    spec.cwdErrno = cwdFd >= 0 ? 0 : -cwdFd;

    // [0] read end, [1] write end; all close-on-exec, the reaper rearranges them.
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, status[2] = {-1, -1},
        control[2] = {-1, -1};
    auto closeAll = [&] {
        for (int *p : {out, err, in, status, control})
            closeFd(p[0]), closeFd(p[1]);
        if (spec.cwdFd >= 0)
            ::close(spec.cwdFd);
    };
    if (hasPty) {
        // The terminal instead of the three pipes: [0] the master (ours), [1] the slave (theirs).
        Pty::Pair pair;
        try {
            pair = Pty::open(ptySpec);
        } catch (const RequestError &) {
            closeAll();
            throw;
        }
        out[0] = pair.master;
        out[1] = pair.slave;
        in[1] = ::fcntl(pair.master, F_DUPFD_CLOEXEC, 0);
    }
    if ((!hasPty && (::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0))
        || ::pipe2(status, O_CLOEXEC) < 0 || ::pipe2(control, O_CLOEXEC) < 0
        || (wantStdin && ::pipe2(in, O_CLOEXEC) < 0) || (hasPty && in[1] < 0)) {
        const int e = errno;
        closeAll();
        throw RequestError("exec_failed", std::string("cannot create pipes: ") + std::strerror(e),
                           e);
    }
    spec.stdinFd = hasPty ? out[1] : in[0];
    spec.stdoutFd = out[1];
    spec.stderrFd = hasPty ? out[1] : err[1];
    spec.controlFd = control[0];
    spec.statusFd = status[1];
    spec.supervisor = ::getpid();
    struct stat outStat = {}, errStat = {};
    ::fstat(out[0], &outStat);
    ::fstat(err[0], &errStat);
    // Our ends are set up before the reaper has the exec: woken by the hand-off, it waits for
    // the CPU until we are done (on a busy machine the two share one), and its command with it.
    // Only O_NONBLOCK: a new pipe's end (and a terminal's master) has no other status flag.
    for (int fd : {out[0], err[0], status[0], in[1]})
        if (fd >= 0)
            ::fcntl(fd, F_SETFL, O_NONBLOCK);
    // Output pipes of a megabyte (the unprivileged maximum; the kernel's 64 KiB otherwise): a
    // command that writes fast fills them while the supervisor is busy, and each read then
    // takes up to a whole frame, so that big output costs few frames and wake-ups.
    if (!hasPty)
        for (int fd : {out[0], err[0]})
            ::fcntl(fd, F_SETPIPE_SZ, int(kPipeBytes));

    // The spare takes the exec (a reaper forked ahead, or the last exec's come back); without one
    // (the first exec, a spec too big to hand over, a spare that is gone) the reaper is forked
    // here, for this exec only.
    int reaperSock = -1;
    pid_t pid = m_spare.take(spec, &reaperSock);
    if (pid < 0) {
        pid = m_oomScore.fork();
        if (pid == 0) {
            Reaper::run(spec, -1);
            ::_exit(0); // not reached: without a socket the reaper exits when its tree is gone
        }
    }
    if (pid < 0) {
        const int e = errno;
        closeAll();
        throw RequestError("exec_failed", std::string("fork: ") + std::strerror(e), e);
    }
    for (int fd : {out[1], err[1], in[0], status[1], control[0], spec.cwdFd})
        if (fd >= 0)
            ::close(fd);

    Exec &e = m_execs[id];
    e.id = id;
    e.reaper = pid;
    e.reaperSock = reaperSock;
    e.out = out[0];
    e.err = err[0];
    e.in = in[1];
    e.status = status[0];
    e.control = control[1];
    e.maxOutput = hasPty ? UINT64_MAX : maxOutput; // a terminal is bounded by its window
    e.pty = hasPty;
    e.windowed = windowed;
    e.started = Clock::now();
    if (timeoutMs > 0)
        e.deadline = e.started + std::chrono::milliseconds(timeoutMs);
    // The engine's handle on the exec's process tree: its reaper, and the pipes that a
    // background process of the exec would still hold (PROTOCOL.md, "Process trees").
    const json started = {{"pid", pid},
                          {"pipes", {uint64_t(outStat.st_ino), uint64_t(errStat.st_ino)}}};
    if (handOver) {
        // The read ends travel with the EVENT; none stays here, so the output never passes
        // through the supervisor and the exec is answered as soon as its main process has exited.
        m_channel.send(FrameType::Event, id, {started.dump()}, {e.out, e.err});
        closeFd(e.out);
        closeFd(e.err);
    } else {
        e.startedEvent = started.dump(); // sent later (kStartedDelay), or with the RESPONSE
    }
    // The next exec's reaper is this one, come back once its tree is gone (release), or one
    // forked once this one has answered (finishIfDone): forked here, it took the CPU from this
    // exec's command (a fork costs this VM 1-3 ms). Here only when execs run side by side.
    m_lastStart = Clock::now();
    if (m_execs.size() > 1)
        m_spare.refill();
}

void ExecRunner::feedStdin(uint32_t id, std::string_view data)
{
    const auto it = m_execs.find(id);
    if (it == m_execs.end())
        return; // finished already, or never existed: the data has nowhere to go
    Exec &e = it->second;
    if (data.empty() && !e.pty) // a terminal has no end of input: ^D is the program's business
        e.stdinEof = true;
    else if (e.in >= 0)
        e.stdinQueue.append(data);
    flushStdin(e);
}

void ExecRunner::cancel(uint32_t id)
{
    const auto it = m_execs.find(id);
    if (it == m_execs.end())
        return;
    it->second.cancelled = true;
    sendStarted(it->second); // the engine kills the tree too, and needs its pid for that
    sendKill(it->second);
}

bool ExecRunner::resize(uint32_t id, std::string_view payload)
{
    const auto it = m_execs.find(id);
    if (it == m_execs.end())
        return true;
    uint16_t cols = 0, rows = 0;
    if (!it->second.pty || !Pty::decodeResize(payload, &cols, &rows))
        return false;
    const int master = it->second.out >= 0 ? it->second.out : it->second.in;
    if (master >= 0)
        Pty::resize(master, cols, rows);
    return true;
}

bool ExecRunner::acknowledge(uint32_t id, std::string_view payload)
{
    const auto it = m_execs.find(id);
    if (it == m_execs.end())
        return true;
    uint32_t bytes = 0;
    if (!it->second.windowed || !Pty::decodeWindow(payload, &bytes))
        return false;
    Exec &e = it->second;
    const bool wasClosed = !e.windowOpen();
    e.unacked -= std::min<uint64_t>(e.unacked, bytes);
    if (wasClosed && e.windowOpen())
        e.lastOutput = Clock::now(); // its pipes are read again before the drain can end
    return true;
}

size_t ExecRunner::pendingStdin() const
{
    size_t total = 0;
    for (const auto &[id, e] : m_execs)
        total += e.stdinQueue.size() - e.stdinOffset;
    return total;
}

void ExecRunner::collectPollFds(std::vector<pollfd> &fds)
{
    m_slots.clear();
    auto add = [&](int fd, short events, uint32_t id, Slot kind) {
        m_slots.push_back({fds.size(), id, kind, fd});
        fds.push_back({fd, events, 0});
    };
    add(m_signalFd, POLLIN, 0, Slot::Signal);
    for (const auto &[id, e] : m_execs) {
        if (e.out >= 0 && e.windowOpen())
            add(e.out, POLLIN, id, Slot::Out);
        if (e.err >= 0 && e.windowOpen())
            add(e.err, POLLIN, id, Slot::Err);
        if (e.status >= 0)
            add(e.status, POLLIN, id, Slot::Status);
        if (e.in >= 0 && e.stdinOffset < e.stdinQueue.size())
            add(e.in, POLLOUT, id, Slot::In);
    }
}

void ExecRunner::process(const std::vector<pollfd> &fds)
{
    for (const PollSlot &slot : m_slots) {
        if (slot.index >= fds.size() || fds[slot.index].revents == 0)
            continue;
        if (slot.kind == Slot::Signal) {
            signalfd_siginfo info;
            while (::read(m_signalFd, &info, sizeof info) > 0) {
            }
            reapChildren();
            continue;
        }
        const auto it = m_execs.find(slot.id);
        if (it == m_execs.end())
            continue;
        Exec &e = it->second;
        switch (slot.kind) {
        case Slot::Out:
            if (e.out == slot.fd)
                readOutput(e, false);
            break;
        case Slot::Err:
            if (e.err == slot.fd)
                readOutput(e, true);
            break;
        case Slot::Status:
            if (e.status == slot.fd)
                readStatus(e);
            break;
        case Slot::In:
            if (e.in == slot.fd)
                flushStdin(e);
            break;
        case Slot::Signal:
            break;
        }
    }
    const auto now = Clock::now();
    if (m_spare.pid() > 0 && now >= m_lastStart + m_spareIdle)
        m_spare.release();
    for (auto it = m_execs.begin(); it != m_execs.end();) {
        Exec &e = it->second;
        if (!e.startedEvent.empty() && now >= e.started + m_startedDelay)
            sendStarted(e);
        if (e.deadline && !e.waitStatus && !e.killSent && now >= *e.deadline) {
            e.timedOut = true;
            sendKill(e);
        }
        it = finishIfDone(e, now) ? m_execs.erase(it) : std::next(it);
    }
}

int ExecRunner::pollTimeoutMs() const
{
    std::optional<Clock::time_point> next;
    for (const auto &[id, e] : m_execs) {
        std::optional<Clock::time_point> t;
        if (e.waitStatus && (e.out >= 0 || e.err >= 0))
            t = e.drained();
        else if (e.deadline && !e.waitStatus && !e.killSent)
            t = e.deadline;
        if (!e.startedEvent.empty() && (!t || e.started + m_startedDelay < *t))
            t = e.started + m_startedDelay;
        if (t && (!next || *t < *next))
            next = t;
    }
    if (m_spare.pid() > 0 && (!next || m_lastStart + m_spareIdle < *next))
        next = m_lastStart + m_spareIdle;
    if (!next)
        return -1;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
    return int(std::clamp<long long>(ms, 0, 60 * 60 * 1000));
}

void ExecRunner::sendStarted(Exec &e)
{
    if (e.startedEvent.empty())
        return;
    m_channel.send(FrameType::Event, e.id, {e.startedEvent});
    e.startedEvent = std::string();
}

void ExecRunner::readOutput(Exec &e, bool isStderr)
{
    int &fd = isStderr ? e.err : e.out;
    char *buf = m_readBuffer.data();
    size_t want = m_readBuffer.size();
    if (e.windowed)
        want = size_t(
            std::min<uint64_t>(want, Pty::kWindowBytes - std::min(e.unacked, Pty::kWindowBytes)));
    if (want == 0)
        return;
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) { // EOF; a terminal's master reads EIO once no process holds its slave
        closeFd(fd);
        if (e.pty)
            closeFd(e.in);
        return;
    }
    e.lastOutput = Clock::now();
    uint64_t &sent = e.sent[isStderr ? 1 : 0];
    const size_t allowed = size_t(
        std::min<uint64_t>(uint64_t(n), e.maxOutput - std::min(sent, e.maxOutput)));
    if (allowed > 0) {
        sendStarted(e); // the tree first, then what it printed
        m_channel.send(isStderr ? FrameType::Stderr : FrameType::Stdout, e.id,
                       {std::string_view(buf, allowed)});
        sent += allowed;
        if (e.windowed)
            e.unacked += allowed; // what is dropped (over maxOutputBytes) is never acknowledged
    }
    if (allowed < size_t(n))
        e.truncated = true; // the rest is read and dropped
}

void ExecRunner::readStatus(Exec &e)
{
    ReaperStatus status;
    const ssize_t n = ::read(e.status, &status, sizeof status);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n == ssize_t(sizeof status)) {
        e.waitStatus = status.waitStatus;
        e.treeGone = status.treeGone == 1;
        e.exited = Clock::now();
    } else {
        e.reaperLost = true; // EOF without a status: the reaper died
    }
    closeFd(e.status);
}

void ExecRunner::flushStdin(Exec &e)
{
    while (e.in >= 0 && e.stdinOffset < e.stdinQueue.size()) {
        const ssize_t n = ::write(e.in, e.stdinQueue.data() + e.stdinOffset,
                                  e.stdinQueue.size() - e.stdinOffset);
        if (n > 0) {
            e.stdinOffset += size_t(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return;
        } else { // EPIPE: nobody reads the command's stdin any more
            closeFd(e.in);
        }
    }
    e.stdinQueue.clear();
    e.stdinOffset = 0;
    if (e.stdinEof)
        closeFd(e.in);
}

void ExecRunner::sendKill(Exec &e)
{
    if (e.killSent || e.control < 0)
        return;
    e.killSent = true;
    while (::write(e.control, "k", 1) < 0 && errno == EINTR) {
    }
}

void ExecRunner::reapChildren()
{
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        if (const auto it = m_lingering.find(pid); it != m_lingering.end()) {
            ::close(it->second);
            m_lingering.erase(it);
            continue;
        }
        for (auto &[id, e] : m_execs)
            if (e.reaper == pid)
                e.reaperAlive = false;
    }
}

bool ExecRunner::finishIfDone(Exec &e, Clock::time_point now)
{
    if (e.reaperLost && !e.waitStatus) {
        release(e);
        const Reply r = Reply::error("exec_failed",
                                     "the exec's reaper process exited without reporting");
        sendStarted(e);
        m_channel.send(FrameType::Response, e.id,
                       {r.body.dump(-1, ' ', false, json::error_handler_t::replace)});
        return true;
    }
    if (!e.waitStatus)
        return false;
    if ((e.out >= 0 || e.err >= 0) && now < e.drained())
        return false; // still draining; a background process may hold the pipes

    const int status = *e.waitStatus;
    const bool signaled = WIFSIGNALED(status);
    const int exitCode = signaled ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    const json body = {
        {"exitCode", exitCode},
        {"signal", signaled ? json(signalName(WTERMSIG(status))) : json(nullptr)},
        {"durationMs",
         std::chrono::duration_cast<std::chrono::milliseconds>(e.exited - e.started).count()},
        {"timedOut", e.timedOut},
        {"cancelled", e.cancelled},
        {"truncated", e.truncated},
        {"treeGone", e.treeGone},
    };
    release(e);
    // A command that ended before its EVENT went: both in one write (one wake-up of the engine).
    if (e.startedEvent.empty())
        m_channel.send(FrameType::Response, e.id, {body.dump()});
    else
        m_channel.sendPair(e.id, FrameType::Event, e.startedEvent, FrameType::Response, body.dump());
    // A fork only when this exec's reaper did not come back as the spare (release). The spare's
    // idle time counts from here: counted from the exec's start, a spare forked after a command
    // that ran longer than that time was dropped at the next tick.
    prepareNext();
    return true;
}

void ExecRunner::release(Exec &e)
{
    closeFd(e.out);
    closeFd(e.err);
    closeFd(e.in);
    closeFd(e.status);
    // A reaper whose tree was gone when its command's status came waits for the next exec: it is
    // the spare now, and no fork follows this answer (unless there is a spare already: closing
    // its socket ends it).
    if (e.reaperSock >= 0 && e.treeGone && e.reaperAlive && m_spare.adopt(e.reaper, e.reaperSock)) {
        e.reaperSock = -1;
        closeFd(e.control); // its next exec brings its own
        return;
    }
    closeFd(e.reaperSock);
    if (e.control >= 0 && e.reaperAlive)
        m_lingering[e.reaper] = e.control; // background processes live on under the reaper
    else
        closeFd(e.control);
    e.control = -1;
}
