#include "doctor.h"

#include "agentclis.h"
#include "bubblewrap.h"
#include "hostfacts.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>

#include <cerrno>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace Sandbox::Engine {

namespace {

using Verdict = DoctorCheck::Verdict;

constexpr qint64 kGiB = 1024LL * 1024 * 1024;
const QString kProfileName = QStringLiteral("sandboxd");
const QString kProfileAttachment = QStringLiteral("/usr/bin/sandboxd");
const QString kProfileInstalled = QStringLiteral("/etc/apparmor.d/sandboxd");
const QString kProfileShipped = QStringLiteral("/usr/share/sandbox-desktop/apparmor/sandboxd");

DoctorCheck make(const QString &id, const QString &title, Verdict verdict, const QString &summary,
                 const QString &fix = {})
{
    return DoctorCheck{id, title, verdict, summary, fix};
}

// The command that installs a package on this distribution.
QString installCommand(const OsRelease &os, const QString &debian, const QString &fedora = {})
{
    const QString rpm = fedora.isEmpty() ? debian : fedora;
    if (os.isLike(QStringLiteral("debian")) || os.isLike(QStringLiteral("ubuntu")))
        return QStringLiteral("sudo apt-get install ") + debian;
    if (os.isLike(QStringLiteral("fedora")) || os.isLike(QStringLiteral("rhel")))
        return QStringLiteral("sudo dnf install ") + rpm;
    if (os.isLike(QStringLiteral("suse")))
        return QStringLiteral("sudo zypper install ") + rpm;
    if (os.isLike(QStringLiteral("arch")))
        return QStringLiteral("sudo pacman -S ") + rpm;
    return QStringLiteral("install %1 with your distribution's package manager").arg(debian);
}

QString sysctlFix(const QString &name, const QString &value)
{
    return QStringLiteral("sudo sysctl -w %1=%2 && echo %1=%2 | sudo tee "
                          "/etc/sysctl.d/60-sandbox-desktop.conf")
        .arg(name, value);
}

struct Probe
{
    bool ran = false;
    bool ok = false;
    QString error;
    qint64 ms = 0;
};

// A real sandbox with the namespaces the engine asks for, as the uid the engine's bubblewrap
// runs as. The one fact that cannot be read from files.
Probe probeSandbox(const DoctorOptions &o)
{
    Probe r;
    QProcess p;
    p.setProgram(o.bwrapPath);
    p.setArguments(Bubblewrap::isolationArguments()
                   + QStringList{QStringLiteral("--proc"), QStringLiteral("/proc"),
                                 QStringLiteral("--dev"), QStringLiteral("/dev"),
                                 QStringLiteral("--chdir"), QStringLiteral("/"),
                                 QStringLiteral("/usr/bin/true")});
    QProcessEnvironment env;
    env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/bin:/bin"));
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(QStringLiteral("/"));
    p.setStandardInputFile(QProcess::nullDevice());
    if (o.uid == 0) {
        // As the engine does: bubblewrap runs as the sandbox's unprivileged uid.
        p.setChildProcessModifier([uid = o.probeUid] {
            if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0
                || ::setresuid(uid, uid, uid) != 0)
                ::_exit(125);
        });
    }
    QElapsedTimer t;
    t.start();
    p.start();
    r.ran = true;
    if (!p.waitForStarted(5000)) {
        r.error = p.errorString();
        return r;
    }
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished(1000);
        r.error = QStringLiteral("bubblewrap did not finish within 10 s");
        return r;
    }
    r.ms = t.elapsed();
    r.ok = p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    if (!r.ok) {
        const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
        r.error = err.isEmpty() ? QStringLiteral("exit status %1").arg(p.exitCode())
                                : err.section(u'\n', -1).left(300);
    }
    return r;
}

