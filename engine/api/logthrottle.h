#pragma once

#include <QElapsedTimer>

namespace Sandbox::Engine {

// One log line per interval for an event anybody can repeat at will (a refused connection, a bad
// key), so that nobody can fill the host's log through the engine. pass() answers how many events
// the line stands for (the held-back ones included), or 0 when this one stays quiet.
class LogThrottle final
{
public:
    explicit LogThrottle(int intervalMs)
        : m_intervalMs(intervalMs)
    {}

    int pass()
    {
        ++m_pending;
        if (m_clock.isValid() && m_clock.elapsed() < m_intervalMs)
            return 0;
        m_clock.start();
        const int n = m_pending;
        m_pending = 0;
        return n;
    }

private:
    int m_intervalMs;
    int m_pending = 0;
    QElapsedTimer m_clock;
};

} // namespace Sandbox::Engine
