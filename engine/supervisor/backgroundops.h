#pragma once

#include "reply.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

struct pollfd;

// File operations that may take long (deleting a tree of a million files) run in a child process
// of their own, so that the supervisor keeps answering everything else meanwhile; each is
// answered when its child reports. The child keeps only the one descriptor its work needs (and
// the pipe it reports on): no channel, no exec pipe stays open because of it.
class BackgroundOps
{
public:
    // At most this many at once; more are refused (file_error EBUSY).
    static constexpr size_t kMaxRunning = 8;
    // The child's answer (a JSON object) may not be longer.
    static constexpr size_t kMaxAnswer = 1024 * 1024;

    // The work, run in the child with `keepFd` (the only descriptor it keeps besides its pipe).
    struct Work
    {
        int keepFd = -1; // owned: closed in the supervisor once the child runs
        std::function<Reply(int keepFd)> run;
    };
    using Send = std::function<void(uint32_t id, const Reply &reply)>;

    explicit BackgroundOps(Send send);
    ~BackgroundOps();
    BackgroundOps(const BackgroundOps &) = delete;
    BackgroundOps &operator=(const BackgroundOps &) = delete;

    // Starts request `id`'s work; its answer is sent later (or now, when it cannot start).
    void start(uint32_t id, Work work);

    void collectPollFds(std::vector<pollfd> &fds);
    void process(const std::vector<pollfd> &fds);
    size_t running() const { return m_ops.size(); }

private:
    struct Op
    {
        pid_t pid = -1;
        int fd = -1; // the read end of the child's pipe
        std::string answer;
    };
    void finish(uint32_t id, Op &op);

    Send m_send;
    std::map<uint32_t, Op> m_ops;
    std::vector<std::pair<size_t, uint32_t>> m_slots; // poll index -> id
};
