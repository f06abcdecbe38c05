// One epoll behind one notifier, shared by the egress relay's sockets and by every sandbox's
// supervisor channel and log: many descriptors, none starved by others that never run dry, the
// event loop not held, and its table safe against what handlers do to it (remove, a new
// descriptor under the same number, a close without remove).

#include "egress/fdpoller.h"

#include <QtCore/QTimer>
#include <QtTest/QtTest>

#include <utility>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

using namespace Sandbox::Engine;

namespace {

class Fd
{
public:
    Fd() = default;
    explicit Fd(int fd)
        : m_fd(fd)
    {}
    ~Fd() { reset(); }
    Fd(Fd &&o) noexcept
        : m_fd(std::exchange(o.m_fd, -1))
    {}
    Fd &operator=(Fd &&o) noexcept
    {
        reset();
        m_fd = std::exchange(o.m_fd, -1);
        return *this;
    }
    int get() const { return m_fd; }
    void reset()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

private:
    int m_fd = -1;
};

struct Pair
{
    Fd read;
    Fd write;
};

Pair socketPair()
{
    int sv[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return {};
    return {Fd(sv[0]), Fd(sv[1])};
}

// Fills the socket's buffer so that it stays readable however much a budgeted reader takes.
void fill(int fd)
{
    static const QByteArray block(64 * 1024, 'x');
    while (::send(fd, block.constData(), size_t(block.size()), MSG_DONTWAIT) > 0) {
    }
}

void drain(int fd, int *bytes = nullptr)
{
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
        if (bytes)
            *bytes += int(n);
    }
}

} // namespace

