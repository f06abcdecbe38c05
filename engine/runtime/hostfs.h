#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

#include <sys/types.h>

namespace Sandbox::Engine::HostFs {

// The engine's one way of touching a tree a sandbox can write (its workspace, agent home, run
// directory) from the host: relative to a directory fd, one component at a time or with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), never following a symbolic link, never by a
// path the sandbox could change between a check and its use. Every function is thread-safe
// (no shared state) and blocking: call the slow ones (removeTree, copyTree) off the event loop.
// Errors are returned as -errno.

// An owned file descriptor.
class Fd final
{
public:
    Fd() = default;
    explicit Fd(int fd)
        : m_fd(fd)
    {}
    ~Fd() { reset(); }
    Fd(Fd &&other) noexcept
        : m_fd(other.release())
    {}
    Fd &operator=(Fd &&other) noexcept
    {
        if (this != &other)
            reset(other.release());
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const { return m_fd; }
    bool isValid() const { return m_fd >= 0; }
    int release()
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }
    void reset(int fd = -1);

private:
    int m_fd = -1;
};

// "No such file or directory" for -ENOENT (or ENOENT).
QString errorText(int err);

// Opens `rel` ("a/b/c": no "..", not absolute, "" for dirFd itself) below dirFd with `flags`
// (O_CLOEXEC and O_NOFOLLOW are added), refusing any symlink on the way (-ELOOP) and any escape
// (-EXDEV). Returns the fd or -errno.
int openBeneath(int dirFd, const QByteArray &rel, int flags, mode_t mode = 0);

// A host directory the engine owns (not the sandbox's): opened as O_PATH | O_DIRECTORY, with the
// final component not followed. Returns the fd or -errno.
int openOwnDir(const QString &path);

// The directory `name` in dirFd, made with `mode` and handed to uid/gid when it is new; an
// existing one must be a real directory (a symlink is -ELOOP, a file -ENOTDIR). Returns an
// O_RDONLY | O_DIRECTORY fd or -errno. *created tells whether it was made now.
int ensureDir(int dirFd, const QByteArray &name, mode_t mode, uid_t uid, gid_t gid,
              bool *created = nullptr);
// The same for every component of `rel` ("a/b/c"); returns the last one's fd.
int ensureDirs(int dirFd, const QByteArray &rel, mode_t mode, uid_t uid, gid_t gid);

// Replaces `name` in dirFd by a new file holding `data`: written to a fresh temporary file
// (O_EXCL | O_NOFOLLOW) owned by uid/gid, then renamed over `name` — a link planted at `name`
// is replaced, never followed. Returns 0 or -errno.
int writeFileAt(int dirFd, const QByteArray &name, QByteArrayView data, mode_t mode, uid_t uid,
                gid_t gid);

// Deletes `name` in parentFd and, for a directory, everything below it: fd-relative, never
// following a link, never crossing into another file system (a mount point below is left and
// reported as -EBUSY), with a bounded number of open fds whatever the depth. Returns 0 or the
// first -errno met (what could be deleted is deleted).
int removeTree(int parentFd, const QByteArray &name);

// Copies the tree `name` of srcParentFd into the (existing) directory dstDirFd: directories,
// regular files and symlinks (as links, never followed) are made there owned by uid/gid; other
// kinds (FIFOs, sockets, devices) are skipped. Returns 0 or the first -errno.
int copyTreeInto(int srcParentFd, const QByteArray &name, int dstDirFd, uid_t uid, gid_t gid);

// Moves every entry of srcDirFd into dstDirFd (renameat: links and all are moved as they are),
// except the entry named `keep`. Returns 0 or the first -errno.
int moveEntries(int srcDirFd, int dstDirFd, const QByteArray &keep = {});

// True when dirFd's directory has no entries (besides . and ..).
bool isEmptyDir(int dirFd);

} // namespace Sandbox::Engine::HostFs
