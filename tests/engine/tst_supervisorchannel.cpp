// The engine's end of the supervisor channel against a scripted peer that plays the supervisor
// (a socketpair): every hostile frame ends the channel with failed(), never more.

#include "egress/fdpoller.h"
#include "runtime/supervisorchannel.h"
#include "testframes.h"

#include <QtCore/QJsonArray>
#include <QtCore/QJsonDocument>
#include <QtCore/QScopeGuard>
#include <QtCore/QtEndian>
#include <QtTest/QSignalSpy>
#include <QtTest/QtTest>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace Qt::StringLiterals;
using namespace Sandbox;
using namespace Sandbox::Engine;
using namespace TestFrames;

namespace {

// The supervisor's side: writes raw bytes (with a descriptor if asked) and reads requests.
class Peer
{
public:
    explicit Peer(int fd)
        : m_fd(fd)
    {}
    ~Peer() { ::close(m_fd); }

    void write(const QByteArray &bytes, int fdToPass = -1, int secondFd = -1)
    {
        iovec iov{const_cast<char *>(bytes.constData()), size_t(bytes.size())};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
        if (fdToPass >= 0) {
            const int fds[2] = {fdToPass, secondFd};
            const size_t count = secondFd >= 0 ? 2 : 1;
            msg.msg_control = control;
            msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
            cmsghdr *c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(count * sizeof(int));
            memcpy(CMSG_DATA(c), fds, count * sizeof(int));
        }
        QCOMPARE(::sendmsg(m_fd, &msg, MSG_NOSIGNAL), ssize_t(bytes.size()));
    }
    void send(quint8 type, quint32 id, const QByteArray &payload, int fdToPass = -1,
              int secondFd = -1)
    {
        write(frame(type, id, payload), fdToPass, secondFd);
    }
    void hello() { send(Hello, 0, R"({"pid":2,"version":"2"})"_ba); }

    // The next frame the engine sent (spinning the event loop so the channel can write).
    std::optional<std::pair<quint8, QByteArray>> next(quint32 *id = nullptr, int timeoutMs = 5000)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < timeoutMs) {
            if (m_in.size() >= 9) {
                const quint32 length = qFromLittleEndian<quint32>(m_in.constData());
                if (m_in.size() >= qsizetype(length) + 4) {
                    const quint8 type = quint8(m_in[4]);
                    if (id)
                        *id = qFromLittleEndian<quint32>(m_in.constData() + 5);
                    const QByteArray payload = m_in.mid(9, qsizetype(length) - 5);
                    m_in.remove(0, qsizetype(length) + 4);
                    return std::make_pair(type, payload);
                }
            }
            QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, 10) > 0) {
                char buf[65536];
                const ssize_t n = ::read(m_fd, buf, sizeof buf);
                if (n <= 0)
                    return std::nullopt;
                m_in.append(buf, n);
            }
        }
        return std::nullopt;
    }
    int fd() const { return m_fd; }

private:
    int m_fd;
    QByteArray m_in;
};

struct Outcome
{
    bool answered = false;
    Result<SupervisorChannel::Reply> reply = Error{ErrorCode::InternalError, {}, {}};
    QByteArray out, err;
};

} // namespace

class tst_SupervisorChannel : public QObject
{
    Q_OBJECT

private slots:
    void init();
    void cleanup();

    void requestAndAnswer();
    void violations_data();
    void violations();
    void outputIsCountedByTheEngine();
    void windowedOutputIsBoundedByItsWindow();
    void pipedOutputIsReadByTheEngine();
    void outputPastItsCapIsThrownAwayNotRead();
    void badOutputPipes_data();
    void badOutputPipes();
    void connectAnswerCarriesTheSocket();
    void badDescriptors_data();
    void badDescriptors();
    void execReportsItsTree();
    void aHeldAnswerEndsTheExecsTreeAtOnce();
    void aTreeReportedAfterItsCancelIsKilledToo();
    void anAnswerSaysWhetherTheTreeIsGone();
    void aLateTreeKeepsItsRequestsTimeout();
    void watchEventsArePassedOnChecked();
    void hostileWatchEvents_data();
    void hostileWatchEvents();
    void deadlineEndsTheChannel();
    void cancelGetsAGraceTime();
    void writesNeverBlock();
    void aFloodingChannelDoesNotStarveTheOthers();

private:
    // Sends `request` and collects what the engine's side makes of it.
    quint32 send(const QJsonObject &request, std::shared_ptr<Outcome> outcome);

    std::unique_ptr<SupervisorChannel> m_channel;
    std::unique_ptr<Peer> m_peer;
};

void tst_SupervisorChannel::init()
{
    int sv[2];
    QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    m_channel = std::make_unique<SupervisorChannel>(UniqueFd(sv[0]));
    m_peer = std::make_unique<Peer>(sv[1]);
    QSignalSpy hello(m_channel.get(), &SupervisorChannel::hello);
    m_peer->hello();
    QVERIFY(hello.wait(5000));
    QVERIFY(m_channel->isReady());
}

void tst_SupervisorChannel::cleanup()
{
    m_channel.reset();
    m_peer.reset();
}

quint32 tst_SupervisorChannel::send(const QJsonObject &request, std::shared_ptr<Outcome> outcome)
{
    return m_channel->request(
        request, {},
        [outcome](Result<SupervisorChannel::Reply> r) {
            outcome->answered = true;
            outcome->reply = std::move(r);
        },
        [outcome](int channel, QByteArrayView bytes) {
            (channel == 1 ? outcome->out : outcome->err).append(bytes);
        });
}