class TestFdPoller : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void manyDescriptorsBehindOneNotifier()
    {
        FdPoller poller;
        QVERIFY(poller.isValid());
        constexpr int count = 500;
        std::vector<Pair> pairs(count);
        QList<int> seen(count, 0);
        for (int i = 0; i < count; ++i) {
            pairs[i] = socketPair();
            QVERIFY(pairs[i].read.get() >= 0);
            QVERIFY(poller.add(pairs[i].read.get(), EPOLLIN, [&seen, &pairs, i](uint32_t ev) {
                QVERIFY(ev & EPOLLIN);
                drain(pairs[i].read.get(), &seen[i]);
            }));
        }
        QCOMPARE(poller.count(), count);
        // Every one reports, each exactly what was written to it.
        for (int i = 0; i < count; ++i)
            QCOMPARE(::write(pairs[i].write.get(), "ab", 1 + (i % 2)), 1 + (i % 2));
        QTRY_VERIFY(std::all_of(seen.cbegin(), seen.cend(), [](int n) { return n > 0; }));
        for (int i = 0; i < count; ++i)
            QCOMPARE(seen[i], 1 + (i % 2));
        for (int i = 0; i < count; ++i)
            poller.remove(pairs[i].read.get());
        QCOMPARE(poller.count(), 0);
    }

    void floodingDescriptorsDoNotStarveTheOthers()
    {
        // More descriptors that never run dry than the poller takes in one batch, each read a
        // little per call (as a channel reads within its budget): every one of them is served in
        // turn, a quiet one that gets a single byte is served, and the event loop goes on (a
        // timer fires) while the flood lasts.
        FdPoller poller;
        constexpr int flooders = FdPoller::kBatch * 2 + 5;
        std::vector<Pair> pairs(flooders);
        QList<int> calls(flooders, 0);
        for (int i = 0; i < flooders; ++i) {
            pairs[i] = socketPair();
            fill(pairs[i].write.get());
            QVERIFY(poller.add(pairs[i].read.get(), EPOLLIN, [&pairs, &calls, i](uint32_t) {
                ++calls[i];
                char buf[64];
                QVERIFY(::read(pairs[i].read.get(), buf, sizeof buf) > 0);
                fill(pairs[i].write.get());
            }));
        }
        Pair quiet = socketPair();
        int quietBytes = 0;
        int quietCalls = 0;
        QVERIFY(poller.add(quiet.read.get(), EPOLLIN, [&](uint32_t) {
            ++quietCalls;
            drain(quiet.read.get(), &quietBytes);
        }));
        bool timerFired = false;
        QTimer::singleShot(0, this, [&] { timerFired = true; });
        QCOMPARE(::write(quiet.write.get(), "q", 1), 1);
        QTRY_COMPARE(quietBytes, 1);
        QCOMPARE(quietCalls, 1);
        QTRY_VERIFY(timerFired);
        // In turn: by the time each flooder was called ten times, none was called far more often
        // than the others.
        QTRY_VERIFY(std::all_of(calls.cbegin(), calls.cend(), [](int n) { return n >= 10; }));
        const auto [lo, hi] = std::minmax_element(calls.cbegin(), calls.cend());
        QVERIFY2(*hi <= *lo + FdPoller::kMaxBatchesPerWakeup,
                 qPrintable(QStringLiteral("%1..%2").arg(*lo).arg(*hi)));
        for (int i = 0; i < flooders; ++i)
            poller.remove(pairs[i].read.get());
        poller.remove(quiet.read.get());
    }

    void removeFromWithinAHandler()
    {
        // Two descriptors ready in the same turn: whichever is called first removes and closes
        // both (its own included) and watches a fresh descriptor, which gets one of the old
        // numbers. The other old handler never runs; the new one runs for its own data only.
        FdPoller poller;
        Pair a = socketPair();
        Pair b = socketPair();
        Pair c;
        int oldCalls = 0;
        int newCalls = 0;
        int reused = -1;
        const auto first = [&](uint32_t) {
            ++oldCalls;
            const int numbers[] = {a.read.get(), b.read.get()};
            poller.remove(a.read.get());
            poller.remove(b.read.get());
            a = Pair();
            b = Pair();
            c = socketPair();
            reused = c.read.get();
            QVERIFY(std::find(std::begin(numbers), std::end(numbers), reused) != std::end(numbers));
            QVERIFY(poller.add(c.read.get(), EPOLLIN, [&](uint32_t) {
                ++newCalls;
                drain(c.read.get());
            }));
        };
        QVERIFY(poller.add(a.read.get(), EPOLLIN, first));
        QVERIFY(poller.add(b.read.get(), EPOLLIN, first));
        QCOMPARE(::write(a.write.get(), "a", 1), 1);
        QCOMPARE(::write(b.write.get(), "b", 1), 1);
        QTRY_COMPARE(oldCalls, 1);
        QCOMPARE(poller.count(), 1);
        QCOMPARE(newCalls, 0);
        QCOMPARE(::write(c.write.get(), "c", 1), 1);
        QTRY_COMPARE(newCalls, 1);
        QCOMPARE(oldCalls, 1);
        poller.remove(c.read.get());
    }

    void aHangUpIsReported()
    {
        // The peer hanging up reads as EPOLLIN|EPOLLHUP (the read says 0); removed then, it is
        // not reported again while the loop serves others.
        FdPoller poller;
        Pair hung = socketPair();
        Pair other = socketPair();
        int hungCalls = 0;
        int otherCalls = 0;
        QVERIFY(poller.add(hung.read.get(), EPOLLIN, [&](uint32_t ev) {
            ++hungCalls;
            QVERIFY(ev & (EPOLLIN | EPOLLHUP));
            char c;
            QCOMPARE(::read(hung.read.get(), &c, 1), ssize_t(0));
            poller.remove(hung.read.get());
        }));
        QVERIFY(poller.add(other.read.get(), EPOLLIN, [&](uint32_t) {
            ++otherCalls;
            drain(other.read.get());
        }));
        hung.write.reset();
        QTRY_COMPARE(hungCalls, 1);
        for (int i = 1; i <= 20; ++i) {
            QCOMPARE(::write(other.write.get(), "x", 1), 1);
            QTRY_COMPARE(otherCalls, i);
        }
        QCOMPARE(hungCalls, 1);
        poller.remove(other.read.get());
    }

    void aClosedDescriptorIsDropped()
    {
        // Closed without remove(): the kernel forgets it, so it reports nothing more; its number,
        // reused by a new descriptor, can be added again; a modify() of a closed number drops it.
        FdPoller poller;
        auto p = std::make_unique<Pair>(socketPair());
        const int number = p->read.get();
        int oldCalls = 0;
        QVERIFY(poller.add(number, EPOLLIN, [&](uint32_t) { ++oldCalls; }));
        p.reset();
        Pair again = socketPair();
        QCOMPARE(again.read.get(), number); // the lowest free number
        int newCalls = 0;
        QVERIFY(poller.add(again.read.get(), EPOLLIN, [&](uint32_t) {
            ++newCalls;
            drain(again.read.get());
        }));
        QCOMPARE(poller.add(again.read.get(), EPOLLIN, [](uint32_t) {}), false); // watched
        QCOMPARE(::write(again.write.get(), "y", 1), 1);
        QTRY_COMPARE(newCalls, 1);
        QCOMPARE(oldCalls, 0);
        again = Pair();
        QCOMPARE(poller.count(), 1);
        poller.modify(number, EPOLLIN | EPOLLOUT);
        QCOMPARE(poller.count(), 0);
    }
};

QTEST_GUILESS_MAIN(TestFdPoller)
#include "tst_fdpoller.moc"
