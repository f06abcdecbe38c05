#include "supervisor.h"

#include "paths.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <unistd.h>

using nlohmann::json;

Supervisor::Supervisor(const Paths &paths)
    : m_channel(STDIN_FILENO, STDOUT_FILENO)
    , m_files(paths)
    , m_execs(paths, m_channel)
    , m_started(std::chrono::steady_clock::now())
{}

int Supervisor::run()
{
    if (!m_execs.init()) {
        std::fprintf(stderr, "sandbox-supervisor: signalfd: %s\n", std::strerror(errno));
        return 1;
    }
    const json hello = {{"pid", ::getpid()}, {"version", "1"}};
    m_channel.send(FrameType::Hello, 0, {hello.dump()});

    std::vector<pollfd> fds;
    while (!m_channel.broken()) {
        fds.clear();
        const bool acceptInput = m_execs.pendingStdin() < ExecRunner::kStdinHighWater;
        fds.push_back({STDIN_FILENO, short(acceptInput ? POLLIN : 0), 0});
        m_execs.collectPollFds(fds);
        if (::poll(fds.data(), fds.size(), m_execs.pollTimeoutMs()) < 0 && errno != EINTR) {
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
        m_execs.cancel(frame.id);
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
        } else if (op == "exec") {
            m_execs.start(id, req); // answered when it finishes
        } else if (FileOps::handles(op)) {
            respond(id, m_files.handle(op, req, data));
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

void Supervisor::respond(uint32_t id, const Reply &reply)
{
    const std::string body = reply.body.dump(-1, ' ', false, json::error_handler_t::replace);
    if (reply.hasData)
        m_channel.send(FrameType::Response, id, {body, std::string_view("\0", 1), reply.data});
    else
        m_channel.send(FrameType::Response, id, {body});
}
