#pragma once

#include "pty.h"
#include "sparereaper.h"

#include <nlohmann/json.hpp>

#include <algorithm>
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
    // After an exec's main process exited, its pipes are drained until they stay quiet this
    // long (a background process may hold them open) — or kPtyDrainLimit after the exit at most.
    static constexpr std::chrono::milliseconds kDrainTime{50};
    // Above this much unwritten STDIN data the supervisor stops reading frames (back-pressure).
    static constexpr size_t kStdinHighWater = 4 * 1024 * 1024;
    // An exec whose main process exited waits this long at most for the rest of its output (a
    // full window the engine has not taken yet, a background process that keeps writing) before
    // its pipes or terminal are closed.
    static constexpr std::chrono::milliseconds kPtyDrainLimit{5000};
    // An exec's EVENT (its process tree) waits this long, unless it must go first (its output, a
    // CANCEL, pipes to hand over): a command that ends sooner has it sent with its RESPONSE, in
    // one write, and the engine wakes once for the exec instead of twice.
    static constexpr std::chrono::milliseconds kStartedDelay{20};

    ExecRunner(const Paths &paths, FrameChannel &channel, const Guard::ChildOomScore &oomScore);
    ~ExecRunner();
    ExecRunner(const ExecRunner &) = delete;
    ExecRunner &operator=(const ExecRunner &) = delete;

    bool init(); // the SIGCHLD signalfd (SIGCHLD must be blocked)

    // A reaper ready for the next exec (SpareReaper: the last exec's, or one forked now), kept
    // until no exec started for `idle`: a sandbox that runs no command holds no extra process.
    void prepareNext();
    void setSpareIdle(std::chrono::milliseconds idle) { m_spareIdle = idle; }
    void setStartedDelay(std::chrono::milliseconds delay) { m_startedDelay = delay; }
    static constexpr std::chrono::milliseconds kSpareIdle{60000};

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
        int reaperSock = -1;   // the spare's socket, while its reaper runs this exec
        bool treeGone = false; // the reaper reported the status with nothing of the tree left
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
        Clock::time_point lastOutput; // output read, or its window opened again
        bool reaperLost = false;
        bool timedOut = false, cancelled = false, killSent = false;
        std::string startedEvent; // its EVENT while it waits (kStartedDelay); empty once sent
        bool pty = false;         // out is the terminal's master, in a duplicate of it
        bool windowed = false;    // output waits for WINDOW frames (a terminal, or `window`)
        uint64_t unacked = 0;     // output sent and not yet acknowledged by WINDOW frames
        bool windowOpen() const { return !windowed || unacked < Pty::kWindowBytes; }
        // When the exec answers once its main process exited, unless its pipes close first.
        Clock::time_point drained() const
        {
            const Clock::time_point limit = exited + kPtyDrainLimit;
            return windowOpen() ? std::min(std::max(exited, lastOutput) + kDrainTime, limit)
                                : limit;
        }
    };
    enum class Slot { Signal, Out, Err, Status, In };
    struct PollSlot
    {
        size_t index;
        uint32_t id;
        Slot kind;
        int fd;
    };

    void sendStarted(Exec &e); // its EVENT, if it has not gone yet
    void readOutput(Exec &e, bool isStderr);
    void readStatus(Exec &e);
    void flushStdin(Exec &e);
    void sendKill(Exec &e);
    void reapChildren();
    bool finishIfDone(Exec &e, Clock::time_point now); // true: answered, erase it
    void release(Exec &e);

    const Paths &m_paths;
    FrameChannel &m_channel;
    const Guard::ChildOomScore m_oomScore; // forks the reapers
    std::vector<std::pair<std::string, std::string>> m_baseEnv;
    int m_signalFd = -1;
    std::vector<char> m_readBuffer = std::vector<char>(SupervisorWire::MaxChunk); // one read
    std::map<uint32_t, Exec> m_execs;
    std::map<pid_t, int> m_lingering; // answered execs whose reaper still runs: pid -> control fd
    SpareReaper m_spare;              // the next exec's reaper, ready ahead
    std::chrono::milliseconds m_spareIdle = kSpareIdle;
    std::chrono::milliseconds m_startedDelay = kStartedDelay;
    Clock::time_point m_lastStart; // of an exec, or prepareNext()
    std::vector<PollSlot> m_slots;
};