DoctorCheck checkUserns(const HostRoot &root)
{
    const QString title = QStringLiteral("User namespaces");
    const auto max = root.sysctl(QStringLiteral("user.max_user_namespaces"));
    const auto clone = root.sysctl(QStringLiteral("kernel.unprivileged_userns_clone"));
    if (max && *max == 0)
        return make(QStringLiteral("userns"), title, Verdict::Fail,
                    QStringLiteral("user.max_user_namespaces is 0: bubblewrap cannot create the "
                                   "sandbox's user namespace"),
                    sysctlFix(QStringLiteral("user.max_user_namespaces"), QStringLiteral("28633")));
    if (clone && *clone == 0)
        return make(QStringLiteral("userns"), title, Verdict::Fail,
                    QStringLiteral("kernel.unprivileged_userns_clone is 0 (Debian's switch): "
                                   "bubblewrap cannot create the sandbox's user namespace"),
                    sysctlFix(QStringLiteral("kernel.unprivileged_userns_clone"),
                              QStringLiteral("1")));
    if (!max && !clone)
        return make(QStringLiteral("userns"), title, Verdict::Warn,
                    QStringLiteral("cannot read user.max_user_namespaces: is /proc mounted?"));
    QString detail = max ? QStringLiteral("user.max_user_namespaces = %1").arg(*max) : QString();
    if (clone)
        detail += QStringLiteral(", kernel.unprivileged_userns_clone = %1").arg(*clone);
    return make(QStringLiteral("userns"), title, Verdict::Ok,
                QStringLiteral("unprivileged user namespaces are allowed (%1)").arg(detail));
}

QString profileInstallFix(const HostRoot &root)
{
    if (root.exists(kProfileShipped))
        return QStringLiteral("sudo install -m 0644 %1 %2 && sudo apparmor_parser -r %2")
            .arg(kProfileShipped, kProfileInstalled);
    if (root.exists(kProfileInstalled))
        return QStringLiteral("sudo apparmor_parser -r %1").arg(kProfileInstalled);
    return QStringLiteral("install the sandbox-desktop .deb (it ships and loads the profile); "
                          "from a checkout: sudo install -m 0644 packaging/apparmor/sandboxd %1 "
                          "&& sudo apparmor_parser -r %1")
        .arg(kProfileInstalled);
}

DoctorCheck checkAppArmor(const HostRoot &root, const DoctorOptions &o, const Probe &probe)
{
    const QString id = QStringLiteral("apparmor");
    const QString title = QStringLiteral("AppArmor");
    const AppArmorFacts aa = AppArmorFacts::read(root);
    if (!aa.enabled)
        return make(id, title, Verdict::Ok,
                    QStringLiteral("AppArmor is not active: nothing restricts user namespaces"));
    if (!aa.restrictUnprivilegedUserns || *aa.restrictUnprivilegedUserns == 0)
        return make(id, title, Verdict::Ok,
                    aa.restrictUnprivilegedUserns
                        ? QStringLiteral("AppArmor is active; kernel.apparmor_restrict_"
                                         "unprivileged_userns is 0, so it does not restrict user "
                                         "namespaces")
                        : QStringLiteral("AppArmor is active; this kernel does not restrict "
                                         "unprivileged user namespaces through it"));

    // Ubuntu 23.10 and later: unprivileged user namespaces need a profile that allows them.
    const QString restricted = QStringLiteral(
        "Ubuntu's AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns = 1)");
    const bool loaded = aa.loadedProfiles && aa.loadedProfiles->contains(kProfileName);
    const bool installed = root.exists(kProfileInstalled);
    const QString exe = QFileInfo(o.executable).canonicalFilePath().isEmpty()
                            ? o.executable
                            : QFileInfo(o.executable).canonicalFilePath();
    const bool covered = exe == kProfileAttachment || o.executable == kProfileAttachment;
    if (probe.ran && probe.ok)
        return make(id, title, Verdict::Ok,
                    restricted
                        + QStringLiteral(", and the sandboxd profile lets bubblewrap "
                                         "create them (a test sandbox started)"));
    if (loaded && !covered)
        return make(id, title, Verdict::Fail,
                    restricted
                        + QStringLiteral("; the sandboxd profile is loaded but covers only %1, "
                                         "and this sandboxd is %2")
                              .arg(kProfileAttachment, o.executable),
                    QStringLiteral("run the packaged %1, or load a copy of the profile for this "
                                   "binary: sed -e 's#^profile sandboxd %1#profile sandboxd-local "
                                   "%2#' %3 | sudo tee /etc/apparmor.d/sandboxd-local && sudo "
                                   "apparmor_parser -r /etc/apparmor.d/sandboxd-local")
                        .arg(kProfileAttachment, o.executable,
                             installed ? kProfileInstalled
                                       : QStringLiteral("packaging/apparmor/sandboxd")));
    if (loaded)
        return make(id, title, Verdict::Ok,
                    restricted
                        + QStringLiteral(", and the sandboxd profile that allows them "
                                         "for the engine's bubblewrap is loaded"));
    if (!aa.loadedProfiles && installed && !(probe.ran && !probe.ok))
        return make(id, title, Verdict::Warn,
                    restricted
                        + QStringLiteral("; the sandboxd profile is installed, but only "
                                         "root can see whether it is loaded"),
                    QStringLiteral("sudo apparmor_parser -r %1 (or run sudo sandboxd doctor to "
                                   "see)")
                        .arg(kProfileInstalled));
    return make(id, title, Verdict::Fail,
                restricted
                    + QStringLiteral(" and the sandboxd profile is not loaded: bubblewrap "
                                     "fails with \"setting up uid map: Permission denied\""),
                profileInstallFix(root));
}

