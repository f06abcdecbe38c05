#include "listener.h"

#include "reply.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
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

namespace Listener {

namespace {

// {host?:"127.0.0.1"|"::1"} → v6?
bool hostIsV6(const json &req, const char *op)
{
    const std::string host = req.contains("host") && req["host"].is_string()
                                 ? req["host"].get<std::string>()
                                 : std::string("127.0.0.1");
    if (host != "127.0.0.1" && host != "::1")
        throw RequestError("bad_request", std::string(op) + ": host must be 127.0.0.1 or ::1");
    return host == "::1";
}

uint16_t portField(const json &req, const char *op, const char *name)
{
    const auto port = optionalUnsigned(req, name);
    if (!port || *port == 0 || *port > 65535)
        throw RequestError("bad_request", std::string(op) + ": " + name + " must be 1..65535");
    return uint16_t(*port);
}

} // namespace

int open(const json &req)
{
    const bool v6 = hostIsV6(req, "listen");
    const uint16_t port = portField(req, "listen", "port");
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throwErrno(errno, "listen socket");
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(fd, kBacklog) != 0) {
        const int err = errno;
        ::close(fd);
        throwErrno(err, std::string("listen on ") + (v6 ? "::1" : "127.0.0.1") + ":"
                            + std::to_string(port));
    }
    return fd;
}

json identify(const json &req)
{
    const bool v6 = hostIsV6(req, "peer");
    const uint16_t port = portField(req, "peer", "port");
    const uint16_t peerPort = portField(req, "peer", "peerPort");
    const Peer who = findPeer(v6, peerPort, port);
    json body = {{"pid", nullptr}, {"comm", nullptr}};
    if (who.pid)
        body["pid"] = *who.pid;
    if (!who.comm.empty())
        body["comm"] = who.comm;
    return body;
}

Peer findPeer(bool v6, uint16_t peerPort, uint16_t listenPort)
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

} // namespace Listener
