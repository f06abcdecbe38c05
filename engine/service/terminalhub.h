#pragma once

#include "api/methods.h"

#include <QHash>
#include <QObject>
#include <QTimer>

#include <memory>

namespace Sandbox::Engine {

class SandboxManager;
class StreamHub;

// Terminals (docs/protocol.md 4.8): an exec with `options.pty` runs on a pseudo-terminal in the
// sandbox's supervisor and streams the terminal's output; `stream.input` types into it,
// `stream.resize` resizes it (and, at the same size, asks the program to redraw). The output is
// flow-controlled end to end: the supervisor keeps at most a window of unacknowledged output, and
// the engine acknowledges only while the client's connection keeps up, so a slow client stalls
// the program instead of the engine buffering without bound. A terminal nobody follows for
// kIdleHangupMs is hung up.
class TerminalHub final : public QObject
{
    Q_OBJECT

public:
    static constexpr qint64 kIdleHangupMs = 10 * 60 * 1000;
    // Unsent bytes on the client's connection above which output is not acknowledged.
    static constexpr qint64 kClientHighWater = 2 * 1024 * 1024;
    static constexpr qsizetype kMaxInputBytes = 1024 * 1024;
    // Input not yet taken by the supervisor above which stream.input is refused.
    static constexpr qint64 kMaxPendingInput = 8 * 1024 * 1024;

    TerminalHub(SandboxManager *sandboxes, StreamHub *streams, Methods *methods,
                QObject *parent = nullptr);
    ~TerminalHub() override;

    // Runs `request` (a supervisor exec request with `pty`) in sandbox `id` of `kind`; answers
    // the Exec result when the command ends.
    void start(const QString &id, const QString &kind, const QJsonObject &request,
               const CallContext &ctx, const Methods::Reply &reply);

    int count() const { return int(m_terminals.size()); }

private:
    struct Terminal;
    void input(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    void resize(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);
    Result<std::shared_ptr<Terminal>> find(const QString &keyId, const QString &streamId) const;
    void acknowledge(Terminal &t);
    void sweep();

    SandboxManager *m_sandboxes;                           // not owned
    StreamHub *m_streams;                                  // not owned
    QHash<QString, std::shared_ptr<Terminal>> m_terminals; // by stream id
    QTimer m_ackTimer; // runs while some terminal waits for its client
    QTimer m_idleTimer;
};

} // namespace Sandbox::Engine
