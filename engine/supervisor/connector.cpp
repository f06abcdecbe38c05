#include "connector.h"

#include "frame.h"
#include "reply.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using nlohmann::json;

Connector::Connector(FrameChannel &channel)
    : m_channel(channel)
{}

Connector::~Connector()
{
    for (auto &[id, p] : m_pending)
        if (p.fd >= 0)
            ::close(p.fd);
}

void Connector::start(uint32_t id, const json &req)
{
    if (m_pending.count(id))
        throw RequestError("bad_request", "connect " + std::to_string(id) + " is already pending");
    if (m_pending.size() >= kMaxPending)
        throw RequestError("bad_request", "too many connects in progress");
    if (!req.contains("path") || !req["path"].is_string())
        throw RequestError("bad_request", "connect needs a string 'path'");
    const std::string path = req["path"].get<std::string>();
    sockaddr_un addr{};
    if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos
        || path.size() >= sizeof addr.sun_path)
        throw RequestError("bad_request", "'path' must be an absolute socket path of at most "
                                              + std::to_string(sizeof addr.sun_path - 1) + " bytes");
    const uint64_t timeoutMs
        = std::min(optionalUnsigned(req, "timeoutMs").value_or(kDefaultTimeoutMs), kMaxTimeoutMs);
    Pending p;
    p.path = path;
    p.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p.fd < 0)
        throw RequestError("file_error", std::string("socket: ") + std::strerror(errno), errno);
    p.deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    if (!attempt(id, p))
        m_pending.emplace(id, std::move(p));
}

bool Connector::attempt(uint32_t id, Pending &p)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, p.path.data(), p.path.size());
    for (;;) {
        if (::connect(p.fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0) {
            succeed(id, p);
            return true;
        }
        if (errno == EINTR)
            continue;
        break;
    }
    const int err = errno;
    if (err == EINPROGRESS) {
        p.inProgress = true;
        return false;
    }
    if (err == EAGAIN && Clock::now() < p.deadline) { // the listener's backlog is full
        p.nextTry = Clock::now() + kRetry;
        return false;
    }
    fail(id, p, err == EAGAIN ? ETIMEDOUT : err);
    return true;
}

void Connector::succeed(uint32_t id, Pending &p)
{
    m_channel.send(FrameType::Response, id, {"{}"}, {p.fd});
    ::close(p.fd);
    p.fd = -1;
}

void Connector::fail(uint32_t id, Pending &p, int err)
{
    ::close(p.fd);
    p.fd = -1;
    const Reply r = Reply::error(err == ETIMEDOUT ? "file_error" : Reply::codeForErrno(err),
                                 "connect " + p.path + ": " + std::strerror(err), err);
    m_channel.send(FrameType::Response, id,
                   {r.body.dump(-1, ' ', false, json::error_handler_t::replace)});
}

void Connector::collectPollFds(std::vector<pollfd> &fds)
{
    m_slots.clear();
    for (const auto &[id, p] : m_pending) {
        if (!p.inProgress)
            continue;
        m_slots.emplace_back(fds.size(), id);
        fds.push_back({p.fd, POLLOUT, 0});
    }
}

void Connector::process(const std::vector<pollfd> &fds)
{
    for (const auto &[index, id] : m_slots) {
        if (index >= fds.size() || fds[index].revents == 0)
            continue;
        const auto it = m_pending.find(id);
        if (it == m_pending.end())
            continue;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(it->second.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err == 0)
            succeed(id, it->second);
        else
            fail(id, it->second, err);
        m_pending.erase(it);
    }
    m_slots.clear();
    const auto now = Clock::now();
    for (auto it = m_pending.begin(); it != m_pending.end();) {
        Pending &p = it->second;
        bool done = false;
        if (now >= p.deadline) {
            fail(it->first, p, ETIMEDOUT);
            done = true;
        } else if (!p.inProgress && now >= p.nextTry) {
            done = attempt(it->first, p);
        }
        it = done ? m_pending.erase(it) : std::next(it);
    }
}

int Connector::pollTimeoutMs() const
{
    if (m_pending.empty())
        return -1;
    auto next = Clock::time_point::max();
    for (const auto &[id, p] : m_pending)
        next = std::min(next, p.inProgress ? p.deadline : std::min(p.nextTry, p.deadline));
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    return int(std::clamp<long long>(ms, 0, 60 * 1000));
}
