#include "supervisor.h"

#include "paths.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <unistd.h>

using nlohmann::json;

namespace {

constexpr size_t kMaxRoots = 16;

} // namespace

Supervisor::Supervisor(int channelFd, const Paths &workspace, bool useOpenat2,
                       const Guard::ChildOomScore &oomScore)
    : m_channel(channelFd)
    , m_files(workspace)
    , m_execs(workspace, m_channel, oomScore)
    , m_connector(m_channel)
    , m_background([this](uint32_t id, const Reply &reply) { respond(id, reply); })
    , m_watcher(m_channel)
    , m_workspace(workspace)
    , m_useOpenat2(useOpenat2)
    , m_started(std::chrono::steady_clock::now())
{}

int Supervisor::run()
{
    if (!m_execs.init()) {
        std::fprintf(stderr, "sandbox-supervisor: signalfd: %s\n", std::strerror(errno));
        return 1;
    }
    const json hello = {{"pid", ::getpid()}, {"version", SupervisorWire::Version}};
    m_channel.send(FrameType::Hello, 0, {hello.dump()});

    std::vector<pollfd> fds;
    while (!m_channel.broken()) {
        fds.clear();
        const bool acceptInput = m_execs.pendingStdin() < ExecRunner::kStdinHighWater;
        fds.push_back({m_channel.fd(), short(acceptInput ? POLLIN : 0), 0});
        m_execs.collectPollFds(fds);
        m_connector.collectPollFds(fds);
        m_background.collectPollFds(fds);
        m_watcher.collectPollFds(fds);
        int timeout = m_execs.pollTimeoutMs();
        for (const int t : {m_connector.pollTimeoutMs(), m_watcher.pollTimeoutMs()})
            if (t >= 0 && (timeout < 0 || t < timeout))
                timeout = t;
        if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
            std::fprintf(stderr, "sandbox-supervisor: poll: %s\n", std::strerror(errno));
            return 1;
        }
        if (fds[0].revents != 0) {
            const auto result = m_channel.readAvailable();
            while (auto frame = m_channel.next())
                handleFrame(*frame);
            if (m_channel.protocolError()) {
                std::fprintf(stderr, "sandbox-supervisor: protocol error: %s\n",
                             m_channel.protocolErrorMessage().c_str());
                return 2;
            }
            if (result == FrameChannel::ReadResult::Eof) {
                std::fprintf(stderr, "sandbox-supervisor: engine closed the connection, exiting\n");
                return 0;
            }
            if (result == FrameChannel::ReadResult::Error) {
                std::fprintf(stderr, "sandbox-supervisor: reading from the engine: %s\n",
                             std::strerror(errno));
                return 1;
            }
        }
        m_execs.process(fds);
        m_connector.process(fds);
        m_background.process(fds);
        m_watcher.process(fds);
    }
    std::fprintf(stderr, "sandbox-supervisor: cannot write to the engine, exiting\n");
    return 1;
}

void Supervisor::handleFrame(const Frame &frame)
{
    switch (FrameType(frame.type)) {
    case FrameType::Request:
        handleRequest(frame.id, frame.payload);
        break;
    case FrameType::Stdin:
        m_execs.feedStdin(frame.id, frame.payload);
        break;
    case FrameType::Cancel:
        if (!m_watcher.cancel(frame.id))
            m_execs.cancel(frame.id);
        break;
    case FrameType::Resize:
        if (!m_execs.resize(frame.id, frame.payload))
            std::fprintf(stderr, "sandbox-supervisor: ignoring a bad RESIZE frame (id %u)\n",
                         frame.id);
        break;
    case FrameType::Window:
        if (!m_execs.acknowledge(frame.id, frame.payload))
            std::fprintf(stderr, "sandbox-supervisor: ignoring a bad WINDOW frame (id %u)\n",
                         frame.id);
        break;
    default:
        std::fprintf(stderr, "sandbox-supervisor: ignoring frame of unknown type %u (id %u)\n",
                     unsigned(frame.type), frame.id);
        break;
    }
}

