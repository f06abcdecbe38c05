#include "sparereaper.h"

#include "guard.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace {

constexpr uint32_t kMagic = 0x52535043; // "RSPC"
constexpr int kFdCount = 6;

std::array<int, kFdCount> specFds(const ReaperSpec &s)
{
    return {s.stdinFd, s.stdoutFd, s.stderrFd, s.controlFd, s.statusFd, s.cwdFd};
}

// The spec as one message: fixed fields, then length-prefixed strings. The descriptors travel
// beside it (SCM_RIGHTS), in specFds() order, those present marked in a bit mask.
class SpecWriter
{
public:
    void u32(uint32_t v) { m_bytes.append(reinterpret_cast<const char *>(&v), sizeof v); }
    void str(const std::string &s)
    {
        u32(uint32_t(s.size()));
        m_bytes.append(s);
    }
    std::string take() { return std::move(m_bytes); }

private:
    std::string m_bytes;
};

class SpecReader
{
public:
    SpecReader(const char *data, size_t size)
        : m_data(data)
        , m_left(size)
    {}
    bool ok() const { return m_ok; }
    bool atEnd() const { return m_left == 0; }
    uint32_t u32()
    {
        uint32_t v = 0;
        if (m_left < sizeof v) {
            m_ok = false;
            return 0;
        }
        std::memcpy(&v, m_data, sizeof v);
        m_data += sizeof v;
        m_left -= sizeof v;
        return v;
    }
    std::string str()
    {
        const uint32_t n = u32();
        if (!m_ok || n > m_left) {
            m_ok = false;
            return {};
        }
        std::string s(m_data, n);
        m_data += n;
        m_left -= n;
        return s;
    }

private:
    const char *m_data;
    size_t m_left;
    bool m_ok = true;
};

std::string encode(const ReaperSpec &spec, uint32_t fdMask)
{
    SpecWriter w;
    w.u32(kMagic);
    w.u32(fdMask);
    w.u32(uint32_t(spec.cwdErrno));
    w.u32(uint32_t(spec.supervisor));
    w.u32(spec.pty ? 1 : 0);
    w.u32(uint32_t(spec.argv.size()));
    w.u32(uint32_t(spec.env.size()));
    w.str(spec.cwdPath);
    for (const std::string &arg : spec.argv)
        w.str(arg);
    for (const auto &[key, value] : spec.env) {
        w.str(key);
        w.str(value);
    }
    return w.take();
}

// The counts are bounded by the message itself: every string costs at least its length prefix.
bool decode(const char *data, size_t size, ReaperSpec &spec, uint32_t &fdMask)
{
    SpecReader r(data, size);
    if (r.u32() != kMagic)
        return false;
    fdMask = r.u32();
    spec.cwdErrno = int(r.u32());
    spec.supervisor = pid_t(r.u32());
    spec.pty = r.u32() != 0;
    const uint32_t argc = r.u32();
    const uint32_t envc = r.u32();
    if (!r.ok() || argc == 0 || argc > size / 4 || envc > size / 8 || fdMask >= (1u << kFdCount))
        return false;
    spec.cwdPath = r.str();
    spec.argv.reserve(argc);
    for (uint32_t i = 0; i < argc && r.ok(); ++i)
        spec.argv.push_back(r.str());
    spec.env.reserve(envc);
    for (uint32_t i = 0; i < envc && r.ok(); ++i) {
        std::string key = r.str();
        spec.env.emplace_back(std::move(key), r.str());
    }
    return r.ok() && r.atEnd();
}

} // namespace

SpareReaper::~SpareReaper()
{
    release();
}

void SpareReaper::release()
{
    if (m_sock >= 0)
        ::close(m_sock);
    m_sock = -1;
    m_pid = -1; // its exit is reaped with the other children
}

bool SpareReaper::refill()
{
    if (m_pid > 0)
        return true;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return false;
    const pid_t supervisor = ::getpid();
    const pid_t pid = m_oomScore.fork();
    if (pid == 0)
        waitForWork(sv[1], supervisor);
    ::close(sv[1]);
    if (pid < 0) {
        ::close(sv[0]);
        return false;
    }
    // Never blocks the supervisor: the spare's queue is empty and a hand-off fits its buffer.
    ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    m_pid = pid;
    m_sock = sv[0];
    return true;
}

