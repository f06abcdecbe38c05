#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

// The `listen` and `peer` ops (PROTOCOL.md). `listen` binds 127.0.0.1:PORT (or [::1]:PORT)
// inside the sandbox's network namespace and hands the listening socket itself to the engine,
// which accepts on it directly: no connection passes through the supervisor, and the engine's
// egress serves a new connection without waking it. This is how the sandbox reaches the
// engine's egress proxy and model gateway, its only way out. `peer` answers who holds the client
// end of one of those connections (the engine asks when it refuses one, for the denial record).
namespace Listener {

inline constexpr int kBacklog = 128;
// The pid of a peer is found through /proc/net/tcp and the processes' fd links: at most this
// many bytes and links are read per question (else pid is null).
inline constexpr size_t kMaxTcpTableBytes = 1024 * 1024;
inline constexpr int kMaxFdLinks = 4096;

// `listen {host:"127.0.0.1"|"::1", port}`: the listening socket (non-blocking, close-on-exec),
// for the caller to hand over and close. Throws RequestError when the request is bad or the
// address cannot be bound (file_error with errno, e.g. EADDRINUSE).
int open(const nlohmann::json &req);

// `peer {host?, port, peerPort}`: {"pid":N|null,"comm":"curl"|null} for the process that holds
// the client end of the connection from peerPort to port. Throws RequestError on a bad request.
nlohmann::json identify(const nlohmann::json &req);

struct Peer
{
    std::optional<int> pid;
    std::string comm;
};
// Who holds the client end of a connection from `peerPort` to `listenPort` on loopback.
Peer findPeer(bool v6, uint16_t peerPort, uint16_t listenPort);

} // namespace Listener
