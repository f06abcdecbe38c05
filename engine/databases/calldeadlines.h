#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <functional>
#include <map>
#include <utility>

namespace Sandbox::Engine {

// The deadlines of the calls in flight (statement timeouts and their grace times), on one timer:
// a call adds its deadline and removes it as it answers, with no timer of its own started,
// stopped and deleted per call. The timer waits for the earliest deadline only.
class CallDeadlines final : public QObject
{
    Q_OBJECT

public:
    // A deadline as added: what removes it.
    struct Key
    {
        qint64 dueMs = 0;
        quint64 serial = 0;
    };

    explicit CallDeadlines(QObject *parent = nullptr);

    // Runs `expired` in `afterMs` ms, unless removed first.
    Key add(qint64 afterMs, std::function<void()> expired);
    void remove(const Key &key);
    qsizetype count() const { return qsizetype(m_due.size()); }

private:
    void expire();
    void arm();

    QElapsedTimer m_clock;
    QTimer m_timer;
    qint64 m_armedForMs = 0; // the deadline the timer waits for, while it is active
    quint64 m_nextSerial = 1;
    std::map<std::pair<qint64, quint64>, std::function<void()>> m_due;
};

} // namespace Sandbox::Engine
