#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct pollfd;
class FrameChannel;
class Paths;

// The `watch` requests: changes below a directory of the sandbox, seen with inotify as the
// sandbox's uid, sent to the engine as EVENT frames until the request is cancelled. Bounded: at
// most kMaxWatches requests, kMaxDirs watched directories each; changes are coalesced over a
// window of kWindow (one entry per path), and a window with more than kMaxWindowEntries entries
// or kMaxWindowBytes of paths, or an inotify queue overflow, collapses into one `rescan` entry —
// after which the watch sends at most one `rescan` per kFloodWindow until a window passes quiet.
class Watcher
{
public:
    static constexpr size_t kMaxWatches = 32;
    static constexpr size_t kMaxDirs = 4096;
    static constexpr size_t kMaxWindowEntries = 256;
    static constexpr size_t kMaxWindowBytes = 256 * 1024;
    static constexpr size_t kMaxFrameBytes = 60 * 1024; // below SupervisorWire::MaxEvent
    static constexpr std::chrono::milliseconds kWindow{100};
    static constexpr std::chrono::milliseconds kFloodWindow{1000};

    explicit Watcher(FrameChannel &channel);
    ~Watcher();
    Watcher(const Watcher &) = delete;
    Watcher &operator=(const Watcher &) = delete;

    // Starts watch `id` below `paths` and sends its first EVENT ({"ready":true, ...}). Throws
    // RequestError for invalid requests (answered by the caller).
    void start(uint32_t id, const nlohmann::json &req, const Paths &paths);
    // Ends watch `id` and answers it ({"cancelled":true}); false when `id` is no watch.
    bool cancel(uint32_t id);

    void collectPollFds(std::vector<pollfd> &fds);
    void process(const std::vector<pollfd> &fds);
    int pollTimeoutMs() const; // -1: nothing to flush

private:
    using Clock = std::chrono::steady_clock;
    struct Watch;

    void readEvents(Watch &w);
    void flush(uint32_t id, Watch &w);
    void finish(uint32_t id, const nlohmann::json &answer);

    FrameChannel &m_channel;
    std::map<uint32_t, std::unique_ptr<Watch>> m_watches;
    std::vector<std::pair<size_t, uint32_t>> m_slots; // poll index -> id
};
