#pragma once

// The supervisor channel's frames as raw bytes, for the tests of either side of it (the engine's
// reader, the supervisor). Written from engine/supervisor/PROTOCOL.md on purpose, not from
// engine/supervisor/wire.h: a test then checks the encoding too, not only that both sides agree.
// Header-only, so that tests that link nothing of the engine can use it.

#include <QtCore/QByteArray>
#include <QtCore/QtEndian>

namespace TestFrames {

enum : quint8 {
    Request = 1,
    Stdin = 2,
    Cancel = 3,
    Resize = 4,
    Window = 5,
    Response = 16,
    Stdout = 17,
    Stderr = 18,
    Event = 19,
    Hello = 32
};

// [u32 LE length][u8 type][u32 LE id][payload], the length counting type, id and payload;
// `length` (non-zero) writes another length, for frames that lie about theirs.
inline QByteArray frame(quint8 type, quint32 id, const QByteArray &payload, quint32 length = 0)
{
    QByteArray f(9, Qt::Uninitialized);
    qToLittleEndian<quint32>(length ? length : quint32(payload.size() + 5), f.data());
    f[4] = char(type);
    qToLittleEndian<quint32>(id, f.data() + 5);
    f.append(payload);
    return f;
}

} // namespace TestFrames
