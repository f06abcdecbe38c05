#include "streamhub.h"

#include "protocol/jsonrpc.h"
#include "protocol/streamframe.h"
#include "protocol/utf8.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTimer>

#include <cstring>
#include <vector>

namespace Sandbox::Engine {

// One notification of a stream's backlog, kept in no encoding in particular: output as its raw
// bytes (encoded for each connection as it is sent, JSON or binary), anything else as JSON text.
struct StreamHub::Entry
{
    quint8 channel = 0; // 1 stdout, 2 stderr: raw output; 0: a JSON notification
    // Output is kept as the WebSocket message of its binary frame (docs/protocol.md 2.6), made
    // once as the bytes come in: a binary connection writes `bytes` to its socket as they are
    // (shared, no copy), a JSON one takes the data behind the headers. A stream with a long
    // request id keeps the bytes alone (dataOffset 0). The backlog's limit counts the data only.
    QByteArray bytes;
    qsizetype dataOffset = 0;

    QByteArrayView data() const { return QByteArrayView(bytes).sliced(dataOffset); }
};

struct StreamHub::Stream
{
    QString id;
    QByteArray idLatin1; // the id as it goes on the wire
    QString keyId;
    QByteArray requestIdJson; // the request id, as JSON text
    qint64 lastSeq = 0;
    std::deque<Entry> backlog;  // notifications lastSeq-size+1 .. lastSeq
    qsizetype backlogBytes = 0; // its output's bytes, as the per-stream limit counts them
    qint64 kept = 0;            // its memory, as the limits of all streams count it
    quint64 opened = 0;         // its place in the order streams were opened
    bool done = false;
    bool letGo = false; // ended, and let go for the limits: as good as erased
    QDateTime endedAt;
    Sink sink;
    const void *owner = nullptr;
    struct Watcher
    {
        const void *owner;
        Sink sink;
    };
    std::vector<Watcher> watchers; // other connections that follow it (stream.watch)
    std::function<void()> cancel;
    std::function<QJsonObject()> terminal;
    std::function<void(qint64)> acknowledge; // setWindow()
    qint64 unacknowledged = 0;
    QByteArray carry[3];      // unfinished UTF-8 sequences per channel
    qint64 carriedAt[3] = {}; // when each began to wait (StreamHub::m_clock, ms)

