#pragma once

// Plain POSIX, shared by the supervisor (inside the sandbox) and the engine's HostFs: both walk
// a tree the sandbox can change while they walk it.

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace DirStream {

// Opens the directory `name` of dirFd without following a link, and only if it is the directory
// (dev, ino) seen before (it was not swapped meanwhile: errno EXDEV). nullptr and errno if not.
inline DIR *openChecked(int dirFd, const char *name, dev_t dev, ino_t ino)
{
    const int fd = ::openat(dirFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
        ::close(fd);
        errno = EXDEV;
        return nullptr;
    }
    DIR *d = ::fdopendir(fd);
    if (!d)
        ::close(fd);
    return d;
}

} // namespace DirStream
