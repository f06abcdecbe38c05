#pragma once

#include "protocol/result.h"
#include "runtime/outputbytes.h"

#include <QByteArray>
#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QObject>
#include <QSet>
#include <QString>
#include <QTimer>

#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace Sandbox::Engine {

// Streams of notifications that outlive a connection (docs/protocol.md, 2.3): each has a
// bounded backlog of its notifications, numbered by seq, from which a reconnecting client
// resumes. One connection receives a stream as its own (the sink: the one that started it, or
// resumed it); other connections of the same key may watch it besides (stream.watch).
class StreamHub final : public QObject
{
    Q_OBJECT

public:
    using Sink = std::function<void(const QByteArray &notification)>;

    struct Limits
    {
        qsizetype backlogBytes = 8 * 1024 * 1024;
        qsizetype backlogChunks = 8192;
        qint64 keepAfterEndMs = 10 * 60 * 1000;
        // What the streams of one key, and of all keys, keep together: their backlogs (each
        // entry's array and kEntryCost) and kStreamCost per stream. Beyond either, the oldest
        // ended streams (of that key, or of any) are let go first, whole, then the oldest output
        // of the oldest running ones: without it a key holder running exec after exec with
        // output made the engine keep 8 MiB of each for 10 minutes.
        qint64 keyKeptBytes = 64 * 1024 * 1024;
        qint64 allKeptBytes = 256 * 1024 * 1024;
        // How long the unfinished UTF-8 sequence at the end of a chunk waits for the rest of its
        // character before it is sent as it is (a program that writes a partial character, or
        // binary bytes, and then waits must not keep them from its reader).
        int carryHoldMs = 20;
    };

    explicit StreamHub(QObject *parent = nullptr);
    explicit StreamHub(Limits limits, QObject *parent = nullptr);
    ~StreamHub() override;

    // A new stream owned by `keyId`; `requestId` is echoed in its notifications.
    QString open(const QString &keyId, const QJsonValue &requestId, Sink sink,
                 std::function<void()> cancel);
    // Output bytes; split at UTF-8 boundaries, sent as `data` or, if not UTF-8, `dataBase64` —
    // or as a binary frame (2.6) to a connection that asked for them (setBinarySink()). Bytes
    // that can be taken are kept in the array they were read into.
    void output(const QString &streamId, int channel, OutputBytes bytes);
    // A typed event (`stream.event {streamId, seq, requestId, event}`), e.g. an agent run's
    // normalised events (docs/protocol.md, 4.7). Shares the stream's seq and backlog.
    void event(const QString &streamId, const QJsonObject &event);
    // The last notification: `fields` ({"result": ...} or {"error": ...}) go into its params.
    void end(const QString &streamId, const QJsonObject &fields);

    // Resumes a stream on a new sink after `after`: answers {streamId, after, last, done}, and
    // `replay()` must be called right after the answer is sent.
    struct Resume
    {
        QJsonObject answer;
        std::function<void()> replay;
    };
    Result<Resume> resume(const QString &keyId, const QString &streamId, qint64 after, Sink sink);
    // Watches a stream from another connection (`owner`) after `after`, without taking it from
    // the connection that follows it: the same answer and replay as resume(), then every new
    // notification to `sink` too, until the stream ends or detach(owner). The owner of the
    // stream's sink watching it resumes it instead.
    Result<Resume> watch(const QString &keyId, const QString &streamId, qint64 after,
                         const void *owner, Sink sink);
    Result<bool> cancel(const QString &keyId, const QString &streamId);
    // The connection behind a sink went away: keep the streams, stop sending.
    void detach(const void *owner);
    void setSinkOwner(const QString &streamId, const void *owner);

    // How many bytes a connection (a sink owner) has not sent yet: for streams whose producer
    // waits for its reader (a terminal, docs/protocol.md 4.8). Removed by detach(owner).
    void setBacklogProbe(const void *owner, std::function<qint64()> probe);
    // A connection (a sink owner) that takes output as binary frames (docs/protocol.md 2.6):
    // from now on, output of the streams it follows goes to `binary`, replays included, each as
    // the WebSocket message that carries its frame, header included (one frame, a server's: not
    // masked), for the connection to write to its socket as it is. Removed by detach(owner), or
    // by an empty `binary` (JSON again).
    void setBinarySink(const void *owner, Sink binary);
    // The unsent bytes of the connection the stream goes to; -1 when no connection follows it.
    qint64 sinkBacklog(const QString &streamId) const;