    qint64 firstSeq() const { return lastSeq - qint64(backlog.size()) + 1; }
};

StreamHub::StreamHub(QObject *parent)
    : StreamHub(Limits{}, parent)
{}

StreamHub::StreamHub(Limits limits, QObject *parent)
    : QObject(parent)
    , m_limits(limits)
{
    auto *timer = new QTimer(this);
    timer->setInterval(30 * 1000);
    connect(timer, &QTimer::timeout, this, &StreamHub::sweep);
    timer->start();
    m_clock.start();
    m_carryTimer.setSingleShot(true);
    connect(&m_carryTimer, &QTimer::timeout, this, &StreamHub::flushStaleCarries);
}

StreamHub::~StreamHub() = default;

QString StreamHub::open(const QString &keyId, const QJsonValue &requestId, Sink sink,
                        std::function<void()> cancel)
{
    auto s = std::make_unique<Stream>();
    quint64 r[2];
    QRandomGenerator::system()->fillRange(r, 2);
    s->id = QStringLiteral("st_")
            + QString::fromLatin1(QByteArray(reinterpret_cast<const char *>(r), sizeof r).toHex());
    s->idLatin1 = s->id.toLatin1();
    s->keyId = keyId;
    s->requestIdJson = QJsonDocument(QJsonArray{requestId}).toJson(QJsonDocument::Compact);
    s->requestIdJson = s->requestIdJson.mid(1, s->requestIdJson.size() - 2);
    s->sink = std::move(sink);
    s->cancel = std::move(cancel);
    s->opened = ++m_opened;
    const QString id = s->id;
    Stream &stream = *m_streams.emplace(id, std::move(s)).first->second;
    account(stream, kStreamCost);
    keepWithinLimits(stream);
    return id;
}

void StreamHub::account(Stream &s, qint64 bytes)
{
    s.kept += bytes;
    m_keptTotal += bytes;
    qint64 &key = m_keptByKey[s.keyId];
    key += bytes;
    if (key <= 0)
        m_keptByKey.remove(s.keyId);
}

void StreamHub::popOldest(Stream &s)
{
    const Entry &e = s.backlog.front();
    s.backlogBytes -= e.data().size();
    account(s, -(e.bytes.capacity() + kEntryCost));
    s.backlog.pop_front();
}

// Only backlogs shrink here, and ended streams are erased later (eraseLetGo): this runs inside
// publish(), which callers reach from loops over the streams.
void StreamHub::keepWithinLimits(const Stream &current)
{
    const QString keyId = current.keyId;
    while (m_keptTotal > m_limits.allKeptBytes || m_keptByKey.value(keyId) > m_limits.keyKeptBytes) {
        const bool keyOver = m_keptByKey.value(keyId) > m_limits.keyKeptBytes;
        if (Stream *ended = oldestEnded(keyOver ? m_endedOfKey[keyId] : m_ended, current)) {
            letGo(*ended);
        } else if (Stream *running = oldestRunning(keyOver ? &keyId : nullptr, current)) {
            popOldest(*running);
        } else {
            break; // what is left is the current stream's newest entry and running streams
        }
    }
}

StreamHub::Stream *StreamHub::oldestEnded(std::deque<QString> &order, const Stream &current)
{
    const auto live = [this](const QString &id) {
        const auto it = m_streams.find(id);
        return it == m_streams.end() || it->second->letGo ? nullptr : it->second.get();
    };
    while (!order.empty() && !live(order.front()))
        order.pop_front();          // let go or erased since
    for (const QString &id : order) // the current stream, just ended, is the last
        if (Stream *s = live(id); s && s != &current)
            return s;
    return nullptr;
}

StreamHub::Stream *StreamHub::oldestRunning(const QString *keyId, const Stream &current)
{
    Stream *oldest = nullptr;
    for (auto &[id, s] : m_streams) {
        const size_t keep = s.get() == &current ? 1 : 0; // the entry just published stays
        if (s->done || s->backlog.size() <= keep || (keyId && s->keyId != *keyId))
            continue;
        if (!oldest || s->opened < oldest->opened)
            oldest = s.get();
    }
    return oldest;
}

void StreamHub::letGo(Stream &s)
{
    account(s, -s.kept);
    s.backlog.clear();
    s.backlogBytes = 0;
    s.letGo = true;
    m_letGo.push_back(s.id);
    if (m_letGo.size() == 1)
        QTimer::singleShot(0, this, &StreamHub::eraseLetGo);
}

void StreamHub::eraseLetGo()
{
    for (const QString &id : std::exchange(m_letGo, {}))
        m_streams.erase(id);
}

void StreamHub::publish(Stream &s, Entry &&entry)
{
    if (s.sink)
        deliver(s, s.lastSeq, entry, s.sink, s.owner);
    if (!s.watchers.empty()) {
        // A copy: a watcher that reads too slowly is dropped (detach()) while it is sent to.
        const std::vector<Stream::Watcher> watchers = s.watchers;
        for (const Stream::Watcher &w : watchers)
            deliver(s, s.lastSeq, entry, w.sink, w.owner);
    }
    s.backlogBytes += entry.data().size();
    account(s, entry.bytes.capacity() + kEntryCost);
    s.backlog.push_back(std::move(entry));
    while (!s.backlog.empty()
           && (s.backlogBytes > m_limits.backlogBytes
               || qsizetype(s.backlog.size()) > m_limits.backlogChunks))
        popOldest(s);
    keepWithinLimits(s);
}

void StreamHub::deliver(const Stream &s, qint64 seq, const Entry &entry, const Sink &sink,
                        const void *owner) const
{
    if (entry.channel == 0) {
        sink(entry.bytes);
        return;
    }
    const auto binary = m_binarySinks.constFind(owner);
    if (binary != m_binarySinks.constEnd()) {
        if (entry.dataOffset > 0) {
            (*binary)(entry.bytes);
            return;
        }
        if (s.requestIdJson.size() <= StreamFrame::MaxIdBytes) {
            const qsizetype room = StreamFrame::MaxWebSocketHeaderBytes
                                   + StreamFrame::prefixBytes(s.idLatin1, s.requestIdJson);
            const QByteArrayView data = entry.data();
            QByteArray message(room + data.size(), Qt::Uninitialized);
            memcpy(message.data() + room, data.data(), size_t(data.size()));
            (*binary)(webSocketMessage(s, seq, entry.channel, std::move(message), room));
            return;
        }
    }
    const QByteArrayView data = entry.data();
    QByteArray n;
    n.reserve(data.size() + 160);
    n.append(R"({"jsonrpc":"2.0","method":"stream.output","params":{"streamId":")");
    n.append(s.idLatin1);
    n.append(R"(","seq":)");
    n.append(QByteArray::number(seq));
    n.append(R"(,"requestId":)");
    n.append(s.requestIdJson);
    n.append(entry.channel == 2 ? R"(,"channel":"stderr",)" : R"(,"channel":"stdout",)");
    if (Utf8::isValid(data)) {
        n.append(R"("data":)");
        JsonRpc::appendJsonString(n, data);
    } else {
        // Not UTF-8 (or bytes that never completed a character, at the end): base64.
        n.append(R"("dataBase64":")");
        n.append(QByteArray::fromRawData(data.data(), data.size()).toBase64());
        n.append('"');
    }
    n.append("}}");
    sink(n);
}

void StreamHub::output(const QString &streamId, int channel, OutputBytes bytes)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->done || bytes.size() == 0)
        return;
    Stream &s = *it->second;
    if (s.acknowledge)
        s.unacknowledged += bytes.size(); // acknowledged once they are on their way
    // Chunks end at UTF-8 boundaries whatever the encoding, so that every connection, JSON or
    // binary, sees the same chunks under the same seq.
    const quint8 ch = channel == 2 ? 2 : 1;
    QByteArray &carry = s.carry[ch];
    // The chunk: the carried bytes and the new ones from `begin` on, room for their message's
    // headers before. The bytes stay in the array they were read into where they can (the carry
    // goes in front of them), else this is the one copy they get here.
    const qsizetype room = headerRoom(s);
    qsizetype begin = room;
    QByteArray chunk;
    // (A small read is copied: kept as it was read, each would hold its array's room.)
    constexpr qsizetype kSmallestTaken = 16 * 1024;
    if (room > 0 && bytes.canTake() && bytes.size() >= kSmallestTaken
        && room + carry.size() <= OutputBytes::kRoom) {
        begin = OutputBytes::kRoom - carry.size();
        chunk = bytes.take();
    } else {
        chunk = QByteArray(room + carry.size() + bytes.size(), Qt::Uninitialized);
        memcpy(chunk.data() + room + carry.size(), bytes.view().data(), size_t(bytes.size()));
    }
    memcpy(chunk.data() + begin, carry.constData(), size_t(carry.size()));
    const qsizetype complete = Utf8::completePrefixLength(QByteArrayView(chunk).sliced(begin));
    carry = chunk.mid(begin + complete);
    chunk.truncate(begin + complete);
    if (!carry.isEmpty()) {
        // Each new chunk that ends inside a character restarts its wait: only a pause sends it.
        s.carriedAt[ch] = m_clock.elapsed();
        m_carrying.insert(s.id);
        if (!m_carryTimer.isActive())
            m_carryTimer.start(m_limits.carryHoldMs);
    }
    if (complete > 0) {
        ++s.lastSeq;
        publish(s, outputEntry(s, ch, std::move(chunk), begin));
    }
    acknowledgeIfRoom(s);
}

