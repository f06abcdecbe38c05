#pragma once

#include "supervisor/wire.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

#include <functional>

namespace Sandbox::Engine {

// The engine's reader of the supervisor's byte stream (engine/supervisor/PROTOCOL.md): bytes in,
// frames or one violation out. Pure: no I/O, no event loop, no descriptors (the channel matches
// those to frames by stream offset). Every header is checked before its payload is buffered, so
// the buffer never holds more than one frame of an allowed size plus what was fed since. After
// the first violation the parser stays failed and drops whatever it is fed.
class FrameParser final
{
public:
    // The largest payload a frame of the supervisor's may have whatever was asked: RESPONSE of
    // readFile/list (16 MiB of data + 64 KiB of JSON).
    static constexpr quint32 kMaxResponse = 16u * 1024 * 1024 + 64 * 1024;
    // Bytes per frame before the payload: u32 length, u8 type, u32 id.
    static constexpr qsizetype kHeaderBytes = 4 + SupervisorWire::HeaderBytes;

    // A check of a frame's header against the reader's state (pending ids, what each may get),
    // called once per frame before its payload is read: an empty string accepts it, anything
    // else is the violation.
    using HeaderCheck
        = std::function<QString(SupervisorWire::FrameType type, quint32 id, quint32 payloadBytes)>;

    struct Frame
    {
        SupervisorWire::FrameType type{};
        quint32 id = 0;
        QByteArrayView payload; // valid until the next feed() or next()
        qint64 start = 0;       // stream offset of its first byte (the length field)
        qint64 end = 0;         // stream offset one past its last byte
    };

    enum class Status { NeedMore, HaveFrame, Violation };

    explicit FrameParser(HeaderCheck check = {});

    // Appends bytes as they came from the socket.
    void feed(QByteArrayView bytes);
    // The next complete frame, NeedMore, or the violation (then violation() says what).
    Status next(Frame *frame);

    bool failed() const { return !m_violation.isEmpty(); }
    QString violation() const { return m_violation; }
    // Bytes fed so far (the stream offset of the next byte fed).
    qint64 streamOffset() const { return m_base + m_buffer.size(); }
    // Bytes held that are not yet returned as frames.
    qsizetype buffered() const { return m_buffer.size() - m_pos; }

    // The checks that need no state: a length of at least the header, a type the supervisor may
    // send, and that type's size limit (HELLO 4 KiB; STDOUT and STDERR 256 KiB; EVENT 64 KiB; RESPONSE
    // kMaxResponse). Empty when the header is acceptable.
    static QString checkStatic(SupervisorWire::FrameType type, quint32 length);

private:
    Status fail(const QString &why);

    HeaderCheck m_check;
    QByteArray m_buffer;
    qsizetype m_pos = 0; // first byte not yet returned
    qint64 m_base = 0;   // stream offset of m_buffer[0]
    bool m_headerChecked = false;
    QString m_violation;
};

} // namespace Sandbox::Engine
