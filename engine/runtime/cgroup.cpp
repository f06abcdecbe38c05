#include "cgroup.h"

#include <QDir>
#include <QFile>
#include <QLoggingCategory>

#include <csignal>
#include <sys/types.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcCgroup, "sandboxd.cgroup")

namespace Sandbox::Engine {

namespace {

const QString kParent = QStringLiteral("sandboxd");
const QString kRoot = QStringLiteral("/sys/fs/cgroup");

bool writeFile(const QString &path, const QByteArray &value)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        qCWarning(lcCgroup) << "cannot open" << path << f.errorString();
        return false;
    }
    if (f.write(value) != value.size()) {
        qCWarning(lcCgroup) << "cannot write" << value << "to" << path << f.errorString();
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

QStringList v1Controllers()
{
    return {QStringLiteral("memory"), QStringLiteral("pids"), QStringLiteral("cpu")};
}

bool isV2Root()
{
    return QFile::exists(kRoot + QStringLiteral("/cgroup.controllers"));
}

} // namespace

Cgroup::Version Cgroup::detectVersion()
{
    if (isV2Root())
        return Version::V2;
    if (QFile::exists(kRoot + QStringLiteral("/memory/memory.limit_in_bytes"))
        && QFile::exists(kRoot + QStringLiteral("/pids")))
        return Version::V1;
    return Version::None;
}

Result<Cgroup> Cgroup::create(const QString &name, const ResourceLimits &limits)
{
    Cgroup g;
    g.m_version = detectVersion();
    const QByteArray memBytes = QByteArray::number(limits.memoryMb * 1024 * 1024);
    const QByteArray pids = QByteArray::number(limits.pids);
    const qint64 period = 100000;

    auto fail = [&](const QString &why) {
        g.remove();
        return Error{ErrorCode::SandboxError, QStringLiteral("cgroup: ") + why, {}};
    };

    if (g.m_version == Version::V1) {
        for (const QString &ctrl : v1Controllers()) {
            const QString dir = kRoot + u'/' + ctrl + u'/' + kParent + u'/' + name;
            if (!QDir().mkpath(dir))
                return fail(QStringLiteral("cannot create %1").arg(dir));
            g.m_dirs.append(dir);
            g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        }
        const QString mem = g.m_dirs[0], pid = g.m_dirs[1], cpu = g.m_dirs[2];
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
        const QString parent = kRoot + u'/' + kParent;
        if (!QDir().mkpath(parent))
            return fail(QStringLiteral("cannot create %1").arg(parent));
        // Controllers must be enabled on every level above the group.
        writeFile(kRoot + QStringLiteral("/cgroup.subtree_control"), "+memory +pids +cpu");
        writeFile(parent + QStringLiteral("/cgroup.subtree_control"), "+memory +pids +cpu");
        const QString dir = parent + u'/' + name;
        if (!QDir().mkpath(dir))
            return fail(QStringLiteral("cannot create %1").arg(dir));
        g.m_dirs.append(dir);
        g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        bool ok = writeFile(dir + QStringLiteral("/memory.max"), memBytes);
        if (QFile::exists(dir + QStringLiteral("/memory.swap.max")))
            writeFile(dir + QStringLiteral("/memory.swap.max"), "0");
        ok = writeFile(dir + QStringLiteral("/pids.max"), pids) && ok;
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

Cgroup Cgroup::existing(const QString &name)
{
    Cgroup g;
    g.m_version = detectVersion();
    if (g.m_version == Version::V1) {
        for (const QString &ctrl : v1Controllers()) {
            const QString dir = kRoot + u'/' + ctrl + u'/' + kParent + u'/' + name;
            if (QFileInfo::exists(dir)) {
                g.m_dirs.append(dir);
                g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
            }
        }
    } else if (g.m_version == Version::V2) {
        const QString dir = kRoot + u'/' + kParent + u'/' + name;
        if (QFileInfo::exists(dir)) {
            g.m_dirs.append(dir);
            g.m_procsFiles.append(QFile::encodeName(dir + QStringLiteral("/cgroup.procs")));
        }
    }
    return g;
}

bool Cgroup::setCpuLimit(double cpus) const
{
    if (!isValid())
        return false;
    const qint64 period = 100000;
    const QByteArray quota = QByteArray::number(qMax<qint64>(1000, qint64(cpus * period)));
    if (m_version == Version::V1)
        return writeFile(m_dirs[2] + QStringLiteral("/cpu.cfs_quota_us"), quota);
    return writeFile(m_dirs[0] + QStringLiteral("/cpu.max"),
                     quota + ' ' + QByteArray::number(period));
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

void Cgroup::killAll() const
{
    if (!isValid())
        return;
    if (m_version == Version::V2 && QFile::exists(m_dirs[0] + QStringLiteral("/cgroup.kill"))) {
        writeFile(m_dirs[0] + QStringLiteral("/cgroup.kill"), "1");
    }
    // Processes may fork while we kill; pids.max bounds how many there can be, so a few rounds do.
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

void Cgroup::remove() const
{
    for (const QString &dir : m_dirs) {
        if (::rmdir(QFile::encodeName(dir).constData()) != 0 && errno != ENOENT)
            qCWarning(lcCgroup) << "cannot remove" << dir << strerror(errno);
    }
}

qint64 Cgroup::memoryUsage() const
{
    if (m_dirs.isEmpty())
        return 0;
    const QString file = m_version == Version::V1
                             ? m_dirs[0] + QStringLiteral("/memory.usage_in_bytes")
                             : m_dirs[0] + QStringLiteral("/memory.current");
    return readFile(file).trimmed().toLongLong();
}

int Cgroup::oomKills() const
{
    if (m_dirs.isEmpty())
        return 0;
    const QString file = m_version == Version::V1
                             ? m_dirs[0] + QStringLiteral("/memory.oom_control")
                             : m_dirs[0] + QStringLiteral("/memory.events");
    for (const QByteArray &line : readFile(file).split('\n')) {
        if (line.startsWith("oom_kill "))
            return line.mid(9).trimmed().toInt();
    }
    return 0;
}

} // namespace Sandbox::Engine
