#include "workspacevolume.h"

#include <QDir>
#include <QFile>
#include <QLoggingCategory>
#include <QProcess>

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcVolume, "sandboxd.volume")

namespace Sandbox::Engine {

bool WorkspaceVolume::isSupported()
{
    return ::geteuid() == 0 && QFile::exists(QStringLiteral("/dev/loop-control"))
           && QFile::exists(QStringLiteral("/usr/sbin/mkfs.ext4"))
           && QFile::exists(QStringLiteral("/usr/bin/mount"));
}

namespace {

constexpr int kSparesPerSize = 3;

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

} // namespace

WorkspaceVolume::WorkspaceVolume(QString imagePath, QString mountPoint, qint64 sizeMb, uid_t uid,
                                 gid_t gid, QString poolDir, QObject *parent)
    : QObject(parent)
    , m_image(std::move(imagePath))
    , m_mountPoint(std::move(mountPoint))
    , m_sizeMb(sizeMb)
    , m_uid(uid)
    , m_gid(gid)
    , m_poolDir(std::move(poolDir))
{}

void WorkspaceVolume::refillPool(const QString &poolDir, qint64 sizeMb, QObject *owner)
{
    for (int n = 0; n < kSparesPerSize; ++n)
        makeSpare(poolDir, sizeMb, n, owner);
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

Result<bool> WorkspaceVolume::attach()
{
    // A loop device for the image, then the mount: syscalls rather than mount(8), a few ms.
    const QByteArray image = QFile::encodeName(m_image);
    const QByteArray target = QFile::encodeName(m_mountPoint);
    const int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0)
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot open /dev/loop-control: %1")
                         .arg(QString::fromLocal8Bit(strerror(errno))),
                     {}};
    const int file = ::open(image.constData(), O_RDWR | O_CLOEXEC);
    if (file < 0) {
        ::close(control);
        return Error{ErrorCode::SandboxError, QStringLiteral("cannot open %1").arg(m_image), {}};
    }
    Error failure{ErrorCode::SandboxError, QStringLiteral("no free loop device"), {}};
    for (int attempt = 0; attempt < 8; ++attempt) {
        const int n = ::ioctl(control, LOOP_CTL_GET_FREE);
        if (n < 0)
            break;
        const QByteArray device = "/dev/loop" + QByteArray::number(n);
        const int loop = ::open(device.constData(), O_RDWR | O_CLOEXEC);
        if (loop < 0)
            continue;
        loop_config config = {};
        config.fd = uint32_t(file);
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (::ioctl(loop, LOOP_CONFIGURE, &config) != 0) {
            ::close(loop);
            continue; // taken meanwhile by someone else: try the next free one
        }
        const int mounted = ::mount(device.constData(), target.constData(), "ext4",
                                    MS_NOSUID | MS_NODEV, nullptr);
        const int mountErrno = errno;
        ::close(loop); // autoclear: the device goes when the mount goes
        ::close(file);
        ::close(control);
        if (mounted != 0)
            return Error{ErrorCode::SandboxError,
                         QStringLiteral("cannot mount the workspace image: %1")
                             .arg(QString::fromLocal8Bit(strerror(mountErrno))),
                         {}};
        return true;
    }
    ::close(file);
    ::close(control);
    return failure;
}

WorkspaceVolume::~WorkspaceVolume()
{
    unmount();
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
    QDir().mkpath(m_mountPoint);
    if (isMounted(m_mountPoint)) {
        m_mounted = true;
        return done(true);
    }
    auto doMount = [this, done](Result<bool> made) {
        if (!made)
            return done(made.error());
        if (const auto attached = attach(); !attached)
            return done(attached.error());
        m_mounted = true;
        // The file system's root belongs to the sandbox's user; lost+found goes.
        QDir(m_mountPoint + QStringLiteral("/lost+found")).removeRecursively();
        if (::chown(QFile::encodeName(m_mountPoint).constData(), m_uid, m_gid) != 0)
            return done(Error{ErrorCode::SandboxError,
                              QStringLiteral("cannot hand the workspace to its user"),
                              {}});
        ::chmod(QFile::encodeName(m_mountPoint).constData(), 0700);
        done(true);
    };
    if (QFile::exists(m_image))
        return doMount(true);
    // A new sandbox: take the formatted spare if there is one, and have the next one made.
    bool tookSpare = false;
    for (int n = 0; n < kSparesPerSize && !tookSpare && !m_poolDir.isEmpty(); ++n) {
        tookSpare = ::rename(QFile::encodeName(spareName(m_poolDir, m_sizeMb, n)).constData(),
                             QFile::encodeName(m_image).constData())
                    == 0;
    }
    if (tookSpare)
        return doMount(true);
    QFile image(m_image);
    if (!image.open(QIODevice::WriteOnly) || !image.resize(m_sizeMb * 1024 * 1024))
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("cannot create %1: %2").arg(m_image, image.errorString()),
                          {}});
    image.close();
    run(QStringLiteral("/usr/sbin/mkfs.ext4"), mkfsArguments(m_image),
        [this, doMount](Result<bool> r) {
            if (!r)
                QFile::remove(m_image);
            doMount(r);
        });
}

void WorkspaceVolume::unmount()
{
    if (!m_mounted)
        return;
    m_mounted = false;
    forceUnmount(m_mountPoint);
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
        if (::umount2(QFile::encodeName(mountPoint).constData(), MNT_DETACH) != 0) {
            qCWarning(lcVolume) << "cannot unmount" << mountPoint << strerror(errno);
            return;
        }
    }
}

} // namespace Sandbox::Engine