void tst_SupervisorChannel::requestAndAnswer()
{
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, u"ping"_s}}, outcome);
    quint32 seen = 0;
    const auto f = m_peer->next(&seen);
    QVERIFY(f);
    QCOMPARE(f->first, quint8(Request));
    QCOMPARE(seen, id);
    QCOMPARE(QJsonDocument::fromJson(f->second).object()[u"op"].toString(), u"ping"_s);
    m_peer->send(Response, id, R"({"pid":2,"uptimeMs":5,"execs":0})"_ba);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QCOMPARE(outcome->reply->json[u"pid"].toInt(), 2);
    QVERIFY(m_channel->isReady());
}

void tst_SupervisorChannel::violations_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("why");
    // id 1 is the pending exec made by the test.
    QTest::newRow("a second HELLO")
        << frame(Hello, 0, R"({"pid":3,"version":"2"})"_ba) << u"second HELLO"_s;
    QTest::newRow("unknown request id") << frame(Response, 4242, "{}"_ba) << u"not pending"_s;
    QTest::newRow("output for an unknown id") << frame(Stdout, 99, "x"_ba) << u"not pending"_s;
    QTest::newRow("unknown frame type") << frame(77, 1, {}) << u"unknown type"_s;
    QTest::newRow("engine-bound type from the supervisor")
        << frame(Cancel, 1, {}) << u"unknown type"_s;
    QTest::newRow("oversized output frame (header only)")
        << frame(Stdout, 1, "xxxx"_ba, 100 * 1024 * 1024) << u"at most"_s;
    QTest::newRow("oversized answer (header only)")
        << frame(Response, 1, "{"_ba, 2 * 1024 * 1024) << u"at most"_s;
    QTest::newRow("4 GiB length") << frame(Response, 1, {}, 0xFFFFFFFF) << u"at most"_s;
    QTest::newRow("length below the header") << frame(Response, 1, {}, 2) << u"length"_s;
    QTest::newRow("malformed answer") << frame(Response, 1, "not json"_ba) << u"malformed"_s;
    QTest::newRow("exec answer of the wrong types")
        << frame(Response, 1, R"({"exitCode":"0","signal":null,"durationMs":1})"_ba)
        << u"malformed"_s;
    QTest::newRow("binary data on an exec answer")
        << frame(Response, 1, QByteArray(R"({"exitCode":0,"durationMs":1})") + '\0' + "x")
        << u"binary data"_s;
    QTest::newRow("a second tree EVENT") << frame(Event, 1, R"({"pid":5,"pipes":[1,2]})"_ba)
                                                + frame(Event, 1, R"({"pid":6,"pipes":[1,2]})"_ba)
                                         << u"unexpected EVENT"_s;
    QTest::newRow("malformed EVENT") << frame(Event, 1, "[1,2]"_ba) << u"malformed EVENT"_s;
}

void tst_SupervisorChannel::violations()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, why);
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"true"_s}}, outcome);
    QCOMPARE(id, 1u);
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    m_peer->write(bytes);
    QVERIFY(failed.wait(5000));
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed.first().first().toString().contains(why),
             qPrintable(failed.first().first().toString()));
    // The pending request fails with -32011 naming the violation; nothing more is accepted.
    QTRY_VERIFY(outcome->answered);
    QVERIFY(!outcome->reply.ok());
    QCOMPARE(outcome->reply.error().code, ErrorCode::SandboxError);
    QVERIFY(outcome->reply.error().message.contains(why));
    QVERIFY(!m_channel->isReady());
    auto later = std::make_shared<Outcome>();
    send({{u"op"_s, u"ping"_s}}, later);
    QTRY_VERIFY(later->answered);
    QVERIFY(!later->reply.ok());
    QCOMPARE(failed.size(), 1);
}

// An exec asked with `window` (its output streamed to a client) may have at most the window
// (1 MiB) of output unacknowledged, stdout and stderr together: a supervisor that sends more ends
// the sandbox, as a terminal's would.
void tst_SupervisorChannel::windowedOutputIsBoundedByItsWindow()
{
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, u"exec"_s},
                             {u"shell"_s, u"cat big"_s},
                             {u"maxOutputBytes"_s, 8 * 1024 * 1024},
                             {u"window"_s, true}},
                            outcome);
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    // A full window, half of it on stderr, a frame at a time (what the socket holds: the test's
    // writes block); then acknowledged in part, and that part sent again.
    const QByteArray chunk(64 * 1024, 'y');
    const int frames = int(SupervisorWire::PtyWindowBytes / chunk.size());
    for (int i = 0; i < frames; ++i) {
        m_peer->send(i % 2 ? Stderr : Stdout, id, chunk);
        QTRY_COMPARE(outcome->out.size() + outcome->err.size(), (i + 1) * chunk.size());
    }
    m_channel->acknowledge(id, quint32(chunk.size()));
    m_peer->send(Stdout, id, chunk);
    QTRY_COMPARE(outcome->out.size() + outcome->err.size(), (frames + 1) * chunk.size());
    QVERIFY(m_channel->isReady());
    // One byte past it.
    m_peer->send(Stdout, id, "y"_ba);
    QVERIFY(failed.wait(5000));
    QVERIFY2(failed.first().first().toString().contains(u"beyond its window"_s),
             qPrintable(failed.first().first().toString()));
    QTRY_VERIFY(outcome->answered);
    QCOMPARE(outcome->reply.error().code, ErrorCode::SandboxError);
}

