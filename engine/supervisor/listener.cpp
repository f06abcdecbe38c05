#include "listener.h"

#include "reply.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using nlohmann::json;

namespace {

// The port of a "ADDR:PORT" field of /proc/net/tcp{,6} (hex), or -1.
long portOf(const char *field)
{
    const char *colon = std::strrchr(field, ':');
    if (!colon)
        return -1;
    char *end = nullptr;
    const long port = std::strtol(colon + 1, &end, 16);
    return end && *end == '\0' ? port : -1;
}

// The inode of the socket whose local port is `localPort` and remote port `remotePort`.
unsigned long socketInode(const char *table, uint16_t localPort, uint16_t remotePort)
{
    const int fd = ::open(table, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    std::string text;
    char buf[65536];
    while (text.size() < Listener::kMaxTcpTableBytes) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        text.append(buf, size_t(n));
    }
    ::close(fd);
    size_t pos = text.find('\n'); // the header line
    while (pos != std::string::npos && pos + 1 < text.size()) {
        const size_t end = text.find('\n', pos + 1);
        const std::string line = text.substr(pos + 1, end == std::string::npos ? std::string::npos
                                                                               : end - pos - 1);
        pos = end;
        char slot[32], local[64], remote[64], state[8], queues[40], timer[40], retr[16], uid[16],
            timeout[16];
        unsigned long inode = 0;
        if (std::sscanf(line.c_str(), "%31s %63s %63s %7s %39s %39s %15s %15s %15s %lu", slot,
                        local, remote, state, queues, timer, retr, uid, timeout, &inode)
            != 10)
            continue;
        if (portOf(local) == localPort && portOf(remote) == remotePort && inode != 0)
            return inode;
    }
    return 0;
}

bool isDigits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9')
            return false;
    }
    return true;
}

// A process name as the engine may show it: printable, no quotes or controls, at most 15 chars.
std::string cleanComm(const char *raw, size_t n)
{
    std::string out;
    for (size_t i = 0; i < n && out.size() < 15; ++i) {
        const char c = raw[i];
        if (c == '\n' || c == '\0')
            break;
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '.' || c == '_' || c == '-' || c == '+' || c == ' ' || c == ':';
        out.push_back(ok ? c : '?');
    }
    return out;
}

} // namespace

Listener::Listener(EventSink sink)
    : m_sink(std::move(sink))
{}

Listener::~Listener()
{
    for (auto &[id, e] : m_listeners)
        ::close(e.fd);
}

