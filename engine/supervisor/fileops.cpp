#include "fileops.h"

#include "dirstream.h"
#include "paths.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <random>
#include <set>
#include <unistd.h>
#include <vector>

using nlohmann::json;

namespace {

// Closes an fd at scope exit.
struct Fd
{
    int fd;
    explicit Fd(int f)
        : fd(f)
    {}
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    operator int() const { return fd; }
};

// A mode is a number (420) or an octal string ("0644").
std::optional<mode_t> optMode(const json &req)
{
    if (!req.contains("mode") || req["mode"].is_null())
        return std::nullopt;
    const json &m = req["mode"];
    if (m.is_number_integer() && m.get<int64_t>() >= 0 && m.get<int64_t>() <= 07777)
        return mode_t(m.get<int64_t>());
    if (m.is_string()) {
        const std::string s = m.get<std::string>();
        char *end = nullptr;
        const unsigned long v = std::strtoul(s.c_str(), &end, 8);
        if (!s.empty() && *end == '\0' && v <= 07777)
            return mode_t(v);
    }
    throw RequestError(
        "bad_request",
        "'mode' must be a permission number (e.g. 420) or an octal string (\"0644\")");
}

void writeAll(int fd, std::string_view data, const std::string &virt)
{
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR)
                continue;
            throwErrno(errno, virt);
        }
        data.remove_prefix(size_t(n));
    }
}

std::string readLink(int dirFd, const std::string &name)
{
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(dirFd, name.c_str(), buf, sizeof buf);
    return n < 0 ? std::string() : std::string(buf, size_t(n));
}

