#pragma once

#include "frameparser.h"
#include "outputbytes.h"
#include "outputpipe.h"
#include "protocol/result.h"
#include "supervisor/wire.h"
#include "uniquefd.h"

#include <QByteArray>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>

class QTimer;

namespace Sandbox::Engine {

class FdPoller;

// The engine's end of engine/supervisor/PROTOCOL.md (version 2): frames over one AF_UNIX stream
// socket, descriptors as SCM_RIGHTS where the protocol allows them. Everything that comes from
// the supervisor is hostile input: every frame is checked against what was asked (known type,
// pending id, per-type size, fds only where allowed, output within the request's
// maxOutputBytes) and every request has a deadline. The first violation or missed deadline ends
// the channel: failed() is emitted once, every pending request fails with -32011 naming it, and
// nothing more is read (the owner kills the sandbox). Writes never block: they are queued, up to
// a bound. Not thread-safe; lives in the engine's thread.
class SupervisorChannel final : public QObject
{
    Q_OBJECT

public:
    struct Reply
    {
        QJsonObject json;
        QByteArray data;              // raw bytes after the JSON (readFile)
        std::shared_ptr<UniqueFd> fd; // the descriptor that came with it (connect)
    };
    using ReplyHandler = std::function<void(Result<Reply>)>;
    // 1 out, 2 err; output read from an exec's pipes may be taken (OutputBytes).
    using OutputHandler = std::function<void(int channel, OutputBytes bytes)>;
    // One EVENT of a long-lived request (watch, listen), with its descriptor if it carried one.
    using EventHandler = std::function<void(const QJsonObject &event, std::shared_ptr<UniqueFd> fd)>;

    // Time a request may take beyond what it asks for itself (an exec's timeout, a connect's).
    static constexpr qint64 kGraceMs = 15000;
    // An exec with `pipes` whose answer came: its pipes are read on until they stay quiet this
    // long with its window open (a background process may hold them), and this long after the
    // answer at most (PROTOCOL.md, "Output pipes"), as the supervisor drains its own.
    static constexpr qint64 kDrainMs = 50;
    static constexpr qint64 kDrainLimitMs = 5000;
    // A request that asks for no time of its own (file ops, ping, configure).
    static constexpr qint64 kDefaultDeadlineMs = 120000;
    // Descriptors received but not yet handed over, and the unsent bytes queued for the
    // supervisor: above these the channel fails (descriptors) or refuses requests (bytes).
    static constexpr int kMaxQueuedFds = 8;
    static constexpr qsizetype kMaxQueuedBytes = 64 * 1024 * 1024;
    // What a `watch` may send (PROTOCOL.md): EVENT frames of at most kMaxWatchBatch entries,
    // paths of at most kMaxWatchPath bytes below the watched directory, and per second at most
    // kMaxWatchFramesPerSecond frames and kMaxWatchEntriesPerSecond entries. More is a violation.
    static constexpr int kMaxWatchBatch = 512;
    static constexpr int kMaxWatchPath = 4096;
    static constexpr int kMaxWatchFramesPerSecond = 200;
    static constexpr int kMaxWatchEntriesPerSecond = 8192;

    // Takes the engine's end of the socketpair (made non-blocking here), watched by `poller` (the
    // engine's one for every sandbox; null: a poller of its own).
    explicit SupervisorChannel(UniqueFd socket, FdPoller *poller = nullptr,
                               QObject *parent = nullptr);
    ~SupervisorChannel() override;

    // HELLO came and nothing went wrong since.
    bool isReady() const { return m_helloSeen && m_failure.isEmpty(); }
    QString failure() const { return m_failure; }

    // Sends a request; `data` follows the JSON after a 0x00 byte when not empty. Returns its id.
    // The deadline is derived from the request (see PROTOCOL.md); `onEvent` receives the EVENTs
    // of a long-lived request. `onReply` is called exactly once (never from within request()).
    quint32 request(const QJsonObject &json, const QByteArray &data, ReplyHandler onReply,
                    OutputHandler onOutput = {}, EventHandler onEvent = {});
    // False when the bytes were not queued (the supervisor is not reading, or the channel ended).
    bool sendStdin(quint32 id, QByteArrayView bytes);
    void resize(quint32 id, quint16 cols, quint16 rows);
    // Asks the supervisor to end request `id` (an exec's tree is killed); its answer still comes,
    // within kGraceMs.
    void cancel(quint32 id);
    // The engine killed exec `id` at its timeout: its answer says timedOut whatever it claims.
    void markTimedOut(quint32 id);
    // Output bytes of a windowed exec (a terminal, or an exec asked with `window` or `pipes`)
    // passed on: WINDOW, or for `pipes` more of its pipes read here.
    void acknowledge(quint32 id, quint32 bytes);
    // Bytes queued for the supervisor that it has not read yet.
    qint64 pendingWriteBytes() const;

