#include "workspacevolume.h"

#include "hostfs.h"
#include "offloop.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcVolume, "sandboxd.volume")

namespace Sandbox::Engine {

namespace {

constexpr int kSparesPerSize = 3;
constexpr qint64 kMinImageMb = 64;
constexpr const char *kVolume = "volume";
// Where an image from before the three trees is sorted out (its files lay at its root).
constexpr const char *kMigrating = ".sandboxd-migrating";
// What an engine before volumes kept in the state directory.
constexpr const char *kLegacyWorkspace = "workspace";
constexpr const char *kLegacyHome = "agent-home";
constexpr const char *kLegacyRun = "run";

const char *treeName(WorkspaceVolume::Tree tree)
{
    switch (tree) {
    case WorkspaceVolume::Tree::Workspace:
        return "workspace";
    case WorkspaceVolume::Tree::Home:
        return "home";
    case WorkspaceVolume::Tree::Run:
        return "run";
    }
    return "workspace";
}

QString spareName(const QString &poolDir, qint64 sizeMb, int n)
{
    return poolDir + QStringLiteral("/spare-%1-%2.ext4").arg(sizeMb).arg(n);
}

QStringList mkfsArguments(const QString &image)
{
    // Without pre-initialised tables: ~15 ms whatever the size.
    return {QStringLiteral("-q"),
            QStringLiteral("-F"),
            QStringLiteral("-m"),
            QStringLiteral("0"),
            QStringLiteral("-E"),
            QStringLiteral("lazy_itable_init=1,lazy_journal_init=1"),
            image};
}

Error failure(const QString &what, int err = 0)
{
    return Error{ErrorCode::SandboxError,
                 err ? what + QStringLiteral(": ") + HostFs::errorText(err) : what,
                 {}};
}

// A loop device for the image, then the mount: syscalls rather than mount(8), a few ms.
// Whether a loop device is still backed by the image: its previous mount, detached lazily at
// the last stop, lives on while any mount namespace still holds it — e.g. that of another
// sandbox's bubblewrap, which copies the host's mounts before it pivots away from them.
bool attachedToLoop(const QString &imagePath)
{
    const QByteArray image = QFile::encodeName(QFileInfo(imagePath).canonicalFilePath());
    const QDir block(QStringLiteral("/sys/block"));
    for (const QString &dev :
         block.entryList({QStringLiteral("loop*")}, QDir::Dirs | QDir::System)) {
        QFile backing(block.filePath(dev) + QStringLiteral("/loop/backing_file"));
        if (backing.open(QIODevice::ReadOnly) && backing.readAll().trimmed() == image)
            return true;
    }
    return false;
}

Result<bool> attachImage(const QString &imagePath, const QString &mountPoint)
{
    // Mounting the image through a second loop device while the first still holds it would show
    // the files as they were on disk, without what the first has not written back yet: wait for
    // the first to go (bounded).
    for (int waited = 0; attachedToLoop(imagePath); waited += 10) {
        if (waited >= 10000)
            return failure(QStringLiteral("the sandbox's disk image is still attached from its "
                                          "previous start"));
        ::usleep(10000);
    }
    const QByteArray image = QFile::encodeName(imagePath);
    const QByteArray target = QFile::encodeName(mountPoint);
    HostFs::Fd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
    if (!control.isValid())
        return failure(QStringLiteral("cannot open /dev/loop-control"), errno);
    HostFs::Fd file(::open(image.constData(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!file.isValid())
        return failure(QStringLiteral("cannot open %1").arg(imagePath), errno);
    for (int attempt = 0; attempt < 8; ++attempt) {
        const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
        if (n < 0)
            break;
        const QByteArray device = "/dev/loop" + QByteArray::number(n);
        HostFs::Fd loop(::open(device.constData(), O_RDWR | O_CLOEXEC));
        if (!loop.isValid())
            continue;
        loop_config config = {};
        config.fd = uint32_t(file.get());
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0)
            continue; // taken meanwhile by someone else: try the next free one
        // Autoclear: the device goes when the mount goes (the fd closes at scope exit).
        if (::mount(device.constData(), target.constData(), "ext4", MS_NOSUID | MS_NODEV, nullptr)
            != 0)
            return failure(QStringLiteral("cannot mount the sandbox's disk image"), errno);
        return true;
    }
    return failure(QStringLiteral("no free loop device"));
}

// An image made before the trees existed has the workspace's files at its root, owned by the
// sandbox: they move into workspace/ (renames, nothing followed), and the root becomes root's.
Result<bool> migrateFlatImage(int volume, uid_t uid, gid_t gid)
{
    HostFs::Fd staging(HostFs::ensureDir(volume, kMigrating, 0700, uid, gid));
    if (!staging.isValid())
        return failure(QStringLiteral("cannot sort out the old disk image"), staging.get());
    if (const int r = HostFs::moveEntries(volume, staging.get(), kMigrating); r < 0)
        return failure(QStringLiteral("cannot move the old workspace's files"), r);
    if (::renameat(volume, kMigrating, volume, treeName(WorkspaceVolume::Tree::Workspace)) != 0)
        return failure(QStringLiteral("cannot move the old workspace's files"), errno);
    return true;
}

// Runs off the event loop: mounts the image if there is one, then makes the three trees.
Result<bool> prepareTrees(const WorkspaceVolume::Layout &l,
                          const std::shared_ptr<std::atomic<bool>> &abandoned)
{
    const bool image = !l.image.isEmpty();
    HostFs::Fd state(HostFs::openOwnDir(l.stateDir));
    if (!state.isValid())
        return failure(QStringLiteral("cannot open %1").arg(l.stateDir), state.get());
    if (::mkdirat(state.get(), kVolume, 0711) != 0 && errno != EEXIST)
        return failure(QStringLiteral("cannot create %1").arg(l.volumeDir), errno);
    if (image) {
        // An engine before volumes mounted images on STATE/workspace.
        WorkspaceVolume::forceUnmount(l.stateDir + u'/' + QLatin1String(kLegacyWorkspace));
        if (abandoned->load())
            return failure(QStringLiteral("the sandbox was stopped while it started"));
        if (!WorkspaceVolume::isMounted(l.volumeDir)) {
            if (const auto attached = attachImage(l.image, l.volumeDir); !attached)
                return attached;
            if (abandoned->load()) {
                WorkspaceVolume::forceUnmount(l.volumeDir);
                return failure(QStringLiteral("the sandbox was stopped while it started"));
            }
        }
    }
    HostFs::Fd volume(
        ::openat(state.get(), kVolume, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!volume.isValid())
        return failure(QStringLiteral("cannot open %1").arg(l.volumeDir), errno);
    struct stat root;
    if (::fstat(volume.get(), &root) != 0)
        return failure(QStringLiteral("cannot open %1").arg(l.volumeDir), errno);
    const bool privileged = ::geteuid() == 0;
    if (image && privileged && root.st_uid != 0) {
        if (const auto migrated = migrateFlatImage(volume.get(), l.uid, l.gid); !migrated)
            return migrated;
    }
    // The volume's root (and lost+found) stay the engine's: the sandbox sees only the trees.
    if ((privileged && (root.st_uid != 0 || root.st_gid != 0) && ::fchown(volume.get(), 0, 0) != 0)
        || ::fchmod(volume.get(), 0711) != 0)
        return failure(QStringLiteral("cannot protect %1").arg(l.volumeDir), errno);

    // Trees an older engine kept beside the volume.
    struct Legacy
    {
        const char *name;
        WorkspaceVolume::Tree tree;
    };
    const Legacy legacy[] = {{kLegacyWorkspace, WorkspaceVolume::Tree::Workspace},
                             {kLegacyHome, WorkspaceVolume::Tree::Home},
                             {kLegacyRun, WorkspaceVolume::Tree::Run}};
    struct stat st;
    for (const Legacy &old : legacy) {
        if (::fstatat(state.get(), old.name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!image && ::renameat(state.get(), old.name, volume.get(), treeName(old.tree)) != 0
            && errno != ENOTEMPTY && errno != EEXIST)
            return failure(QStringLiteral("cannot move %1 into %2")
                               .arg(QLatin1String(old.name), l.volumeDir),
                           errno);
    }

    for (const auto tree : {WorkspaceVolume::Tree::Workspace, WorkspaceVolume::Tree::Home,
                            WorkspaceVolume::Tree::Run}) {
        bool created = false;
        HostFs::Fd dir(
            HostFs::ensureDir(volume.get(), treeName(tree), 0700, l.uid, l.gid, &created));
        if (!dir.isValid())
            return failure(QStringLiteral("cannot create %1")
                               .arg(WorkspaceVolume::treePath(l.volumeDir, tree)),
                           dir.get());
        if (!created && ::fstat(dir.get(), &st) == 0 && (st.st_uid != l.uid || st.st_gid != l.gid)
            && privileged && ::fchown(dir.get(), l.uid, l.gid) != 0)
            return failure(QStringLiteral("cannot hand %1 to uid %2")
                               .arg(WorkspaceVolume::treePath(l.volumeDir, tree))
                               .arg(l.uid),
                           errno);
        if (image && tree == WorkspaceVolume::Tree::Home
            && ::fstatat(state.get(), kLegacyHome, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            // The agent's home moves into the image, where it counts against the disk limit.
            if (S_ISDIR(st.st_mode)) {
                if (const int r = HostFs::copyTreeInto(state.get(), kLegacyHome, dir.get(), l.uid,
                                                       l.gid);
                    r < 0)
                    return failure(QStringLiteral(
                                       "cannot move the agent's home into the sandbox's disk"),
                                   r);
            }
            HostFs::removeTree(state.get(), kLegacyHome);
        }
    }
    if (image) {
        HostFs::removeTree(state.get(), kLegacyRun);             // sockets and lock files only
        ::unlinkat(state.get(), kLegacyWorkspace, AT_REMOVEDIR); // the old, empty mount point
    }
    return true;
}

} // namespace

QString WorkspaceVolume::treePath(const QString &volumeDir, Tree tree)
{
    return volumeDir + u'/' + QLatin1String(treeName(tree));
}

bool WorkspaceVolume::isSupported()
{
    return ::geteuid() == 0 && QFile::exists(QStringLiteral("/dev/loop-control"))
           && QFile::exists(QStringLiteral("/usr/sbin/mkfs.ext4"))
           && QFile::exists(QStringLiteral("/usr/bin/mount"));
}

qint64 WorkspaceVolume::imageMb(const ResourceLimits &limits)
{
    return qMax(kMinImageMb, limits.diskMb - 2 * limits.tmpMb);
}

QString WorkspaceVolume::imagePath(const QString &stateDir)
{
    return stateDir + QStringLiteral("/workspace.ext4");
}

bool WorkspaceVolume::usesImage(const QString &stateDir)
{
    if (QFile::exists(imagePath(stateDir)))
        return true;
    // Files in plain directories stay there: an image is only for a sandbox without any yet.
    const QString volume = stateDir + u'/' + QLatin1String(kVolume);
    const QString dirs[] = {stateDir + u'/' + QLatin1String(kLegacyWorkspace),
                            treePath(volume, Tree::Workspace)};
    for (const QString &dir : dirs) {
        HostFs::Fd fd(HostFs::openOwnDir(dir));
        if (fd.isValid() && !HostFs::isEmptyDir(fd.get()))
            return false;
    }
    return true;
}

WorkspaceVolume::WorkspaceVolume(Layout layout, QObject *parent)
    : QObject(parent)
    , m_layout(std::move(layout))
{}

WorkspaceVolume::~WorkspaceVolume()
{
    m_abandoned->store(true);
    // A mount in flight undoes itself once it sees `abandoned`; waited for, so that an engine
    // that exits now (its spares are often starting) leaves no image mounted behind it.
    if (m_busy) {
        if (m_worker && m_worker->isRunning())
            m_worker->wait(QDeadlineTimer(10000));
        // It may have mounted after its last look at `abandoned`, its answer not yet delivered.
        if (!m_layout.image.isEmpty())
            forceUnmount(m_layout.volumeDir);
    }
    unmount();
}

void WorkspaceVolume::refillPool(const QString &poolDir, qint64 sizeMb, QObject *owner)
{
    for (int n = 0; n < kSparesPerSize; ++n)
        makeSpare(poolDir, sizeMb, n, owner);
}

void WorkspaceVolume::prunePool(const QString &poolDir, const QList<qint64> &sizesMb)
{
    static const QRegularExpression re(QStringLiteral("^spare-(\\d+)-\\d+\\.ext4(\\.tmp)?$"));
    QDir pool(poolDir);
    for (const QString &name : pool.entryList(QDir::Files)) {
        const auto m = re.match(name);
        if (m.hasMatch()
            && (!m.captured(2).isEmpty() || !sizesMb.contains(m.captured(1).toLongLong())))
            pool.remove(name);
    }
}

void WorkspaceVolume::makeSpare(const QString &poolDir, qint64 sizeMb, int n, QObject *owner)
{
    const QString spare = spareName(poolDir, sizeMb, n);
    const QString tmp = spare + QStringLiteral(".tmp");
    if (QFile::exists(spare) || QFile::exists(tmp))
        return; // there, or being made
    QDir().mkpath(poolDir);
    QFile image(tmp);
    if (!image.open(QIODevice::WriteOnly) || !image.resize(sizeMb * 1024 * 1024)) {
        qCWarning(lcVolume) << "cannot create" << tmp << image.errorString();
        return;
    }
    image.close();
    auto *mkfs = new QProcess(owner);
    QObject::connect(mkfs, &QProcess::finished, owner,
                     [mkfs, tmp, spare](int code, QProcess::ExitStatus status) {
                         mkfs->deleteLater();
                         // The rename makes the spare appear whole, or not at all.
                         if (status != QProcess::NormalExit || code != 0
                             || !QFile::rename(tmp, spare))
                             QFile::remove(tmp);
                     });
    mkfs->start(QStringLiteral("/usr/sbin/mkfs.ext4"), mkfsArguments(tmp));
}

void WorkspaceVolume::run(const QString &program, const QStringList &args,
                          std::function<void(Result<bool>)> next)
{
    auto *p = new QProcess(this);
    p->setProcessChannelMode(QProcess::MergedChannels);
    connect(p, &QProcess::finished, this, [p, program, next](int code, QProcess::ExitStatus status) {
        p->deleteLater();
        if (status != QProcess::NormalExit || code != 0)
            return next(Error{ErrorCode::SandboxError,
                              QStringLiteral("%1 failed: %2")
                                  .arg(program, QString::fromLocal8Bit(p->readAll()).trimmed()),
                              {}});
        next(true);
    });
    connect(p, &QProcess::errorOccurred, this, [p, program, next](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart)
            return;
        p->deleteLater();
        next(Error{ErrorCode::SandboxError, QStringLiteral("cannot run %1").arg(program), {}});
    });
    p->start(program, args);
}

void WorkspaceVolume::mount(Done done)
{
    m_busy = true;
    Done finish = [this, done](Result<bool> r) {
        m_busy = false;
        m_mounted = r && !m_layout.image.isEmpty();
        done(r);
    };
    if (m_layout.image.isEmpty() || QFile::exists(m_layout.image))
        return prepare(finish);
    // A new sandbox: take the formatted spare if there is one, and have the next one made.
    bool tookSpare = false;
    for (int n = 0; n < kSparesPerSize && !tookSpare && !m_layout.poolDir.isEmpty(); ++n) {
        tookSpare = ::rename(QFile::encodeName(spareName(m_layout.poolDir, m_layout.imageMb, n))
                                 .constData(),
                             QFile::encodeName(m_layout.image).constData())
                    == 0;
    }
    if (tookSpare)
        return prepare(finish);
    QFile image(m_layout.image);
    if (!image.open(QIODevice::WriteOnly) || !image.resize(m_layout.imageMb * 1024 * 1024))
        return finish(
            Error{ErrorCode::SandboxError,
                  QStringLiteral("cannot create %1: %2").arg(m_layout.image, image.errorString()),
                  {}});
    image.close();
    run(QStringLiteral("/usr/sbin/mkfs.ext4"), mkfsArguments(m_layout.image),
        [this, finish](Result<bool> r) {
            if (!r) {
                QFile::remove(m_layout.image);
                return finish(r);
            }
            prepare(finish);
        });
}

void WorkspaceVolume::prepare(Done done)
{
    m_worker = runOffLoop<Result<bool>>(
        this,
        [layout = m_layout, abandoned = m_abandoned] { return prepareTrees(layout, abandoned); },
        std::move(done));
}

void WorkspaceVolume::unmount()
{
    if (!m_mounted)
        return;
    m_mounted = false;
    forceUnmount(m_layout.volumeDir);
}

QString WorkspaceVolume::release()
{
    return std::exchange(m_mounted, false) ? m_layout.volumeDir : QString();
}

bool WorkspaceVolume::isMounted(const QString &mountPoint)
{
    QFile mounts(QStringLiteral("/proc/self/mountinfo"));
    if (!mounts.open(QIODevice::ReadOnly))
        return false;
    const QByteArray target = ' ' + QFile::encodeName(QDir::cleanPath(mountPoint)) + ' ';
    for (const QByteArray &line : mounts.readAll().split('\n')) {
        // Field 5 is the mount point: "id parent major:minor root mountpoint ..."
        const QList<QByteArray> f = line.split(' ');
        if (f.size() > 4 && ' ' + f[4] + ' ' == target)
            return true;
    }
    return false;
}

void WorkspaceVolume::forceUnmount(const QString &mountPoint)
{
    while (isMounted(mountPoint)) {
        if (::umount2(QFile::encodeName(mountPoint).constData(), MNT_DETACH | UMOUNT_NOFOLLOW)
            != 0) {
            qCWarning(lcVolume) << "cannot unmount" << mountPoint << strerror(errno);
            return;
        }
    }
}

void WorkspaceVolume::discard(const QString &stateDir, const QString &trashDir, QObject *context,
                              std::function<void(Result<bool>)> done)
{
    forceUnmount(stateDir + u'/' + QLatin1String(kVolume));
    forceUnmount(stateDir + u'/' + QLatin1String(kLegacyWorkspace));
    if (!QFileInfo::exists(stateDir))
        return done(true);
    QDir().mkpath(trashDir);
    ::chmod(QFile::encodeName(trashDir).constData(), 0700);
    const QString name = QFileInfo(stateDir).fileName() + u'.'
                         + QString::number(QRandomGenerator::system()->generate64(), 16);
    // One rename takes it out of sight; the slow part follows on another thread.
    if (::rename(QFile::encodeName(stateDir).constData(),
                 QFile::encodeName(trashDir + u'/' + name).constData())
        != 0)
        return done(failure(QStringLiteral("cannot delete %1").arg(stateDir), errno));
    runOffLoop<Result<bool>>(
        context,
        [trashDir, name]() -> Result<bool> {
            HostFs::Fd trash(HostFs::openOwnDir(trashDir));
            const int r = trash.isValid() ? HostFs::removeTree(trash.get(), QFile::encodeName(name))
                                          : trash.get();
            if (r < 0)
                return failure(QStringLiteral("cannot delete %1/%2").arg(trashDir, name), r);
            return true;
        },
        std::move(done));
}

void WorkspaceVolume::emptyTrash(const QString &trashDir, QObject *context)
{
    const QStringList names = QDir(trashDir).entryList(QDir::AllEntries | QDir::NoDotAndDotDot
                                                       | QDir::Hidden | QDir::System);
    if (names.isEmpty())
        return;
    for (const QString &name : names) {
        // A mount left inside by a crash goes first (removeTree never crosses into one).
        forceUnmount(trashDir + u'/' + name + u'/' + QLatin1String(kVolume));
        forceUnmount(trashDir + u'/' + name + u'/' + QLatin1String(kLegacyWorkspace));
    }
    runOffLoop<Result<bool>>(
        context,
        [trashDir, names]() -> Result<bool> {
            HostFs::Fd trash(HostFs::openOwnDir(trashDir));
            if (!trash.isValid())
                return failure(QStringLiteral("cannot open %1").arg(trashDir), trash.get());
            for (const QString &name : names) {
                if (const int r = HostFs::removeTree(trash.get(), QFile::encodeName(name)); r < 0)
                    return failure(QStringLiteral("cannot delete %1/%2").arg(trashDir, name), r);
            }
            return true;
        },
        [](Result<bool> r) {
            if (!r)
                qCWarning(lcVolume).noquote() << r.error().message;
        });
}

} // namespace Sandbox::Engine
