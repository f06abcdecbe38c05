#pragma once

#include <sys/fsuid.h>
#include <sys/types.h>
#include <unistd.h>

namespace Sandbox::Engine {

// While alive, the calling thread checks file permissions as `uid` (setfsuid), which also drops
// root's file capabilities for that thread. Connecting to a socket that a sandbox controls then
// cannot be turned, by a symlink the sandbox planted, into a connection to a root-only socket of
// the host. No-op when the engine does not run as root.
class FsUidGuard final
{
public:
    explicit FsUidGuard(uid_t uid)
    {
        if (::geteuid() == 0 && uid != 0) {
            m_active = true;
            ::setfsgid(uid);
            ::setfsuid(uid);
        }
    }
    ~FsUidGuard()
    {
        if (m_active) {
            ::setfsuid(0);
            ::setfsgid(0);
        }
    }
    FsUidGuard(const FsUidGuard &) = delete;
    FsUidGuard &operator=(const FsUidGuard &) = delete;

private:
    bool m_active = false;
};

} // namespace Sandbox::Engine
