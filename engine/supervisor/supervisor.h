#pragma once

#include "backgroundops.h"
#include "connector.h"
#include "execrunner.h"
#include "fileops.h"
#include "frame.h"
#include "listener.h"
#include "watcher.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

class Paths;

// The event loop: reads frames from the engine's socket, dispatches requests, and relays exec
// events, single-threaded around poll().
class Supervisor
{
public:
    Supervisor(int channelFd, const Paths &workspace, bool useOpenat2,
               const Guard::ChildOomScore &oomScore);

    // Returns the process exit status: 0 when the engine closed the channel, 2 on a protocol
    // error, 1 when reading or writing the channel failed.
    int run();
    // How long a reaper forked ahead waits for an exec before it goes (ExecRunner::kSpareIdle).
    void setSpareReaperIdle(std::chrono::milliseconds idle) { m_execs.setSpareIdle(idle); }
    // How long an exec's EVENT waits to go with its RESPONSE (ExecRunner::kStartedDelay).
    void setStartedEventDelay(std::chrono::milliseconds delay) { m_execs.setStartedDelay(delay); }

private:
    void handleFrame(const Frame &frame);
    void handleRequest(uint32_t id, std::string_view payload);
    void respond(uint32_t id, const Reply &reply);
    Reply configure(const nlohmann::json &req);
    FileOps &filesFor(const nlohmann::json &req);
    const Paths &pathsFor(const nlohmann::json &req) const;

    FrameChannel m_channel;
    FileOps m_files;
    ExecRunner m_execs;
    Connector m_connector;
    BackgroundOps m_background;
    Watcher m_watcher;
    const Paths &m_workspace; // not owned
    bool m_useOpenat2 = true;
    bool m_configured = false;
    // The other trees file ops may address (`configure`'s roots), by their name ("/home/agent").
    std::map<std::string, std::unique_ptr<Paths>> m_rootPaths;
    std::map<std::string, std::unique_ptr<FileOps>> m_rootFiles;
    std::chrono::steady_clock::time_point m_started;
};