DoctorCheck checkBubblewrap(const HostRoot &root, const DoctorOptions &o, const OsRelease &os)
{
    const QString id = QStringLiteral("bubblewrap");
    const QString title = QStringLiteral("bubblewrap");
    const QFileInfo bin(root.path(o.bwrapPath));
    if (!bin.exists() || !bin.isExecutable())
        return make(id, title, Verdict::Fail,
                    QStringLiteral("bubblewrap is not installed at %1: sandboxd cannot start "
                                   "sandboxes")
                        .arg(o.bwrapPath),
                    installCommand(os, QStringLiteral("bubblewrap")));
    QProcess p;
    p.start(bin.filePath(), {QStringLiteral("--version")});
    Version v;
    if (p.waitForFinished(5000) && p.exitStatus() == QProcess::NormalExit)
        v = Version::parse(QString::fromUtf8(p.readAllStandardOutput()));
    else
        p.kill();
    if (!v.isValid())
        return make(id, title, Verdict::Warn,
                    QStringLiteral("%1 did not tell its version").arg(o.bwrapPath),
                    installCommand(os, QStringLiteral("bubblewrap")));
    if (!v.atLeast(0, 8))
        return make(id, title, Verdict::Fail,
                    QStringLiteral("bubblewrap %1 is too old: sandboxd needs 0.8.0 or newer "
                                   "(--disable-userns), and 0.12.0 fixes CVE-2026-87766")
                        .arg(v.toString()),
                    installCommand(os, QStringLiteral("bubblewrap"))
                        + QStringLiteral(" (0.12.0 or newer)"));
    if (!v.atLeast(0, 12))
        return make(id, title, Verdict::Warn,
                    QStringLiteral("bubblewrap %1 is older than 0.12.0, which fixes "
                                   "CVE-2026-87766")
                        .arg(v.toString()),
                    QStringLiteral("update bubblewrap to 0.12.0 or newer (%1); where your "
                                   "release has no such version yet, check its security tracker "
                                   "for a backported fix of CVE-2026-87766")
                        .arg(os.isLike(QStringLiteral("debian"))
                                     || os.isLike(QStringLiteral("ubuntu"))
                                 ? QStringLiteral("sudo apt-get install --only-upgrade bubblewrap")
                             : os.isLike(QStringLiteral("fedora"))
                                 ? QStringLiteral("sudo dnf upgrade bubblewrap")
                                 : installCommand(os, QStringLiteral("bubblewrap"))));
    return make(id, title, Verdict::Ok,
                QStringLiteral("bubblewrap %1 at %2 (0.12.0 or newer: CVE-2026-87766 is fixed)")
                    .arg(v.toString(), o.bwrapPath));
}

