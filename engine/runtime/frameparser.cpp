#include "frameparser.h"

#include <QtEndian>

namespace Sandbox::Engine {

using SupervisorWire::FrameType;

FrameParser::FrameParser(HeaderCheck check)
    : m_check(std::move(check))
{}

void FrameParser::feed(QByteArrayView bytes)
{
    if (failed() || bytes.isEmpty())
        return;
    // Returned frames are dropped once they are half the buffer, so it does not grow with the
    // stream.
    if (m_pos > 0 && m_pos >= m_buffer.size() / 2) {
        m_buffer.remove(0, m_pos);
        m_base += m_pos;
        m_pos = 0;
    }
    m_buffer.append(bytes.data(), bytes.size());
}

QString FrameParser::checkStatic(FrameType type, quint32 length)
{
    if (length < SupervisorWire::HeaderBytes)
        return QStringLiteral("a frame of length %1").arg(length);
    const quint32 payload = length - SupervisorWire::HeaderBytes;
    quint32 max = 0;
    const char *name = "";
    switch (type) {
    case FrameType::Hello:
        max = SupervisorWire::MaxHello;
        name = "HELLO";
        break;
    case FrameType::Stdout:
        max = SupervisorWire::MaxChunk;
        name = "STDOUT";
        break;
    case FrameType::Stderr:
        max = SupervisorWire::MaxChunk;
        name = "STDERR";
        break;
    case FrameType::Event:
        max = SupervisorWire::MaxEvent;
        name = "EVENT";
        break;
    case FrameType::Response:
        max = kMaxResponse;
        name = "RESPONSE";
        break;
    default:
        return QStringLiteral("a frame of unknown type %1").arg(int(type));
    }
    if (payload > max)
        return QStringLiteral("a %1 frame of %2 bytes (at most %3)")
            .arg(QLatin1String(name))
            .arg(payload)
            .arg(max);
    return {};
}

FrameParser::Status FrameParser::fail(const QString &why)
{
    m_violation = why.isEmpty() ? QStringLiteral("a malformed frame") : why;
    m_buffer.clear();
    m_pos = 0;
    return Status::Violation;
}

FrameParser::Status FrameParser::next(Frame *frame)
{
    if (failed())
        return Status::Violation;
    if (m_buffer.size() - m_pos < kHeaderBytes)
        return Status::NeedMore;
    const char *p = m_buffer.constData() + m_pos;
    const quint32 length = qFromLittleEndian<quint32>(p);
    const auto type = FrameType(quint8(p[4]));
    const quint32 id = qFromLittleEndian<quint32>(p + 5);
    if (!m_headerChecked) {
        if (QString why = checkStatic(type, length); !why.isEmpty())
            return fail(why);
        if (m_check) {
            if (QString why = m_check(type, id, length - SupervisorWire::HeaderBytes);
                !why.isEmpty())
                return fail(why);
        }
        m_headerChecked = true;
    }
    const qsizetype total = 4 + qsizetype(length);
    if (m_buffer.size() - m_pos < total)
        return Status::NeedMore;
    frame->type = type;
    frame->id = id;
    frame->payload = QByteArrayView(p + kHeaderBytes, total - kHeaderBytes);
    frame->start = m_base + m_pos;
    frame->end = frame->start + total;
    m_pos += total;
    m_headerChecked = false;
    return Status::HaveFrame;
}

} // namespace Sandbox::Engine