namespace {

// The read and write ends of a pipe, as an exec's output pipe; closed when it goes.
struct TestPipe
{
    int fds[2] = {-1, -1};
    TestPipe() { QVERIFY(::pipe2(fds, O_CLOEXEC) == 0); }
    ~TestPipe() { closeWriteEnd(), closeReadEnd(); }
    quint64 inode() const
    {
        struct stat st = {};
        ::fstat(fds[0], &st);
        return quint64(st.st_ino);
    }
    void closeReadEnd() { ::close(std::exchange(fds[0], -1)); }
    void closeWriteEnd() { ::close(std::exchange(fds[1], -1)); }
};

QByteArray startedEvent(quint64 outInode, quint64 errInode)
{
    return QJsonDocument(QJsonObject{{u"pid"_s, 5},
                                     {u"pipes"_s, QJsonArray{double(outInode), double(errInode)}}})
        .toJson(QJsonDocument::Compact);
}

} // namespace

// An exec asked with `pipes` (its output streamed to a client): the engine reads the two pipes
// its EVENT hands over itself, never more than the window (1 MiB) ahead of what its reader took,
// every byte in order, and holds the supervisor's answer until the pipes have ended, so that the
// answer still comes after the last of the output.
void tst_SupervisorChannel::pipedOutputIsReadByTheEngine()
{
    ::signal(SIGPIPE, SIG_IGN); // a failed test closes the pipes under the writer
    constexpr qsizetype window = SupervisorWire::PtyWindowBytes;
    auto outcome = std::make_shared<Outcome>();
    qsizetype outputAtAnswer = -1;
    const quint32 id = m_channel->request(
        {{u"op"_s, u"exec"_s},
         {u"shell"_s, u"cat big"_s},
         {u"maxOutputBytes"_s, 8 * 1024 * 1024},
         {u"pipes"_s, true}},
        {},
        [outcome, &outputAtAnswer](Result<SupervisorChannel::Reply> r) {
            outcome->answered = true;
            outcome->reply = std::move(r);
            outputAtAnswer = outcome->out.size() + outcome->err.size();
        },
        [outcome](int channel, QByteArrayView bytes) {
            (channel == 1 ? outcome->out : outcome->err).append(bytes);
        });
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    TestPipe out, err;
    m_peer->send(Event, id, startedEvent(out.inode(), err.inode()), out.fds[0], err.fds[0]);
    out.closeReadEnd(); // the supervisor keeps no copy
    err.closeReadEnd();

    // The command: 2 MiB on stdout into a pipe of 1 MiB, then a line on stderr, then it exits.
    QCOMPARE(::fcntl(out.fds[1], F_SETPIPE_SZ, int(window)), int(window));
    QByteArray data(2 * window, Qt::Uninitialized);
    for (qsizetype i = 0; i < data.size(); ++i)
        data[i] = char((i * 7) % 251);
    std::atomic<bool> exited = false;
    std::thread command([&] {
        for (qsizetype at = 0; at < data.size();) {
            const ssize_t n = ::write(out.fds[1], data.constData() + at, size_t(data.size() - at));
            if (n <= 0)
                break;
            at += n;
        }
        [[maybe_unused]] const auto n = ::write(err.fds[1], "done\n", 5);
        out.closeWriteEnd();
        err.closeWriteEnd();
        exited = true;
    });
    auto joined = qScopeGuard([&] {
        m_channel.reset(); // (a failed test) the engine's read ends close: the writes fail
        command.join();
    });

    // Nothing acknowledged: a window's worth is read, the rest stays in the pipe.
    QTRY_COMPARE(outcome->out.size(), window);
    QTRY_VERIFY(exited);
    // Waiting for nothing to happen: no event says "not read", so give the engine time to read
    // what it must not.
    QVERIFY(!QTest::qWaitFor([&] { return outcome->out.size() > window; }, 300));

    // The main process has exited with its output still in the pipe: the answer waits for it.
    m_peer->send(Response, id,
                 R"({"exitCode":0,"signal":null,"durationMs":9,"timedOut":false,)"
                 R"("cancelled":false,"truncated":false})"_ba);
    QVERIFY(!QTest::qWaitFor([&] { return outcome->answered; }, 300));

    // The reader takes it all, acknowledging as it goes.
    qsizetype acknowledged = 0;
    QElapsedTimer t;
    t.start();
    while (!outcome->answered && t.elapsed() < 20000) {
        const qsizetype got = outcome->out.size() + outcome->err.size();
        QVERIFY2(got <= acknowledged + window,
                 qPrintable(u"%1 read, %2 acknowledged"_s.arg(got).arg(acknowledged)));
        if (got > acknowledged) {
            m_channel->acknowledge(id, quint32(got - acknowledged));
            acknowledged = got;
        }
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    QVERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QCOMPARE(outcome->reply->json[u"exitCode"].toInt(), 0);
    QCOMPARE(outcome->reply->json[u"truncated"].toBool(), false);
    QVERIFY(outcome->out == data); // every byte, in order
    QCOMPARE(outcome->err, "done\n"_ba);
    QCOMPARE(outputAtAnswer, data.size() + 5); // the answer after the last of the output
    QVERIFY(failed.isEmpty());
}

// A command that writes without end past its maxOutputBytes (`cat /dev/zero`) must not have the
// engine take it as fast as it comes: the supervisor used to drop it inside the sandbox's CPU
// share; the engine, reading the pipes itself, throws it away at a bounded rate (100 MiB/s), so
// that its own CPU for it is bounded too. The command still completes, and its answer says
// "truncated".
void tst_SupervisorChannel::outputPastItsCapIsThrownAwayNotRead()
{
    ::signal(SIGPIPE, SIG_IGN);
    constexpr qsizetype mib = 1024 * 1024;
    constexpr qsizetype total = 128 * mib;
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = m_channel->request(
        {{u"op"_s, u"exec"_s},
         {u"shell"_s, u"cat /dev/zero"_s},
         {u"maxOutputBytes"_s, 1024},
         {u"pipes"_s, true}},
        {},
        [outcome](Result<SupervisorChannel::Reply> r) {
            outcome->answered = true;
            outcome->reply = std::move(r);
        },
        [outcome](int channel, QByteArrayView bytes) {
            (channel == 1 ? outcome->out : outcome->err).append(bytes);
        });
    TestPipe out, err;
    m_peer->send(Event, id, startedEvent(out.inode(), err.inode()), out.fds[0], err.fds[0]);
    out.closeReadEnd();
    err.closeReadEnd();
    std::atomic<bool> exited = false;
    std::thread command([&] {
        const QByteArray block(mib, '\0');
        for (qsizetype at = 0; at < total;) {
            const ssize_t n = ::write(out.fds[1], block.constData(), size_t(block.size()));
            if (n <= 0)
                break;
            at += n;
        }
        out.closeWriteEnd();
        err.closeWriteEnd();
        exited = true;
    });
    auto joined = qScopeGuard([&] {
        m_channel.reset();
        command.join();
    });
    // The engine's thread runs its event loop all along (QTRY_* would sleep 10 ms between turns
    // and pace the pipe itself).
    QElapsedTimer t;
    t.start();
    QEventLoop loop;
    QTimer poll;
    QObject::connect(&poll, &QTimer::timeout, &loop, [&] {
        if (exited || t.elapsed() > 60000)
            loop.quit();
    });
    poll.start(1);
    loop.exec();
    QVERIFY(exited);
    // 128 MiB at 100 MiB/s at most (the pipe, 1 MiB, is the slack): 1.27 s. Without a bound it
    // drains as fast as the two threads copy.
    QVERIFY2(t.elapsed() >= 1200,
             qPrintable(u"128 MiB past the cap went in %1 ms"_s.arg(t.elapsed())));
    m_peer->send(Response, id,
                 R"({"exitCode":0,"signal":null,"durationMs":9,"timedOut":false,)"
                 R"("cancelled":false,"truncated":false})"_ba);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QCOMPARE(outcome->reply->json[u"truncated"].toBool(), true);
    QCOMPARE(outcome->out.size(), 1024);
}

void tst_SupervisorChannel::badOutputPipes_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("why");
    QTest::newRow("no pipes") << u"none"_s << u"without its two output pipes"_s;
    QTest::newRow("one pipe") << u"one"_s << u"without its two output pipes"_s;
    QTest::newRow("the same pipe twice") << u"same"_s << u"without its two output pipes"_s;
    QTest::newRow("a socket as stdout") << u"socket"_s << u"not a pipe"_s;
    QTest::newRow("a pipe's write end") << u"write-end"_s << u"read end"_s;
    QTest::newRow("a pipe the EVENT does not name") << u"other-inode"_s << u"the EVENT names"_s;
    QTest::newRow("output frames besides") << u"frames"_s << u"whose pipes the engine reads"_s;
}