    // Fails every pending request (the supervisor is gone).
    void failAll(const Error &error);
    // Sends what is queued, then closes the engine's writing side: the supervisor exits.
    void closeChannel();

Q_SIGNALS:
    // The first HELLO: {"pid":N,"version":"2"}.
    void hello(const QJsonObject &hello);
    // A protocol violation or a missed deadline, once: the sandbox must end.
    void failed(const QString &why);
    // An exec's process tree (its first EVENT): the reaper's pid inside the sandbox and the
    // inodes of its output pipes; `timeoutMs`: what is left of its timeout (at least 1; 0: none).
    void execStarted(quint32 id, qint64 reaperPid, const QList<quint64> &pipes, qint64 timeoutMs);
    // An exec's answer came (its main process exited: its reaper may serve another exec now,
    // even while the answer waits for the last of its piped output), or it failed. `treeGone`:
    // the supervisor says nothing of its tree is left (no background process holds its pipes).
    void execEnded(quint32 id, bool treeGone);
    // Exec `id` was cancelled: its tree is to be killed; once more when its EVENT comes after
    // the cancel (the supervisor may hold it back until then).
    void cancelRequested(quint32 id);

private:
    struct Pending
    {
        QString op;
        ReplyHandler onReply;
        OutputHandler onOutput;
        EventHandler onEvent;
        qsizetype maxResponse = 0;
        int responseFdDomain = 0; // AF_UNIX for connect; 0: no descriptor allowed
        int eventFdDomain = 0;    // AF_INET/AF_INET6 for listen: one EVENT, a listening socket
        bool allowsEvents = false;
        bool exec = false;
        bool started = false;
        bool cancelled = false;
        bool timedOut = false;
        bool truncated = false;
        quint64 maxOutput = 0;
        bool pty = false;      // an exec on a terminal (its output is bounded by a window)
        bool windowed = false; // output bounded by a window: a terminal, `window` or `pipes`
        // `pipes`: the engine reads the exec's stdout and stderr pipes itself (OutputPipe); its
        // answer waits in `held` until they are drained.
        bool piped = false;
        std::shared_ptr<OutputPipe> pipes[2];
        std::shared_ptr<Result<Reply>> held;
        QElapsedTimer heldFor;      // since the answer came
        QElapsedTimer quietFor;     // since output was read or the window opened (invalid: full)
        bool drainCheck = false;    // a checkDrain() is due
        quint64 unacknowledged = 0; // its output received and not yet acknowledged (WINDOW)
        quint64 sent[2] = {0, 0};
        qint64 timeoutMs = 0;
        QElapsedTimer sentFor; // an exec's: since its request was sent (its timeout counts)
        QDeadlineTimer deadline{QDeadlineTimer::Forever};
        // `watch`: the directory asked for, whose `ready` EVENT came, and what its EVENTs
        // brought in the current second (bounded: see kMaxWatchEntriesPerSecond).
        QString watchRoot;
        bool watchRecursive = false;
        qint64 watchSecond = 0;
        int watchFrames = 0;
        int watchEntries = 0;
    };
    struct ReceivedFd
    {
        qint64 offset; // of the last byte of the read it came with
        std::shared_ptr<UniqueFd> fd;
    };

    void onReadable();
    void onWritable();
    // Tells the poller what the socket waits for now (reading unless ended, writing while bytes
    // are queued).
    void setInterest(bool read, bool write);
    void flush();
    bool queueFrame(SupervisorWire::FrameType type, quint32 id, QByteArrayView a,
                    QByteArrayView b = {});
    // Checks a header against the pending requests before its payload is read (FrameParser's
    // HeaderCheck): empty when acceptable, else the violation.
    QString checkHeader(SupervisorWire::FrameType type, quint32 id, quint32 payload) const;
    void dispatch(SupervisorWire::FrameType type, quint32 id, QByteArrayView payload,
                  QList<std::shared_ptr<UniqueFd>> fds);
    void dispatchResponse(quint32 id, QByteArrayView payload, std::shared_ptr<UniqueFd> fd);
    void dispatchEvent(quint32 id, QByteArrayView payload, QList<std::shared_ptr<UniqueFd>> fds);
    // Output of exec `it` (a frame's, or a read of its pipes): counted, capped, passed on.
    void passOutput(QHash<quint32, Pending>::iterator it, int channel, OutputBytes bytes);
    // `pipes`: reads the exec's two output pipes from now on; empty when they are acceptable.
    QString takePipes(quint32 id, Pending &p, const QList<quint64> &inodes,
                      const QList<std::shared_ptr<UniqueFd>> &fds);
    // A piped exec's answer is held: delivered once its pipes ended, once they stayed quiet for
    // kDrainMs with the window open (a background process that holds them is not waited for),
    // or kDrainLimitMs after it came (a reader that takes nothing), whichever is first.
    void checkDrain(quint32 id);
    bool checkFd(const UniqueFd &fd, int domain, bool listening, QString *why) const;
    // A `watch` EVENT, checked and rebuilt from what PROTOCOL.md allows; empty `why` if fine.
    QJsonObject checkWatchEvent(Pending &p, const QJsonObject &event, QString *why) const;
    void violation(const QString &why);
    void checkDeadlines();
    void armDeadlines();
    void deliverLater(ReplyHandler handler, Result<Reply> result);

    UniqueFd m_socket;
    QPointer<FdPoller> m_poller;       // not owned, unless it is a child
    bool m_reading = false;            // in the poller for reading
    bool m_writing = false;            // for writing (bytes are queued)
    QTimer *m_deadlineTimer = nullptr; // owned (child)
    FrameParser m_parser;
    QByteArray m_readChunk;
    QByteArray m_pipeChunk; // the reads of every piped exec's pipes; freed when none is left
    QList<ReceivedFd> m_fds;
    QByteArray m_out;
    qsizetype m_outPos = 0;
    bool m_closing = false;
    bool m_eof = false;
    QHash<quint32, Pending> m_pending;
    quint32 m_nextId = 1;
    bool m_helloSeen = false;
    QString m_failure;
};

// Maps a supervisor error object ({"code":"not_found",...}) to the protocol's Error.
Error supervisorError(const QJsonObject &error);

} // namespace Sandbox::Engine
