#pragma once

#include "execrunner.h"
#include "fileops.h"
#include "frame.h"

#include <chrono>
#include <string_view>

class Paths;

// The event loop: reads frames from stdin, dispatches requests, and relays exec events,
// single-threaded around poll().
class Supervisor
{
public:
    explicit Supervisor(const Paths &paths);

    // Returns the process exit status: 0 when the engine closed stdin, 2 on a protocol error,
    // 1 when reading or writing the engine's pipes failed.
    int run();

private:
    void handleFrame(const Frame &frame);
    void handleRequest(uint32_t id, std::string_view payload);
    void respond(uint32_t id, const Reply &reply);

    FrameChannel m_channel;
    FileOps m_files;
    ExecRunner m_execs;
    std::chrono::steady_clock::time_point m_started;
};
