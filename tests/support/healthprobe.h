#pragma once

#include <QString>
#include <QUrl>

#include <atomic>
#include <mutex>
#include <thread>

// Measures, from its own thread, how fast a real engine answers GET /health while a test does
// something hostile to it, and how much memory the engine holds meanwhile: one request every
// `intervalMs` over a fresh TCP connection (each bounded by a 5 s timeout), and the engine's
// VmRSS read from /proc. The test's own event loop may be busy or blocked: the probe is not on it.
class HealthProbe final
{
public:
    HealthProbe(const QUrl &engine, qint64 enginePid, int intervalMs = 50);
    ~HealthProbe();
    HealthProbe(const HealthProbe &) = delete;
    HealthProbe &operator=(const HealthProbe &) = delete;

    void start();
    void stop();

    int samples() const;
    int failures() const; // requests that did not get a 200 within 5 s
    qint64 maxLatencyMs() const;
    qint64 medianLatencyMs() const;
    qint64 maxRssKb() const; // the highest VmRSS seen
    qint64 startRssKb() const;
    // "health: N samples, median X ms, max Y ms, failures F; engine RSS A -> max B MiB"
    QString summary() const;

    // The engine's VmRSS now, in KiB (0 if it is gone).
    static qint64 rssKb(qint64 pid);

private:
    void run();

    QString m_host;
    int m_port = 0;
    qint64 m_pid = 0;
    int m_intervalMs = 50;
    std::thread m_thread;
    std::atomic<bool> m_running{false};
    mutable std::mutex m_mutex;
    QList<qint64> m_latencies;
    int m_failures = 0;
    qint64 m_maxRss = 0;
    qint64 m_startRss = 0;
};