void StreamHub::acknowledgeIfRoom(Stream &s)
{
    if (!s.acknowledge || s.unacknowledged == 0)
        return;
    if (s.sink) {
        const auto probe = m_probes.constFind(s.owner);
        if (probe != m_probes.constEnd() && (*probe)() > kClientHighWater) {
            m_windowWaiting.insert(s.id);
            return;
        }
    }
    m_windowWaiting.remove(s.id);
    s.acknowledge(std::exchange(s.unacknowledged, 0));
}

void StreamHub::setWindow(const QString &streamId, std::function<void(qint64)> acknowledge)
{
    const auto it = m_streams.find(streamId);
    if (it != m_streams.end() && !it->second->done)
        it->second->acknowledge = std::move(acknowledge);
}

void StreamHub::drained(const void *owner)
{
    if (m_windowWaiting.isEmpty())
        return;
    const QSet<QString> waiting = m_windowWaiting;
    for (const QString &id : waiting) {
        const auto it = m_streams.find(id);
        if (it == m_streams.end()) {
            m_windowWaiting.remove(id);
            continue;
        }
        if (it->second->owner == owner || !it->second->sink)
            acknowledgeIfRoom(*it->second);
    }
}

qsizetype StreamHub::headerRoom(const Stream &s)
{
    // A long request id is not repeated in every chunk of the backlog (it may take 64 KiB): its
    // messages are made as they are sent.
    constexpr qsizetype kPrebuiltIdBytes = 256;
    return s.requestIdJson.size() <= kPrebuiltIdBytes
               ? StreamFrame::MaxWebSocketHeaderBytes
                     + StreamFrame::prefixBytes(s.idLatin1, s.requestIdJson)
               : 0;
}