DoctorCheck checkSandbox(const HostRoot &root, const Probe &probe)
{
    const QString id = QStringLiteral("sandbox");
    const QString title = QStringLiteral("A test sandbox");
    if (!root.isLive())
        return make(id, title, Verdict::Skip,
                    QStringLiteral("not started: the facts come from a prepared tree"));
    if (!probe.ran)
        return make(id, title, Verdict::Skip, QStringLiteral("not started (--no-probe)"));
    if (probe.ok)
        return make(id, title, Verdict::Ok,
                    QStringLiteral("bubblewrap started a sandbox with every namespace unshared "
                                   "(%1 ms)")
                        .arg(probe.ms));
    return make(id, title, Verdict::Fail,
                QStringLiteral("bubblewrap could not start a sandbox: %1").arg(probe.error),
                probe.error.contains(QLatin1String("uid map"))
                    ? QStringLiteral("see the user namespace and AppArmor checks above")
                    : QStringLiteral("see the checks above; run the engine's bubblewrap by hand "
                                     "to see more: bwrap --unshare-all --ro-bind /usr /usr "
                                     "/usr/bin/true"));
}

QString delegationFix()
{
    return QStringLiteral("sudo mkdir -p /etc/systemd/system/user@.service.d && printf "
                          "'[Service]\\nDelegate=cpu cpuset io memory pids\\n' | sudo tee "
                          "/etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl "
                          "daemon-reload, then log out and in again");
}

DoctorCheck checkCgroups(const HostRoot &root, const DoctorOptions &o)
{
    const QString id = QStringLiteral("cgroups");
    const QString title = QStringLiteral("Sandbox limits (cgroups)");
    const CgroupLayout layout = CgroupLayout::read(root);
    const QStringList wanted = limitControllers();
    if (o.uid == 0) {
        if (layout.mode == CgroupLayout::Mode::V2) {
            const QStringList offered = CgroupLayout::controllers(root, layout.unifiedMount);
            QStringList missing;
            for (const QString &c : wanted)
                if (!offered.contains(c))
                    missing.append(c);
            if (missing.isEmpty())
                return make(id, title, Verdict::Ok,
                            QStringLiteral("cgroup v2: memory, process and CPU limits hold (the "
                                           "engine runs as root)"));
            return make(id, title, Verdict::Fail,
                        QStringLiteral("cgroup v2 without the %1 controller: those limits do not "
                                       "hold")
                            .arg(missing.join(QStringLiteral(", "))),
                        QStringLiteral("a kernel with the memory, pids and cpu controllers "
                                       "(cgroup_enable=memory on the kernel command line)"));
        }
        if (layout.hasV1Limits())
            return make(id, title, Verdict::Ok,
                        QStringLiteral("cgroup %1: memory, process and CPU limits hold (the "
                                       "engine runs as root)")
                            .arg(CgroupLayout::modeName(layout.mode)));
        return make(id, title, Verdict::Fail,
                    QStringLiteral("no usable cgroup hierarchy: sandboxes run without memory, "
                                   "process and CPU limits (limits.enforced: false)"),
                    QStringLiteral("mount cgroup2 at /sys/fs/cgroup (every systemd distribution "
                                   "does this at boot)"));
    }

    const QString noLimits = QStringLiteral(
        "sandboxes of a normal user's sandboxd run without memory, process and CPU limits (every "
        "Sandbox object says limits.enforced: false)");
    if (layout.mode != CgroupLayout::Mode::V2)
        return make(id, title, Verdict::Fail,
                    QStringLiteral("cgroups are %1 here: %2")
                        .arg(CgroupLayout::modeName(layout.mode), noLimits),
                    QStringLiteral("boot with cgroup v2: add systemd.unified_cgroup_hierarchy=1 to "
                                   "GRUB_CMDLINE_LINUX in /etc/default/grub, sudo update-grub, "
                                   "reboot; or run sandboxd as root"));
    const QString userService
        = QStringLiteral("/user.slice/user-%1.slice/user@%1.service").arg(o.uid);
    const QString userDir = layout.unifiedDir(userService);
    if (!root.exists(userDir))
        return make(id, title, Verdict::Fail,
                    QStringLiteral("there is no systemd user manager for uid %1 "
                                   "(%2): nothing delegates cgroups to you, so %3")
                        .arg(o.uid)
                        .arg(userService, noLimits),
                    QStringLiteral("log in through a systemd session (or: sudo loginctl "
                                   "enable-linger $USER), or run sandboxd as root"));
    const QStringList offered = CgroupLayout::controllers(root, userDir);
    QStringList delegated, missing;
    for (const QString &c : wanted)
        (offered.contains(c) ? delegated : missing).append(c);
    if (delegated.isEmpty())
        return make(id, title, Verdict::Fail,
                    QStringLiteral("your user's systemd delegates none of the memory, pids and "
                                   "cpu controllers: %1")
                        .arg(noLimits),
                    delegationFix());
    if (!missing.isEmpty())
        return make(id, title, Verdict::Warn,
                    QStringLiteral("your user's systemd delegates %1 but not %2: the %3 limit "
                                   "does not hold (the Sandbox object says which)")
                        .arg(delegated.join(QStringLiteral(", ")),
                             missing.join(QStringLiteral(", ")), missing.join(QStringLiteral("/"))),
                    delegationFix());
    return make(id, title, Verdict::Ok,
                QStringLiteral("cgroup v2, and your user's systemd delegates memory, pids and "
                               "cpu: limits hold when sandboxd runs as the user service "
                               "(systemctl --user start sandboxd, Delegate=yes)"));
}