void Supervisor::handleRequest(uint32_t id, std::string_view payload)
{
    const size_t nul = payload.find('\0');
    const std::string_view text = payload.substr(0, nul);
    const std::string_view data = nul == std::string_view::npos ? std::string_view()
                                                                : payload.substr(nul + 1);
    std::string op;
    try {
        const json req = json::parse(text);
        if (!req.is_object())
            throw RequestError("bad_request", "a request must be a JSON object");
        if (!req.contains("op") || !req["op"].is_string())
            throw RequestError("bad_request", "the request has no string member 'op'");
        op = req["op"].get<std::string>();
        if (op == "ping") {
            Reply r;
            r.body = {{"pid", ::getpid()},
                      {"uptimeMs", std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - m_started)
                                       .count()},
                      {"execs", m_execs.running()}};
            respond(id, r);
        } else if (op == "configure") {
            respond(id, configure(req));
        } else if (op == "exec") {
            m_execs.start(id, req); // answered when it finishes
        } else if (op == "connect") {
            m_connector.start(id, req); // answered when connected, failed or timed out
        } else if (op == "listen") {
            // The listening socket goes to the engine (one EVENT), which accepts on it; no copy
            // stays here, so nothing inside can take the engine's connections.
            const int fd = Listener::open(req);
            const bool sent = m_channel.send(FrameType::Event, id, {R"({"listening":true})"}, {fd});
            ::close(fd);
            if (sent)
                respond(id, Reply{});
        } else if (op == "watch") {
            m_watcher.start(id, req, pathsFor(req)); // EVENTs until cancelled
        } else if (op == "peer") {
            Reply r;
            r.body = Listener::identify(req);
            respond(id, r);
        } else if (FileOps::handles(op)) {
            FileOps &files = filesFor(req);
            if (auto work = files.longWork(op, req))
                m_background.start(id, std::move(*work)); // answered when it is done
            else
                respond(id, files.handle(op, req, data));
        } else {
            throw RequestError("bad_request", "unknown op '" + op + "'");
        }
    } catch (const RequestError &e) {
        respond(id, e.reply());
    } catch (const json::exception &e) {
        respond(id, Reply::error("bad_request", std::string("malformed request: ") + e.what()));
    } catch (const std::exception &e) {
        respond(id, Reply::error(op == "exec" ? "exec_failed" : "file_error",
                                 std::string("internal error: ") + e.what()));
    }
}

Reply Supervisor::configure(const json &req)
{
    if (m_configured)
        throw RequestError("bad_request", "the supervisor is configured already");
    std::vector<std::pair<std::string, std::string>> env;
    appendEnv(req, env);
    std::map<std::string, std::unique_ptr<Paths>> roots;
    if (req.contains("roots") && !req["roots"].is_null()) {
        if (!req["roots"].is_object() || req["roots"].size() > kMaxRoots)
            throw RequestError("bad_request", "'roots' must be an object of at most "
                                                  + std::to_string(kMaxRoots) + " members");
        for (const auto &[name, options] : req["roots"].items()) {
            if (name.size() < 2 || name.front() != '/' || name.back() == '/'
                || name.find('\0') != std::string::npos || name.find("/.") != std::string::npos
                || name.find("//") != std::string::npos || name == Paths::kRoot
                || !options.is_object())
                throw RequestError("bad_request", "invalid root '" + name + "'");
            auto paths = std::make_unique<Paths>(name);
            if (!paths->openRoot(name, m_useOpenat2))
                throw RequestError(Reply::codeForErrno(errno),
                                   "root " + name + ": " + std::strerror(errno), errno);
            roots.emplace(name, std::move(paths));
        }
    }
    m_execs.setBaseEnv(std::move(env));
    for (auto &[name, paths] : roots) {
        m_rootFiles.emplace(name, std::make_unique<FileOps>(*paths));
        m_rootPaths.emplace(name, std::move(paths));
    }
    m_configured = true;
    m_execs.prepareNext(); // commands come next: the first one's reaper is ready for it
    return {};
}

FileOps &Supervisor::filesFor(const json &req)
{
    if (!req.contains("root") || req["root"].is_null())
        return m_files;
    if (!req["root"].is_string())
        throw RequestError("bad_request", "'root' must be a string");
    const std::string root = req["root"].get<std::string>();
    if (root == Paths::kRoot)
        return m_files;
    const auto it = m_rootFiles.find(root);
    if (it == m_rootFiles.end())
        throw RequestError("path_not_allowed", "'" + root + "' is not a root of this sandbox");
    return *it->second;
}

const Paths &Supervisor::pathsFor(const json &req) const
{
    if (!req.contains("root") || req["root"].is_null())
        return m_workspace;
    if (!req["root"].is_string())
        throw RequestError("bad_request", "'root' must be a string");
    const std::string root = req["root"].get<std::string>();
    if (root == Paths::kRoot)
        return m_workspace;
    const auto it = m_rootPaths.find(root);
    if (it == m_rootPaths.end())
        throw RequestError("path_not_allowed", "'" + root + "' is not a root of this sandbox");
    return *it->second;
}

void Supervisor::respond(uint32_t id, const Reply &reply)
{
    const std::string body = reply.body.dump(-1, ' ', false, json::error_handler_t::replace);
    if (reply.hasData)
        m_channel.send(FrameType::Response, id, {body, std::string_view("\0", 1), reply.data});
    else
        m_channel.send(FrameType::Response, id, {body});
}
