#pragma once

#include "protocol/result.h"
#include "runtime/sandboxsocket.h"

#include <QList>
#include <QObject>
#include <QString>

#include <sys/types.h>

class QSocketNotifier;

namespace Sandbox::Engine {

// The one way libpq reaches a PostgreSQL server in a sandbox. libpq connects only by path, and the
// server's socket lies in the sandbox's /run/db, a directory the sandbox controls: so libpq
// connects here instead, to DIR/.s.PGSQL.5432 in a 0700 directory of the engine's own, and each
// connection is joined to one the engine makes to the server (SandboxSocket: fd-relative, never
// following a link, non-blocking). Bytes are copied both ways on the event loop through bounded
// buffers with back-pressure (a full side stops reading the other), so a slow reader holds the
// server back instead of growing memory. A failure to reach the server is answered to libpq as a
// PostgreSQL error, so that the caller sees why.
class PgRelay final : public QObject
{
    Q_OBJECT

public:
    static constexpr const char *kSocketName = ".s.PGSQL.5432";
    static constexpr int kMaxConnections = 64;

    PgRelay(SandboxSocket::Target upstream, QObject *parent = nullptr);
    ~PgRelay() override;

    // Creates `dir` (0700) and listens there; libpq then takes host=dir, port=5432.
    Result<bool> listen(const QString &dir);
    QString directory() const { return m_dir; }
    int connectionCount() const { return int(m_pipes.size()); }

private:
    class Pipe;

    void accept();
    void closed(Pipe *pipe);

    SandboxSocket::Target m_upstream;
    QString m_dir;
    int m_listener = -1;
    ino_t m_inode = 0;                   // of the socket file bound
    QSocketNotifier *m_accept = nullptr; // owned (child)
    QList<Pipe *> m_pipes;               // owned (children)
};

} // namespace Sandbox::Engine