// A supervisor that hands the engine something else than its exec's two output pipes ends the
// sandbox.
void tst_SupervisorChannel::badOutputPipes()
{
    QFETCH(QString, kind);
    QFETCH(QString, why);
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"true"_s}, {u"pipes"_s, true}},
                            outcome);
    TestPipe out, err;
    int sockets[2] = {-1, -1};
    QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) == 0);
    auto closeSockets = qScopeGuard([&] {
        ::close(sockets[0]);
        ::close(sockets[1]);
    });
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    const QByteArray event = startedEvent(out.inode(), err.inode());
    if (kind == u"none")
        m_peer->send(Event, id, event);
    else if (kind == u"one")
        m_peer->send(Event, id, event, out.fds[0]);
    else if (kind == u"same")
        m_peer->send(Event, id, startedEvent(out.inode(), out.inode()), out.fds[0], out.fds[0]);
    else if (kind == u"socket")
        m_peer->send(Event, id, event, sockets[0], err.fds[0]);
    else if (kind == u"write-end")
        m_peer->send(Event, id, event, out.fds[1], err.fds[0]);
    else if (kind == u"other-inode")
        m_peer->send(Event, id, event, err.fds[0], out.fds[0]);
    else if (kind == u"frames") {
        m_peer->send(Event, id, event, out.fds[0], err.fds[0]);
        m_peer->send(Stdout, id, "x"_ba);
    }
    QVERIFY(failed.wait(5000));
    QVERIFY2(failed.first().first().toString().contains(why),
             qPrintable(failed.first().first().toString()));
    QTRY_VERIFY(outcome->answered);
    QVERIFY(!outcome->reply.ok());
}

