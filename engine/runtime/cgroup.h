#pragma once

#include "limitsenforcement.h"
#include "protocol/result.h"

#include <QByteArray>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <sys/types.h>

namespace Sandbox::Engine {

class HostRoot;

struct ResourceLimits
{
    qint64 memoryMb = 4096;
    int pids = 512;
    double cpus = 0.5;
    qint64 diskMb = 8192;
    qint64 tmpMb = 256; // the size cap of the sandbox's /tmp (a tmpfs: counts as memory)
};

// Where this engine may make its sandboxes' control groups, decided once at start-up from the
// host's facts (engine/doctor/hostfacts.h, the same facts `sandboxd doctor` reports):
// - as root: a `sandboxd` group at the top of the v2 hierarchy, or of each v1 hierarchy;
// - as a normal user: the cgroup v2 subtree systemd delegates to the engine (the user service
//   sandboxd.service has Delegate=yes). The engine moves itself into a leaf `engine` of its own
//   group, enables the controllers there and makes `sandboxes/<id>` beside it.
// What cannot be had is not an error: enforcement() says which limits hold and why others do not.
class CgroupHost final
{
public:
    enum class Version { None, V1, V2 };

    static CgroupHost prepare(const HostRoot &root, uid_t euid,
                              const QString &procSelf = QStringLiteral("/proc/self"));
    // No cgroups at all (e.g. --no-cgroups); `reason` says why, for every limit.
    static CgroupHost disabled(const QString &reason);

    Version version() const { return m_version; }
    bool isUsable() const { return m_version != Version::None; }
    // The directory under which the groups of `controller` go (v2: one for all), or empty.
    QString parentDir(const QString &controller) const;
    bool enforces(const QString &controller) const { return m_controllers.contains(controller); }
    QStringList controllers() const { return m_controllers; }
    // "memory", "pids" or "cpu".
    LimitEnforcement enforcement(const QString &controller) const;

private:
    Version m_version = Version::None;
    QMap<QString, QString> m_parents; // controller -> parent directory
    QStringList m_controllers;        // the limits that hold
    QString m_by;
    QMap<QString, QString> m_reasons; // controller -> why it does not hold
};

// One sandbox's control group: memory, process and CPU limits (docs/protocol.md, section 6).
// Works with cgroup v2 (one unified hierarchy) and v1 (a hierarchy per controller, as on our CI
// machines), under the parents a CgroupHost chose.
class Cgroup final
{
public:
    using Version = CgroupHost::Version;

    // Creates (or reuses) the group for `name` and sets the memory and process limits (the CPU
    // limit comes with setCpuLimit()).
    static Result<Cgroup> create(const CgroupHost &host, const QString &name,
                                 const ResourceLimits &limits);
    // The existing group of `name`, if any (after a restart of sandboxd).
    static Cgroup existing(const CgroupHost &host, const QString &name);

    bool isValid() const { return !m_dirs.isEmpty(); }
    Version version() const { return m_version; }

    // The cgroup.procs files a new process must write its pid into before it forks anything.
    // Kept as raw bytes so a child between fork and exec can use them without allocating.
    const QList<QByteArray> &procsFiles() const { return m_procsFiles; }

    // The CPU quota. Applied once the sandbox has started, so that bubblewrap and the supervisor
    // (the engine's own code) do not wait out a small quota's periods: a "lite" sandbox gets
    // 6.25 ms of CPU per 100 ms, and where the kernel has CFS burst, up to as much again from
    // what it left unused. True when there is no cpu controller to set (nothing claims it).
    bool setCpuLimit(double cpus) const;

    QList<int> pids() const;
    // SIGKILLs every process in the group: v2 through cgroup.kill; v1 frozen first (freezer
    // controller), so that a fork bomb cannot outrun the kill, then thawed; then rounds until
    // none is left (bounded).
    void killAll() const;
    // Freezes the group, SIGKILLs every descendant of the process whose pid in the sandbox's PID
    // namespace is `innerPid` (an exec's reaper, which stays) — with `holdingPipes`, only those
    // that hold one of these pipes (by inode) open — and thaws. Returns how many it killed.
    int killDescendants(qint64 innerPid, const QList<quint64> &holdingPipes = {}) const;
    // True when the group can be frozen (v2, or v1 with the freezer controller mounted).
    bool canFreeze() const;
    // Freezes every process of the group (waits, bounded, until the kernel says frozen); false
    // when it cannot. thaw() undoes it.
    bool freeze() const;
    void thaw() const;
    // Removes the (empty) group's directories.
    void remove() const;
    // Memory in use by the group, in bytes (0 when unknown).
    qint64 memoryUsage() const;
    // True when the kernel OOM-killed something in this group since it was created.
    int oomKills() const;

private:
    QString dirOf(const QString &controller) const { return m_dirOf.value(controller); }

    Version m_version = Version::None;
    QList<QString> m_dirs;          // v1: one per controller; v2: one
    QMap<QString, QString> m_dirOf; // controller -> its directory
    QList<QByteArray> m_procsFiles;
};

} // namespace Sandbox::Engine
