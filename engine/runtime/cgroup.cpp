#include "cgroup.h"

#include "doctor/hostfacts.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QLoggingCategory>
#include <QSet>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcCgroup, "sandboxd.cgroup")

namespace Sandbox::Engine {

namespace {

const QString kParent = QStringLiteral("sandboxd");

// Keeps errno of the failed open or write for the caller (EBUSY says "has processes").
bool writeFile(const QString &path, const QByteArray &value)
{
    const QByteArray name = QFile::encodeName(path);
    const int fd = ::open(name.constData(), O_WRONLY | O_CLOEXEC | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        const int why = errno;
        qCWarning(lcCgroup) << "cannot open" << path << strerror(why);
        errno = why;
        return false;
    }
    const ssize_t n = ::write(fd, value.constData(), size_t(value.size()));
    const int why = errno;
    ::close(fd);
    if (n != value.size()) {
        qCWarning(lcCgroup) << "cannot write" << value << "to" << path << strerror(why);
        errno = why;
        return false;
    }
    return true;
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll();
}

// "NSpid:" (innermost last) and "PPid:" of a host pid, from /proc/PID/status.
bool readStatus(int pid, qint64 *innerPid, int *ppid)
{
    const QByteArray status = readFile(QStringLiteral("/proc/%1/status").arg(pid));
    bool haveNs = false, havePpid = false;
    for (const QByteArray &line : status.split('\n')) {
        if (line.startsWith("NSpid:")) {
            const QList<QByteArray> f = line.mid(6).simplified().split(' ');
            *innerPid = f.size() >= 2 ? f.last().toLongLong() : 0;
            haveNs = true;
        } else if (line.startsWith("PPid:")) {
            *ppid = line.mid(5).trimmed().toInt();
            havePpid = true;
        }
    }
    return haveNs && havePpid;
}

QString joinControllers(const QStringList &controllers)
{
    QStringList plus;
    for (const QString &c : controllers)
        plus.append(u'+' + c);
    return plus.join(u' ');
}

// The fix for a user whose systemd does not delegate every controller limits need.
QString delegationFix()
{
    return QStringLiteral(
        "let systemd delegate it: sudo mkdir -p /etc/systemd/system/user@.service.d && printf "
        "'[Service]\\nDelegate=cpu cpuset io memory pids\\n' | sudo tee "
        "/etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl daemon-reload, then "
        "log "
        "in again");
}

QString serviceFix()
{
    return QStringLiteral(
        "start the engine as the user service (systemctl --user start sandboxd), which has "
        "Delegate=yes, or in a scope of its own (systemd-run --user --scope -p Delegate=yes "
        "sandboxd ...)");
}

} // namespace

CgroupHost CgroupHost::disabled(const QString &reason)
{
    CgroupHost h;
    for (const QString &c : limitControllers())
        h.m_reasons.insert(c, reason);
    return h;
}

CgroupHost CgroupHost::prepare(const HostRoot &root, uid_t euid, const QString &procSelf)
{
    const CgroupLayout layout = CgroupLayout::read(root, procSelf);
    const QStringList wanted = limitControllers();
    auto noneBecause = [](const QString &reason) { return disabled(reason); };
    auto finish = [&](CgroupHost h, const QStringList &offered, const QString &missingFix) {
        for (const QString &c : wanted) {
            if (offered.contains(c))
                h.m_controllers.append(c);
            else
                h.m_reasons.insert(c, QStringLiteral("the %1 controller is not available to the "
                                                     "engine's cgroup: %2")
                                          .arg(c, missingFix));
        }
        qCInfo(lcCgroup).noquote()
            << "sandbox limits:" << h.m_by << "for" << h.m_controllers.join(QStringLiteral(", "));
        return h;
    };

    if (euid == 0) {
        if (layout.mode == CgroupLayout::Mode::V2) {
            const QString top = root.path(layout.unifiedMount);
            const QStringList offered = CgroupLayout::controllers(root, layout.unifiedMount);
            QStringList usable;
            for (const QString &c : wanted)
                if (offered.contains(c))
                    usable.append(c);
            if (usable.isEmpty())
                return noneBecause(QStringLiteral(
                    "the cgroup v2 hierarchy offers none of the memory, pids and cpu controllers"));
            const QString parent = top + u'/' + kParent;
            if (!QDir().mkpath(parent))
                return noneBecause(QStringLiteral("cannot create %1").arg(parent));
            // Controllers must be enabled on every level above a sandbox's group.
            writeFile(top + QStringLiteral("/cgroup.subtree_control"),
                      joinControllers(usable).toLatin1());
            writeFile(parent + QStringLiteral("/cgroup.subtree_control"),
                      joinControllers(usable).toLatin1());
            CgroupHost h;
            h.m_version = Version::V2;
            for (const QString &c : usable)
                h.m_parents.insert(c, parent);
            h.m_parents.insert(QString(), parent);
            h.m_by = QStringLiteral("cgroup v2");
            return finish(h, usable, QStringLiteral("enable it in the kernel"));
        }
        if (layout.hasV1Limits()) {
            CgroupHost h;
            h.m_version = Version::V1;
            // Every mounted v1 controller gets a parent (the freezer too), limits need three.
            for (auto it = layout.v1Mounts.cbegin(); it != layout.v1Mounts.cend(); ++it)
                h.m_parents.insert(it.key(), root.path(it.value()) + u'/' + kParent);
            h.m_by = QStringLiteral("cgroup v1");
            return finish(h, wanted, {});
        }
        return noneBecause(QStringLiteral(
            "this host has no usable cgroup hierarchy (no memory, pids and cpu controllers)"));
    }

    // A normal user: only a cgroup v2 subtree that systemd delegated to the engine will do.
    if (layout.mode != CgroupLayout::Mode::V2)
        return noneBecause(
            QStringLiteral(
                "the host's cgroups are %1 and a normal user cannot be given v1 controllers: run "
                "sandboxd as root, or boot with cgroup v2 (kernel parameter "
                "systemd.unified_cgroup_hierarchy=1)")
                .arg(CgroupLayout::modeName(layout.mode)));
    if (layout.ownPath.isEmpty())
        return noneBecause(QStringLiteral("the engine's cgroup v2 path is unknown"));
    const QString ownHost = layout.unifiedDir(layout.ownPath);
    const QString own = root.path(ownHost);
    if (root.owner(ownHost) != std::optional<uid_t>(euid))
        return noneBecause(QStringLiteral("the engine's cgroup %1 is not delegated to its user: %2")
                               .arg(layout.ownPath, serviceFix()));
    const QStringList offered = CgroupLayout::controllers(root, ownHost);
    QStringList usable;
    for (const QString &c : wanted)
        if (offered.contains(c))
            usable.append(c);
    if (usable.isEmpty())
        return noneBecause(QStringLiteral("the engine's cgroup %1 offers none of the memory, pids "
                                          "and cpu controllers: %2")
                               .arg(layout.ownPath, delegationFix()));

    // A cgroup with processes cannot give controllers to children ("no internal processes"):
    // the engine moves into a leaf of its own first.
    const QString leaf = own + QStringLiteral("/engine");
    const QByteArray pid = QByteArray::number(qint64(::getpid()));
    if (!QDir().mkpath(leaf) || !writeFile(leaf + QStringLiteral("/cgroup.procs"), pid))
        return noneBecause(QStringLiteral("cannot move the engine into %1").arg(leaf));
    if (!writeFile(own + QStringLiteral("/cgroup.subtree_control"),
                   joinControllers(usable).toLatin1())) {
        const int why = errno;
        writeFile(own + QStringLiteral("/cgroup.procs"), pid);
        ::rmdir(QFile::encodeName(leaf).constData());
        if (why == EBUSY)
            return noneBecause(
                QStringLiteral("the engine's cgroup %1 holds other processes too: %2")
                    .arg(layout.ownPath, serviceFix()));
        return noneBecause(QStringLiteral("cannot enable controllers in %1: %2")
                               .arg(layout.ownPath, QString::fromLocal8Bit(strerror(why))));
    }
    const QString parent = own + QStringLiteral("/sandboxes");
    if (!QDir().mkpath(parent)
        || !writeFile(parent + QStringLiteral("/cgroup.subtree_control"),
                      joinControllers(usable).toLatin1()))
        return noneBecause(QStringLiteral("cannot enable controllers in %1").arg(parent));
    CgroupHost h;
    h.m_version = Version::V2;
    for (const QString &c : usable)
        h.m_parents.insert(c, parent);
    h.m_parents.insert(QString(), parent);
    h.m_by = QStringLiteral("cgroup v2, delegated to the engine (%1)").arg(layout.ownPath);
    return finish(h, usable, delegationFix());
}

QString CgroupHost::parentDir(const QString &controller) const
{
    return m_parents.value(controller);
}

LimitEnforcement CgroupHost::enforcement(const QString &controller) const
{
    if (m_controllers.contains(controller))
        return LimitEnforcement::yes(m_by);
    return LimitEnforcement::no(
        m_reasons.value(controller, QStringLiteral("no cgroup enforces it")));
}

Result<Cgroup> Cgroup::create(const CgroupHost &host, const QString &name,
                              const ResourceLimits &limits)
{
    Cgroup g;
    g.m_version = host.version();
    const QByteArray memBytes = QByteArray::number(limits.memoryMb * 1024 * 1024);
    const QByteArray pids = QByteArray::number(limits.pids);
    const qint64 period = 100000;

    auto fail = [&](const QString &why) {
        g.remove();
        return Error{ErrorCode::SandboxError, QStringLiteral("cgroup: ") + why, {}};
    };

    if (g.m_version == Version::V1) {
        for (const QString &ctrl : limitControllers()) {
            const QString dir = host.parentDir(ctrl) + u'/' + name;
            if (!QDir().mkpath(dir))
                return fail(QStringLiteral("cannot create %1").arg(dir));
            g.m_dirs.append(dir);
            g.m_dirOf.insert(ctrl, dir);
            g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        }
        const QString mem = g.dirOf(QStringLiteral("memory")),
                      pid = g.dirOf(QStringLiteral("pids")), cpu = g.dirOf(QStringLiteral("cpu"));
        bool ok = writeFile(mem + QStringLiteral("/memory.limit_in_bytes"), memBytes);
        if (QFile::exists(mem + QStringLiteral("/memory.memsw.limit_in_bytes")))
            ok = writeFile(mem + QStringLiteral("/memory.memsw.limit_in_bytes"), memBytes) && ok;
        ok = writeFile(pid + QStringLiteral("/pids.max"), pids) && ok;
        ok = writeFile(cpu + QStringLiteral("/cpu.cfs_period_us"), QByteArray::number(period))
             && ok;
        ok = writeFile(cpu + QStringLiteral("/cpu.cfs_quota_us"), "-1")
             && ok; // until setCpuLimit()
        if (!ok)
            return fail(QStringLiteral("cannot set limits under %1").arg(mem));
        return g;
    }
    if (g.m_version == Version::V2) {
        const QString dir = host.parentDir(QString()) + u'/' + name;
        if (!QDir().mkpath(dir))
            return fail(QStringLiteral("cannot create %1").arg(dir));
        g.m_dirs.append(dir);
        for (const QString &ctrl : host.controllers())
            g.m_dirOf.insert(ctrl, dir);
        g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        bool ok = true;
        if (host.enforces(QStringLiteral("memory"))) {
            ok = writeFile(dir + QStringLiteral("/memory.max"), memBytes) && ok;
            if (QFile::exists(dir + QStringLiteral("/memory.swap.max")))
                writeFile(dir + QStringLiteral("/memory.swap.max"), "0");
        }
        if (host.enforces(QStringLiteral("pids")))
            ok = writeFile(dir + QStringLiteral("/pids.max"), pids) && ok;
        if (host.enforces(QStringLiteral("cpu")))
            ok = writeFile(dir + QStringLiteral("/cpu.max"), "max " + QByteArray::number(period))
                 && ok; // until setCpuLimit()
        if (!ok)
            return fail(QStringLiteral("cannot set limits under %1").arg(dir));
        return g;
    }
    return Error{ErrorCode::SandboxError,
                 QStringLiteral("cgroup: this host has no usable cgroup hierarchy"),
                 {}};
}

Cgroup Cgroup::existing(const CgroupHost &host, const QString &name)
{
    Cgroup g;
    g.m_version = host.version();
    if (g.m_version == Version::V1) {
        for (const QString &ctrl : limitControllers()) {
            const QString dir = host.parentDir(ctrl) + u'/' + name;
            if (QFileInfo::exists(dir)) {
                g.m_dirs.append(dir);
                g.m_dirOf.insert(ctrl, dir);
                g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
            }
        }
    } else if (g.m_version == Version::V2) {
        const QString dir = host.parentDir(QString()) + u'/' + name;
        if (QFileInfo::exists(dir)) {
            g.m_dirs.append(dir);
            for (const QString &ctrl : host.controllers())
                g.m_dirOf.insert(ctrl, dir);
            g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        }
    }
    return g;
}

bool Cgroup::setCpuLimit(double cpus) const
{
    const QString dir = dirOf(QStringLiteral("cpu"));
    if (dir.isEmpty())
        return true; // no cpu controller: the Sandbox object says the CPU limit does not hold
    const qint64 period = 100000;
    const QByteArray quota = QByteArray::number(qMax<qint64>(1000, qint64(cpus * period)));
    // A burst of as much again, from CPU time the sandbox left unused (CFS burst, Linux 5.14):
    // a small size's command runs at once instead of waiting out the period its fork and exec
    // overran (a "lite" exec waited ~100 ms), while its share over time stays its size's. The
    // kernel refuses a burst above the quota, so it goes to 0 before the quota changes.
    const QString burst = dir
                          + (m_version == Version::V1 ? QStringLiteral("/cpu.cfs_burst_us")
                                                      : QStringLiteral("/cpu.max.burst"));
    const bool hasBurst = QFileInfo::exists(burst);
    if (hasBurst)
        writeFile(burst, "0");
    const bool ok = m_version == Version::V1
                        ? writeFile(dir + QStringLiteral("/cpu.cfs_quota_us"), quota)
                        : writeFile(dir + QStringLiteral("/cpu.max"),
                                    quota + ' ' + QByteArray::number(period));
    if (ok && hasBurst && !writeFile(burst, quota))
        qCWarning(lcCgroup) << "no CPU burst for" << dir; // the quota holds without it
    return ok;
}

QList<int> Cgroup::pids() const
{
    QList<int> out;
    for (const QString &dir : m_dirs) {
        const QList<QByteArray> lines = readFile(dir + QStringLiteral("/cgroup.procs")).split('\n');
        for (const QByteArray &l : lines) {
            bool ok = false;
            const int pid = l.toInt(&ok);
            if (ok && !out.contains(pid))
                out.append(pid);
        }
    }
    return out;
}

bool Cgroup::canFreeze() const
{
    return isValid() && (m_version == Version::V2 || !dirOf(QStringLiteral("freezer")).isEmpty());
}

bool Cgroup::freeze() const
{
    if (!canFreeze())
        return false;
    const QString state = m_version == Version::V2
                              ? m_dirs[0] + QStringLiteral("/cgroup.freeze")
                              : dirOf(QStringLiteral("freezer")) + QStringLiteral("/freezer.state");
    if (!writeFile(state, m_version == Version::V2 ? "1" : "FROZEN"))
        return false;
    // Freezing is asynchronous; a task in an uninterruptible sleep may take a moment. Bounded:
    // what is killed while still FREEZING dies at the thaw anyway.
    for (int round = 0; round < 100; ++round) {
        const bool frozen
            = m_version == Version::V2
                  ? readFile(m_dirs[0] + QStringLiteral("/cgroup.events")).contains("frozen 1")
                  : readFile(state).startsWith("FROZEN");
        if (frozen)
            return true;
        ::usleep(1000);
    }
    qCWarning(lcCgroup) << "the group is slow to freeze:" << m_dirs;
    return true;
}

void Cgroup::thaw() const
{
    if (!canFreeze())
        return;
    if (m_version == Version::V2)
        writeFile(m_dirs[0] + QStringLiteral("/cgroup.freeze"), "0");
    else
        writeFile(dirOf(QStringLiteral("freezer")) + QStringLiteral("/freezer.state"), "THAWED");
}

void Cgroup::killAll() const
{
    if (!isValid())
        return;
    // The dying need CPU to exit: a small size's group that used up its quota would keep them
    // (and itself: rmdir says EBUSY) until its next period, past the rounds below.
    if (const QString cpu = dirOf(QStringLiteral("cpu")); !cpu.isEmpty()) {
        if (m_version == Version::V1)
            writeFile(cpu + QStringLiteral("/cpu.cfs_quota_us"), "-1");
        else
            writeFile(cpu + QStringLiteral("/cpu.max"), "max 100000");
    }
    if (m_version == Version::V2 && QFile::exists(m_dirs[0] + QStringLiteral("/cgroup.kill"))) {
        writeFile(m_dirs[0] + QStringLiteral("/cgroup.kill"), "1");
    } else if (freeze()) {
        // Frozen, nothing forks: one round reaches every process; they die at the thaw.
        for (int pid : pids())
            ::kill(pid, SIGKILL);
        thaw();
    }
    // Without a freezer processes may fork while we kill; pids.max bounds how many there can be,
    // so a few rounds do.
    for (int round = 0; round < 50; ++round) {
        const QList<int> list = pids();
        if (list.isEmpty())
            return;
        for (int pid : list)
            ::kill(pid, SIGKILL);
        ::usleep(2000);
    }
    qCWarning(lcCgroup) << "processes left in" << m_dirs;
}

namespace {

// True when one of the process's descriptors is one of these pipes.
bool holdsPipe(int pid, const QList<quint64> &inodes)
{
    const QString dir = QStringLiteral("/proc/%1/fd").arg(pid);
    for (const QString &fd :
         QDir(dir).entryList(QDir::Files | QDir::System | QDir::NoDotAndDotDot)) {
        const QString target = QFile::symLinkTarget(dir + u'/' + fd);
        if (!target.contains(QLatin1String("pipe:[")))
            continue;
        const quint64 inode = target.section(u'[', 1).chopped(1).toULongLong();
        if (inodes.contains(inode))
            return true;
    }
    return false;
}

} // namespace

int Cgroup::killDescendants(qint64 innerPid, const QList<quint64> &holdingPipes) const
{
    if (!isValid() || innerPid <= 0)
        return 0;
    // Rounds, in case the group was slow to freeze (a fork in flight): until one finds nothing
    // new to kill, bounded.
    QSet<int> killed;
    for (int round = 0; round < 8; ++round) {
        const bool frozen = freeze();
        // The process tree of the group, by host pid; the root is the process whose pid in the
        // sandbox's namespace is `innerPid`.
        QHash<int, QList<int>> children;
        int root = 0;
        for (int pid : pids()) {
            qint64 inner = 0;
            int ppid = 0;
            if (!readStatus(pid, &inner, &ppid))
                continue;
            children[ppid].append(pid);
            if (inner == innerPid)
                root = pid;
        }
        int fresh = 0;
        QList<int> todo = root > 0 ? children.value(root) : QList<int>();
        while (!todo.isEmpty()) {
            const int pid = todo.takeLast();
            todo += children.value(pid);
            if (killed.contains(pid) || (!holdingPipes.isEmpty() && !holdsPipe(pid, holdingPipes)))
                continue;
            ::kill(pid, SIGKILL);
            killed.insert(pid);
            ++fresh;
        }
        if (frozen)
            thaw();
        if (fresh == 0)
            break;
    }
    return int(killed.size());
}

void Cgroup::remove() const
{
    for (const QString &dir : m_dirs) {
        if (::rmdir(QFile::encodeName(dir).constData()) != 0 && errno != ENOENT)
            qCWarning(lcCgroup) << "cannot remove" << dir << strerror(errno);
    }
}

qint64 Cgroup::memoryUsage() const
{
    const QString dir = dirOf(QStringLiteral("memory"));
    if (dir.isEmpty())
        return 0;
    const QString file = m_version == Version::V1 ? dir + QStringLiteral("/memory.usage_in_bytes")
                                                  : dir + QStringLiteral("/memory.current");
    return readFile(file).trimmed().toLongLong();
}

int Cgroup::oomKills() const
{
    const QString dir = dirOf(QStringLiteral("memory"));
    if (dir.isEmpty())
        return 0;
    const QString file = m_version == Version::V1 ? dir + QStringLiteral("/memory.oom_control")
                                                  : dir + QStringLiteral("/memory.events");
    for (const QByteArray &line : readFile(file).split('\n')) {
        if (line.startsWith("oom_kill "))
            return line.mid(9).trimmed().toInt();
    }
    return 0;
}

} // namespace Sandbox::Engine