DoctorCheck checkSeccomp(const HostRoot &root)
{
    const QString id = QStringLiteral("seccomp");
    const QString title = QStringLiteral("seccomp");
    const auto actions = root.readLine(QStringLiteral("/proc/sys/kernel/seccomp/actions_avail"));
    if (actions && actions->contains(QLatin1String("errno"))
        && actions->contains(QLatin1String("kill_process")))
        return make(id, title, Verdict::Ok,
                    QStringLiteral("seccomp filters are available (%1)").arg(*actions));
    const QString status = QString::fromUtf8(
        root.read(QStringLiteral("/proc/self/status")).value_or(QByteArray()));
    if (actions || status.contains(QLatin1String("\nSeccomp:")))
        return make(id, title, Verdict::Warn,
                    QStringLiteral("seccomp is there, but not every filter action the sandbox's "
                                   "filter uses (kernel 4.14 or newer has them)"),
                    QStringLiteral("a kernel 4.14 or newer"));
    return make(id, title, Verdict::Fail,
                QStringLiteral("the kernel has no seccomp filters: sandboxes cannot get their "
                               "system-call filter"),
                QStringLiteral("a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution "
                               "kernel is)"));
}

DoctorCheck checkOpenat2(const HostRoot &root)
{
    const QString id = QStringLiteral("openat2");
    const QString title = QStringLiteral("openat2");
    const KernelRelease k = KernelRelease::read(root);
    if (k.release.isEmpty())
        return make(id, title, Verdict::Warn, QStringLiteral("cannot read the kernel's release"));
    if (!k.atLeast(5, 6))
        return make(id, title, Verdict::Fail,
                    QStringLiteral("kernel %1 is older than 5.6 and has no openat2: the engine "
                                   "cannot open sandbox paths without following their symlinks")
                        .arg(k.release),
                    QStringLiteral("a kernel 5.6 or newer"));
    if (root.isLive()) {
        // A container's seccomp profile may still refuse it.
        open_how how{};
        how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
        const long fd = ::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
        if (fd < 0 && errno == ENOSYS)
            return make(id, title, Verdict::Fail,
                        QStringLiteral("kernel %1 has openat2, but it is refused here (ENOSYS: a "
                                       "container's seccomp profile?)")
                            .arg(k.release),
                        QStringLiteral("allow openat2 in the container's seccomp profile"));
        if (fd >= 0)
            ::close(int(fd));
    }
    return make(id, title, Verdict::Ok,
                QStringLiteral("kernel %1 has openat2 (5.6 or newer)").arg(k.release));
}

