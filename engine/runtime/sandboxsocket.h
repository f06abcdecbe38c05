#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QObject>
#include <QString>

#include <functional>
#include <sys/types.h>

namespace Sandbox::Engine {

// How the engine reaches a unix socket a sandbox serves in its /run/db (sandbox-dbhost's,
// PostgreSQL's): never by a host path in a directory the sandbox can change. The socket's inode is
// picked fd-relative (the run directory opened beneath the engine's volume directory, the socket
// with O_PATH | O_NOFOLLOW, checked to be a socket of the sandbox's uid) and connected through
// /proc/self/fd, non-blocking: a listener with a full backlog, a link or a file in its place is a
// clear error at once, never a wait on the event loop.
class SandboxSocket final
{
public:
    struct Target
    {
        QString volumeDir; // the sandbox's WorkspaceVolume directory (its /run/db is run/ in it)
        uid_t uid = 0;     // the sandbox's uid: the socket must be its
    };

    // The socket `name` in the sandbox's /run/db, picked as above: an O_PATH, close-on-exec fd of
    // its inode (connect through procPath() of it), or an Error as connect() gives.
    static Result<int> open(const Target &target, const QByteArray &name);
    // "/proc/self/fd/N": connecting to it reaches the inode of fd N, whatever its name is now.
    static QByteArray procPath(int inode);
    // One attempt: a connected, non-blocking, close-on-exec fd, or an Error whose data has
    // {"errno": "EAGAIN"} and the like (EAGAIN: the listener's backlog is full; ENOENT or
    // ECONNREFUSED: nobody listens yet).
    static Result<int> connect(const Target &target, const QByteArray &name);
    // Tries every `retryMs` until `timeoutMs` passed (a server starting up); `done` runs once, in
    // `context`'s thread, never synchronously.
    static void connectWithin(const Target &target, const QByteArray &name, int timeoutMs,
                              int retryMs, QObject *context, std::function<void(Result<int>)> done);
};

} // namespace Sandbox::Engine