QByteArray StreamHub::webSocketMessage(const Stream &s, qint64 seq, quint8 channel,
                                       QByteArray bytes, qsizetype begin)
{
    const qsizetype prefix = StreamFrame::prefixBytes(s.idLatin1, s.requestIdJson);
    const qsizetype payload = prefix + bytes.size() - begin;
    const qsizetype start = begin - prefix - StreamFrame::webSocketHeaderBytes(payload);
    Q_ASSERT(start >= 0);
    StreamFrame::writeWebSocketHeader(bytes.data() + start, payload);
    StreamFrame::writePrefix(bytes.data() + begin - prefix, s.idLatin1, s.requestIdJson, seq,
                             StreamFrame::Channel(channel));
    // An array read into that holds less than it could (a pipe's read that got less than it
    // asked for) gives the rest back, in place, before its start moves (after that it would be
    // copied): the backlog holds what it keeps and little more.
    if (bytes.capacity() - bytes.size() > 1024)
        bytes.squeeze();
    // The message starts at its header: on an array of its own, remove() at the front moves its
    // start and copies nothing.
    bytes.remove(0, start);
    return bytes;
}

// `bytes` holds the data of notification s.lastSeq from `begin` on (0: no room for headers).
StreamHub::Entry StreamHub::outputEntry(const Stream &s, quint8 channel, QByteArray bytes,
                                        qsizetype begin)
{
    if (begin == 0)
        return Entry{channel, std::move(bytes), 0};
    const qsizetype size = bytes.size() - begin;
    Entry e{channel, webSocketMessage(s, s.lastSeq, channel, std::move(bytes), begin), 0};
    e.dataOffset = e.bytes.size() - size;
    return e;
}

void StreamHub::flushStaleCarries()
{
    const qint64 now = m_clock.elapsed();
    qint64 next = -1; // ms until the youngest carry left is due
    for (auto id = m_carrying.begin(); id != m_carrying.end();) {
        const auto it = m_streams.find(*id);
        bool holding = false;
        if (it != m_streams.end() && !it->second->done) {
            Stream &s = *it->second;
            for (int ch : {1, 2}) {
                if (s.carry[ch].isEmpty())
                    continue;
                const qint64 due = s.carriedAt[ch] + m_limits.carryHoldMs - now;
                if (due <= 0) {
                    flushCarry(s, ch);
                } else {
                    holding = true;
                    next = next < 0 ? due : qMin(next, due);
                }
            }
        }
        id = holding ? std::next(id) : m_carrying.erase(id);
    }
    if (next >= 0)
        m_carryTimer.start(int(next));
}

void StreamHub::flushCarry(Stream &s, int channel)
{
    QByteArray rest = std::exchange(s.carry[channel], {});
    if (rest.isEmpty())
        return;
    // Bytes that never completed a character: sent as they are (base64 in JSON).
    ++s.lastSeq;
    const qsizetype room = headerRoom(s);
    QByteArray chunk(room + rest.size(), Qt::Uninitialized);
    memcpy(chunk.data() + room, rest.constData(), size_t(rest.size()));
    publish(s, outputEntry(s, quint8(channel), std::move(chunk), room));
}

