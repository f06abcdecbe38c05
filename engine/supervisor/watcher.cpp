#include "watcher.h"

#include "frame.h"
#include "paths.h"
#include "reply.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

using nlohmann::json;

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
                           | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
                           | IN_EXCL_UNLINK | IN_ONLYDIR;
constexpr size_t kReadBuffer = 64 * 1024;
constexpr int kReadsPerWakeup = 16; // so that a flood cannot hog the loop

std::string joinRel(const std::string &rel, const std::string &name)
{
    return rel.empty() ? name : rel + "/" + name;
}

} // namespace

struct Watcher::Watch
{
    struct Entry
    {
        std::string type;
        std::string path;
        std::string from; // rename only
        bool isDir = false;
    };

    int fd = -1;                  // inotify
    const Paths *paths = nullptr; // not owned: the supervisor's, alive as long as it runs
    std::string base;             // the watched directory, relative to paths' root
    std::string root;
    bool recursive = false;
    bool truncated = false;
    int rootWd = -1;
    bool rootGone = false;
    std::unordered_map<int, std::string> dirs; // wd -> directory relative to root ("": root)
    std::vector<Entry> entries;
    std::unordered_map<std::string, size_t> index; // path -> entries
    size_t bytes = 0;
    bool overflow = false; // this window collapses into one rescan
    bool flooding = false; // a rescan went out: at most one per kFloodWindow
    bool active = false;   // something happened in this window
    std::optional<Clock::time_point> flushAt;
    std::unordered_map<uint32_t, std::pair<std::string, bool>> moves; // cookie -> from (rel)

    ~Watch()
    {
        if (fd >= 0)
            ::close(fd);
    }

    std::string virtualPath(const std::string &rel) const
    {
        return rel.empty() ? root : root + "/" + rel;
    }

    void touch()
    {
        active = true;
        if (!flushAt)
            flushAt = Clock::now() + (flooding ? kFloodWindow : kWindow);
    }

    void record(const char *type, const std::string &rel, bool isDir, const std::string &from = {})
    {
        touch();
        if (overflow || flooding)
            return;
        const std::string path = virtualPath(rel);
        const auto it = index.find(path);
        if (it != index.end() && from.empty() && entries[it->second].from.empty()) {
            Entry &e = entries[it->second];
            // One entry per path and window: a file made and written is "create"; the last
            // word wins otherwise.
            if (!(e.type == "create" && std::strcmp(type, "modify") == 0))
                e.type = type;
            e.isDir = isDir;
            return;
        }
        bytes += path.size() + from.size() + 64;
        index[path] = entries.size();
        entries.push_back({type, path, from.empty() ? std::string() : virtualPath(from), isDir});
        if (entries.size() > kMaxWindowEntries || bytes > kMaxWindowBytes) {
            overflow = true;
            entries.clear();
            index.clear();
            bytes = 0;
        }
    }

