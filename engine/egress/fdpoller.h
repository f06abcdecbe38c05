#pragma once

#include <QObject>

#include <cstdint>
#include <functional>
#include <unordered_map>

class QSocketNotifier;

namespace Sandbox::Engine {

// Many file descriptors on one epoll instance, watched by one QSocketNotifier: the egress
// thread's relay can hold thousands of sockets, and the engine every sandbox's supervisor channel
// and log, without Qt's per-notifier cost (its dispatchers poll every notifier on every turn).
// Level-triggered: a handler that reads within a budget and leaves the rest is called again on
// the next turn without a ready list of our own, and the kernel hands ready fds out in turn
// (round-robin), kBatch at a time. A handler may add, change or remove any fd (its own included)
// while it runs. An owner removes its fd before closing it (epoll keeps watching the open file
// while a copy of the fd lives elsewhere); an fd closed without it is dropped from the table when
// its number is added again or modified.
class FdPoller final : public QObject
{
    Q_OBJECT

public:
    using Handler = std::function<void(uint32_t events)>; // EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP

    explicit FdPoller(QObject *parent = nullptr);
    ~FdPoller() override;

    // Handlers called per wake-up at most: kBatch * kMaxBatchesPerWakeup.
    static constexpr int kBatch = 64;
    static constexpr int kMaxBatchesPerWakeup = 8; // then back to the event loop

    bool isValid() const { return m_epoll >= 0; }
    // False when the fd is watched already (or epoll refuses it).
    bool add(int fd, uint32_t events, Handler handler);
    // Changes the events wanted (0: none for now; errors and hang-ups are still reported).
    void modify(int fd, uint32_t events);
    void remove(int fd);
    int count() const { return int(m_entries.size()); }

private:
    void dispatch();

    struct Entry
    {
        uint32_t events = 0;
        uint64_t generation = 0;
        Handler handler;
    };
    int m_epoll = -1;
    QSocketNotifier *m_notifier = nullptr; // owned (child)
    std::unordered_map<int, Entry> m_entries;
    uint64_t m_generation = 0;
};

} // namespace Sandbox::Engine
