#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct pollfd;
class FrameChannel;

// The `connect` requests: a connection to a unix socket inside the sandbox, made as the sandbox's
// uid in its mount namespace, non-blocking with a timeout, answered with the connected socket
// attached to the RESPONSE (SCM_RIGHTS). A full backlog (EAGAIN) is retried until the timeout.
class Connector
{
public:
    static constexpr uint64_t kDefaultTimeoutMs = 5000;
    static constexpr uint64_t kMaxTimeoutMs = 60000;
    static constexpr size_t kMaxPending = 64;

    explicit Connector(FrameChannel &channel);
    ~Connector();
    Connector(const Connector &) = delete;
    Connector &operator=(const Connector &) = delete;

    // Starts (or finishes at once) connect `id`. Throws RequestError for invalid requests.
    void start(uint32_t id, const nlohmann::json &req);

    void collectPollFds(std::vector<pollfd> &fds);
    void process(const std::vector<pollfd> &fds);
    int pollTimeoutMs() const; // -1: nothing pending

private:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kRetry{10};

    struct Pending
    {
        int fd = -1;
        std::string path;
        bool inProgress = false; // EINPROGRESS: wait for POLLOUT; otherwise retry at nextTry
        Clock::time_point deadline;
        Clock::time_point nextTry;
    };

    // One connect() attempt. True when the request was answered (connected or failed).
    bool attempt(uint32_t id, Pending &p);
    void succeed(uint32_t id, Pending &p);
    void fail(uint32_t id, Pending &p, int err);

    FrameChannel &m_channel;
    std::map<uint32_t, Pending> m_pending;
    std::vector<std::pair<size_t, uint32_t>> m_slots; // poll index -> id
};
