#pragma once

#include <QtGlobal>

namespace Sandbox::Engine {

// Bytes the engine holds for clients at once (request bodies, queued WebSocket messages), shared
// by every connection: whatever one client sends, the total stays bounded.
class ByteBudget final
{
public:
    explicit ByteBudget(qint64 limit)
        : m_limit(limit)
    {}

    bool take(qint64 bytes)
    {
        if (bytes > m_limit - m_used)
            return false;
        m_used += bytes;
        return true;
    }
    void give(qint64 bytes) { m_used -= bytes; }
    qint64 used() const { return m_used; }
    qint64 limit() const { return m_limit; }

private:
    qint64 m_limit;
    qint64 m_used = 0;
};

} // namespace Sandbox::Engine