pid_t SpareReaper::take(const ReaperSpec &spec, int *sock)
{
    *sock = -1;
    if (m_pid <= 0)
        return -1;
    const std::array<int, kFdCount> all = specFds(spec);
    uint32_t mask = 0;
    int fds[kFdCount];
    int count = 0;
    for (int i = 0; i < kFdCount; ++i) {
        if (all[size_t(i)] >= 0) {
            mask |= 1u << i;
            fds[count++] = all[size_t(i)];
        }
    }
    std::string bytes = encode(spec, mask);
    if (bytes.size() > kMaxSpecBytes)
        return -1; // the spare waits for the next exec
    iovec iov{bytes.data(), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdCount)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (count > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * size_t(count));
        cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * size_t(count));
        std::memcpy(CMSG_DATA(c), fds, sizeof(int) * size_t(count));
    }
    ssize_t sent;
    do
        sent = ::sendmsg(m_sock, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    // Handed off or not, this spare is taken: a failed send means it is gone (its exit is
    // reaped with the other children), and closing the socket ends one that is not. A reaper
    // that took the exec keeps its socket with the exec, to come back as the spare (adopt()).
    const pid_t pid = std::exchange(m_pid, -1);
    const int taken = std::exchange(m_sock, -1);
    if (sent != ssize_t(bytes.size())) {
        ::close(taken);
        return -1;
    }
    *sock = taken;
    return pid;
}

bool SpareReaper::adopt(pid_t pid, int sock)
{
    if (m_pid > 0)
        return false;
    m_pid = pid;
    m_sock = sock;
    return true;
}

void SpareReaper::waitForWork(int sock, pid_t supervisor)
{
    // Only the supervisor's stdio (2 is the log the reaper keeps) and the socket: whatever else
    // the supervisor had open at the fork (other execs' pipes) is not the spare's.
    if (sock != 3) {
        ::dup2(sock, 3);
        sock = 3;
    }
    Reaper::closeFrom(4);
    // Not zero-filled: a waiting spare touches no page it does not need (its memory is shared
    // with the supervisor until written).
    const std::unique_ptr<char[]> data(new char[SpareReaper::kMaxSpecBytes + 1]);
    // The commands' guard (PROTOCOL.md, "Process trees") on the reaper itself, now, off any
    // exec's path: its commands inherit it instead of each installing (and the kernel compiling)
    // its own. The reaper aims no signal at the supervisor. Should it fail, each command tries.
    const bool guarded = Guard::installFilter(Guard::childFilter(supervisor));
    // The commands' stack until they exec, the same for each (null: each maps its own).
    char *const stack = Reaper::mapCommandStack();
    // One exec after another, as long as each one's tree is gone when its command has exited
    // (Reaper::run returns then, with the socket on 3 again).
    for (;;) {
        ReaperSpec spec;
        if (!receive(sock, data.get(), spec))
            ::_exit(0); // the supervisor let it go (or is gone): not needed
        if (guarded)
            spec.supervisor = 0; // its command is guarded already
        Reaper::run(spec, sock, stack);
    }
}

bool SpareReaper::receive(int sock, char *data, ReaperSpec &spec)
{
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdCount)];
    iovec iov{data, SpareReaper::kMaxSpecBytes + 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do
        n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return false;

    int fds[kFdCount];
    int received = 0;
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const size_t bytes = c->cmsg_len - CMSG_LEN(0);
        received = int(std::min<size_t>(bytes / sizeof(int), kFdCount));
        std::memcpy(fds, CMSG_DATA(c), sizeof(int) * size_t(received));
    }
    uint32_t mask = 0;
    if (!decode(data, size_t(n), spec, mask) || __builtin_popcount(mask) != received)
        ::_exit(1); // the exec's status pipe closes unwritten: the supervisor answers an error
    int next = 0;
    int *targets[kFdCount] = {&spec.stdinFd,   &spec.stdoutFd, &spec.stderrFd,
                              &spec.controlFd, &spec.statusFd, &spec.cwdFd};
    for (int i = 0; i < kFdCount; ++i)
        *targets[i] = (mask & (1u << i)) ? fds[next++] : -1;
    return true;
}
