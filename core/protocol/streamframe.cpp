#include "streamframe.h"

#include <QtEndian>

#include <cstring>

namespace Sandbox::StreamFrame {

// Layout (little-endian): u8 kind, u8 channel, u16 stream id length, u16 request id length,
// u16 reserved (0), u64 seq; then the stream id, the request id and the data.
void writePrefix(char *out, QByteArrayView streamId, QByteArrayView requestIdJson, qint64 seq,
                 Channel channel)
{
    Q_ASSERT(streamId.size() <= MaxIdBytes && requestIdJson.size() <= MaxIdBytes);
    uchar *p = reinterpret_cast<uchar *>(out);
    p[0] = KindOutput;
    p[1] = quint8(channel);
    qToLittleEndian<quint16>(quint16(streamId.size()), p + 2);
    qToLittleEndian<quint16>(quint16(requestIdJson.size()), p + 4);
    qToLittleEndian<quint16>(0, p + 6);
    qToLittleEndian<quint64>(quint64(seq), p + 8);
    out += HeaderBytes;
    memcpy(out, streamId.data(), size_t(streamId.size()));
    out += streamId.size();
    memcpy(out, requestIdJson.data(), size_t(requestIdJson.size()));
}

QByteArray encodeOutput(QByteArrayView streamId, QByteArrayView requestIdJson, qint64 seq,
                        Channel channel, QByteArrayView data)
{
    const qsizetype prefix = prefixBytes(streamId, requestIdJson);
    QByteArray frame(prefix + data.size(), Qt::Uninitialized);
    writePrefix(frame.data(), streamId, requestIdJson, seq, channel);
    if (!data.isEmpty())
        memcpy(frame.data() + prefix, data.data(), size_t(data.size()));
    return frame;
}

qsizetype webSocketHeaderBytes(qsizetype payload)
{
    return payload < 126 ? 2 : payload <= 0xffff ? 4 : 10;
}

void writeWebSocketHeader(char *out, qsizetype payload, WebSocketOpcode opcode)
{
    uchar *p = reinterpret_cast<uchar *>(out);
    p[0] = 0x80 | uchar(opcode); // FIN
    if (payload < 126) {
        p[1] = uchar(payload); // mask bit 0: a server's frames are not masked
    } else if (payload <= 0xffff) {
        p[1] = 126;
        qToBigEndian<quint16>(quint16(payload), p + 2);
    } else {
        p[1] = 127;
        qToBigEndian<quint64>(quint64(payload), p + 2);
    }
}

std::optional<Output> decode(const QByteArray &message, QString *why)
{
    const auto fail = [why](const QString &reason) -> std::optional<Output> {
        if (why)
            *why = reason;
        return std::nullopt;
    };
    if (message.size() < HeaderBytes)
        return fail(QStringLiteral("a binary frame of %1 bytes (the header alone is %2)")
                        .arg(message.size())
                        .arg(HeaderBytes));
    const auto *p = reinterpret_cast<const uchar *>(message.constData());
    if (p[0] != KindOutput)
        return fail(QStringLiteral("a binary frame of unknown kind %1").arg(p[0]));
    if (p[1] != quint8(Channel::Stdout) && p[1] != quint8(Channel::Stderr))
        return fail(QStringLiteral("a binary frame of unknown channel %1").arg(p[1]));
    const qsizetype idBytes = qFromLittleEndian<quint16>(p + 2);
    const qsizetype requestBytes = qFromLittleEndian<quint16>(p + 4);
    const quint64 seq = qFromLittleEndian<quint64>(p + 8);
    if (qFromLittleEndian<quint16>(p + 6) != 0)
        return fail(QStringLiteral("a binary frame with its reserved field set"));
    if (HeaderBytes + idBytes + requestBytes > message.size())
        return fail(QStringLiteral("a binary frame whose ids run past its end"));
    if (idBytes == 0 || seq == 0 || seq > quint64(1) << 53)
        return fail(QStringLiteral("a binary frame without a stream id and seq"));
    Output o;
    o.streamId = QString::fromLatin1(message.constData() + HeaderBytes, idBytes);
    o.requestIdJson = message.mid(HeaderBytes + idBytes, requestBytes);
    o.seq = qint64(seq);
    o.channel = Channel(p[1]);
    // The data is the message from dataStart on, sharing its memory instead of a copy of it (as
    // remove(0, dataStart) would leave an array of its own): the array's start moves into its
    // allocation, its end and terminating zero stay the message's.
    o.data = message;
    QByteArray::DataPointer &data = o.data.data_ptr();
    data.ptr += HeaderBytes + idBytes + requestBytes;
    data.size -= HeaderBytes + idBytes + requestBytes;
    return o;
}

} // namespace Sandbox::StreamFrame
