#include "fdpoller.h"

#include <QLoggingCategory>
#include <QSocketNotifier>

#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcPoller, "sandboxd.poller")

namespace Sandbox::Engine {

namespace {
uint64_t key(int fd, uint64_t generation)
{
    return (generation << 32) | uint32_t(fd);
}
} // namespace

FdPoller::FdPoller(QObject *parent)
    : QObject(parent)
    , m_epoll(::epoll_create1(EPOLL_CLOEXEC))
{
    if (m_epoll < 0) {
        qCCritical(lcPoller) << "epoll_create1 failed:" << strerror(errno);
        return;
    }
    m_notifier = new QSocketNotifier(m_epoll, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &FdPoller::dispatch);
}

FdPoller::~FdPoller()
{
    if (m_epoll >= 0)
        ::close(m_epoll);
}

bool FdPoller::add(int fd, uint32_t events, Handler handler)
{
    if (m_epoll < 0 || fd < 0)
        return false;
    const uint64_t generation = (++m_generation) & 0xffffffffu;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key(fd, generation);
    // EEXIST when the fd is watched indeed; an entry of its number that epoll no longer has was
    // closed without remove(), and is replaced.
    if (::epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev) != 0)
        return false;
    m_entries.insert_or_assign(fd, Entry{events, generation, std::move(handler)});
    return true;
}

void FdPoller::modify(int fd, uint32_t events)
{
    const auto it = m_entries.find(fd);
    if (it == m_entries.end() || it->second.events == events)
        return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key(fd, it->second.generation);
    if (::epoll_ctl(m_epoll, EPOLL_CTL_MOD, fd, &ev) == 0) {
        it->second.events = events;
    } else if (errno == EBADF || errno == ENOENT) {
        // Closed without remove(): nothing more will come of it.
        qCDebug(lcPoller) << "dropping fd" << fd << "closed without removal";
        m_entries.erase(it);
    }
}

void FdPoller::remove(int fd)
{
    const auto it = m_entries.find(fd);
    if (it == m_entries.end())
        return;
    ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
    m_entries.erase(it);
}

void FdPoller::dispatch()
{
    epoll_event events[kBatch];
    for (int batch = 0; batch < kMaxBatchesPerWakeup; ++batch) {
        const int n = ::epoll_wait(m_epoll, events, kBatch, 0);
        if (n <= 0)
            return;
        for (int i = 0; i < n; ++i) {
            const int fd = int(uint32_t(events[i].data.u64));
            const uint64_t generation = events[i].data.u64 >> 32;
            const auto it = m_entries.find(fd);
            // Removed (or removed and replaced) by an earlier handler of this batch.
            if (it == m_entries.end() || it->second.generation != generation)
                continue;
            const Handler handler = it->second.handler; // the handler may remove its own entry
            handler(events[i].events);
        }
        if (n < kBatch)
            return;
    }
}

} // namespace Sandbox::Engine