void tst_SupervisorChannel::watchEventsArePassedOnChecked()
{
    auto outcome = std::make_shared<Outcome>();
    QList<QJsonObject> events;
    const quint32 id = m_channel->request(
        {{u"op"_s, u"watch"_s}, {u"path"_s, u"/workspace/src"_s}, {u"recursive"_s, true}}, {},
        [outcome](Result<SupervisorChannel::Reply> r) {
            outcome->answered = true;
            outcome->reply = std::move(r);
        },
        {}, [&events](const QJsonObject &e, std::shared_ptr<UniqueFd>) { events.append(e); });
    m_peer->send(
        Event, id,
        R"({"ready":true,"path":"/workspace/src","recursive":true,"dirs":3,"truncated":false,"extra":1})"_ba);
    m_peer->send(
        Event, id,
        R"({"events":[{"type":"create","path":"/workspace/src/a/new.txt","isDir":false,"junk":"x"},)"
        R"({"type":"rename","path":"/workspace/src/b","from":"/workspace/src/a","isDir":true}]})"_ba);
    QTRY_COMPARE(events.size(), 2);
    QCOMPARE(events[0], (QJsonObject{{u"ready"_s, true},
                                     {u"path"_s, u"/workspace/src"_s},
                                     {u"recursive"_s, true},
                                     {u"truncated"_s, false}}));
    const QJsonArray changes = events[1][u"events"].toArray();
    QCOMPARE(changes.size(), 2);
    QCOMPARE(changes[0].toObject(),
             (QJsonObject{{u"type"_s, u"create"_s},
                          {u"path"_s, u"/workspace/src/a/new.txt"_s},
                          {u"isDir"_s, false}})); // what the protocol names, nothing else
    QCOMPARE(changes[1].toObject()[u"from"].toString(), u"/workspace/src/a"_s);
    m_channel->cancel(id);
    m_peer->send(Response, id, R"({"cancelled":true})"_ba);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QVERIFY(m_channel->isReady());
}

void tst_SupervisorChannel::hostileWatchEvents_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("why");
    const QByteArray ready
        = R"({"ready":true,"path":"/workspace/src","dirs":1,"truncated":false})"_ba;
    const auto change = [&](const QByteArray &entry) {
        QByteArray batch = R"({"events":[)"_ba;
        batch.append(entry).append("]}");
        return QByteArray(frame(Event, 1, ready)).append(frame(Event, 1, batch));
    };
    QTest::newRow("changes before ready")
        << frame(Event, 1,
                 R"({"events":[{"type":"create","path":"/workspace/src/x","isDir":false}]})"_ba)
        << u"not 'ready'"_s;
    QTest::newRow("ready for another path")
        << frame(Event, 1, R"({"ready":true,"path":"/etc","dirs":1})"_ba) << u"not 'ready'"_s;
    QTest::newRow("a path outside the root")
        << change(R"({"type":"create","path":"/etc/passwd","isDir":false})"_ba)
        << u"not a change below /workspace/src"_s;
    QTest::newRow("a sibling that shares the prefix")
        << change(R"({"type":"create","path":"/workspace/srcx/a","isDir":false})"_ba)
        << u"not a change below"_s;
    QTest::newRow("dot-dot out of the root")
        << change(R"({"type":"delete","path":"/workspace/src/../../etc","isDir":true})"_ba)
        << u"not a change below"_s;
    QTest::newRow("a path of 5000 bytes") << change(R"({"type":"create","path":"/workspace/src/)"
                                                    + QByteArray(5000, 'a') + R"(","isDir":false})")
                                          << u"not a change below"_s;
    QTest::newRow("a deeper path on a flat watch")
        << change(R"({"type":"create","path":"/workspace/src/a/b","isDir":false})"_ba)
        << u"not a change below"_s;
    QTest::newRow("an unknown type")
        << change(R"({"type":"chmod","path":"/workspace/src/a","isDir":false})"_ba)
        << u"not a change below"_s;
    QTest::newRow("a rename from outside")
        << change(R"({"type":"rename","path":"/workspace/src/a","from":"/root/x","isDir":false})"_ba)
        << u"not a change below"_s;
    QTest::newRow("an empty batch")
        << QByteArray(frame(Event, 1, ready)).append(frame(Event, 1, R"({"events":[]})"_ba))
        << u"entries"_s;
    QByteArray flood = frame(Event, 1, ready);
    for (int i = 0; i < 500; ++i) // over two seconds at worst, 250 in one
        flood
            += frame(Event, 1,
                     R"({"events":[{"type":"modify","path":"/workspace/src/f","isDir":false}]})"_ba);
    QTest::newRow("more frames in a second than allowed") << flood << u"in a second"_s;
}

void tst_SupervisorChannel::hostileWatchEvents()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, why);
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = m_channel->request(
        {{u"op"_s, u"watch"_s}, {u"path"_s, u"/workspace/src"_s}, {u"recursive"_s, false}}, {},
        [outcome](Result<SupervisorChannel::Reply> r) {
            outcome->answered = true;
            outcome->reply = std::move(r);
        },
        {}, [](const QJsonObject &, std::shared_ptr<UniqueFd>) {});
    QCOMPARE(id, 1u);
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    m_peer->write(bytes);
    QVERIFY(failed.wait(5000));
    QVERIFY2(failed.first().first().toString().contains(why),
             qPrintable(failed.first().first().toString()));
    // The watch fails with -32011, the channel is done: the owner ends the sandbox.
    QTRY_VERIFY(outcome->answered);
    QCOMPARE(outcome->reply.error().code, ErrorCode::SandboxError);
    QVERIFY(!m_channel->isReady());
}