void Listener::start(uint32_t id, const json &req)
{
    if (m_listeners.count(id))
        throw RequestError("bad_request", "listen " + std::to_string(id) + " is already open");
    if (m_listeners.size() >= kMaxListeners)
        throw RequestError("too_large",
                           "at most " + std::to_string(kMaxListeners) + " listeners at once");
    const std::string host = req.contains("host") && req["host"].is_string()
                                 ? req["host"].get<std::string>()
                                 : std::string("127.0.0.1");
    if (host != "127.0.0.1" && host != "::1")
        throw RequestError("bad_request", "listen: host must be 127.0.0.1 or ::1");
    const auto port = optionalUnsigned(req, "port");
    if (!port || *port == 0 || *port > 65535)
        throw RequestError("bad_request", "listen: port must be 1..65535");
    Entry e;
    e.v6 = host == "::1";
    e.port = uint16_t(*port);
    e.fd = ::socket(e.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (e.fd < 0)
        throwErrno(errno, "listen socket");
    const int one = 1;
    ::setsockopt(e.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (e.v6) {
        ::setsockopt(e.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(e.port);
        a.sin6_addr = in6addr_loopback;
        rc = ::bind(e.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(e.port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(e.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(e.fd, kBacklog) != 0) {
        const int err = errno;
        ::close(e.fd);
        throwErrno(err, "listen on " + host + ":" + std::to_string(e.port));
    }
    m_listeners.emplace(id, e);
}

std::optional<json> Listener::cancel(uint32_t id)
{
    const auto it = m_listeners.find(id);
    if (it == m_listeners.end())
        return std::nullopt;
    json body = {{"accepted", it->second.accepted}, {"cancelled", true}};
    ::close(it->second.fd);
    m_listeners.erase(it);
    return body;
}

void Listener::collectPollFds(std::vector<pollfd> &fds)
{
    for (const auto &[id, e] : m_listeners)
        fds.push_back({e.fd, POLLIN, 0});
}

void Listener::process(const std::vector<pollfd> &fds)
{
    for (const pollfd &p : fds) {
        if (!(p.revents & POLLIN))
            continue;
        for (auto &[id, e] : m_listeners) {
            if (e.fd == p.fd) {
                acceptSome(id, e);
                break;
            }
        }
    }
}

void Listener::acceptSome(uint32_t id, Entry &e)
{
    for (int i = 0; i < kAcceptsPerRound; ++i) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        const int fd = ::accept4(e.fd, reinterpret_cast<sockaddr *>(&peer), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; // EAGAIN, or a connection that went away (ECONNABORTED): next round
        ++e.accepted;
        uint16_t peerPort = 0;
        std::string peerText;
        if (peer.ss_family == AF_INET6) {
            peerPort = ntohs(reinterpret_cast<sockaddr_in6 *>(&peer)->sin6_port);
            peerText = "[::1]:" + std::to_string(peerPort);
        } else {
            peerPort = ntohs(reinterpret_cast<sockaddr_in *>(&peer)->sin_port);
            peerText = "127.0.0.1:" + std::to_string(peerPort);
        }
        const Peer who = findPeer(e.v6, peerPort, e.port);
        json event = {{"peer", peerText}, {"pid", nullptr}, {"comm", nullptr}};
        if (who.pid)
            event["pid"] = *who.pid;
        if (!who.comm.empty())
            event["comm"] = who.comm;
        const bool sent = m_sink(id, event.dump(), fd);
        ::close(fd); // the engine holds its own copy now
        if (!sent)
            return;
    }
}

Listener::Peer Listener::findPeer(bool v6, uint16_t peerPort, uint16_t listenPort)
{
    Peer out;
    const unsigned long inode = socketInode(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", peerPort,
                                            listenPort);
    if (inode == 0)
        return out;
    const std::string wanted = "socket:[" + std::to_string(inode) + "]";
    DIR *proc = ::opendir("/proc");
    if (!proc)
        return out;
    int budget = kMaxFdLinks;
    const pid_t self = ::getpid();
    while (dirent *d = ::readdir(proc)) {
        if (!isDigits(d->d_name) || std::atoi(d->d_name) == self)
            continue;
        const std::string fdDir = std::string("/proc/") + d->d_name + "/fd";
        const int dirFd = ::open(fdDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirFd < 0)
            continue; // gone, or not ours to read
        DIR *fds = ::fdopendir(dirFd);
        if (!fds) {
            ::close(dirFd);
            continue;
        }
        bool found = false;
        while (dirent *f = ::readdir(fds)) {
            if (f->d_name[0] == '.')
                continue;
            if (--budget < 0)
                break;
            char link[64];
            const ssize_t n = ::readlinkat(dirFd, f->d_name, link, sizeof link - 1);
            if (n > 0 && size_t(n) == wanted.size()
                && std::memcmp(link, wanted.data(), size_t(n)) == 0) {
                found = true;
                break;
            }
        }
        ::closedir(fds);
        if (found) {
            out.pid = std::atoi(d->d_name);
            const std::string commPath = std::string("/proc/") + d->d_name + "/comm";
            const int c = ::open(commPath.c_str(), O_RDONLY | O_CLOEXEC);
            if (c >= 0) {
                char buf[32];
                const ssize_t n = ::read(c, buf, sizeof buf);
                if (n > 0)
                    out.comm = cleanComm(buf, size_t(n));
                ::close(c);
            }
            break;
        }
        if (budget < 0)
            break;
    }
    ::closedir(proc);
    return out;
}
