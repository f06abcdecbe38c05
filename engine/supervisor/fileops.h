#pragma once

#include "backgroundops.h"
#include "reply.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>

class Paths;

// The file requests: readFile, writeFile, list, stat, mkdir, delete, rename. Each is answered
// inline; failures are thrown as RequestError.
class FileOps
{
public:
    static constexpr uint64_t kMaxRead = 16u * 1024 * 1024;
    static constexpr size_t kMaxListEntries = 10000;

    explicit FileOps(const Paths &paths);

    // How long one deletion may take before it stops (what is left stays; deleting again goes
    // on): below the engine's deadline for a file request.
    static constexpr std::chrono::seconds kMaxDeleteTime{60};

    static bool handles(const std::string &op);
    Reply handle(const std::string &op, const nlohmann::json &req, std::string_view data);
    // The part of a request that may take long, to run in a child process (BackgroundOps): a
    // recursive delete of a directory. Nothing (the request is answered inline by handle()) for
    // everything else. Throws RequestError like handle().
    std::optional<BackgroundOps::Work> longWork(const std::string &op, const nlohmann::json &req);

private:
    struct Target
    {
        std::string rel;  // relative to the workspace, "" for the root
        std::string virt; // "/workspace/..."
    };

    Reply readFile(const nlohmann::json &req);
    Reply writeFile(const nlohmann::json &req, std::string_view data);
    Reply list(const nlohmann::json &req);
    Reply stat(const nlohmann::json &req);
    Reply mkdir(const nlohmann::json &req);
    Reply remove(const nlohmann::json &req);
    Reply rename(const nlohmann::json &req);

    Target target(const nlohmann::json &req, const char *key) const;
    // O_PATH fd of the directory that holds rel (which must not be the root).
    int openParent(const std::string &rel, const std::string &virt) const;
    int openChecked(const std::string &rel, const std::string &virt, int flags) const;
    // Opens a regular file (anything else is refused before it is opened); `st` is its stat.
    int openRegular(const std::string &rel, const std::string &virt, int flags,
                    struct stat &st) const;
    void makeDirs(const std::string &rel, bool includingLast) const;
    void listDir(int dirFd, const std::string &virt, bool recursive, int depth,
                 nlohmann::json &entries, bool &truncated) const;
    static void removeTree(int parentFd, const std::string &name, const std::string &virt,
                           std::chrono::steady_clock::time_point deadline);
    static nlohmann::json entry(int dirFd, const std::string &name, const std::string &virt,
                                const struct stat &st);

    const Paths &m_paths;
};
