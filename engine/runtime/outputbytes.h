#pragma once

#include <QByteArray>
#include <QByteArrayView>

#include <type_traits>
#include <utility>

namespace Sandbox::Engine {

// Output on its way from a command to whoever keeps it (a stream's backlog): a view of the bytes,
// valid during the call that passes it, and, when they were read into an array of the reader's
// (OutputPipe), that array, which the keeper may take instead of copying the bytes out of it.
// Such a reader puts the bytes kRoom bytes into its array: room for the headers that the keeper
// puts in front of them.
class OutputBytes final
{
public:
    static constexpr qsizetype kRoom = 512;

    // Bytes that cannot be taken (a frame's payload, a test's): anything that is a view of bytes.
    template<typename Bytes,
             std::enable_if_t<std::is_constructible_v<QByteArrayView, const Bytes &>, bool> = true>
    OutputBytes(const Bytes &bytes) // NOLINT(google-explicit-constructor): bytes are output
        : m_bytes(bytes)
    {}
    // `size` bytes read into `*buffer`, kRoom bytes from its start.
    OutputBytes(QByteArray *buffer, qsizetype size)
        : m_bytes(buffer->constData() + kRoom, size)
        , m_buffer(buffer)
    {}

    operator QByteArrayView() const { return m_bytes; } // NOLINT(google-explicit-constructor)
    QByteArrayView view() const { return m_bytes; }
    qsizetype size() const { return m_bytes.size(); }
    // The first `n` bytes (the rest is dropped), still to be taken.
    OutputBytes first(qsizetype n) const
    {
        OutputBytes b = *this;
        b.m_bytes = m_bytes.first(n);
        return b;
    }

    bool canTake() const { return m_buffer != nullptr; }
    // The reader's array: kRoom bytes of room, then the bytes, nothing after them. The reader
    // reads into a new one next time.
    QByteArray take()
    {
        QByteArray taken = std::exchange(*std::exchange(m_buffer, nullptr), {});
        taken.truncate(kRoom + m_bytes.size());
        return taken;
    }

private:
    QByteArrayView m_bytes;
    QByteArray *m_buffer = nullptr; // not owned: the reader's
};

} // namespace Sandbox::Engine