    // Watches directory `dirFd` (any open fd of it) as `rel`; false when it cannot (cap, limit).
    bool add(int dirFd, const std::string &rel)
    {
        if (dirs.size() >= kMaxDirs) {
            truncated = true;
            return false;
        }
        char proc[64];
        std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirFd);
        const int wd = ::inotify_add_watch(fd, proc, kMask);
        if (wd < 0) {
            truncated = true;
            return false;
        }
        dirs[wd] = rel;
        return true;
    }

    // Watches `rel` (open as `dirFd`, taken) and, when recursive, the directories below it;
    // with `report`, what is found there is recorded as created (a directory that appeared).
    void walk(int dirFd, const std::string &rel, bool report)
    {
        std::deque<std::pair<int, std::string>> todo{{dirFd, rel}};
        while (!todo.empty()) {
            auto [dfd, drel] = todo.front();
            todo.pop_front();
            if (!add(dfd, drel) || (!recursive && !report)) {
                ::close(dfd);
                continue;
            }
            DIR *d = ::fdopendir(dfd);
            if (!d) {
                ::close(dfd);
                continue;
            }
            while (dirent *de = ::readdir(d)) {
                const std::string name = de->d_name;
                if (name == "." || name == "..")
                    continue;
                bool isDir = de->d_type == DT_DIR;
                if (de->d_type == DT_UNKNOWN) {
                    struct stat st;
                    isDir = ::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
                            && S_ISDIR(st.st_mode);
                }
                const std::string childRel = joinRel(drel, name);
                if (report)
                    record("create", childRel, isDir);
                if (isDir && recursive && dirs.size() + todo.size() < kMaxDirs) {
                    const int child = ::openat(::dirfd(d), de->d_name,
                                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                    if (child >= 0)
                        todo.emplace_back(child, childRel);
                } else if (isDir && recursive) {
                    truncated = true;
                }
            }
            ::closedir(d);
        }
    }

    // A directory appeared in a recursive watch: watched from now on, and what was made in it
    // before that is reported as created.
    void added(const std::string &rel)
    {
        const int dirFd = paths->openAt(joinRel(base, rel), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (dirFd >= 0)
            walk(dirFd, rel, true);
    }

    // Stops watching `rel` and everything below it (moved out of the tree).
    void drop(const std::string &rel)
    {
        for (auto it = dirs.begin(); it != dirs.end();) {
            if (it->first != rootWd && (it->second == rel || it->second.rfind(rel + "/", 0) == 0)) {
                ::inotify_rm_watch(fd, it->first);
                it = dirs.erase(it);
            } else {
                ++it;
            }
        }
    }

    // A directory moved within the tree: what is below it is named from its new place.
    void rename(const std::string &from, const std::string &to)
    {
        for (auto &[wd, rel] : dirs) {
            if (rel == from)
                rel = to;
            else if (rel.rfind(from + "/", 0) == 0)
                rel = to + rel.substr(from.size());
        }
    }
};

Watcher::Watcher(FrameChannel &channel)
    : m_channel(channel)
{}

Watcher::~Watcher() = default;

void Watcher::start(uint32_t id, const json &req, const Paths &paths)
{
    if (!req.contains("path") || !req["path"].is_string())
        throw RequestError("bad_request", "'path' must be a path string");
    const bool recursive = optionalBool(req, "recursive");
    if (m_watches.size() >= kMaxWatches)
        throw RequestError("too_large",
                           "at most " + std::to_string(kMaxWatches) + " watches per sandbox");
    const std::string path = req["path"].get<std::string>();
    const auto rel = paths.normalise(path);
    if (!rel)
        throw RequestError("path_not_allowed", "path '" + path + "' is outside " + paths.root());
    const std::string virt = paths.virtualPath(*rel);
    const int dirFd = paths.openAt(*rel, O_RDONLY | O_DIRECTORY);
    if (dirFd == -EXDEV)
        throw RequestError("path_not_allowed", virt + ": resolves outside " + paths.root());
    if (dirFd < 0)
        throwErrno(-dirFd, virt);

    auto w = std::make_unique<Watch>();
    w->fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) {
        const int err = errno;
        ::close(dirFd);
        throwErrno(err, virt);
    }
    w->paths = &paths;
    w->base = *rel;
    w->root = virt;
    w->recursive = recursive;
    w->walk(dirFd, "", false);
    for (const auto &[wd, r] : w->dirs)
        if (r.empty())
            w->rootWd = wd;
    if (w->rootWd < 0)
        throw RequestError("file_error", virt + ": cannot watch it (the inotify limit is reached)");
    const json ready = {{"ready", true},
                        {"path", virt},
                        {"recursive", recursive},
                        {"dirs", w->dirs.size()},
                        {"truncated", w->truncated}};
    m_channel.send(FrameType::Event, id,
                   {ready.dump(-1, ' ', false, json::error_handler_t::replace)});
    m_watches.emplace(id, std::move(w));
}

bool Watcher::cancel(uint32_t id)
{
    if (!m_watches.count(id))
        return false;
    finish(id, {{"cancelled", true}});
    return true;
}

void Watcher::finish(uint32_t id, const json &answer)
{
    m_watches.erase(id);
    m_channel.send(FrameType::Response, id, {answer.dump()});
}

void Watcher::collectPollFds(std::vector<pollfd> &fds)
{
    m_slots.clear();
    for (const auto &[id, w] : m_watches) {
        m_slots.emplace_back(fds.size(), id);
        fds.push_back({w->fd, POLLIN, 0});
    }
}

void Watcher::process(const std::vector<pollfd> &fds)
{
    for (const auto &[slot, id] : m_slots) {
        const auto it = m_watches.find(id);
        if (it != m_watches.end() && slot < fds.size() && fds[slot].revents != 0)
            readEvents(*it->second);
    }
    const auto now = Clock::now();
    for (auto it = m_watches.begin(); it != m_watches.end();) {
        const uint32_t id = it->first;
        Watch &w = *it->second;
        ++it; // finish() may erase this one
        if (w.rootGone) {
            flush(id, w);
            finish(id, {{"deleted", true}});
        } else if (w.flushAt && *w.flushAt <= now) {
            flush(id, w);
        }
    }
}