DoctorCheck checkDiskCaps(const HostRoot &root, const DoctorOptions &o, const OsRelease &os)
{
    const QString id = QStringLiteral("disk-caps");
    const QString title = QStringLiteral("Disk caps (loop devices)");
    if (o.uid != 0)
        return make(id, title, Verdict::Warn,
                    QStringLiteral("sandboxd runs as a normal user: workspaces are plain "
                                   "directories without a size cap (disk caps need root for "
                                   "loop devices; limits.enforcement.disk says so)"),
                    QStringLiteral("run sandboxd as root to cap each workspace at its size's "
                                   "diskMb"));
    if (!root.exists(QStringLiteral("/dev/loop-control")))
        return make(id, title, Verdict::Warn,
                    QStringLiteral("no /dev/loop-control: workspaces have no size cap"),
                    QStringLiteral("sudo modprobe loop"));
    if (!root.exists(QStringLiteral("/usr/sbin/mkfs.ext4"))
        || !root.exists(QStringLiteral("/usr/bin/mount")))
        return make(id, title, Verdict::Warn,
                    QStringLiteral("mkfs.ext4 or mount is missing: workspaces have no size cap"),
                    installCommand(os, QStringLiteral("e2fsprogs mount"),
                                   QStringLiteral("e2fsprogs util-linux")));
    return make(id, title, Verdict::Ok,
                QStringLiteral("loop devices and mkfs.ext4: each workspace is an ext4 image "
                               "capped at its size's diskMb"));
}

QString existingAncestor(const QString &path)
{
    QString p = QDir::cleanPath(path);
    while (!p.isEmpty() && !QFileInfo::exists(p)) {
        const QString up = QFileInfo(p).path();
        if (up == p)
            break;
        p = up;
    }
    return p;
}

DoctorCheck checkFreeDisk(const HostRoot &root, const DoctorOptions &o)
{
    const QString dir = existingAncestor(root.path(o.dataDir));
    struct statvfs st;
    if (::statvfs(QFile::encodeName(dir).constData(), &st) != 0)
        return make(QStringLiteral("free-disk"), QStringLiteral("Free disk"), Verdict::Warn,
                    QStringLiteral("cannot tell the free space in %1").arg(o.dataDir));
    return freeDiskCheck(qint64(st.f_bavail) * qint64(st.f_frsize), o.dataDir);
}

DoctorCheck checkAgents(const HostRoot &root, const DoctorOptions &o)
{
    const QString id = QStringLiteral("agents");
    const QString title = QStringLiteral("Agent CLIs");
    QStringList present, missing, fixes, where;
    for (const AgentCliPin &pin : AgentClis::pins()) {
        const QString dir = AgentClis::find(
            o.agentsDirs, pin, [&root](const QString &path) { return root.exists(path); },
            [&root](const QString &path) -> std::optional<QString> {
                if (const auto text = root.readLine(path))
                    return *text;
                return std::nullopt;
            });
        if (!dir.isEmpty()) {
            present.append(pin.name);
            const QString parent = dir.section(u'/', 0, -2);
            if (!where.contains(parent))
                where.append(parent);
        } else {
            missing.append(pin.name);
            fixes.append(QStringLiteral("sandboxctl agents install-cli ") + pin.type);
        }
    }
    const QString places = where.join(QStringLiteral(" and "));
    if (missing.isEmpty())
        return make(id, title, Verdict::Ok,
                    QStringLiteral("%1 are installed in %2")
                        .arg(QStringList(present.mid(0, present.size() - 1))
                                     .join(QStringLiteral(", "))
                                 + QStringLiteral(" and ") + present.constLast(),
                             places));
    const QString fix = QStringLiteral("the app installs a CLI (from npm, into %1) when an agent "
                                       "first needs it; to install it now: %2")
                            .arg(AgentClis::installDir(o.dataDir),
                                 fixes.join(QStringLiteral(" && ")));
    return make(id, title, Verdict::Warn,
                present.isEmpty()
                    ? QStringLiteral("no agent CLI is installed yet (%1 are installed on first "
                                     "use)")
                          .arg(missing.join(QStringLiteral(", ")))
                    : QStringLiteral("%1 installed in %2; %3 not yet")
                          .arg(present.join(QStringLiteral(", ")), places,
                               missing.join(QStringLiteral(", "))),
                fix);
}