void tst_SupervisorChannel::outputIsCountedByTheEngine()
{
    // The supervisor sends 4 MiB for an exec allowed 1000 bytes and claims nothing was cut.
    auto outcome = std::make_shared<Outcome>();
    const quint32 id
        = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"yes"_s}, {u"maxOutputBytes"_s, 1000}}, outcome);
    const QByteArray chunk(64 * 1024, 'x');
    for (int i = 0; i < 64; ++i) {
        m_peer->send(Stdout, id, chunk);
        QCoreApplication::processEvents();
    }
    m_peer->send(Stderr, id, "err"_ba);
    m_peer->send(Response, id,
                 R"({"exitCode":0,"signal":null,"durationMs":3,"timedOut":false,)"
                 R"("cancelled":false,"truncated":false})"_ba);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QCOMPARE(outcome->out.size(), 1000);
    QCOMPARE(outcome->err, "err"_ba);
    QCOMPARE(outcome->reply->json[u"truncated"].toBool(), true);
    QVERIFY(m_channel->isReady());
}

void tst_SupervisorChannel::connectAnswerCarriesTheSocket()
{
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, u"connect"_s}, {u"path"_s, u"/run/db/x.sock"_s}}, outcome);
    int pair[2];
    QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    m_peer->send(Response, id, "{}"_ba, pair[0]);
    ::close(pair[0]);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QVERIFY(outcome->reply->fd && outcome->reply->fd->isValid());
    const int fd = outcome->reply->fd->get();
    QVERIFY(::fcntl(fd, F_GETFL) & O_NONBLOCK);
    QVERIFY(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
    QCOMPARE(::write(fd, "hi", 2), 2);
    char buf[2];
    QCOMPARE(::read(pair[1], buf, 2), 2);
    ::close(pair[1]);
}

void tst_SupervisorChannel::badDescriptors_data()
{
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("why");
    QTest::newRow("a pipe as the connected socket")
        << u"connect"_s << u"pipe"_s << u"not a socket"_s;
    QTest::newRow("a datagram socket") << u"connect"_s << u"dgram"_s << u"not a stream"_s;
    QTest::newRow("an inet socket for a unix connect")
        << u"connect"_s << u"inet"_s << u"wrong family"_s;
    QTest::newRow("connect answered without one")
        << u"connect"_s << u"none"_s << u"without its descriptor"_s;
    QTest::newRow("a descriptor on a file answer")
        << u"stat"_s << u"unix"_s << u"descriptor on the answer"_s;
    QTest::newRow("a descriptor on exec output")
        << u"exec"_s << u"unix-on-output"_s << u"descriptor on output"_s;
}

void tst_SupervisorChannel::badDescriptors()
{
    QFETCH(QString, op);
    QFETCH(QString, kind);
    QFETCH(QString, why);
    auto outcome = std::make_shared<Outcome>();
    const quint32 id = send({{u"op"_s, op}, {u"path"_s, u"/x"_s}, {u"shell"_s, u"true"_s}}, outcome);
    int fds[2] = {-1, -1};
    if (kind == u"pipe")
        QVERIFY(::pipe2(fds, O_CLOEXEC) == 0);
    else if (kind == u"dgram")
        QVERIFY(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) == 0);
    else if (kind == u"inet")
        fds[0] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    else if (kind != u"none")
        QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    if (kind == u"unix-on-output")
        m_peer->send(Stdout, id, "x"_ba, fds[0]);
    else
        m_peer->send(Response, id, "{}"_ba, fds[0]);
    for (int fd : fds)
        if (fd >= 0)
            ::close(fd);
    QVERIFY(failed.wait(5000));
    QVERIFY2(failed.first().first().toString().contains(why),
             qPrintable(failed.first().first().toString()));
    QTRY_VERIFY(outcome->answered);
    QVERIFY(!outcome->reply.ok());
}

void tst_SupervisorChannel::execReportsItsTree()
{
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy started(m_channel.get(), &SupervisorChannel::execStarted);
    QSignalSpy ended(m_channel.get(), &SupervisorChannel::execEnded);
    const quint32 id = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"true"_s}, {u"timeoutMs"_s, 700}},
                            outcome);
    m_peer->send(Event, id, R"({"pid":7,"pipes":[11,12]})"_ba);
    QVERIFY(started.wait(5000));
    QCOMPARE(started.first().at(0).toUInt(), id);
    QCOMPARE(started.first().at(1).toLongLong(), 7);
    QCOMPARE(started.first().at(2).value<QList<quint64>>(), (QList<quint64>{11, 12}));
    // What is left of its timeout (it counts from the request).
    QVERIFY(started.first().at(3).toLongLong() > 500 && started.first().at(3).toLongLong() <= 700);
    m_channel->markTimedOut(id);
    m_peer->send(Response, id, R"({"exitCode":137,"signal":"SIGKILL","durationMs":700})"_ba);
    QTRY_VERIFY(outcome->answered);
    QCOMPARE(ended.size(), 1);
    QCOMPARE(outcome->reply->json[u"timedOut"].toBool(), true); // the engine's word
}

