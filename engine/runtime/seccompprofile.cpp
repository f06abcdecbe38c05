#include "seccompprofile.h"

#include <QList>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>

namespace Sandbox::Engine::SeccompProfile {

namespace {

// Refused with EPERM. Names the kernel of this architecture does not know are skipped.
constexpr const char *kRefused[] = {
    // Docker's default profile refuses these to an unprivileged container.
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "get_kernel_syms",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "name_to_handle_at",
    "open_by_handle_at",
    "nfsservctl",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "stime",
    "swapon",
    "swapoff",
    "sysfs",
    "_sysctl",
    "umount",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
    "vhangup",
    "syslog",
    "chroot",
    // And more: a process's descriptors are the supervisor's channel; landlock and the like
    // are not needed inside.
    "pidfd_getfd",
    "fanotify_init",
};

// Refused with ENOSYS, so that callers take their fallback.
constexpr const char *kUnavailable[] = {
    "clone3",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
};

struct ContextDeleter
{
    void operator()(void *ctx) const { seccomp_release(ctx); }
};

Error failure(const char *what, int rc)
{
    return Error{ErrorCode::SandboxError,
                 QStringLiteral("cannot build the sandbox's seccomp filter (%1: %2)")
                     .arg(QLatin1String(what), QString::fromLocal8Bit(strerror(-rc))),
                 {}};
}

} // namespace

QList<QByteArray> refusedCalls()
{
    QList<QByteArray> out;
    for (const char *name : kRefused)
        out.append(name);
    return out;
}

Result<UniqueFd> compile()
{
    std::unique_ptr<void, ContextDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
    if (!ctx)
        return failure("seccomp_init", -ENOMEM);
    // bubblewrap sets no_new_privs itself; another architecture's calls are not filtered by
    // number, so they are refused.
    int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
    if (rc == 0)
        rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
    if (rc != 0)
        return failure("seccomp_attr_set", rc);
    auto refuse = [&](const char *name, uint32_t action) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR || nr < 0)
            return 0; // not a call of this architecture
        const int r = seccomp_rule_add(ctx.get(), action, nr, 0);
        return r == -EEXIST ? 0 : r;
    };
    for (const char *name : kRefused) {
        if ((rc = refuse(name, SCMP_ACT_ERRNO(EPERM))) != 0)
            return failure(name, rc);
    }
    for (const char *name : kUnavailable) {
        if ((rc = refuse(name, SCMP_ACT_ERRNO(ENOSYS))) != 0)
            return failure(name, rc);
    }
    // clone() with any namespace flag: the flags are its first argument on every architecture
    // we build for.
    constexpr uint64_t kNewNamespaces[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                           CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                           CLONE_NEWCGROUP};
    for (uint64_t flag : kNewNamespaces) {
        rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
        if (rc != 0)
            return failure("clone", rc);
    }

    UniqueFd fd(::memfd_create("sandbox-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!fd.isValid())
        return failure("memfd_create", -errno);
    if ((rc = seccomp_export_bpf(ctx.get(), fd.get())) != 0)
        return failure("seccomp_export_bpf", rc);
    if (::lseek(fd.get(), 0, SEEK_SET) != 0)
        return failure("lseek", -errno);
    ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    return fd;
}

} // namespace Sandbox::Engine::SeccompProfile
