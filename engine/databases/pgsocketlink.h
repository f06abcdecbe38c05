#pragma once

#include "protocol/result.h"
#include "runtime/sandboxsocket.h"

#include <QString>

namespace Sandbox::Engine {

// The one way libpq reaches a PostgreSQL server in a sandbox. libpq connects only by path, and the
// server's socket lies in the sandbox's /run/db, a directory the sandbox controls: so libpq
// connects to DIR/.s.PGSQL.5432 in a 0700 directory of the engine's own instead, a symbolic link
// to /proc/self/fd/N, where N is an O_PATH fd of the server's socket inode, picked as SandboxSocket
// says (fd-relative, no link followed, a socket of the sandbox's uid). Connecting there reaches
// that inode and nothing else, whatever the sandbox renames or plants meanwhile; the bytes then go
// straight between libpq and the server, with no copy in the engine. pin() picks the socket again
// (a restarted server has a new one): it runs before each new connection, so a connection reaches
// the socket that was there when it was made, as a fresh connect by name would.
class PgSocketLink final
{
public:
    static constexpr const char *kSocketName = ".s.PGSQL.5432";

    explicit PgSocketLink(SandboxSocket::Target server);
    ~PgSocketLink();
    PgSocketLink(const PgSocketLink &) = delete;
    PgSocketLink &operator=(const PgSocketLink &) = delete;

    // Creates `dir` (0700) for the link; libpq then takes host=dir, port=5432.
    Result<bool> create(const QString &dir);
    // Points the link at the server's socket as it is now; an Error (why the server cannot be
    // reached) leaves the link pointing nowhere, so that a connection fails instead of reaching
    // an older socket.
    Result<bool> pin();
    QString directory() const { return m_dir; }

private:
    SandboxSocket::Target m_server;
    QString m_dir;
    // The fd the link names (/proc/self/fd/m_fd): the same number for the link's life, dup3()ed
    // over by each pin(); when the server cannot be reached, the link's own directory's (not a
    // socket: a connection is refused).
    int m_fd = -1;
};

} // namespace Sandbox::Engine