    // A stream whose producer waits for its reader (an exec's output window, PROTOCOL.md "Flow
    // control"): the output bytes it got are passed to `acknowledge` as soon as the connection
    // that follows the stream has at most kClientHighWater bytes unsent — at once while nobody
    // follows it (its backlog keeps the last of the output and the program runs on). So a
    // client that reads slowly slows the program down instead of the engine holding its output.
    static constexpr qint64 kClientHighWater = 2 * 1024 * 1024;
    void setWindow(const QString &streamId, std::function<void(qint64 bytes)> acknowledge);
    // The connection (a sink owner) sent some of what it had queued: windows waiting for it may
    // open.
    void drained(const void *owner);
    // A terminal stream: `describe` ({cols, rows, modes}) goes into the answers of
    // stream.resume as `terminal` (also in a -32009's data), so that a client can restore it.
    void setTerminal(const QString &streamId, std::function<QJsonObject()> describe);

    int count() const { return int(m_streams.size()); }
    // What the streams keep, counted as Limits::keyKeptBytes counts it (for tests).
    qint64 keptBytes() const { return m_keptTotal; }

    static constexpr qint64 kEntryCost = 64;    // a backlog entry besides its array
    static constexpr qint64 kStreamCost = 1024; // a stream besides its backlog

private:
    struct Stream;
    struct Entry;
    void publish(Stream &s, Entry &&entry);
    void deliver(const Stream &s, qint64 seq, const Entry &entry, const Sink &sink,
                 const void *owner) const;
    Result<QJsonObject> resumeAnswer(const QString &keyId, const QString &streamId,
                                     qint64 after) const;
    // The room output takes before its data for the headers of its WebSocket message: a
    // WebSocket header's at most, then its binary frame's prefix (0: made as it is sent).
    static qsizetype headerRoom(const Stream &s);
    // `bytes` (the data from `begin` on, at least headerRoom() bytes of room before it) as the
    // WebSocket message of notification `seq`'s binary frame, the data where it lies.
    static QByteArray webSocketMessage(const Stream &s, qint64 seq, quint8 channel,
                                       QByteArray bytes, qsizetype begin);
    static Entry outputEntry(const Stream &s, quint8 channel, QByteArray bytes, qsizetype begin);
    void flushCarry(Stream &s, int channel);
    void acknowledgeIfRoom(Stream &s);
    void flushStaleCarries();
    void sweep();
    // What the streams keep (see Limits::keyKeptBytes): counted, and held within the limits.
    void account(Stream &s, qint64 bytes);
    void popOldest(Stream &s);
    void keepWithinLimits(const Stream &current);
    Stream *oldestEnded(std::deque<QString> &order, const Stream &current);
    Stream *oldestRunning(const QString *keyId, const Stream &current);
    void letGo(Stream &s); // an ended stream, whole: erased on the next turn of the loop
    void eraseLetGo();

    Limits m_limits;
    std::unordered_map<QString, std::unique_ptr<Stream>> m_streams;
    QHash<const void *, std::function<qint64()>> m_probes;
    QHash<const void *, Sink> m_binarySinks;
    QSet<QString> m_carrying;      // streams holding an unfinished character
    QSet<QString> m_windowWaiting; // streams whose window waits for their connection
    // Streams in the order they ended, all and by key (some since let go or erased).
    std::deque<QString> m_ended;
    QHash<QString, std::deque<QString>> m_endedOfKey;
    std::vector<QString> m_letGo; // to be erased on the next turn of the loop
    QHash<QString, qint64> m_keptByKey;
    qint64 m_keptTotal = 0;
    quint64 m_opened = 0; // streams opened so far: each one's place in that order
    QTimer m_carryTimer;
    QElapsedTimer m_clock;
};

} // namespace Sandbox::Engine
