#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QList>
#include <QString>

namespace Sandbox::Engine {

struct ResourceLimits
{
    qint64 memoryMb = 4096;
    int pids = 512;
    double cpus = 0.5;
    qint64 diskMb = 8192;
    qint64 tmpMb = 256; // the size cap of the sandbox's /tmp (a tmpfs: counts as memory)
};

// One sandbox's control group: memory, process and CPU limits (docs/protocol.md, section 6).
// Works with cgroup v2 (one unified hierarchy) and v1 (a hierarchy per controller, as on our CI
// machines). Creating one needs write access to the hierarchy: root, or a delegated v2 subtree.
class Cgroup final
{
public:
    enum class Version { None, V1, V2 };

    // What this host offers; decided once per process by looking at /proc/self/mountinfo.
    static Version detectVersion();

    // Creates (or reuses) the group for `name` under the engine's parent group and sets the
    // memory and process limits (the CPU limit comes with setCpuLimit()).
    static Result<Cgroup> create(const QString &name, const ResourceLimits &limits);
    // The existing group of `name`, if any (after a restart of sandboxd).
    static Cgroup existing(const QString &name);

    bool isValid() const { return !m_dirs.isEmpty(); }
    Version version() const { return m_version; }

    // The cgroup.procs files a new process must write its pid into before it forks anything.
    // Kept as raw bytes so a child between fork and exec can use them without allocating.
    const QList<QByteArray> &procsFiles() const { return m_procsFiles; }

    // The CPU quota. Applied once the sandbox has started, so that bubblewrap and the supervisor
    // (the engine's own code) do not wait out a small quota's periods: a "lite" sandbox gets
    // 6.25 ms of CPU per 100 ms.
    bool setCpuLimit(double cpus) const;

    QList<int> pids() const;
    // SIGKILLs every process in the group until none is left (bounded number of rounds).
    void killAll() const;
    // Removes the (empty) group's directories.
    void remove() const;
    // Memory in use by the group, in bytes (0 when unknown).
    qint64 memoryUsage() const;
    // True when the kernel OOM-killed something in this group since it was created.
    int oomKills() const;

private:
    Version m_version = Version::None;
    QList<QString> m_dirs; // v1: one per controller; v2: one
    QList<QByteArray> m_procsFiles;
};

} // namespace Sandbox::Engine
