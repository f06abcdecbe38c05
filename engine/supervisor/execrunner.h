#pragma once

#include "pty.h"
#include "sparereaper.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>
#include <vector>

struct pollfd;
class FrameChannel;
class Paths;

// Runs the execs: one reaper process per exec (see Reaper; forked ahead, see SpareReaper), output relayed as STDOUT/STDERR
// frames up to a cap, STDIN frames fed through a bounded queue, timeouts and CANCEL turned into
// a kill of the exec's whole tree, and exactly one RESPONSE per exec.
class ExecRunner
{
public:
    static constexpr uint64_t kDefaultMaxOutput = 1024 * 1024;
    static constexpr std::chrono::milliseconds kDrainTime{50};
    // Above this much unwritten STDIN data the supervisor stops reading frames (back-pressure).
    static constexpr size_t kStdinHighWater = 4 * 1024 * 1024;
    // A PTY exec whose main process exited waits this long at most for the engine to take the
    // rest of its output (a full window) before its terminal is closed.
    static constexpr std::chrono::milliseconds kPtyDrainLimit{5000};

    ExecRunner(const Paths &paths, FrameChannel &channel);
    ~ExecRunner();
    ExecRunner(const ExecRunner &) = delete;
    ExecRunner &operator=(const ExecRunner &) = delete;

    bool init(); // the SIGCHLD signalfd (SIGCHLD must be blocked)

    // The environment of every command before the request's own `env` (from `configure`).
    void setBaseEnv(std::vector<std::pair<std::string, std::string>> env)
    {
        m_baseEnv = std::move(env);
    }

    // Starts exec `id`; its RESPONSE is sent later. Throws RequestError for invalid requests.
    void start(uint32_t id, const nlohmann::json &req);
    void feedStdin(uint32_t id, std::string_view data);
    void cancel(uint32_t id);
    // A RESIZE frame's payload (PTY execs) and a WINDOW frame's (PTY execs and execs with
    // `window`). False when `id` is a running exec without a terminal (RESIZE) or without a window
    // (WINDOW), or the payload is malformed (a protocol error); an exec that already finished is
    // no error (the frame crossed its RESPONSE).
    bool resize(uint32_t id, std::string_view payload);
    bool acknowledge(uint32_t id, std::string_view payload);

    void collectPollFds(std::vector<pollfd> &fds);
    void process(const std::vector<pollfd> &fds);
    int pollTimeoutMs() const; // -1: no timer pending

    size_t running() const { return m_execs.size(); }
    size_t pendingStdin() const;

private:
    using Clock = std::chrono::steady_clock;

    struct Exec
    {
        uint32_t id = 0;
        pid_t reaper = -1;
        bool reaperAlive = true;
        int out = -1, err = -1, in = -1, status = -1, control = -1;
        uint64_t maxOutput = kDefaultMaxOutput;
        uint64_t sent[2] = {0, 0};
        bool truncated = false;
        std::string stdinQueue;
        size_t stdinOffset = 0;
        bool stdinEof = false;
        Clock::time_point started;
        std::optional<Clock::time_point> deadline;
        std::optional<int> waitStatus;
        Clock::time_point exited;
        bool reaperLost = false;
        bool timedOut = false, cancelled = false, killSent = false;
        bool pty = false;      // out is the terminal's master, in a duplicate of it
        bool windowed = false; // output waits for WINDOW frames (a terminal, or `window`)
        uint64_t unacked = 0;  // output sent and not yet acknowledged by WINDOW frames
        bool windowOpen() const { return !windowed || unacked < Pty::kWindowBytes; }
    };
    enum class Slot { Signal, Out, Err, Status, In };
    struct PollSlot
    {
        size_t index;
        uint32_t id;
        Slot kind;
        int fd;
    };

    void readOutput(Exec &e, bool isStderr);
    void readStatus(Exec &e);
    void flushStdin(Exec &e);
    void sendKill(Exec &e);
    void reapChildren();
    bool finishIfDone(Exec &e, Clock::time_point now); // true: answered, erase it
    void release(Exec &e);

    const Paths &m_paths;
    FrameChannel &m_channel;
    std::vector<std::pair<std::string, std::string>> m_baseEnv;
    int m_signalFd = -1;
    std::vector<char> m_readBuffer = std::vector<char>(SupervisorWire::MaxChunk); // one read
    std::map<uint32_t, Exec> m_execs;
    std::map<pid_t, int> m_lingering; // answered execs whose reaper still runs: pid -> control fd
    SpareReaper m_spare;              // the next exec's reaper, forked ahead
    std::vector<PollSlot> m_slots;
};
