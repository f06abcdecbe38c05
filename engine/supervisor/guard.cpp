#include "guard.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "the supervisor's seccomp guard knows x86_64 and aarch64 only"
#endif

constexpr uint32_t kX32Bit = 0x40000000;

constexpr uint32_t argLow(int index)
{
    return uint32_t(offsetof(seccomp_data, args) + sizeof(uint64_t) * size_t(index));
}

// A tiny assembler for forward jumps to named labels, so the program stays readable.
class Program
{
public:
    void load(uint32_t offset) { m_code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
    void ret(uint32_t value) { m_code.push_back(BPF_STMT(BPF_RET | BPF_K, value)); }
    // if (A == value) goto label (else fall through)
    void jumpIfEqual(uint32_t value, int label) { jump(BPF_JEQ, value, label); }
    void jumpIfAtLeast(uint32_t value, int label) { jump(BPF_JGE, value, label); }
    void place(int label)
    {
        if (size_t(label) >= m_labels.size())
            m_labels.resize(size_t(label) + 1, -1);
        m_labels[size_t(label)] = int(m_code.size());
    }
    std::vector<sock_filter> finish()
    {
        for (const auto &[at, label] : m_fixups)
            m_code[size_t(at)].jt = uint8_t(m_labels[size_t(label)] - at - 1);
        return m_code;
    }

private:
    void jump(uint16_t op, uint32_t value, int label)
    {
        m_fixups.push_back({int(m_code.size()), label});
        m_code.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, value, 0, 0));
    }

    std::vector<sock_filter> m_code;
    std::vector<int> m_labels;
    std::vector<std::pair<int, int>> m_fixups;
};

} // namespace

namespace Guard {

bool makeUndumpable()
{
    return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
}

bool ChildOomScore::open()
{
    m_fd = ::open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (m_fd < 0)
        return false;
    m_ownSize = ::pread(m_fd, m_own, sizeof m_own, 0);
    if (m_ownSize > 0)
        return true;
    ::close(m_fd);
    m_fd = -1;
    return false;
}

pid_t ChildOomScore::fork() const
{
    // Raising it needs no privilege; back to what it was is allowed down to the lowest value a
    // privileged process set (oom_score_adj_min), which is at most that.
    const bool raised = m_fd >= 0 && ::pwrite(m_fd, "1000", 4, 0) == 4;
    const pid_t pid = ::fork();
    if (pid != 0 && raised) {
        [[maybe_unused]] const ssize_t n = ::pwrite(m_fd, m_own, size_t(m_ownSize), 0);
    }
    return pid;
}

std::vector<sock_filter> childFilter(pid_t supervisor)
{
    enum { Native, Deny, NoSys, Kill, FirstArg, ThreadArgs, Fcntl, Ioctl, SetOwn };
    const uint32_t sup = uint32_t(supervisor);
    const uint32_t minusSup = uint32_t(-supervisor);
    const uint32_t deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    const uint32_t nosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);

    Program p;
    p.load(offsetof(seccomp_data, arch));
    p.jumpIfEqual(kArch, Native); // native: go on
    p.ret(SECCOMP_RET_ALLOW);     // other arches are refused by the sandbox's own filter
    p.place(Native);
    p.load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
    p.jumpIfAtLeast(kX32Bit, NoSys); // the x32 ABI: nothing in a sandbox needs it
#endif
    p.jumpIfEqual(__NR_kill, Kill);
    p.jumpIfEqual(__NR_tkill, FirstArg);
    p.jumpIfEqual(__NR_rt_sigqueueinfo, FirstArg);
    p.jumpIfEqual(__NR_pidfd_open, FirstArg);
    p.jumpIfEqual(__NR_tgkill, ThreadArgs);
    p.jumpIfEqual(__NR_rt_tgsigqueueinfo, ThreadArgs);
    p.jumpIfEqual(__NR_pidfd_send_signal, NoSys);
    p.jumpIfEqual(__NR_fcntl, Fcntl);
    p.jumpIfEqual(__NR_ioctl, Ioctl);
    p.ret(SECCOMP_RET_ALLOW);

    p.place(Kill); // kill(-1) and kill(-pgid of the supervisor), then as FirstArg
    p.load(argLow(0));
    p.jumpIfEqual(uint32_t(-1), Deny);
    p.jumpIfEqual(minusSup, Deny);
    p.place(FirstArg);
    p.load(argLow(0));
    p.jumpIfEqual(sup, Deny);
    p.jumpIfEqual(1, Deny);
    p.ret(SECCOMP_RET_ALLOW);

    p.place(ThreadArgs); // tgkill(tgid, tid, sig)
    p.load(argLow(0));
    p.jumpIfEqual(sup, Deny);
    p.jumpIfEqual(1, Deny);
    p.load(argLow(1));
    p.jumpIfEqual(sup, Deny);
    p.ret(SECCOMP_RET_ALLOW);

    p.place(Fcntl); // fcntl(fd, F_SETOWN, sup or -sup); F_SETOWN_EX takes a pointer: refused
    p.load(argLow(1));
    p.jumpIfEqual(F_SETOWN_EX, NoSys);
    p.jumpIfEqual(F_SETOWN, SetOwn);
    p.ret(SECCOMP_RET_ALLOW);
    p.place(SetOwn);
    p.load(argLow(2));
    p.jumpIfEqual(sup, Deny);
    p.jumpIfEqual(minusSup, Deny);
    p.ret(SECCOMP_RET_ALLOW);

    p.place(Ioctl); // FIOSETOWN / SIOCSPGRP take a pointer to the pid: refused
    p.load(argLow(1));
    p.jumpIfEqual(FIOSETOWN, Deny);
    p.jumpIfEqual(SIOCSPGRP, Deny);
    p.ret(SECCOMP_RET_ALLOW);

    p.place(Deny);
    p.ret(deny);
    p.place(NoSys);
    p.ret(nosys);

    return p.finish();
}

bool installFilter(const std::vector<sock_filter> &filter)
{
    sock_fprog prog{uint16_t(filter.size()), const_cast<sock_filter *>(filter.data())};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return false;
    return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

} // namespace Guard
