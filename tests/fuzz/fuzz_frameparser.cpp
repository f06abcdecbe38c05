// libFuzzer target: the engine's reader of the supervisor's byte stream (FrameParser), on
// arbitrary bytes as a hostile supervisor would write them. Besides not crashing (ASan, UBSan),
// it checks what the channel relies on:
//   - fed in one piece or in arbitrary pieces, the stream gives the same frames and the same
//     verdict (a violation does not depend on how the kernel split the reads);
//   - frames tile the stream: each starts where the previous ended, and its payload is its
//     length field minus the header;
//   - a returned frame passed the header checks (known type, within its type's size);
//   - the parser never holds more than one frame of an allowed size plus the piece just fed;
//   - after a violation it stays failed and returns nothing more.
// The first input byte seeds the piece sizes; the rest is the stream.
#include "runtime/frameparser.h"

#include <QtEndian>

#include <cstdlib>
#include <vector>

using Sandbox::Engine::FrameParser;
using SupervisorWire::FrameType;

namespace {

struct Seen
{
    FrameType type;
    quint32 id;
    QByteArray payload;
    qint64 start;
    qint64 end;
    bool operator==(const Seen &) const = default;
};

struct Run
{
    std::vector<Seen> frames;
    bool violated = false;
};

// A header check like the channel's: ids below 64 are "pending", odd ones may not get events.
QString checkHeader(FrameType type, quint32 id, quint32)
{
    if (type == FrameType::Hello)
        return id == 0 ? QString() : QStringLiteral("HELLO with an id");
    if (id >= 64)
        return QStringLiteral("unknown id");
    if (type == FrameType::Event && (id & 1))
        return QStringLiteral("EVENT for a request that gets none");
    return {};
}

Run parse(QByteArrayView stream, unsigned seed)
{
    Run run;
    FrameParser parser(checkHeader);
    qsizetype pos = 0;
    qint64 expectedStart = 0;
    while (true) {
        qsizetype piece = stream.size() - pos;
        if (seed != 0 && piece > 0) {
            seed = seed * 1103515245u + 12345u;
            piece = std::min<qsizetype>(piece, 1 + (seed >> 16) % 97);
        }
        const QByteArrayView chunk = stream.sliced(pos, piece);
        pos += piece;
        parser.feed(chunk);
        FrameParser::Frame frame;
        FrameParser::Status status;
        while ((status = parser.next(&frame)) == FrameParser::Status::HaveFrame) {
            if (run.violated || frame.start != expectedStart
                || frame.end - frame.start != FrameParser::kHeaderBytes + frame.payload.size())
                abort();
            const quint32 length = quint32(frame.end - frame.start - 4);
            if (!FrameParser::checkStatic(frame.type, length).isEmpty()
                || !checkHeader(frame.type, frame.id, quint32(frame.payload.size())).isEmpty())
                abort();
            expectedStart = frame.end;
            run.frames.push_back(
                {frame.type, frame.id, frame.payload.toByteArray(), frame.start, frame.end});
        }
        if (status == FrameParser::Status::Violation) {
            if (!parser.failed() || parser.violation().isEmpty())
                abort();
            run.violated = true;
        }
        if (run.violated && parser.next(&frame) != FrameParser::Status::Violation)
            abort();
        if (parser.buffered()
            > FrameParser::kHeaderBytes + qsizetype(FrameParser::kMaxResponse) + chunk.size())
            abort();
        if (pos == stream.size())
            break;
    }
    if (!run.violated && parser.streamOffset() != stream.size())
        abort();
    return run;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const QByteArrayView stream(reinterpret_cast<const char *>(data) + 1, qsizetype(size - 1));
    const Run whole = parse(stream, 0);
    const Run pieces = parse(stream, unsigned(data[0]) | 1u);
    if (whole.violated != pieces.violated || whole.frames != pieces.frames)
        abort();
    return 0;
}
