#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

#include <optional>

// Binary output frames (docs/protocol.md 2.6): a `stream.output` notification as one binary
// WebSocket message, a fixed 16-byte header and the raw bytes, so that output is neither
// JSON-escaped nor UTF-8-checked on its way. Shared by the engine (encode) and the client
// (decode).
namespace Sandbox::StreamFrame {

inline constexpr quint8 KindOutput = 1;
inline constexpr qsizetype HeaderBytes = 16;
// The longest stream id and request id (as JSON text) a frame can carry.
inline constexpr qsizetype MaxIdBytes = 0xffff;

enum class Channel : quint8 { Stdout = 1, Stderr = 2 };

// The bytes before the data: the header, the stream id and the request id (JSON text).
inline qsizetype prefixBytes(QByteArrayView streamId, QByteArrayView requestIdJson)
{
    return HeaderBytes + streamId.size() + requestIdJson.size();
}
// Writes those prefixBytes() bytes at `out`, for a sender that puts the data behind them itself
// (read into place, with no copy).
void writePrefix(char *out, QByteArrayView streamId, QByteArrayView requestIdJson, qint64 seq,
                 Channel channel);
// The header, then the stream id, the request id (JSON text) and the data.
QByteArray encodeOutput(QByteArrayView streamId, QByteArrayView requestIdJson, qint64 seq,
                        Channel channel, QByteArrayView data);

struct Output
{
    QString streamId;
    QByteArray requestIdJson; // as sent: JSON text (a number, a string or null)
    qint64 seq = 0;
    Channel channel = Channel::Stdout;
    QByteArray data; // the end of the message itself, not a copy (as any QByteArray, shared)
};

// The RFC 6455 header a server puts before a message of `payload` bytes sent as one frame (FIN,
// opcode binary, text or close, not masked): 2, 4 or 10 bytes. The engine writes it in front of a frame
// where the frame lies, so that the whole WebSocket message goes to its socket without a copy.
inline constexpr qsizetype MaxWebSocketHeaderBytes = 10;
qsizetype webSocketHeaderBytes(qsizetype payload);
enum class WebSocketOpcode : quint8 { Text = 0x1, Binary = 0x2, Close = 0x8 };
// Writes those webSocketHeaderBytes(payload) bytes at `out`.
void writeWebSocketHeader(char *out, qsizetype payload,
                          WebSocketOpcode opcode = WebSocketOpcode::Binary);

// A frame as the server sent it, or nullopt with `why` set: an unknown kind or channel, a
// reserved field that is not zero, lengths that run past the end, seq 0.
std::optional<Output> decode(const QByteArray &message, QString *why);

} // namespace Sandbox::StreamFrame
