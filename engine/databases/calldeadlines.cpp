#include "calldeadlines.h"

#include <limits>

namespace Sandbox::Engine {

CallDeadlines::CallDeadlines(QObject *parent)
    : QObject(parent)
{
    m_clock.start();
    m_timer.setSingleShot(true);
    // A statement timeout is the caller's number of milliseconds: not a coarse timer's, which may
    // fire 5% late.
    m_timer.setTimerType(Qt::PreciseTimer);
    connect(&m_timer, &QTimer::timeout, this, &CallDeadlines::expire);
}

CallDeadlines::Key CallDeadlines::add(qint64 afterMs, std::function<void()> expired)
{
    const Key key{m_clock.elapsed() + qMax<qint64>(afterMs, 0), m_nextSerial++};
    m_due.emplace(std::pair(key.dueMs, key.serial), std::move(expired));
    // Calls of the same timeout come due in the order they came: only an earlier one re-arms.
    if (!m_timer.isActive() || key.dueMs < m_armedForMs)
        arm();
    return key;
}

void CallDeadlines::remove(const Key &key)
{
    // The timer stays armed: when it fires for nothing, it waits for the next deadline.
    m_due.erase(std::pair(key.dueMs, key.serial));
}

void CallDeadlines::expire()
{
    const qint64 now = m_clock.elapsed();
    // One at a time: an expired call may add or remove deadlines.
    while (!m_due.empty() && m_due.begin()->first.first <= now) {
        const std::function<void()> expired = std::move(m_due.begin()->second);
        m_due.erase(m_due.begin());
        expired();
    }
    arm();
}

void CallDeadlines::arm()
{
    if (m_due.empty())
        return m_timer.stop();
    m_armedForMs = m_due.begin()->first.first;
    const qint64 wait = qMax<qint64>(m_armedForMs - m_clock.elapsed(), 0);
    m_timer.start(int(qMin<qint64>(wait, std::numeric_limits<int>::max())));
}

} // namespace Sandbox::Engine
