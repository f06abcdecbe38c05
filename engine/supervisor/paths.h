#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

// Confined path resolution below one root (the workspace, or another tree named in `configure`).
// Requests name paths as "<root>/..." or relative to it; they are normalised lexically into a
// relative path ("" is the root) and then
// opened below one directory fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), or with a
// component-wise O_NOFOLLOW walk where openat2 is missing. Escapes fail with EXDEV.
class Paths
{
public:
    static constexpr std::string_view kRoot = "/workspace";

    explicit Paths(std::string virtualRoot = std::string(kRoot))
        : m_virtualRoot(std::move(virtualRoot))
    {}
    ~Paths();
    Paths(const Paths &) = delete;
    Paths &operator=(const Paths &) = delete;

    // Opens the real directory that plays the root. False (errno set) on failure.
    bool openRoot(const std::string &hostDir, bool useOpenat2);
    int rootFd() const { return m_root; }
    // The root as requests name it: "/workspace", "/home/agent", ...
    const std::string &root() const { return m_virtualRoot; }

    // The relative form of a request path, or nullopt if it is outside the root.
    std::optional<std::string> normalise(std::string_view path) const;
    // "<root>" or "<root>/<rel>".
    std::string virtualPath(const std::string &rel) const;
    static std::string parentOf(const std::string &rel);
    static std::string leafOf(const std::string &rel);

    // openat() below the root; follows symlinks (unless O_NOFOLLOW) but never out of the root.
    // Returns the fd (O_CLOEXEC) or -errno; -EXDEV means the path escapes.
    int openAt(const std::string &rel, int flags, mode_t mode = 0) const;

private:
    int walk(const std::string &rel, int flags, mode_t mode) const;

    std::string m_virtualRoot;
    int m_root = -1;
    mutable bool m_openat2 = true;
};
