#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

// Confined path resolution below the workspace. Requests name paths as "/workspace/..." or
// relative to it; they are normalised lexically into a relative path ("" is the root) and then
// opened below one directory fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), or with a
// component-wise O_NOFOLLOW walk where openat2 is missing. Escapes fail with EXDEV.
class Paths
{
public:
    static constexpr std::string_view kRoot = "/workspace";

    Paths() = default;
    ~Paths();
    Paths(const Paths &) = delete;
    Paths &operator=(const Paths &) = delete;

    // Opens the real directory that plays /workspace. False (errno set) on failure.
    bool openRoot(const std::string &hostDir, bool useOpenat2);
    int rootFd() const { return m_root; }

    // The relative form of a request path, or nullopt if it is outside /workspace.
    static std::optional<std::string> normalise(std::string_view path);
    // "/workspace" or "/workspace/<rel>".
    static std::string virtualPath(const std::string &rel);
    static std::string parentOf(const std::string &rel);
    static std::string leafOf(const std::string &rel);

    // openat() below the root; follows symlinks (unless O_NOFOLLOW) but never out of the root.
    // Returns the fd (O_CLOEXEC) or -errno; -EXDEV means the path escapes.
    int openAt(const std::string &rel, int flags, mode_t mode = 0) const;

private:
    int walk(const std::string &rel, int flags, mode_t mode) const;

    int m_root = -1;
    mutable bool m_openat2 = true;
};