void StreamHub::event(const QString &streamId, const QJsonObject &event)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->done)
        return;
    Stream &s = *it->second;
    QJsonObject params{{QStringLiteral("streamId"), s.id},
                       {QStringLiteral("seq"), double(++s.lastSeq)},
                       {QStringLiteral("event"), event}};
    QByteArray n = JsonRpc::serialize(
        JsonRpc::notificationObject(QStringLiteral("stream.event"), params));
    // requestId goes into params as raw JSON, to keep its exact type ("params" is the last key).
    n.insert(n.lastIndexOf('}', n.lastIndexOf('}') - 1), ",\"requestId\":" + s.requestIdJson);
    publish(s, Entry{0, std::move(n)});
}

void StreamHub::end(const QString &streamId, const QJsonObject &fields)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->done)
        return;
    Stream &s = *it->second;
    flushCarry(s, 1);
    flushCarry(s, 2);
    QJsonObject params = fields;
    params.insert(QStringLiteral("streamId"), s.id);
    params.insert(QStringLiteral("seq"), double(++s.lastSeq));
    QByteArray n = JsonRpc::serialize(
        JsonRpc::notificationObject(QStringLiteral("stream.end"), params));
    // requestId goes in as raw JSON to keep its exact type, inside `params` like in stream.output
    // (the serialized object ends with params' closing brace, then the message's).
    n.insert(n.lastIndexOf('}', n.lastIndexOf('}') - 1), ",\"requestId\":" + s.requestIdJson);
    s.done = true;
    s.endedAt = QDateTime::currentDateTimeUtc();
    s.cancel = nullptr;
    s.terminal = nullptr;
    s.acknowledge = nullptr;
    m_windowWaiting.remove(s.id);
    m_ended.push_back(s.id);
    m_endedOfKey[s.keyId].push_back(s.id);
    publish(s, Entry{0, std::move(n)});
    s.watchers.clear();
}

Result<QJsonObject> StreamHub::resumeAnswer(const QString &keyId, const QString &streamId,
                                            qint64 after) const
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->keyId != keyId || it->second->letGo)
        return Error::notFound(QStringLiteral("stream %1").arg(streamId));
    const Stream &s = *it->second;
    if (after < 0 || after > s.lastSeq)
        return Error::invalidParams(QStringLiteral("after"),
                                    QStringLiteral("must be between 0 and %1").arg(s.lastSeq));
    if (after < s.firstSeq() - 1) {
        QJsonObject data{{QStringLiteral("first"), double(s.firstSeq())}};
        if (s.terminal)
            data.insert(QStringLiteral("terminal"), s.terminal());
        return Error{ErrorCode::StreamGap,
                     QStringLiteral("stream %1 no longer holds notifications %2 to %3")
                         .arg(streamId)
                         .arg(after + 1)
                         .arg(s.firstSeq() - 1),
                     data};
    }
    QJsonObject answer{{QStringLiteral("streamId"), streamId},
                       {QStringLiteral("after"), double(after)},
                       {QStringLiteral("last"), double(s.lastSeq)},
                       {QStringLiteral("done"), s.done}};
    if (s.terminal)
        answer.insert(QStringLiteral("terminal"), s.terminal());
    return answer;
}

Result<StreamHub::Resume> StreamHub::resume(const QString &keyId, const QString &streamId,
                                            qint64 after, Sink sink)
{
    auto answer = resumeAnswer(keyId, streamId, after);
    if (!answer)
        return answer.error();
    m_streams.find(streamId)->second->sink = nullptr;
    Resume r;
    r.answer = std::move(answer.value());
    r.replay = [this, streamId, after, sink = std::move(sink)] {
        const auto it = m_streams.find(streamId);
        if (it == m_streams.end() || it->second->letGo)
            return;
        Stream &s = *it->second;
        for (qint64 seq = qMax(after + 1, s.firstSeq()); seq <= s.lastSeq; ++seq)
            if (seq >= s.firstSeq()) // (the limits may take the oldest meanwhile)
                deliver(s, seq, s.backlog[size_t(seq - s.firstSeq())], sink, s.owner);
        s.sink = sink;
        acknowledgeIfRoom(s); // a window that waited for the connection before
    };
    return r;
}

