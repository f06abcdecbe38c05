#pragma once

#include <QByteArray>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>
#include <sys/types.h>

namespace Sandbox::Engine {

// The host's files as seen under a root directory: "/" on a real host, a prepared tree in tests.
// Every fact the engine and `sandboxd doctor` know about the host is read through one of these,
// so that each can be checked against the trees of other distributions.
class HostRoot final
{
public:
    explicit HostRoot(QString root = QStringLiteral("/"));

    QString root() const { return m_root; }
    // The real host (the root is "/"): what can only be probed live (a test sandbox, free disk
    // of a real directory) is probed only then.
    bool isLive() const { return m_root == QLatin1String("/"); }
    // An absolute host path as a path under the root.
    QString path(const QString &absolute) const;
    bool exists(const QString &absolute) const;
    // At most `max` bytes of a file; nullopt when it cannot be read (missing, no permission).
    std::optional<QByteArray> read(const QString &absolute, qsizetype max = 1 << 20) const;
    // The trimmed first line of a file; nullopt when it cannot be read.
    std::optional<QString> readLine(const QString &absolute) const;
    // /proc/sys/a/b for "a.b"; nullopt when the sysctl does not exist or is not a number.
    std::optional<qint64> sysctl(const QString &name) const;
    // The owner of a file or directory (no symlinks followed).
    std::optional<uid_t> owner(const QString &absolute) const;

private:
    QString m_root;
};

// /etc/os-release (or /usr/lib/os-release).
struct OsRelease
{
    QString id;         // "debian", "ubuntu", "fedora"
    QStringList idLike; // "debian" for Ubuntu
    QString versionId;  // "12", "24.04", "40"
    QString prettyName;

    static OsRelease read(const HostRoot &root);
    bool isLike(const QString &family) const { return id == family || idLike.contains(family); }
};

// The kernel release, e.g. "6.8.0-31-generic" -> 6, 8.
struct KernelRelease
{
    QString release;
    int major = 0;
    int minor = 0;

    static KernelRelease read(const HostRoot &root);
    bool atLeast(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

// The cgroup hierarchies of the host and where a process sits in them, from
// /proc/<self>/mountinfo and /proc/<self>/cgroup.
struct CgroupLayout
{
    enum class Mode {
        None,   // no cgroup hierarchy at all
        V1,     // only per-controller (v1) hierarchies
        Hybrid, // v1 controllers plus a cgroup2 mount without controllers (Debian 12 CI machines)
        V2,     // one unified hierarchy (systemd's default since 2021)
    };

    Mode mode = Mode::None;
    QString unifiedMount;            // the cgroup2 mount point; empty when there is none
    QMap<QString, QString> v1Mounts; // controller -> its v1 mount point
    QString ownPath; // the process's cgroup2 path ("0::PATH"), e.g. "/user.slice/..."
    QMap<QString, QString> v1OwnPaths; // controller -> the process's v1 path

    static CgroupLayout read(const HostRoot &root,
                             const QString &procSelf = QStringLiteral("/proc/self"));

    // Directory of a cgroup2 path (absolute host path; read it through a HostRoot).
    QString unifiedDir(const QString &cgroupPath) const;
    // The controllers a cgroup2 directory offers its children's parent (its cgroup.controllers).
    static QStringList controllers(const HostRoot &root, const QString &dir);
    // memory, pids and cpu each have a v1 hierarchy.
    bool hasV1Limits() const;
    static QString modeName(Mode mode);
};

// The controllers sandbox limits need, in the order of ResourceLimits.
QStringList limitControllers();

// What AppArmor says about user namespaces (Ubuntu 23.10 and later restrict them).
struct AppArmorFacts
{
    bool enabled = false; // /sys/module/apparmor/parameters/enabled is Y
    bool mediatesUserns
        = false; // the kernel can restrict user namespaces (features/namespaces/userns_create)
    std::optional<qint64> restrictUnprivilegedUserns; // kernel.apparmor_restrict_unprivileged_userns
    // The loaded profiles' names; nullopt when the list cannot be read (it needs root).
    std::optional<QStringList> loadedProfiles;

    static AppArmorFacts read(const HostRoot &root);
};

// The output of `bwrap --version`, e.g. "bubblewrap 0.8.0".
struct Version
{
    int major = -1;
    int minor = 0;
    int patch = 0;

    static Version parse(const QString &text); // the first a.b[.c] in text
    bool isValid() const { return major >= 0; }
    bool atLeast(int maj, int min, int pat = 0) const;
    QString toString() const;
};

} // namespace Sandbox::Engine