// The supervisor may hold an exec's EVENT back (a short command's goes with its answer): a cancel
// that comes before it asks for the kill of the tree again once the tree is known, so that the
// engine's own kill (by the reaper's pid) still happens.
void tst_SupervisorChannel::aTreeReportedAfterItsCancelIsKilledToo()
{
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy kill(m_channel.get(), &SupervisorChannel::cancelRequested);
    QSignalSpy started(m_channel.get(), &SupervisorChannel::execStarted);
    const quint32 id = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"sleep 60"_s}}, outcome);
    m_channel->cancel(id);
    QCOMPARE(kill.size(), 1); // nothing to kill by pid yet
    m_peer->send(Event, id, R"({"pid":7,"pipes":[11,12]})"_ba);
    QVERIFY(started.wait(5000));
    QCOMPARE(kill.size(), 2);
    QCOMPARE(kill.last().first().toUInt(), id);
    m_peer->send(Response, id,
                 R"({"exitCode":137,"signal":"SIGKILL","durationMs":5,"cancelled":true})"_ba);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
}

// The supervisor's word that nothing of an exec's tree is left goes to the sandbox (nothing to
// kill at its timeout), not to the client.
void tst_SupervisorChannel::anAnswerSaysWhetherTheTreeIsGone()
{
    QSignalSpy ended(m_channel.get(), &SupervisorChannel::execEnded);
    for (const bool gone : {true, false}) {
        auto outcome = std::make_shared<Outcome>();
        const quint32 id
            = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"true"_s}, {u"timeoutMs"_s, 60000}},
                   outcome);
        m_peer->send(Event, id, R"({"pid":7,"pipes":[11,12]})"_ba);
        m_peer->send(Response, id,
                     gone ? R"({"exitCode":0,"signal":null,"durationMs":1,"treeGone":true})"_ba
                          : R"({"exitCode":0,"signal":null,"durationMs":1})"_ba);
        QTRY_VERIFY(outcome->answered);
        QVERIFY(outcome->reply.ok());
        QVERIFY(!outcome->reply->json.contains(u"treeGone"_s));
        QCOMPARE(ended.size(), gone ? 1 : 2);
        QCOMPARE(ended.last().at(0).toUInt(), id);
        QCOMPARE(ended.last().at(1).toBool(), gone);
    }
}

// The engine's own kill at an exec's timeout counts from the request, not from the EVENT, which
// the supervisor may send late (a short command's goes with its answer).
void tst_SupervisorChannel::aLateTreeKeepsItsRequestsTimeout()
{
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy started(m_channel.get(), &SupervisorChannel::execStarted);
    const quint32 id
        = send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"sleep 60"_s}, {u"timeoutMs"_s, 60000}},
               outcome);
    QTest::qWait(400); // on purpose: the EVENT comes this late
    m_peer->send(Event, id, R"({"pid":7,"pipes":[11,12]})"_ba);
    QVERIFY(started.wait(5000));
    QVERIFY2(started.first().at(3).toLongLong() <= 60000 - 400,
             qPrintable(QString::number(started.first().at(3).toLongLong())));
    m_peer->send(Response, id, R"({"exitCode":0,"signal":null,"durationMs":400})"_ba);
    QTRY_VERIFY(outcome->answered);
}

// The supervisor's answer says the exec's main process has exited, and its reaper may serve the
// next exec at once: the exec's tree ends there (its timeout then kills only what holds its
// pipes), not when the engine passes the answer on after the last of the output.
void tst_SupervisorChannel::aHeldAnswerEndsTheExecsTreeAtOnce()
{
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy ended(m_channel.get(), &SupervisorChannel::execEnded);
    const quint32 id = send({{u"op"_s, u"exec"_s},
                             {u"shell"_s, u"sleep 1 & true"_s},
                             {u"timeoutMs"_s, 60000},
                             {u"pipes"_s, true}},
                            outcome);
    TestPipe out, err;
    m_peer->send(Event, id, startedEvent(out.inode(), err.inode()), out.fds[0], err.fds[0]);
    out.closeReadEnd();
    err.closeReadEnd();
    // A background process holds the pipes: the answer waits for them to go quiet.
    m_peer->send(Response, id,
                 R"({"exitCode":0,"signal":null,"durationMs":1,"timedOut":false,)"
                 R"("cancelled":false,"truncated":false})"_ba);
    QVERIFY(ended.wait(5000));
    QCOMPARE(ended.first().first().toUInt(), id);
    QVERIFY(!outcome->answered);
    QTRY_VERIFY(outcome->answered);
    QVERIFY(outcome->reply.ok());
    QCOMPARE(ended.size(), 1);
}

void tst_SupervisorChannel::deadlineEndsTheChannel()
{
    // An exec with a 200 ms timeout gets 200 ms + the grace time; the supervisor never answers.
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    send({{u"op"_s, u"exec"_s}, {u"shell"_s, u"sleep 9"_s}, {u"timeoutMs"_s, 200}}, outcome);
    QElapsedTimer t;
    t.start();
    QVERIFY(failed.wait(int(SupervisorChannel::kGraceMs) + 5000));
    QVERIFY(t.elapsed() >= SupervisorChannel::kGraceMs);
    QVERIFY(failed.first().first().toString().contains(u"did not answer 'exec'"_s));
    QTRY_VERIFY(outcome->answered);
    QCOMPARE(outcome->reply.error().code, ErrorCode::SandboxError);
}