Result<StreamHub::Resume> StreamHub::watch(const QString &keyId, const QString &streamId,
                                           qint64 after, const void *owner, Sink sink)
{
    const auto it = m_streams.find(streamId);
    if (it != m_streams.end() && it->second->sink && it->second->owner == owner)
        return resume(keyId, streamId, after, std::move(sink));
    auto answer = resumeAnswer(keyId, streamId, after);
    if (!answer)
        return answer.error();
    Resume r;
    r.answer = std::move(answer.value());
    r.replay = [this, streamId, after, owner, sink = std::move(sink)] {
        const auto it = m_streams.find(streamId);
        if (it == m_streams.end() || it->second->letGo)
            return;
        Stream &s = *it->second;
        std::erase_if(s.watchers, [owner](const Stream::Watcher &w) { return w.owner == owner; });
        for (qint64 seq = qMax(after + 1, s.firstSeq()); seq <= s.lastSeq; ++seq)
            if (seq >= s.firstSeq()) // (the limits may take the oldest meanwhile)
                deliver(s, seq, s.backlog[size_t(seq - s.firstSeq())], sink, owner);
        if (!s.done)
            s.watchers.push_back(Stream::Watcher{owner, sink});
    };
    return r;
}

Result<bool> StreamHub::cancel(const QString &keyId, const QString &streamId)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->keyId != keyId)
        return Error::notFound(QStringLiteral("stream %1").arg(streamId));
    if (auto cancel = std::exchange(it->second->cancel, nullptr))
        cancel();
    return true;
}

void StreamHub::setSinkOwner(const QString &streamId, const void *owner)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end())
        return;
    it->second->owner = owner;
    // A watcher that takes the stream over gets it once, as its sink.
    std::erase_if(it->second->watchers,
                  [owner](const Stream::Watcher &w) { return w.owner == owner; });
}

void StreamHub::setBacklogProbe(const void *owner, std::function<qint64()> probe)
{
    m_probes.emplace(owner, std::move(probe));
}

qint64 StreamHub::sinkBacklog(const QString &streamId) const
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || !it->second->sink)
        return -1;
    const auto probe = m_probes.constFind(it->second->owner);
    return probe == m_probes.constEnd() ? 0 : (*probe)();
}

void StreamHub::setTerminal(const QString &streamId, std::function<QJsonObject()> describe)
{
    const auto it = m_streams.find(streamId);
    if (it != m_streams.end())
        it->second->terminal = std::move(describe);
}

void StreamHub::setBinarySink(const void *owner, Sink binary)
{
    if (binary)
        m_binarySinks.emplace(owner, std::move(binary));
    else
        m_binarySinks.remove(owner);
}

void StreamHub::detach(const void *owner)
{
    m_probes.remove(owner);
    m_binarySinks.remove(owner);
    for (auto &[id, s] : m_streams) {
        if (s->owner == owner) {
            s->sink = nullptr;
            s->owner = nullptr;
            acknowledgeIfRoom(*s); // nobody follows it now: the program runs on
        }
        std::erase_if(s->watchers, [owner](const Stream::Watcher &w) { return w.owner == owner; });
    }
}

void StreamHub::sweep()
{
    const QDateTime cutoff = QDateTime::currentDateTimeUtc().addMSecs(-m_limits.keepAfterEndMs);
    for (auto it = m_streams.begin(); it != m_streams.end();) {
        if (it->second->done && it->second->endedAt < cutoff) {
            account(*it->second, -it->second->kept);
            it = m_streams.erase(it);
        } else {
            ++it;
        }
    }
    eraseLetGo();
    // The order of ended streams, without those gone.
    const auto gone = [this](const QString &id) { return !m_streams.contains(id); };
    std::erase_if(m_ended, gone);
    for (auto it = m_endedOfKey.begin(); it != m_endedOfKey.end();) {
        std::erase_if(*it, gone);
        it = it->empty() ? m_endedOfKey.erase(it) : std::next(it);
    }
}

} // namespace Sandbox::Engine
