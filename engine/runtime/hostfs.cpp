#include "hostfs.h"

#include "supervisor/dirstream.h"

#include <QFile>
#include <QList>
#include <QRandomGenerator>
#include <QSet>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

namespace Sandbox::Engine::HostFs {

namespace {

// Directory streams kept open while deleting a deep tree; deeper levels are reopened through
// ".." (checked against the device and inode seen on the way down) when the walk comes back.
constexpr int kMaxOpenLevels = 48;
constexpr int kMaxCopyDepth = 256;
constexpr int kMaxPasses = 3;

bool isDotOrDotDot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

// The components of a relative path; false for "..", "." or an absolute path.
bool components(const QByteArray &rel, QList<QByteArray> &out)
{
    if (rel.startsWith('/') || rel.contains('\0'))
        return false;
    for (const QByteArray &part : rel.split('/')) {
        if (part.isEmpty())
            continue;
        if (part == "." || part == "..")
            return false;
        out.append(part);
    }
    return true;
}

bool needsChown(uid_t uid, gid_t gid)
{
    return uid != ::geteuid() || gid != ::getegid();
}

// An O_RDONLY directory stream for dirFd (which may be an O_PATH fd), or null.
DIR *openStream(int dirFd)
{
    const int fd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    DIR *d = ::fdopendir(fd);
    if (!d)
        ::close(fd);
    return d;
}

int copyEntry(int srcDir, const char *name, int dstDir, uid_t uid, gid_t gid, int depth);

int copyDirContents(int src, int dst, uid_t uid, gid_t gid, int depth)
{
    DIR *d = openStream(src);
    if (!d)
        return -errno;
    int first = 0;
    while (dirent *e = ::readdir(d)) {
        if (isDotOrDotDot(e->d_name))
            continue;
        const int r = copyEntry(::dirfd(d), e->d_name, dst, uid, gid, depth + 1);
        if (r < 0 && first == 0)
            first = r;
    }
    ::closedir(d);
    return first;
}

int copyEntry(int srcDir, const char *name, int dstDir, uid_t uid, gid_t gid, int depth)
{
    struct stat st;
    if (::fstatat(srcDir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    const bool chown = needsChown(uid, gid);
    if (S_ISDIR(st.st_mode)) {
        if (depth > kMaxCopyDepth)
            return -ELOOP;
        Fd dst(ensureDir(dstDir, name, (st.st_mode & 0777) | 0700, uid, gid));
        if (!dst.isValid())
            return dst.get();
        Fd src(::openat(srcDir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!src.isValid())
            return -errno;
        return copyDirContents(src.get(), dst.get(), uid, gid, depth);
    }
    if (S_ISLNK(st.st_mode)) {
        QByteArray target(4096, '\0');
        const ssize_t n = ::readlinkat(srcDir, name, target.data(), size_t(target.size()));
        if (n < 0)
            return -errno;
        target.truncate(n);
        if (::symlinkat(target.constData(), dstDir, name) != 0)
            return -errno;
        if (chown && ::fchownat(dstDir, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
            return -errno;
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return 0; // FIFOs, sockets and devices are not copied
    Fd src(::openat(srcDir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!src.isValid())
        return -errno;
    struct stat sst;
    if (::fstat(src.get(), &sst) != 0 || !S_ISREG(sst.st_mode))
        return -EINVAL;
    Fd dst(::openat(dstDir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!dst.isValid())
        return -errno;
    if (chown && ::fchown(dst.get(), uid, gid) != 0)
        return -errno;
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(src.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(dst.get(), buf + done, size_t(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -errno;
            done += w;
        }
    }
    // Never a set-id bit on a file the engine made.
    if (::fchmod(dst.get(), sst.st_mode & 0777) != 0)
        return -errno;
    return 0;
}

} // namespace

void Fd::reset(int fd)
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = fd;
}

QString errorText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err < 0 ? -err : err));
}

int openBeneath(int dirFd, const QByteArray &rel, int flags, mode_t mode)
{
    QList<QByteArray> parts;
    if (!components(rel, parts))
        return -EXDEV;
    flags |= O_CLOEXEC;
    const QByteArray clean = parts.isEmpty() ? QByteArray(".") : parts.join('/');
    open_how how{};
    how.flags = uint64_t(flags); // RESOLVE_NO_SYMLINKS refuses a final link too, with ELOOP
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0; attempt < 8; ++attempt) {
        const long fd = ::syscall(SYS_openat2, dirFd, clean.constData(), &how, sizeof how);
        if (fd >= 0)
            return int(fd);
        if (errno == EAGAIN || errno == EINTR)
            continue;
        if (errno != ENOSYS)
            return -errno;
        break;
    }
    if (errno != ENOSYS)
        return -errno;
    // Kernels before 5.6: one component at a time, none of them a link.
    Fd dir(::fcntl(dirFd, F_DUPFD_CLOEXEC, 0));
    if (!dir.isValid())
        return -errno;
    for (qsizetype i = 0; i + 1 < parts.size(); ++i) {
        Fd next(::openat(dir.get(), parts[i].constData(),
                         O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.isValid())
            return -errno;
        dir = std::move(next);
    }
    const char *last = parts.isEmpty() ? "." : parts.last().constData();
    const int fd = ::openat(dir.get(), last, flags | O_NOFOLLOW, mode);
    if (fd < 0 && errno == ENOTDIR) {
        struct stat st;
        if (::fstatat(dir.get(), last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            return -ELOOP;
        errno = ENOTDIR;
    }
    return fd >= 0 ? fd : -errno;
}

int openOwnDir(const QString &path)
{
    const int fd = ::open(QFile::encodeName(path).constData(),
                          O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int ensureDir(int dirFd, const QByteArray &name, mode_t mode, uid_t uid, gid_t gid, bool *created)
{
    if (name.isEmpty() || name.contains('/') || name == "." || name == "..")
        return -EINVAL;
    const bool made = ::mkdirat(dirFd, name.constData(), 0700) == 0;
    if (!made && errno != EEXIST)
        return -errno;
    Fd fd(::openat(dirFd, name.constData(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.isValid()) {
        const int err = errno;
        struct stat st;
        if (err == ENOTDIR && ::fstatat(dirFd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISLNK(st.st_mode))
            return -ELOOP;
        return -err;
    }
    if (made) {
        // Handed over through the fd that was just opened: a swap of the name cannot redirect it.
        if (needsChown(uid, gid) && ::fchown(fd.get(), uid, gid) != 0)
            return -errno;
        if (::fchmod(fd.get(), mode) != 0)
            return -errno;
    }
    if (created)
        *created = made;
    return fd.release();
}

int ensureDirs(int dirFd, const QByteArray &rel, mode_t mode, uid_t uid, gid_t gid)
{
    QList<QByteArray> parts;
    if (!components(rel, parts))
        return -EXDEV;
    Fd dir(::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.isValid())
        return -errno;
    for (const QByteArray &part : std::as_const(parts)) {
        Fd next(ensureDir(dir.get(), part, mode, uid, gid));
        if (!next.isValid())
            return next.get();
        dir = std::move(next);
    }
    return dir.release();
}

int writeFileAt(int dirFd, const QByteArray &name, QByteArrayView data, mode_t mode, uid_t uid,
                gid_t gid)
{
    if (name.isEmpty() || name.contains('/') || name == "." || name == "..")
        return -EINVAL;
    const QByteArray tmp = '.' + name.left(100) + ".sandboxd-"
                           + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
    Fd fd(::openat(dirFd, tmp.constData(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0600));
    if (!fd.isValid())
        return -errno;
    int result = 0;
    if (needsChown(uid, gid) && ::fchown(fd.get(), uid, gid) != 0)
        result = -errno;
    for (qsizetype done = 0; result == 0 && done < data.size();) {
        const ssize_t n = ::write(fd.get(), data.data() + done, size_t(data.size() - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            result = -errno;
        else
            done += n;
    }
    if (result == 0 && ::fchmod(fd.get(), mode) != 0)
        result = -errno;
    if (result == 0 && ::renameat(dirFd, tmp.constData(), dirFd, name.constData()) != 0)
        result = -errno;
    if (result != 0)
        ::unlinkat(dirFd, tmp.constData(), 0);
    return result;
}

int removeTree(int parentFd, const QByteArray &name)
{
    struct stat st;
    if (::fstatat(parentFd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return ::unlinkat(parentFd, name.constData(), 0) == 0 || errno == ENOENT ? 0 : -errno;
    struct stat parent;
    if (::fstat(parentFd, &parent) != 0)
        return -errno;
    if (parent.st_dev != st.st_dev)
        return -EBUSY; // a mount point: never deleted through

    struct Level
    {
        QByteArray name; // in the level above
        dev_t dev;
        ino_t ino;
        DIR *dir;              // null while closed to save descriptors
        QSet<QByteArray> skip; // entries that could not be removed
        int passes = 0;
    };
    const dev_t device = st.st_dev;
    int first = 0;
    auto note = [&first](int err) {
        if (first == 0)
            first = -err;
    };
    std::vector<Level> stack;
    stack.push_back({name,
                     st.st_dev,
                     st.st_ino,
                     DirStream::openChecked(parentFd, name.constData(), st.st_dev, st.st_ino),
                     {},
                     0});
    if (!stack.back().dir)
        return -errno;
    int open = 1;

    while (!stack.empty()) {
        Level &top = stack.back();
        errno = 0;
        dirent *e = ::readdir(top.dir);
        if (e) {
            if (isDotOrDotDot(e->d_name) || top.skip.contains(QByteArray(e->d_name)))
                continue;
            const int fd = ::dirfd(top.dir);
            struct stat cst;
            if (::fstatat(fd, e->d_name, &cst, AT_SYMLINK_NOFOLLOW) != 0) {
                if (errno != ENOENT) {
                    note(errno);
                    top.skip.insert(QByteArray(e->d_name));
                }
                continue;
            }
            if (!S_ISDIR(cst.st_mode)) {
                if (::unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT) {
                    note(errno);
                    top.skip.insert(QByteArray(e->d_name));
                }
                continue;
            }
            if (cst.st_dev != device) {
                note(EBUSY);
                top.skip.insert(QByteArray(e->d_name));
                continue;
            }
            DIR *child = DirStream::openChecked(fd, e->d_name, cst.st_dev, cst.st_ino);
            if (!child) {
                note(errno);
                top.skip.insert(QByteArray(e->d_name));
                continue;
            }
            const QByteArray childName(e->d_name);
            if (++open > kMaxOpenLevels) {
                // Close the shallowest open stream; it is reopened through ".." on the way back.
                for (Level &l : stack) {
                    if (l.dir) {
                        ::closedir(l.dir);
                        l.dir = nullptr;
                        --open;
                        break;
                    }
                }
            }
            stack.push_back({childName, cst.st_dev, cst.st_ino, child, {}, 0});
            continue;
        }
        if (errno != 0)
            note(errno);
        // The end of this directory. A second pass finds entries a live process made meanwhile.
        if (errno == 0 && ++top.passes < kMaxPasses && !isEmptyDir(::dirfd(top.dir))) {
            ::rewinddir(top.dir);
            continue;
        }
        if (stack.size() == 1) {
            ::closedir(top.dir);
            if (::unlinkat(parentFd, top.name.constData(), AT_REMOVEDIR) != 0 && errno != ENOENT)
                note(errno);
            break;
        }
        Level &up = stack[stack.size() - 2];
        if (!up.dir) {
            up.dir = DirStream::openChecked(::dirfd(top.dir), "..", up.dev, up.ino);
            if (!up.dir) {
                // The tree was moved under us: stop rather than guess where we are.
                note(errno ? errno : EXDEV);
                for (Level &l : stack) {
                    if (l.dir)
                        ::closedir(l.dir);
                }
                return first;
            }
            ++open;
        }
        ::closedir(top.dir);
        --open;
        const QByteArray done = top.name;
        stack.pop_back();
        Level &parentLevel = stack.back();
        if (::unlinkat(::dirfd(parentLevel.dir), done.constData(), AT_REMOVEDIR) != 0
            && errno != ENOENT) {
            note(errno);
            parentLevel.skip.insert(done);
        }
    }
    return first;
}

int copyTreeInto(int srcParentFd, const QByteArray &name, int dstDirFd, uid_t uid, gid_t gid)
{
    struct stat st;
    if (::fstatat(srcParentFd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    Fd src(::openat(srcParentFd, name.constData(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!src.isValid())
        return -errno;
    return copyDirContents(src.get(), dstDirFd, uid, gid, 0);
}

int moveEntries(int srcDirFd, int dstDirFd, const QByteArray &keep)
{
    int first = 0;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
        DIR *d = openStream(srcDirFd);
        if (!d)
            return -errno;
        int moved = 0;
        while (dirent *e = ::readdir(d)) {
            if (isDotOrDotDot(e->d_name) || (!keep.isEmpty() && keep == e->d_name))
                continue;
            if (::renameat(::dirfd(d), e->d_name, dstDirFd, e->d_name) == 0)
                ++moved;
            else if (first == 0)
                first = -errno;
        }
        ::closedir(d);
        if (moved == 0)
            break;
    }
    return first;
}

bool isEmptyDir(int dirFd)
{
    DIR *d = openStream(dirFd);
    if (!d)
        return false;
    bool empty = true;
    while (dirent *e = ::readdir(d)) {
        if (!isDotOrDotDot(e->d_name)) {
            empty = false;
            break;
        }
    }
    ::closedir(d);
    return empty;
}

} // namespace Sandbox::Engine::HostFs