DoctorCheck checkDatabases(const HostRoot &root, const DoctorOptions &o, const OsRelease &os)
{
    const QString id = QStringLiteral("databases");
    const QString title = QStringLiteral("Database servers");
    QStringList ok, missing, fixes;
    if (root.exists(o.postgresBinDir + QStringLiteral("/postgres"))
        && root.exists(o.postgresBinDir + QStringLiteral("/initdb"))) {
        ok.append(QStringLiteral("PostgreSQL"));
    } else {
        missing.append(QStringLiteral("PostgreSQL 15 (%1)").arg(o.postgresBinDir));
        fixes.append(os.isLike(QStringLiteral("debian")) || os.isLike(QStringLiteral("ubuntu"))
                         ? QStringLiteral("sudo apt-get install postgresql-15 (where your release "
                                          "has no PostgreSQL 15: from apt.postgresql.org)")
                         : QStringLiteral("sandboxd expects PostgreSQL 15 in Debian's layout at "
                                          "%1; this distribution keeps it elsewhere")
                               .arg(o.postgresBinDir));
    }
    if (root.exists(o.dbhostDir + QStringLiteral("/sandbox-dbhost")))
        ok.append(QStringLiteral("SQLite"));
    else
        missing.append(QStringLiteral("SQLite (sandbox-dbhost in %1)").arg(o.dbhostDir));
    if (root.exists(o.dbhostDir + QStringLiteral("/sandbox-dbhost-duckdb")))
        ok.append(QStringLiteral("DuckDB"));
    else
        missing.append(QStringLiteral("DuckDB (sandbox-dbhost-duckdb in %1)").arg(o.dbhostDir));
    if (missing.size() > fixes.size())
        fixes.append(
            QStringLiteral("reinstall the sandbox-desktop .deb (from a checkout: "
                           "scripts/setup.sh builds sandbox-dbhost and fetches libduckdb)"));
    if (missing.isEmpty())
        return make(id, title, Verdict::Ok,
                    QStringLiteral("PostgreSQL 15, SQLite and DuckDB databases can start"));
    return make(id, title, Verdict::Warn,
                QStringLiteral("missing: %1%2")
                    .arg(missing.join(QStringLiteral(", ")),
                         ok.isEmpty()
                             ? QString()
                             : QStringLiteral(" (%1 work)").arg(ok.join(QStringLiteral(", ")))),
                fixes.join(QStringLiteral("; ")));
}

} // namespace

QString DoctorCheck::verdictName(Verdict v)
{
    switch (v) {
    case Verdict::Ok:
        return QStringLiteral("ok");
    case Verdict::Warn:
        return QStringLiteral("warn");
    case Verdict::Fail:
        return QStringLiteral("fail");
    case Verdict::Skip:
        return QStringLiteral("skip");
    }
    return {};
}

DoctorCheck freeDiskCheck(qint64 freeBytes, const QString &dir)
{
    const QString id = QStringLiteral("free-disk");
    const QString title = QStringLiteral("Free disk");
    const QString amount = QString::number(double(freeBytes) / double(kGiB), 'f', 1);
    const QString fix = QStringLiteral("free space on that file system, or start sandboxd with "
                                       "--data-dir on a larger one");
    if (freeBytes < kGiB)
        return make(id, title, Verdict::Fail,
                    QStringLiteral("only %1 GiB free for %2: a sandbox needs room for its "
                                   "workspace")
                        .arg(amount, dir),
                    fix);
    if (freeBytes < 8 * kGiB)
        return make(id, title, Verdict::Warn,
                    QStringLiteral("%1 GiB free for %2: less than one default sandbox's disk "
                                   "(8 GiB)")
                        .arg(amount, dir),
                    fix);
    return make(id, title, Verdict::Ok, QStringLiteral("%1 GiB free for %2").arg(amount, dir));
}

