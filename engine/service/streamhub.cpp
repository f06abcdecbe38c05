#include "streamhub.h"

#include "protocol/jsonrpc.h"
#include "protocol/utf8.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTimer>

namespace Sandbox::Engine {

struct StreamHub::Stream
{
    QString id;
    QString keyId;
    QByteArray requestIdJson; // the request id, as JSON text
    qint64 lastSeq = 0;
    std::deque<QByteArray> backlog; // notifications lastSeq-size+1 .. lastSeq
    qsizetype backlogBytes = 0;
    bool done = false;
    QDateTime endedAt;
    Sink sink;
    const void *owner = nullptr;
    std::function<void()> cancel;
    std::function<QJsonObject()> terminal;
    QByteArray carry[3]; // unfinished UTF-8 sequences per channel

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
    s->keyId = keyId;
    s->requestIdJson = QJsonDocument(QJsonArray{requestId}).toJson(QJsonDocument::Compact);
    s->requestIdJson = s->requestIdJson.mid(1, s->requestIdJson.size() - 2);
    s->sink = std::move(sink);
    s->cancel = std::move(cancel);
    const QString id = s->id;
    m_streams.emplace(id, std::move(s));
    return id;
}

void StreamHub::publish(Stream &s, QByteArray &&notification)
{
    if (s.sink)
        s.sink(notification);
    s.backlogBytes += notification.size();
    s.backlog.push_back(std::move(notification));
    while (!s.backlog.empty()
           && (s.backlogBytes > m_limits.backlogBytes
               || qsizetype(s.backlog.size()) > m_limits.backlogChunks)) {
        s.backlogBytes -= s.backlog.front().size();
        s.backlog.pop_front();
    }
}

void StreamHub::output(const QString &streamId, int channel, QByteArrayView bytes)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->done || bytes.isEmpty())
        return;
    Stream &s = *it->second;
    QByteArray &carry = s.carry[channel == 2 ? 2 : 1];
    QByteArray chunk = carry.isEmpty() ? bytes.toByteArray() : carry + bytes;
    const qsizetype complete = Utf8::completePrefixLength(chunk);
    carry = chunk.mid(complete);
    chunk.truncate(complete);
    if (chunk.isEmpty())
        return;

    QByteArray n;
    n.reserve(chunk.size() + 160);
    n.append(R"({"jsonrpc":"2.0","method":"stream.output","params":{"streamId":")");
    n.append(s.id.toLatin1());
    n.append(R"(","seq":)");
    n.append(QByteArray::number(++s.lastSeq));
    n.append(R"(,"requestId":)");
    n.append(s.requestIdJson);
    n.append(channel == 2 ? R"(,"channel":"stderr",)" : R"(,"channel":"stdout",)");
    if (Utf8::isValid(chunk)) {
        n.append(R"("data":)");
        JsonRpc::appendJsonString(n, chunk);
    } else {
        n.append(R"("dataBase64":")");
        n.append(chunk.toBase64());
        n.append('"');
    }
    n.append("}}");
    publish(s, std::move(n));
}

void StreamHub::flushCarry(Stream &s, int channel)
{
    QByteArray rest = std::exchange(s.carry[channel], {});
    if (rest.isEmpty())
        return;
    // Bytes that never completed a character: send them as they are, base64-encoded.
    QByteArray n = R"({"jsonrpc":"2.0","method":"stream.output","params":{"streamId":")"
                   + s.id.toLatin1() + R"(","seq":)" + QByteArray::number(++s.lastSeq)
                   + R"(,"requestId":)" + s.requestIdJson
                   + (channel == 2 ? R"(,"channel":"stderr")" : R"(,"channel":"stdout")")
                   + R"(,"dataBase64":")" + rest.toBase64() + "\"}}";
    publish(s, std::move(n));
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
    publish(s, std::move(n));
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
    publish(s, std::move(n));
}

Result<StreamHub::Resume> StreamHub::resume(const QString &keyId, const QString &streamId,
                                            qint64 after, Sink sink)
{
    const auto it = m_streams.find(streamId);
    if (it == m_streams.end() || it->second->keyId != keyId)
        return Error::notFound(QStringLiteral("stream %1").arg(streamId));
    Stream &s = *it->second;
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
    s.sink = nullptr;
    Resume r;
    r.answer = QJsonObject{{QStringLiteral("streamId"), streamId},
                           {QStringLiteral("after"), double(after)},
                           {QStringLiteral("last"), double(s.lastSeq)},
                           {QStringLiteral("done"), s.done}};
    if (s.terminal)
        r.answer.insert(QStringLiteral("terminal"), s.terminal());
    r.replay = [this, streamId, after, sink = std::move(sink)] {
        const auto it = m_streams.find(streamId);
        if (it == m_streams.end())
            return;
        Stream &s = *it->second;
        const qint64 first = s.firstSeq();
        for (qint64 seq = qMax(after + 1, first); seq <= s.lastSeq; ++seq)
            sink(s.backlog[size_t(seq - first)]);
        s.sink = sink;
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
    if (it != m_streams.end())
        it->second->owner = owner;
}

void StreamHub::setBacklogProbe(const void *owner, std::function<qint64()> probe)
{
    m_probes.insert(owner, std::move(probe));
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

void StreamHub::detach(const void *owner)
{
    m_probes.remove(owner);
    for (auto &[id, s] : m_streams) {
        if (s->owner == owner) {
            s->sink = nullptr;
            s->owner = nullptr;
        }
    }
}

void StreamHub::sweep()
{
    const QDateTime cutoff = QDateTime::currentDateTimeUtc().addMSecs(-m_limits.keepAfterEndMs);
    for (auto it = m_streams.begin(); it != m_streams.end();) {
        if (it->second->done && it->second->endedAt < cutoff)
            it = m_streams.erase(it);
        else
            ++it;
    }
}

} // namespace Sandbox::Engine