std::string isoTime(const timespec &ts)
{
    tm t{};
    ::gmtime_r(&ts.tv_sec, &t);
    char buf[40];
    const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
    std::snprintf(buf + n, sizeof buf - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return buf;
}

// "a FIFO", "a socket", ... for an error that names what is in the way.
const char *kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

[[noreturn]] void notRegular(const std::string &virt, mode_t mode)
{
    if (S_ISDIR(mode))
        throwErrno(EISDIR, virt);
    throw RequestError("file_error", virt + ": not a regular file (" + kindOf(mode) + ")",
                       S_ISFIFO(mode) || S_ISSOCK(mode) ? ENXIO : EINVAL);
}

std::vector<std::string> dirNames(int dirFd, size_t limit, bool &more)
{
    std::vector<std::string> names;
    more = false;
    const int fd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (!dir) {
        if (fd >= 0)
            ::close(fd);
        return names;
    }
    while (dirent *d = ::readdir(dir)) {
        const std::string name = d->d_name;
        if (name == "." || name == "..")
            continue;
        if (names.size() >= limit) {
            more = true;
            break;
        }
        names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

FileOps::FileOps(const Paths &paths)
    : m_paths(paths)
{}

bool FileOps::handles(const std::string &op)
{
    return op == "readFile" || op == "writeFile" || op == "list" || op == "stat" || op == "mkdir"
           || op == "delete" || op == "rename";
}

Reply FileOps::handle(const std::string &op, const json &req, std::string_view data)
{
    if (op == "readFile")
        return readFile(req);
    if (op == "writeFile")
        return writeFile(req, data);
    if (op == "list")
        return list(req);
    if (op == "stat")
        return stat(req);
    if (op == "mkdir")
        return mkdir(req);
    if (op == "delete")
        return remove(req);
    return rename(req);
}

FileOps::Target FileOps::target(const json &req, const char *key) const
{
    if (!req.contains(key) || !req[key].is_string())
        throw RequestError("bad_request", std::string("'") + key + "' must be a path string");
    const std::string path = req[key].get<std::string>();
    if (path.empty())
        throw RequestError("bad_request", std::string("'") + key + "' is empty");
    const auto rel = m_paths.normalise(path);
    if (!rel)
        throw RequestError("path_not_allowed", "path '" + path + "' is outside " + m_paths.root());
    return {*rel, m_paths.virtualPath(*rel)};
}

int FileOps::openChecked(const std::string &rel, const std::string &virt, int flags) const
{
    const int fd = m_paths.openAt(rel, flags);
    if (fd == -EXDEV)
        throw RequestError("path_not_allowed", virt + ": resolves outside " + m_paths.root());
    if (fd < 0)
        throwErrno(-fd, virt);
    return fd;
}

int FileOps::openParent(const std::string &rel, const std::string &virt) const
{
    return openChecked(Paths::parentOf(rel), virt, O_PATH | O_DIRECTORY);
}

void FileOps::makeDirs(const std::string &rel, bool includingLast) const
{
    std::string prefix;
    size_t pos = 0;
    while (pos < rel.size()) {
        size_t end = rel.find('/', pos);
        if (end == std::string::npos) {
            if (!includingLast)
                return;
            end = rel.size();
        }
        prefix = rel.substr(0, end);
        pos = end + 1;
        const std::string virt = m_paths.virtualPath(prefix);
        Fd parent(openParent(prefix, virt));
        if (::mkdirat(parent, Paths::leafOf(prefix).c_str(), 0777) < 0 && errno != EEXIST)
            throwErrno(errno, virt);
        ::close(
            openChecked(prefix, virt, O_PATH | O_DIRECTORY)); // an existing non-directory: ENOTDIR
    }
}

json FileOps::entry(int dirFd, const std::string &name, const std::string &virt,
                    const struct stat &st)
{
    const char *type = S_ISREG(st.st_mode)   ? "file"
                       : S_ISDIR(st.st_mode) ? "directory"
                       : S_ISLNK(st.st_mode) ? "symlink"
                                             : "other";
    return {{"name", name},
            {"path", virt},
            {"type", type},
            {"size", uint64_t(st.st_size)},
            {"mode", unsigned(st.st_mode & 07777)},
            {"mtime", isoTime(st.st_mtim)},
            {"target", S_ISLNK(st.st_mode) ? json(readLink(dirFd, name)) : json(nullptr)}};
}

int FileOps::openRegular(const std::string &rel, const std::string &virt, int flags,
                         struct stat &st) const
{
    // Looked at before it is opened: opening a FIFO, a socket or a device does things (blocks,
    // fails oddly, talks to hardware) that a file method must not.
    Fd probe(openChecked(rel, virt, O_PATH));
    if (::fstat(probe, &st) < 0)
        throwErrno(errno, virt);
    if (!S_ISREG(st.st_mode))
        notRegular(virt, st.st_mode);
    const int fd = openChecked(rel, virt, flags | O_NONBLOCK | O_NOCTTY);
    struct stat now;
    if (::fstat(fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        // Swapped for something else between the look and the open.
        ::close(fd);
        throw RequestError("file_error", virt + ": changed while it was opened", EAGAIN);
    }
    st = now;
    return fd;
}

Reply FileOps::readFile(const json &req)
{
    const Target t = target(req, "path");
    const uint64_t offset = optionalUnsigned(req, "offset").value_or(0);
    const uint64_t length = std::min(optionalUnsigned(req, "length").value_or(kMaxRead), kMaxRead);
    struct stat st;
    Fd fd(openRegular(t.rel, t.virt, O_RDONLY, st));

    const uint64_t size = uint64_t(st.st_size);
    const uint64_t start = std::min(offset, size);
    Reply r;
    r.hasData = true;
    r.data.resize(size_t(std::min(length, size - start)));
    size_t got = 0;
    while (got < r.data.size()) {
        const ssize_t n = ::pread(fd, r.data.data() + got, r.data.size() - got, off_t(start + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throwErrno(errno, t.virt);
        if (n == 0)
            break; // the file shrank meanwhile
        got += size_t(n);
    }
    r.data.resize(got);
    r.body
        = {{"path", t.virt}, {"size", size}, {"offset", start}, {"truncated", start + got < size}};
    return r;
}

Reply FileOps::writeFile(const json &req, std::string_view data)
{
    const Target t = target(req, "path");
    const bool append = optionalBool(req, "append");
    const auto mode = optMode(req);
    if (t.rel.empty())
        throwErrno(EISDIR, t.virt);
    if (optionalBool(req, "parents")) {
        makeDirs(t.rel, false);
    } else if (const std::string parent = Paths::parentOf(t.rel); !parent.empty()) {
        const int fd = m_paths.openAt(parent, O_PATH | O_DIRECTORY);
        if (fd == -ENOENT)
            throw RequestError("not_found",
                               m_paths.virtualPath(parent)
                                   + ": no such directory (parents: false creates none)",
                               ENOENT);
        if (fd >= 0)
            ::close(fd);
    }

    // A final symlink is followed, as long as it stays inside the workspace.
    std::string rel = t.rel;
    for (int hops = 0;; ++hops) {
        Fd dir(openParent(rel, t.virt));
        const std::string leaf = Paths::leafOf(rel);
        struct stat st;
        const bool exists = ::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && S_ISLNK(st.st_mode)) {
            if (hops >= 40)
                throwErrno(ELOOP, t.virt);
            const std::string link = readLink(dir, leaf);
            const std::string parent = Paths::parentOf(rel);
            const auto next = link.empty() || link.front() == '/'
                                  ? std::nullopt
                                  : m_paths.normalise(parent.empty() ? link : parent + "/" + link);
            if (!next)
                throw RequestError("path_not_allowed",
                                   t.virt + ": symlink leads outside " + m_paths.root());
            if (next->empty())
                throwErrno(EISDIR, t.virt);
            rel = *next;
            continue;
        }

        // What is there must be a file: a FIFO, a socket or a device is neither written into
        // (it could block or reach hardware) nor silently replaced.
        if (exists && !S_ISREG(st.st_mode))
            notRegular(t.virt, st.st_mode);

        if (append) {
            Fd fd(::openat(dir, leaf.c_str(),
                           O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
                               | O_CLOEXEC,
                           mode.value_or(0644)));
            if (fd < 0)
                throwErrno(errno, t.virt);
            struct stat fst;
            if (::fstat(fd, &fst) == 0 && !S_ISREG(fst.st_mode))
                notRegular(t.virt, fst.st_mode);
            writeAll(fd, data, t.virt);
            ::fstat(fd, &fst);
            Reply r;
            r.body = {{"path", t.virt}, {"size", uint64_t(fst.st_size)}};
            return r;
        }

        // Atomic replace: a temporary file in the same directory, renamed over the target.
        static std::mt19937_64 rng{std::random_device{}()};
        char suffix[32];
        std::snprintf(suffix, sizeof suffix, ".tmp-%016llx", static_cast<unsigned long long>(rng()));
        const std::string tmp = "." + leaf.substr(0, 200) + suffix;
        Fd fd(
            ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd < 0)
            throwErrno(errno, t.virt);
        const mode_t finalMode = mode.value_or(exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777)
                                                                             : 0644);
        try {
            writeAll(fd, data, t.virt);
            if (::fchmod(fd, finalMode) < 0 || ::renameat(dir, tmp.c_str(), dir, leaf.c_str()) < 0)
                throwErrno(errno, t.virt);
        } catch (...) {
            ::unlinkat(dir, tmp.c_str(), 0);
            throw;
        }
        Reply r;
        r.body = {{"path", t.virt}, {"size", uint64_t(data.size())}};
        return r;
    }
}

void FileOps::listDir(int dirFd, const std::string &virt, bool recursive, int depth, json &entries,
                      bool &truncated) const
{
    bool more = false;
    const auto names = dirNames(dirFd, kMaxListEntries - entries.size(), more);
    truncated = truncated || more;
    for (const auto &name : names) {
        if (entries.size() >= kMaxListEntries) {
            truncated = true;
            return;
        }
        struct stat st;
        if (::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; // removed meanwhile
        const std::string path = virt + "/" + name;
        entries.push_back(entry(dirFd, name, path, st));
        if (recursive && S_ISDIR(st.st_mode)) {
            if (depth >= 256) {
                truncated = true;
                continue;
            }
            Fd sub(::openat(dirFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub >= 0)
                listDir(sub, path, true, depth + 1, entries, truncated);
        }
    }
}

Reply FileOps::list(const json &req)
{
    const Target t = target(req, "path");
    Fd fd(openChecked(t.rel, t.virt, O_RDONLY | O_DIRECTORY));
    json entries = json::array();
    bool truncated = false;
    listDir(fd, t.virt, optionalBool(req, "recursive"), 0, entries, truncated);
    Reply r;
    r.body = {{"path", t.virt}, {"entries", std::move(entries)}, {"truncated", truncated}};
    return r;
}

Reply FileOps::stat(const json &req)
{
    const Target t = target(req, "path");
    struct stat st;
    Reply r;
    if (t.rel.empty()) {
        if (::fstat(m_paths.rootFd(), &st) < 0)
            throwErrno(errno, t.virt);
        r.body = entry(m_paths.rootFd(), Paths::leafOf(m_paths.root()), t.virt, st);
        return r;
    }
    Fd dir(openParent(t.rel, t.virt));
    const std::string leaf = Paths::leafOf(t.rel);
    if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        throwErrno(errno, t.virt);
    r.body = entry(dir, leaf, t.virt, st);
    return r;
}

Reply FileOps::mkdir(const json &req)
{
    const Target t = target(req, "path");
    Reply r;
    r.body = {{"path", t.virt}};
    if (optionalBool(req, "parents")) {
        struct stat st;
        Fd dir(t.rel.empty() ? -1 : m_paths.openAt(Paths::parentOf(t.rel), O_PATH | O_DIRECTORY));
        if (dir >= 0 && ::fstatat(dir, Paths::leafOf(t.rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
            && !S_ISDIR(st.st_mode))
            throw RequestError("already_exists", t.virt + ": exists and is not a directory", EEXIST);
        makeDirs(t.rel, true);
        return r;
    }
    if (t.rel.empty())
        throw RequestError("already_exists", t.virt + ": already exists", EEXIST);
    Fd dir(openParent(t.rel, t.virt));
    if (::mkdirat(dir, Paths::leafOf(t.rel).c_str(), 0777) < 0) {
        if (errno == EEXIST)
            throw RequestError("already_exists", t.virt + ": already exists", EEXIST);
        throwErrno(errno, t.virt);
    }
    return r;
}

void FileOps::removeTree(int parentFd, const std::string &name, const std::string &virt,
                         std::chrono::steady_clock::time_point deadline)
{
    // Depth first without recursion, with a bounded number of open directories whatever the
    // depth: deeper levels are closed and reopened through ".." (checked against the device and
    // inode seen on the way down) when the walk comes back. Nothing is followed through a link.
    constexpr size_t kMaxOpen = 48;
    struct Level
    {
        std::string name;
        dev_t dev;
        ino_t ino;
        DIR *dir; // null while closed
        std::set<std::string> skip;
    };
    struct stat top;
    if (::fstatat(parentFd, name.c_str(), &top, AT_SYMLINK_NOFOLLOW) < 0)
        throwErrno(errno, virt);
    std::vector<Level> stack;
    stack.push_back({name,
                     top.st_dev,
                     top.st_ino,
                     DirStream::openChecked(parentFd, name.c_str(), top.st_dev, top.st_ino),
                     {}});
    if (!stack.back().dir)
        throwErrno(errno, virt);
    size_t open = 1;
    int firstError = 0;
    std::string firstPath;
    auto note = [&](int err, const std::string &what) {
        if (firstError == 0) {
            firstError = err;
            firstPath = what;
        }
    };
    auto pathOf = [&stack](const std::string &leaf) {
        std::string p = stack.front().name;
        for (size_t i = 1; i < stack.size(); ++i)
            p += "/" + stack[i].name;
        return leaf.empty() ? p : p + "/" + leaf;
    };
    const std::string base = Paths::parentOf(virt);
    size_t seen = 0;
    while (!stack.empty()) {
        if (++seen % 1024 == 0 && std::chrono::steady_clock::now() > deadline) {
            for (Level &l : stack)
                if (l.dir)
                    ::closedir(l.dir);
            throw RequestError("file_error",
                               virt + ": deleting took longer than "
                                   + std::to_string(kMaxDeleteTime.count())
                                   + " s; what is left stays (delete again to go on)",
                               ETIMEDOUT);
        }
        Level &cur = stack.back();
        errno = 0;
        dirent *e = ::readdir(cur.dir);
        if (e) {
            const std::string child = e->d_name;
            if (child == "." || child == ".." || cur.skip.count(child))
                continue;
            const int fd = ::dirfd(cur.dir);
            struct stat st;
            if (::fstatat(fd, child.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT) {
                    note(errno, pathOf(child));
                    cur.skip.insert(child);
                }
                continue;
            }
            if (!S_ISDIR(st.st_mode) || st.st_dev != top.st_dev) {
                if (::unlinkat(fd, child.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0
                    && errno != ENOENT) {
                    note(errno, pathOf(child));
                    cur.skip.insert(child);
                }
                continue;
            }
            DIR *sub = DirStream::openChecked(fd, child.c_str(), st.st_dev, st.st_ino);
            if (!sub) {
                note(errno, pathOf(child));
                cur.skip.insert(child);
                continue;
            }
            if (++open > kMaxOpen) {
                for (Level &l : stack) {
                    if (l.dir) {
                        ::closedir(l.dir);
                        l.dir = nullptr;
                        --open;
                        break;
                    }
                }
            }
            stack.push_back({child, st.st_dev, st.st_ino, sub, {}});
            continue;
        }
        if (errno != 0)
            note(errno, pathOf({}));
        if (stack.size() == 1) {
            ::closedir(cur.dir);
            break; // the caller removes the top directory itself
        }
        Level &up = stack[stack.size() - 2];
        if (!up.dir) {
            up.dir = DirStream::openChecked(::dirfd(cur.dir), "..", up.dev, up.ino);
            if (!up.dir) {
                // Moved away meanwhile: stop rather than guess where the walk is.
                note(errno ? errno : EXDEV, pathOf({}));
                for (Level &l : stack)
                    if (l.dir)
                        ::closedir(l.dir);
                break;
            }
            ++open;
        }
        ::closedir(cur.dir);
        --open;
        const std::string done = cur.name;
        stack.pop_back();
        if (::unlinkat(::dirfd(stack.back().dir), done.c_str(), AT_REMOVEDIR) < 0
            && errno != ENOENT) {
            note(errno, pathOf(done));
            stack.back().skip.insert(done);
        }
    }
    if (firstError != 0)
        throwErrno(firstError, (base.empty() ? std::string() : base + "/") + firstPath);
}

Reply FileOps::remove(const json &req)
{
    const Target t = target(req, "path");
    if (t.rel.empty())
        throw RequestError("path_not_allowed", "refusing to delete " + m_paths.root() + " itself");
    Fd dir(openParent(t.rel, t.virt));
    const std::string leaf = Paths::leafOf(t.rel);
    struct stat st;
    if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        throwErrno(errno, t.virt);
    const bool isDir = S_ISDIR(st.st_mode);
    if (isDir && optionalBool(req, "recursive"))
        removeTree(dir, leaf, t.virt, std::chrono::steady_clock::now() + kMaxDeleteTime);
    if (::unlinkat(dir, leaf.c_str(), isDir ? AT_REMOVEDIR : 0) < 0) {
        if (errno == EEXIST) // some file systems say EEXIST for a non-empty directory
            throwErrno(ENOTEMPTY, t.virt);
        throwErrno(errno, t.virt);
    }
    Reply r;
    r.body = {{"path", t.virt}};
    return r;
}

std::optional<BackgroundOps::Work> FileOps::longWork(const std::string &op, const json &req)
{
    if (op != "delete" || !optionalBool(req, "recursive"))
        return std::nullopt;
    const Target t = target(req, "path");
    if (t.rel.empty())
        return std::nullopt; // refused by remove()
    Fd dir(openParent(t.rel, t.virt));
    const std::string leaf = Paths::leafOf(t.rel);
    struct stat st;
    if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
        return std::nullopt; // answered inline
    BackgroundOps::Work work;
    work.keepFd = dir.fd;
    dir.fd = -1;
    work.run = [leaf, virt = t.virt](int dirFd) {
        removeTree(dirFd, leaf, virt, std::chrono::steady_clock::now() + kMaxDeleteTime);
        if (::unlinkat(dirFd, leaf.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT)
            throwErrno(errno == EEXIST ? ENOTEMPTY : errno, virt);
        Reply r;
        r.body = {{"path", virt}};
        return r;
    };
    return work;
}

Reply FileOps::rename(const json &req)
{
    const Target from = target(req, "from");
    const Target to = target(req, "to");
    if (from.rel.empty() || to.rel.empty())
        throw RequestError("path_not_allowed", "cannot rename " + m_paths.root() + " itself");
    Fd fromDir(openParent(from.rel, from.virt));
    Fd toDir(openParent(to.rel, to.virt));
    if (::renameat(fromDir, Paths::leafOf(from.rel).c_str(), toDir, Paths::leafOf(to.rel).c_str())
        < 0)
        throwErrno(errno, from.virt + " -> " + to.virt);
    Reply r;
    r.body = {{"from", from.virt}, {"to", to.virt}};
    return r;
}