const DoctorCheck *DoctorReport::check(const QString &id) const
{
    for (const DoctorCheck &c : checks)
        if (c.id == id)
            return &c;
    return nullptr;
}

int DoctorReport::count(DoctorCheck::Verdict v) const
{
    return int(std::count_if(checks.cbegin(), checks.cend(),
                             [v](const DoctorCheck &c) { return c.verdict == v; }));
}

QJsonObject DoctorReport::toJson() const
{
    QJsonArray list;
    for (const DoctorCheck &c : checks) {
        QJsonObject o{{QStringLiteral("id"), c.id},
                      {QStringLiteral("title"), c.title},
                      {QStringLiteral("verdict"), DoctorCheck::verdictName(c.verdict)},
                      {QStringLiteral("summary"), c.summary}};
        if (!c.fix.isEmpty())
            o.insert(QStringLiteral("fix"), c.fix);
        list.append(o);
    }
    return {{QStringLiteral("host"), host},
            {QStringLiteral("checks"), list},
            {QStringLiteral("failures"), count(Verdict::Fail)},
            {QStringLiteral("warnings"), count(Verdict::Warn)}};
}

QString DoctorReport::toText() const
{
    QString out = QStringLiteral("sandboxd doctor: %1\n\n").arg(host);
    int width = 0;
    for (const DoctorCheck &c : checks)
        width = qMax(width, int(c.title.size()));
    for (const DoctorCheck &c : checks) {
        const QString verdict = c.verdict == Verdict::Ok     ? QStringLiteral("ok")
                                : c.verdict == Verdict::Warn ? QStringLiteral("WARN")
                                : c.verdict == Verdict::Fail ? QStringLiteral("FAIL")
                                                             : QStringLiteral("skip");
        out += verdict.leftJustified(6) + c.title.leftJustified(width + 2) + c.summary + u'\n';
        if (!c.fix.isEmpty())
            out += QString(6, u' ') + QStringLiteral("fix: ") + c.fix + u'\n';
    }
    const int fails = count(Verdict::Fail), warns = count(Verdict::Warn);
    out += u'\n';
    if (fails > 0)
        out += QStringLiteral("%1 failed, %2 warned: sandboxes do not work, or not as safely as "
                              "they should, until the failed checks are fixed (each says how).\n")
                   .arg(fails)
                   .arg(warns);
    else if (warns > 0)
        out += QStringLiteral("0 failed, %1 warned: sandboxes work; the warnings say what is "
                              "missing or weaker.\n")
                   .arg(warns);
    else
        out += QStringLiteral("Every check passed.\n");
    return out;
}

DoctorReport runDoctor(const DoctorOptions &options)
{
    const HostRoot root(options.root);
    const OsRelease os = OsRelease::read(root);
    const KernelRelease kernel = KernelRelease::read(root);

    DoctorReport report;
    report.host = QStringLiteral("%1, kernel %2, %3")
                      .arg(os.prettyName.isEmpty() ? QStringLiteral("unknown system")
                                                   : os.prettyName,
                           kernel.release.isEmpty() ? QStringLiteral("unknown") : kernel.release,
                           options.uid == 0
                               ? QStringLiteral("as root")
                               : QStringLiteral("as a normal user (uid %1)").arg(options.uid));
    if (!root.isLive())
        report.host += QStringLiteral(" [facts from %1]").arg(root.root());

    const DoctorCheck bwrap = checkBubblewrap(root, options, os);
    Probe probe;
    if (root.isLive() && options.probe && bwrap.verdict != Verdict::Fail)
        probe = probeSandbox(options);

    report.checks = {
        checkUserns(root),
        checkAppArmor(root, options, probe),
        bwrap,
        checkSandbox(root, probe),
        checkCgroups(root, options),
        checkSeccomp(root),
        checkOpenat2(root),
        checkDiskCaps(root, options, os),
        checkFreeDisk(root, options),
        checkAgents(root, options),
        checkDatabases(root, options, os),
    };
    return report;
}

} // namespace Sandbox::Engine
