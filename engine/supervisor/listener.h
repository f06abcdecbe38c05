#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

// The `listen` op (PROTOCOL.md): the supervisor listens on 127.0.0.1:PORT inside the sandbox's
// network namespace and hands every accepted connection to the engine as an EVENT with the
// socket attached (SCM_RIGHTS), so that the engine serves it directly and no byte passes through
// the supervisor. This is how the sandbox reaches the engine's egress proxy and model gateway,
// its only way out. The EVENT says who connected, where it can tell:
// {"peer":"127.0.0.1:P","pid":N|null,"comm":"curl"|null}.
class Listener
{
public:
    static constexpr size_t kMaxListeners = 32;
    static constexpr int kBacklog = 128;
    static constexpr int kAcceptsPerRound = 32;
    // The pid of a peer is found through /proc/net/tcp and the processes' fd links: at most this
    // many bytes and links are read per connection (else pid is null).
    static constexpr size_t kMaxTcpTableBytes = 1024 * 1024;
    static constexpr int kMaxFdLinks = 4096;

    // Sends one EVENT for request `id` carrying `fd` (or -1 for none). False: the engine is gone.
    using EventSink = std::function<bool(uint32_t id, const std::string &json, int fd)>;

    explicit Listener(EventSink sink);
    ~Listener();
    Listener(const Listener &) = delete;
    Listener &operator=(const Listener &) = delete;

    // `listen {host:"127.0.0.1"|"::1", port}`. Throws RequestError when the request is bad or the
    // address cannot be bound (file_error with errno, e.g. EADDRINUSE).
    void start(uint32_t id, const nlohmann::json &req);
    // CANCEL of a listen: closes it; the RESPONSE body ({"accepted":N}). nullopt: not ours.
    std::optional<nlohmann::json> cancel(uint32_t id);
    bool owns(uint32_t id) const { return m_listeners.count(id) > 0; }
    size_t count() const { return m_listeners.size(); }

    void collectPollFds(std::vector<pollfd> &fds);
    void process(const std::vector<pollfd> &fds);

    struct Peer
    {
        std::optional<int> pid;
        std::string comm;
    };
    // Who holds the client end of a connection from `peerPort` to `listenPort` on loopback.
    static Peer findPeer(bool v6, uint16_t peerPort, uint16_t listenPort);

private:
    struct Entry
    {
        int fd = -1;
        bool v6 = false;
        uint16_t port = 0;
        uint64_t accepted = 0;
    };
    void acceptSome(uint32_t id, Entry &e);

    EventSink m_sink;
    std::map<uint32_t, Entry> m_listeners;
};