int Watcher::pollTimeoutMs() const
{
    std::optional<Clock::time_point> first;
    for (const auto &[id, w] : m_watches)
        if (w->flushAt && (!first || *w->flushAt < *first))
            first = w->flushAt;
    if (!first)
        return -1;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*first - Clock::now()).count();
    return ms < 0 ? 0 : int(ms);
}

void Watcher::readEvents(Watch &w)
{
    alignas(inotify_event) char buf[kReadBuffer];
    for (int reads = 0; reads < kReadsPerWakeup; ++reads) {
        const ssize_t n = ::read(w.fd, buf, sizeof buf);
        if (n <= 0)
            return; // EAGAIN: all read
        for (char *p = buf; p < buf + n;) {
            const auto *ev = reinterpret_cast<const inotify_event *>(p);
            p += sizeof(inotify_event) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                w.overflow = true;
                w.touch();
                continue;
            }
            const auto dir = w.dirs.find(ev->wd);
            if (dir == w.dirs.end())
                continue;
            if (ev->mask & IN_IGNORED) {
                if (ev->wd == w.rootWd)
                    w.rootGone = true;
                w.dirs.erase(dir);
                continue;
            }
            if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
                if (ev->wd == w.rootWd) {
                    w.rootGone = true;
                    w.record("delete", "", true);
                }
                continue;
            }
            if (ev->len == 0)
                continue;
            const std::string rel = joinRel(dir->second, ev->name);
            const bool isDir = ev->mask & IN_ISDIR;
            if (ev->mask & IN_MOVED_FROM) {
                w.moves[ev->cookie] = {rel, isDir};
                w.touch();
            } else if (ev->mask & IN_MOVED_TO) {
                const auto from = w.moves.find(ev->cookie);
                if (from != w.moves.end()) {
                    if (isDir)
                        w.rename(from->second.first, rel);
                    w.record("rename", rel, isDir, from->second.first);
                    w.moves.erase(from);
                } else {
                    w.record("create", rel, isDir);
                    if (isDir && w.recursive)
                        w.added(rel);
                }
            } else if (ev->mask & IN_CREATE) {
                w.record("create", rel, isDir);
                if (isDir && w.recursive)
                    w.added(rel);
            } else if (ev->mask & IN_DELETE) {
                w.record("delete", rel, isDir);
            } else if (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB)) {
                if (!isDir)
                    w.record("modify", rel, false);
            }
        }
    }
}

void Watcher::flush(uint32_t id, Watch &w)
{
    w.flushAt.reset();
    // A move out of the tree has no partner: the entry is gone from here.
    for (const auto &[cookie, from] : w.moves) {
        if (from.second)
            w.drop(from.first);
        w.record("delete", from.first, from.second);
    }
    w.moves.clear();
    w.flushAt.reset();

    auto send = [&](const json &events) {
        const json frame = {{"events", events}};
        m_channel.send(FrameType::Event, id,
                       {frame.dump(-1, ' ', false, json::error_handler_t::replace)});
    };
    if (w.overflow || (w.flooding && w.active)) {
        send(json::array({{{"type", "rescan"}, {"path", w.root}, {"isDir", true}}}));
        w.flooding = true;
        // A quiet window ends the flood; until then one rescan per kFloodWindow at most.
        w.flushAt = Clock::now() + kFloodWindow;
    } else {
        w.flooding = false;
        json batch = json::array();
        size_t size = 0;
        for (const Watch::Entry &e : w.entries) {
            json item = {{"type", e.type}, {"path", e.path}, {"isDir", e.isDir}};
            if (!e.from.empty())
                item["from"] = e.from;
            const size_t itemSize = e.path.size() + e.from.size() + 64;
            if (size + itemSize > kMaxFrameBytes && !batch.empty()) {
                send(batch);
                batch = json::array();
                size = 0;
            }
            batch.push_back(std::move(item));
            size += itemSize;
        }
        if (!batch.empty())
            send(batch);
    }
    w.entries.clear();
    w.index.clear();
    w.bytes = 0;
    w.overflow = false;
    w.active = false;
}
