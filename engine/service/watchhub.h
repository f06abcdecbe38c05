#pragma once

#include "api/methods.h"

#include <QHash>
#include <QObject>
#include <QTimer>

#include <memory>

namespace Sandbox::Engine {

class SandboxManager;
class StreamHub;

// sandbox.watch (docs/protocol.md 4.5.1): changes below a directory of a sandbox as a stream of
// `stream.event`s, seen by inotify in the sandbox's supervisor (engine/supervisor/watcher.h).
// The supervisor's EVENTs are checked by SupervisorChannel (paths below the watched directory,
// bounded in size and rate; a violation ends the sandbox). A watch does not keep its sandbox
// awake; it ends when the sandbox stops, on stream.cancel, or when nobody has followed it for
// kIdleEndMs. At most kMaxPerSandbox watches per sandbox.
class WatchHub final : public QObject
{
    Q_OBJECT

public:
    static constexpr int kMaxPerSandbox = 16;
    static constexpr qint64 kIdleEndMs = 2 * 60 * 1000;

    WatchHub(SandboxManager *sandboxes, StreamHub *streams, Methods *methods,
             QObject *parent = nullptr);
    ~WatchHub() override;

    int count() const { return int(m_watches.size()); }

private:
    struct Watch;
    void start(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void sweep();

    SandboxManager *m_sandboxes;                      // not owned
    StreamHub *m_streams;                             // not owned
    QHash<QString, std::shared_ptr<Watch>> m_watches; // by stream id
    QTimer m_idleTimer;
};

} // namespace Sandbox::Engine
