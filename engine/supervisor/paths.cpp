#include "paths.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace {

std::vector<std::string> split(std::string_view path)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        if (end > start)
            parts.emplace_back(path.substr(start, end - start));
        start = end + 1;
    }
    return parts;
}

} // namespace

Paths::~Paths()
{
    if (m_root >= 0)
        ::close(m_root);
}

bool Paths::openRoot(const std::string &hostDir, bool useOpenat2)
{
    m_root = ::open(hostDir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    m_openat2 = useOpenat2;
    return m_root >= 0;
}

std::optional<std::string> Paths::normalise(std::string_view path) const
{
    if (path.find('\0') != std::string_view::npos)
        return std::nullopt;
    const std::string_view root = m_virtualRoot;
    if (!path.empty() && path.front() == '/') {
        if (path.substr(0, root.size()) != root
            || (path.size() > root.size() && path[root.size()] != '/'))
            return std::nullopt;
        path.remove_prefix(root.size());
    }
    std::vector<std::string> out;
    for (auto &part : split(path)) {
        if (part == ".")
            continue;
        if (part == "..") {
            if (out.empty())
                return std::nullopt;
            out.pop_back();
            continue;
        }
        out.push_back(std::move(part));
    }
    std::string rel;
    for (const auto &part : out)
        rel += (rel.empty() ? "" : "/") + part;
    return rel;
}

std::string Paths::virtualPath(const std::string &rel) const
{
    return rel.empty() ? m_virtualRoot : m_virtualRoot + "/" + rel;
}

std::string Paths::parentOf(const std::string &rel)
{
    const auto slash = rel.rfind('/');
    return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string Paths::leafOf(const std::string &rel)
{
    const auto slash = rel.rfind('/');
    return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

int Paths::openAt(const std::string &rel, int flags, mode_t mode) const
{
    if (m_openat2) {
        open_how how{};
        how.flags = uint64_t(flags | O_CLOEXEC);
        how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        const char *p = rel.empty() ? "." : rel.c_str();
        for (int attempt = 0; attempt < 8; ++attempt) {
            const long fd = ::syscall(SYS_openat2, m_root, p, &how, sizeof how);
            if (fd >= 0)
                return int(fd);
            if (errno == EAGAIN || errno == EINTR) // a concurrent rename raced the lookup
                continue;
            if (errno != ENOSYS && errno != EPERM) // EPERM: seccomp filters that deny openat2
                return -errno;
            break;
        }
        if (errno == EAGAIN || errno == EINTR)
            return -errno;
        m_openat2 = false;
    }
    return walk(rel, flags, mode);
}

// The fallback: one component at a time with O_NOFOLLOW, expanding relative symlinks by hand
// and keeping a stack of directory fds so that ".." never climbs above the root.
int Paths::walk(const std::string &rel, int flags, mode_t mode) const
{
    std::vector<std::string> todo = split(rel); // reversed: back() is the next component
    std::vector<int> dirs{::fcntl(m_root, F_DUPFD_CLOEXEC, 0)};
    if (dirs.back() < 0)
        return -errno;
    std::reverse(todo.begin(), todo.end());
    const bool followLast = !(flags & O_NOFOLLOW);
    int links = 0;
    int result = 0; // 0: not opened yet; > 0 fd; < 0 -errno

    while (!todo.empty() && result == 0) {
        const std::string part = todo.back();
        todo.pop_back();
        if (part == ".")
            continue;
        if (part == "..") {
            if (dirs.size() == 1) {
                result = -EXDEV;
                break;
            }
            ::close(dirs.back());
            dirs.pop_back();
            continue;
        }
        const bool last = todo.empty();
        struct stat st;
        if (::fstatat(dirs.back(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISLNK(st.st_mode) && (!last || followLast)) {
            char target[PATH_MAX];
            const ssize_t n = ::readlinkat(dirs.back(), part.c_str(), target, sizeof target - 1);
            if (n < 0) {
                result = -errno;
            } else if (++links > 40) {
                result = -ELOOP;
            } else if (n == 0 || target[0] == '/') {
                result = -EXDEV;
            } else {
                auto parts = split(std::string_view(target, size_t(n)));
                todo.insert(todo.end(), parts.rbegin(), parts.rend());
            }
            continue;
        }
        if (!last) {
            const int fd = ::openat(dirs.back(), part.c_str(),
                                    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0)
                result = -errno;
            else
                dirs.push_back(fd);
            continue;
        }
        const int fd = ::openat(dirs.back(), part.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
        result = fd >= 0 ? fd : -errno;
    }
    if (result == 0) { // the path ended on a directory reached through "." or ".."
        const int fd = ::openat(dirs.back(), ".", flags | O_CLOEXEC, mode);
        result = fd >= 0 ? fd : -errno;
    }
    for (int fd : dirs)
        ::close(fd);
    return result;
}
