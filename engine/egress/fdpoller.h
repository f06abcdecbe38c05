#pragma once

#include <QObject>

#include <cstdint>
#include <functional>
#include <unordered_map>

class QSocketNotifier;

namespace Sandbox::Engine {

// Many file descriptors on one epoll instance, watched by one QSocketNotifier: the egress
// thread's relay can hold thousands of sockets without Qt's per-notifier cost. Level-triggered;
// a handler may add, change or remove any fd (its own included) while it runs.
class FdPoller final : public QObject
{
    Q_OBJECT

public:
    using Handler = std::function<void(uint32_t events)>; // EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP

    explicit FdPoller(QObject *parent = nullptr);
    ~FdPoller() override;

    bool isValid() const { return m_epoll >= 0; }
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