void tst_SupervisorChannel::cancelGetsAGraceTime()
{
    // A long-lived request has no deadline until it is cancelled.
    auto outcome = std::make_shared<Outcome>();
    QSignalSpy failed(m_channel.get(), &SupervisorChannel::failed);
    const quint32 id = send({{u"op"_s, u"watch"_s}, {u"path"_s, u"/workspace"_s}}, outcome);
    QVERIFY(!failed.wait(1000));
    m_channel->cancel(id);
    quint32 seen = 0;
    for (auto f = m_peer->next(&seen); f; f = m_peer->next(&seen)) {
        if (f->first == Cancel)
            break;
    }
    QCOMPARE(seen, id);
    QVERIFY(failed.wait(int(SupervisorChannel::kGraceMs) + 5000));
    QVERIFY(outcome->answered);
}

void tst_SupervisorChannel::writesNeverBlock()
{
    // The supervisor reads nothing: requests queue up to the bound, then fail at once.
    const QByteArray big(4 * 1024 * 1024, 'x');
    int refused = 0;
    QElapsedTimer t;
    t.start();
    QList<std::shared_ptr<Outcome>> outcomes;
    for (int i = 0; i < 40; ++i) {
        auto outcome = std::make_shared<Outcome>();
        outcomes << outcome;
        m_channel->request({{u"op"_s, u"writeFile"_s}, {u"path"_s, u"x"_s}}, big,
                           [outcome](Result<SupervisorChannel::Reply> r) {
                               outcome->answered = true;
                               outcome->reply = std::move(r);
                           });
    }
    // A write that blocked would never return (nothing reads): the bound only says "returned",
    // generously, since queueing 160 MiB takes seconds on a loaded machine (2 s failed at load 9).
    QVERIFY2(t.elapsed() < 15000, qPrintable(QString::number(t.elapsed())));
    QCoreApplication::processEvents();
    for (const auto &o : std::as_const(outcomes))
        refused += o->answered && !o->reply.ok() ? 1 : 0;
    QVERIFY2(refused >= 20, qPrintable(QString::number(refused)));
}

void tst_SupervisorChannel::aFloodingChannelDoesNotStarveTheOthers()
{
    // Sandboxes share the engine's poller. One supervisor writes output as fast as it can, from
    // a thread of its own, for ever; the others' answers still come, and so does its output.
    FdPoller poller;
    constexpr int quietCount = 8;
    std::vector<std::unique_ptr<SupervisorChannel>> channels;
    std::vector<std::unique_ptr<Peer>> peers;
    for (int i = 0; i <= quietCount; ++i) {
        int sv[2];
        QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        channels.push_back(std::make_unique<SupervisorChannel>(UniqueFd(sv[0]), &poller));
        peers.push_back(std::make_unique<Peer>(sv[1]));
        peers.back()->hello();
    }
    QTRY_VERIFY(std::all_of(channels.cbegin(), channels.cend(),
                            [](const auto &c) { return c->isReady(); }));

    // Past its 1 MiB of output the engine drops it (truncated) but reads on.
    const quint32 exec = channels[0]->request({{u"op"_s, u"exec"_s},
                                               {u"command"_s, QJsonArray{u"yes"_s}}},
                                              {}, [](Result<SupervisorChannel::Reply>) {});
    std::atomic<bool> stop{false};
    std::atomic<qint64> flooded{0};
    std::thread flood([fd = peers[0]->fd(), exec, &stop, &flooded] {
        const QByteArray chunk = frame(Stdout, exec, QByteArray(SupervisorWire::MaxChunk, 'y'));
        while (!stop) {
            const ssize_t n = ::send(fd, chunk.constData(), size_t(chunk.size()), MSG_NOSIGNAL);
            if (n < 0)
                return;
            flooded += n;
        }
    });
    // Whatever happens below, the writer ends (shutdown() wakes a blocked send()).
    const auto joiner = qScopeGuard([&] {
        stop = true;
        ::shutdown(peers[0]->fd(), SHUT_RDWR);
        flood.join();
    });
    QTRY_VERIFY(flooded > 8 * qint64(SupervisorWire::MaxChunk));

    std::vector<std::shared_ptr<Outcome>> answers;
    for (int i = 1; i <= quietCount; ++i) {
        auto outcome = std::make_shared<Outcome>();
        const quint32 id = channels[i]->request({{u"op"_s, u"ping"_s}}, {},
                                                [outcome](Result<SupervisorChannel::Reply> r) {
                                                    outcome->answered = true;
                                                    outcome->reply = std::move(r);
                                                });
        peers[i]->send(Response, id, R"({"pid":2,"uptimeMs":5,"execs":0})"_ba);
        answers.push_back(outcome);
    }
    const qint64 floodedBefore = flooded;
    QTRY_VERIFY_WITH_TIMEOUT(std::all_of(answers.cbegin(), answers.cend(),
                                         [](const auto &o) { return o->answered; }),
                             10000);
    for (const auto &o : answers)
        QVERIFY(o->reply.ok());
    QTRY_VERIFY(flooded > floodedBefore + 8 * qint64(SupervisorWire::MaxChunk));
    QVERIFY(channels[0]->isReady());
}

QTEST_GUILESS_MAIN(tst_SupervisorChannel)
#include "tst_supervisorchannel.moc"
