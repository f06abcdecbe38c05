#pragma once

#include "protocol/result.h"
#include "uniquefd.h"

#include <QByteArray>

namespace Sandbox::Engine {

// The seccomp filter every process of a sandbox runs under (bubblewrap installs it before it
// starts the supervisor; the supervisor stacks its own on every command). Docker's default
// profile is the reference: what it refuses an unprivileged container is refused here (kernel
// modules, clocks, swap, reboot, quotas, accounting, handles), and more: keyrings (keyctl,
// add_key, request_key), bpf, userfaultfd, perf_event_open, the mount family and the new mount
// API, namespace creation (unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS so
// that libc falls back to clone, whose flags a filter can see), ptrace, process_vm_readv/writev,
// pidfd_getfd, kcmp, syslog, io_uring (ENOSYS: runtimes fall back to plain I/O). Refused calls
// fail with EPERM; other architectures' calls (i386, x32) with ENOSYS.
namespace SeccompProfile {

// The filter as a classic BPF program, in a sealed memory file read from its start (what
// `bwrap --seccomp FD` takes).
Result<UniqueFd> compile();

// The names of the calls refused outright (for docs and tests).
QList<QByteArray> refusedCalls();

} // namespace SeccompProfile

} // namespace Sandbox::Engine
