// Drives sandbox-supervisor directly (not in bwrap) over its channel socket (fd 3), with a
// temporary directory playing /workspace.

#include <QtCore/QDir>
#include <QtCore/QElapsedTimer>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QJsonArray>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QProcess>
#include <QtCore/QRegularExpression>
#include <QtCore/QScopeGuard>
#include <QtCore/QTemporaryDir>
#include <QtCore/QtEndian>
#include <QtTest/QtTest>

#include "testframes.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace Qt::StringLiterals;

using namespace TestFrames;

namespace {

struct Frame
{
    quint8 type = 0;
    quint32 id = 0;
    QByteArray payload;
    int fd = -1;  // a descriptor that came with it (SCM_RIGHTS), owned by the test
    int fd2 = -1; // a second one (an exec's output pipes)
};

struct Result
{
    bool received = false;
    QJsonObject json;
    QByteArray data; // after the 0x00 separator
    QByteArray out, err;
    QString errorCode() const { return json[u"error"].toObject()[u"code"].toString(); }
    QString errnoName() const { return json[u"error"].toObject()[u"errno"].toString(); }
};

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray allBytes(int repeat)
{
    QByteArray b;
    for (int r = 0; r < repeat; ++r)
        for (int i = 0; i < 256; ++i)
            b.append(char(i));
    return b;
}

bool processGone(pid_t pid)
{
    return ::kill(pid, 0) == -1 && errno == ESRCH;
}

// An exec's frame into its output and answer.
void takeOutput(const Frame &f, QByteArray &out, QByteArray &err, QJsonObject &answer)
{
    if (f.type == Response)
        answer = QJsonDocument::fromJson(f.payload).object();
    else if (f.type == Stdout)
        out += f.payload;
    else if (f.type == Stderr)
        err += f.payload;
}

// The live (not zombie) children of `parent`, from /proc.
QList<pid_t> childrenOf(qint64 parent)
{
    QList<pid_t> children;
    const QStringList entries = QDir(u"/proc"_s).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &entry : entries) {
        bool isPid = false;
        const pid_t pid = pid_t(entry.toInt(&isPid));
        QFile stat(u"/proc/%1/stat"_s.arg(entry));
        if (!isPid || !stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray line = stat.readAll();
        const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
        if (fields.value(0) != "Z" && fields.value(1).toLongLong() == parent)
            children.append(pid);
    }
    return children;
}

// One supervisor process and the frames it sent that nobody has consumed yet.
class Client
{
public:
    ~Client() { stop(); }

    bool start(const QString &workspace, const QStringList &extra = {})
    {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            return false;
        m_fd = sv[0];
        const int theirs = sv[1];
        m_proc.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_proc.setStandardInputFile(QProcess::nullDevice());
        m_proc.setStandardOutputFile(QProcess::nullDevice());
        m_proc.setChildProcessModifier([theirs] {
            if (theirs == 3)
                ::fcntl(3, F_SETFD, 0);
            else
                ::dup2(theirs, 3);
        });
        m_proc.start(QStringLiteral(SUPERVISOR_BIN),
                     QStringList{u"--channel-fd"_s, u"3"_s, u"--workspace"_s, workspace} + extra);
        ::close(theirs);
        if (!m_proc.waitForStarted(5000))
            return false;
        ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) | O_NONBLOCK);
        const auto hello = waitFrame(Hello, 0, 5000);
        if (!hello)
            return false;
        helloJson = QJsonDocument::fromJson(hello->payload).object();
        return true;
    }

    void stop()
    {
        if (m_fd >= 0) {
            flush(5000);
            ::shutdown(m_fd, SHUT_WR); // the supervisor sees EOF and exits
        }
        if (m_proc.state() != QProcess::NotRunning && !m_proc.waitForFinished(5000)) {
            m_proc.kill();
            m_proc.waitForFinished(5000);
        }
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
        for (const Frame &f : std::as_const(m_frames))
            for (int fd : {f.fd, f.fd2})
                if (fd >= 0)
                    ::close(fd);
        m_frames.clear();
    }

    void send(quint8 type, quint32 id, const QByteArray &payload)
    {
        sendRaw(TestFrames::frame(type, id, payload));
    }
    void sendRaw(const QByteArray &bytes)
    {
        m_out += bytes;
        flush(0);
    }

    quint32 request(const QByteArray &json, const QByteArray &data = {}, bool withData = false)
    {
        const quint32 id = m_nextId++;
        send(Request, id, withData ? json + '\0' + data : json);
        return id;
    }
    Result call(const QByteArray &json, const QByteArray &data = {}, bool withData = false,
                int timeoutMs = 15000)
    {
        return wait(request(json, data, withData), timeoutMs);
    }
    Result call(const QJsonObject &json, const QByteArray &data = {}, bool withData = false)
    {
        return call(compact(json), data, withData);
    }

    // Collects STDOUT/STDERR of `id` until its RESPONSE.
    Result wait(quint32 id, int timeoutMs = 15000)
    {
        Result r;
        r.out = m_pendingOut.take(id);
        r.err = m_pendingErr.take(id);
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            for (auto it = m_frames.begin(); it != m_frames.end();) {
                if (it->id != id
                    || (it->type != Stdout && it->type != Stderr && it->type != Response)) {
                    ++it;
                    continue;
                }
                const Frame f = *it;
                it = m_frames.erase(it);
                if (f.type == Stdout) {
                    r.out += f.payload;
                } else if (f.type == Stderr) {
                    r.err += f.payload;
                } else {
                    const qsizetype nul = f.payload.indexOf('\0');
                    r.json = QJsonDocument::fromJson(nul < 0 ? f.payload : f.payload.left(nul))
                                 .object();
                    if (nul >= 0)
                        r.data = f.payload.mid(nul + 1);
                    r.received = true;
                    return r;
                }
            }
            if (!pump(timeoutMs - int(timer.elapsed())))
                return r;
        }
    }

    // Waits until the STDOUT of `id` contains `needle`; the output is kept for wait().
    bool waitForOutput(quint32 id, const QByteArray &needle, int timeoutMs = 10000)
    {
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            for (auto it = m_frames.begin(); it != m_frames.end();) {
                if (it->id == id && it->type == Stdout) {
                    m_pendingOut[id] += it->payload;
                    it = m_frames.erase(it);
                } else {
                    ++it;
                }
            }
            if (m_pendingOut.value(id).contains(needle))
                return true;
            if (!pump(timeoutMs - int(timer.elapsed())))
                return false;
        }
    }

    std::optional<Frame> waitFrame(quint8 type, quint32 id, int timeoutMs)
    {
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            for (auto it = m_frames.begin(); it != m_frames.end(); ++it) {
                if (it->type == type && it->id == id) {
                    const Frame f = *it;
                    m_frames.erase(it);
                    return f;
                }
            }
            if (!pump(timeoutMs - int(timer.elapsed())))
                return std::nullopt;
        }
    }

    // The next frame of `id`, whatever its type.
    // A WINDOW frame: `bytes` more of exec `id`'s output taken.
    void acknowledge(quint32 id, quint32 bytes)
    {
        char payload[4];
        qToLittleEndian<quint32>(bytes, payload);
        send(Window, id, QByteArray(payload, 4));
    }

    std::optional<Frame> nextFrame(quint32 id, int timeoutMs)
    {
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            for (auto it = m_frames.begin(); it != m_frames.end(); ++it) {
                if (it->id == id) {
                    const Frame f = *it;
                    m_frames.erase(it);
                    return f;
                }
            }
            if (!pump(timeoutMs - int(timer.elapsed())))
                return std::nullopt;
        }
    }

    // Whether a frame of `type` for `id` was read already (without waiting for one).
    bool has(quint8 type, quint32 id) const
    {
        return std::any_of(m_frames.cbegin(), m_frames.cend(),
                           [&](const Frame &f) { return f.type == type && f.id == id; });
    }

    // The next EVENT of `id`, as JSON.
    QJsonObject waitEvent(quint32 id, int timeoutMs = 10000)
    {
        const auto f = waitFrame(Event, id, timeoutMs);
        return f ? QJsonDocument::fromJson(f->payload).object() : QJsonObject();
    }

    bool waitForExit(int timeoutMs) { return m_proc.waitForFinished(timeoutMs); }
    int exitCode() const { return m_proc.exitCode(); }
    QProcess::ExitStatus exitStatus() const { return m_proc.exitStatus(); }
    qint64 pid() const { return m_proc.processId(); }

    QJsonObject helloJson;

private:
    // Writes what it can of the queued output; with timeoutMs > 0, waits until all of it is out.
    bool flush(int timeoutMs)
    {
        QElapsedTimer timer;
        timer.start();
        while (!m_out.isEmpty()) {
            const ssize_t n = ::send(m_fd, m_out.constData(), size_t(m_out.size()), MSG_NOSIGNAL);
            if (n > 0) {
                m_out.remove(0, n);
                continue;
            }
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return false;
            if (timeoutMs <= 0 || timer.elapsed() > timeoutMs)
                return m_out.isEmpty();
            if (!pump(50))
                continue;
        }
        return true;
    }

    // Waits for input (sending queued output meanwhile) and parses the frames that arrived.
    bool pump(int timeoutMs)
    {
        if (timeoutMs <= 0)
            return false;
        pollfd pfd{m_fd, short(POLLIN | (m_out.isEmpty() ? 0 : POLLOUT)), 0};
        if (::poll(&pfd, 1, timeoutMs) <= 0)
            return false;
        if (pfd.revents & POLLOUT)
            flush(0);
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            return true;
        char chunk[65536];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
        iovec iov{chunk, sizeof chunk};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(m_fd, &msg, MSG_CMSG_CLOEXEC);
        if (n <= 0)
            return n < 0 && errno == EAGAIN;
        for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
                    int fd = -1;
                    memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    m_fds.append(fd);
                }
        }
        m_buffer.append(chunk, n);
        // A descriptor belongs to the frame that holds the last byte of the read it came with.
        const qsizetype lastByte = m_buffer.size() - 1;
        qsizetype pos = 0;
        while (m_buffer.size() - pos >= 4) {
            const quint32 length = qFromLittleEndian<quint32>(m_buffer.constData() + pos);
            if (qsizetype(length) + 4 > m_buffer.size() - pos)
                break;
            Frame f;
            f.type = quint8(m_buffer[pos + 4]);
            f.id = qFromLittleEndian<quint32>(m_buffer.constData() + pos + 5);
            f.payload = m_buffer.mid(pos + 9, qsizetype(length) - 5);
            if (!m_fds.isEmpty() && lastByte < pos + 4 + qsizetype(length)) {
                f.fd = m_fds.takeFirst();
                if (!m_fds.isEmpty())
                    f.fd2 = m_fds.takeFirst();
            }
            pos += qsizetype(length) + 4;
            m_frames.append(f);
        }
        m_buffer.remove(0, pos);
        return true;
    }

    QProcess m_proc;
    int m_fd = -1;
    QByteArray m_out;
    QList<int> m_fds;
    QByteArray m_buffer;
    QList<Frame> m_frames;
    QHash<quint32, QByteArray> m_pendingOut, m_pendingErr;
    quint32 m_nextId = 1;
};

} // namespace

class TestSupervisor : public QObject
{
    Q_OBJECT

private slots:
    void init();
    void cleanup();

    void hello();
    void ping();
    void configureEnv();
    void configureRoots();
    void execReportsItsTree();
    void aShortCommandsTreeComesWithItsAnswer();
    void aLongerCommandsTreeComesWhileItRuns();
    void aCancelledCommandsTreeComesAtOnce();
    void anAnswerSaysWhetherTheTreeIsGone();
    void connectPassesTheSocket();
    void connectFailures_data();
    void connectFailures();
    void connectFullBacklogTimesOut();
    void listenHandsOverTheListeningSocket();
    void listenRefusesBadRequests();
    void commandsCannotSignalTheSupervisor_data();
    void commandsCannotSignalTheSupervisor();
    void exec_data();
    void exec();
    void execStdin_data();
    void execStdin();
    void outputCap_data();
    void outputCap();
    void windowedOutputWaitsForItsReader();
    void windowedOutputIsWholeWhenItsReaderIsLate();
    void outputPipesGoToTheEngine();
    void killsWholeTree_data();
    void killsWholeTree();
    void backgroundProcess_data();
    void backgroundProcess();
    void execsTakeAReaperForkedAhead();
    void aLoneCommandRunsWithoutAForkBesideIt();
    void aReaperWhoseTreeIsGoneServesTheNextExec();
    void aReaperWithBackgroundProcessesIsNotReused();
    void aReaperServingAgainKillsItsWholeTree();
    void aSpareThatIsGoneIsReplaced();
    void theFirstExecAfterConfigureTakesASpare();
    void anUnusedSpareGoes();
    void aSpecTooBigForTheSpareForksItsOwn();
    void concurrentExecs();
    void readWriteRoundTrip_data();
    void readWriteRoundTrip();
    void readRange_data();
    void readRange();
    void writeIsAtomic();
    void writeAppend();
    void writeErrors_data();
    void writeErrors();
    void list();
    void listTruncated();
    void stat_data();
    void stat();
    void mkdir_data();
    void mkdir();
    void remove_data();
    void remove();
    void rename_data();
    void rename();
    void pathEscapes_data();
    void pathEscapes();
    void pathsInside_data();
    void pathsInside();
    void malformedRequests_data();
    void malformedRequests();
    void invalidFrameLength_data();
    void invalidFrameLength();

private:
    QString ws(const QString &rel) const { return m_dir->filePath(rel); }
    void writeHost(const QString &rel, const QByteArray &content)
    {
        QDir(m_dir->path()).mkpath(QFileInfo(rel).path());
        QFile f(ws(rel));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    QByteArray readHost(const QString &path) const
    {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }
    void symlink(const QString &target, const QString &rel)
    {
        QVERIFY(::symlink(target.toLocal8Bit().constData(), ws(rel).toLocal8Bit().constData()) == 0);
    }
    pid_t readPid(const QString &rel) const { return pid_t(readHost(ws(rel)).trimmed().toInt()); }

    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<QTemporaryDir> m_outside; // must never be touched through the workspace
    std::unique_ptr<Client> m_client;
};

void TestSupervisor::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    m_outside = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid() && m_outside->isValid());
    QFile secret(m_outside->filePath(u"secret.txt"_s));
    QVERIFY(secret.open(QIODevice::WriteOnly));
    secret.write("secret\n");
    secret.close();
    m_client = std::make_unique<Client>();
    QVERIFY(m_client->start(m_dir->path()));
}

void TestSupervisor::cleanup()
{
    m_client.reset();
    m_dir.reset();
    m_outside.reset();
}

void TestSupervisor::hello()
{
    QCOMPARE(m_client->helloJson[u"version"].toString(), u"2"_s);
    QCOMPARE(m_client->helloJson[u"pid"].toInteger(), m_client->pid());
}

void TestSupervisor::ping()
{
    const Result r = m_client->call(R"({"op":"ping"})"_ba);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"pid"].toInteger(), m_client->pid());
    QVERIFY(r.json[u"uptimeMs"].toInteger() >= 0);
    QCOMPARE(r.json[u"execs"].toInt(), 0);
}

void TestSupervisor::configureEnv()
{
    const Result c = m_client->call(
        QJsonObject{{u"op"_s, u"configure"_s},
                    {u"env"_s,
                     QJsonObject{{u"BASE"_s, u"from-configure"_s}, {u"OVER"_s, u"configure"_s}}}});
    QVERIFY(c.received);
    QVERIFY2(!c.json.contains(u"error"_s), qPrintable(c.errorCode()));
    const Result r = m_client->call(QJsonObject{{u"op"_s, u"exec"_s},
                                                {u"shell"_s, u"echo \"$BASE $OVER\""_s},
                                                {u"env"_s, QJsonObject{{u"OVER"_s, u"exec"_s}}}});
    QCOMPARE(r.out, "from-configure exec\n"_ba);
    // The supervisor keeps the env for what it starts, never in its own environment.
    QFile environ(u"/proc/%1/environ"_s.arg(m_client->pid()));
    QVERIFY(environ.open(QIODevice::ReadOnly));
    QVERIFY(!environ.readAll().contains("from-configure"));
    // Once only.
    QCOMPARE(m_client->call(R"({"op":"configure","env":{}})"_ba).errorCode(), u"bad_request"_s);
}

void TestSupervisor::configureRoots()
{
    QTemporaryDir home;
    QVERIFY(home.isValid());
    const QString root = QDir(home.path()).canonicalPath();
    QVERIFY(QDir(root).mkpath(u"sub"_s));
    const Result c = m_client->call(
        QJsonObject{{u"op"_s, u"configure"_s}, {u"roots"_s, QJsonObject{{root, QJsonObject()}}}});
    QVERIFY2(!c.json.contains(u"error"_s),
             qPrintable(c.json[u"error"].toObject()[u"message"].toString()));

    const Result w = m_client->call(QJsonObject{{u"op"_s, u"writeFile"_s},
                                                {u"root"_s, root},
                                                {u"path"_s, QString(root + u"/sub/a.txt"_s)}},
                                    "in the other root"_ba, true);
    QCOMPARE(w.json[u"path"].toString(), root + u"/sub/a.txt"_s);
    QCOMPARE(readHost(root + u"/sub/a.txt"_s), "in the other root"_ba);
    const Result rel = m_client->call(
        QJsonObject{{u"op"_s, u"readFile"_s}, {u"root"_s, root}, {u"path"_s, u"sub/a.txt"_s}});
    QCOMPARE(rel.data, "in the other root"_ba);
    // Confined to that root like the workspace, and only configured roots exist.
    QCOMPARE(m_client
                 ->call(QJsonObject{{u"op"_s, u"readFile"_s},
                                    {u"root"_s, root},
                                    {u"path"_s, u"../escape"_s}})
                 .errorCode(),
             u"path_not_allowed"_s);
    QCOMPARE(m_client
                 ->call(QJsonObject{{u"op"_s, u"readFile"_s},
                                    {u"root"_s, root},
                                    {u"path"_s, u"/workspace/x"_s}})
                 .errorCode(),
             u"path_not_allowed"_s);
    QCOMPARE(m_client
                 ->call(QJsonObject{{u"op"_s, u"list"_s},
                                    {u"root"_s, u"/etc"_s},
                                    {u"path"_s, u"/etc"_s}})
                 .errorCode(),
             u"path_not_allowed"_s);
    // Without `root`, the workspace as before.
    writeHost(u"w.txt"_s, "ws");
    QCOMPARE(m_client->call(R"({"op":"readFile","path":"w.txt"})"_ba).data, "ws"_ba);
}

void TestSupervisor::execReportsItsTree()
{
    const quint32 id = m_client->request(R"({"op":"exec","shell":"sleep 0.3"})"_ba);
    const QJsonObject started = m_client->waitEvent(id);
    const qint64 reaper = started[u"pid"].toInteger();
    QVERIFY(reaper > 0);
    QCOMPARE(::kill(pid_t(reaper), 0), 0);
    // The reaper is the supervisor's child.
    QFile stat(u"/proc/%1/stat"_s.arg(reaper));
    QVERIFY(stat.open(QIODevice::ReadOnly));
    const QByteArray line = stat.readAll();
    QCOMPARE(line.mid(line.lastIndexOf(')') + 2).split(' ').value(1).toLongLong(), m_client->pid());
    const QJsonArray pipes = started[u"pipes"].toArray();
    QCOMPARE(pipes.size(), 2);
    QVERIFY(pipes[0].toInteger() > 0 && pipes[1].toInteger() > 0);
    QVERIFY(m_client->wait(id).received);
}

// A command that ends before its EVENT is due has its tree reported with its answer, in the same
// write: the engine wakes once for such an exec instead of twice.
void TestSupervisor::aShortCommandsTreeComesWithItsAnswer()
{
    m_client = std::make_unique<Client>();
    QVERIFY(m_client->start(m_dir->path(), {u"--started-event-delay-ms"_s, u"60000"_s}));
    const quint32 id = m_client->request(R"({"op":"exec","argv":["true"]})"_ba);
    const QJsonObject started = m_client->waitEvent(id);
    QVERIFY(started[u"pid"].toInteger() > 0);
    QCOMPARE(started[u"pipes"].toArray().size(), 2);
    QVERIFY2(m_client->has(Response, id), "the answer did not come in the EVENT's read");
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(-1), 0);
}

// A command that runs on has its tree reported while it runs (the delay is short).
void TestSupervisor::aLongerCommandsTreeComesWhileItRuns()
{
    const quint32 id = m_client->request(R"({"op":"exec","argv":["cat"],"stdin":true})"_ba);
    QVERIFY(m_client->waitEvent(id)[u"pid"].toInteger() > 0);
    QVERIFY(!m_client->has(Response, id)); // cat waits for its stdin
    m_client->send(Stdin, id, {});
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(-1), 0);
}

// A CANCEL sends the tree at once, not with the answer: the engine kills it too, by its reaper's
// pid, also when the reaper does not (stopped here).
void TestSupervisor::aCancelledCommandsTreeComesAtOnce()
{
    m_client = std::make_unique<Client>();
    QVERIFY(m_client->start(m_dir->path(), {u"--started-event-delay-ms"_s, u"60000"_s}));
    const quint32 id = m_client->request(R"({"op":"exec","argv":["sleep","60"]})"_ba);
    QTRY_COMPARE(childrenOf(m_client->pid()).size(), 1);
    const pid_t reaper = childrenOf(m_client->pid()).first();
    QCOMPARE(::kill(reaper, SIGSTOP), 0);
    auto resume = qScopeGuard([reaper] { ::kill(reaper, SIGCONT); });
    m_client->send(Cancel, id, {});
    const QJsonObject started = m_client->waitEvent(id, 5000);
    QCOMPARE(started[u"pid"].toInteger(), qint64(reaper));
    QVERIFY(!m_client->has(Response, id));
    resume.dismiss();
    ::kill(reaper, SIGCONT);
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QVERIFY(r.json[u"cancelled"].toBool());
}

// The answer says whether anything of the exec's tree is left: when nothing is, the engine has
// nothing to look for (and no sandbox to freeze) at the exec's timeout.
void TestSupervisor::anAnswerSaysWhetherTheTreeIsGone()
{
    const Result alone = m_client->call(R"({"op":"exec","argv":["true"]})"_ba);
    QVERIFY(alone.received);
    QCOMPARE(alone.json[u"treeGone"].toBool(false), true);
    const Result server = m_client->call(
        R"({"op":"exec","shell":"sleep 30 >/dev/null 2>&1 & echo $! > bg.pid"})"_ba);
    QVERIFY(server.received);
    const pid_t bg = readPid(u"bg.pid"_s);
    auto stop = qScopeGuard([bg] { ::kill(bg, SIGKILL); });
    QVERIFY(bg > 0);
    QCOMPARE(server.json[u"treeGone"].toBool(true), false);
}

namespace {

// A listening unix socket in `dir`; returns the listening fd.
int listenAt(const QString &path, int backlog)
{
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const QByteArray p = QFile::encodeName(path);
    memcpy(addr.sun_path, p.constData(), size_t(p.size()));
    if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0
        || ::listen(fd, backlog) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

} // namespace

void TestSupervisor::connectPassesTheSocket()
{
    const QString path = ws(u"srv.sock"_s);
    const int listener = listenAt(path, 4);
    QVERIFY(listener >= 0);
    const quint32 id = m_client->request(compact({{u"op"_s, u"connect"_s}, {u"path"_s, path}}));
    const auto f = m_client->waitFrame(Response, id, 5000);
    QVERIFY(f);
    QCOMPARE(QJsonDocument::fromJson(f->payload).object(), QJsonObject());
    QVERIFY(f->fd >= 0);
    struct stat st;
    QVERIFY(::fstat(f->fd, &st) == 0 && S_ISSOCK(st.st_mode));
    // It is connected to our listener: bytes go through.
    const int server = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    QVERIFY(server >= 0);
    QCOMPARE(::write(f->fd, "ping", 4), 4);
    char buf[8] = {};
    QCOMPARE(::read(server, buf, sizeof buf), 4);
    QCOMPARE(QByteArray(buf, 4), "ping"_ba);
    ::close(server);
    ::close(f->fd);
    ::close(listener);
}

namespace {

quint16 freeTcpPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

int connectTcp(quint16 port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

} // namespace

void TestSupervisor::listenHandsOverTheListeningSocket()
{
    const quint16 port = freeTcpPort();
    const quint32 id = m_client->request(
        compact({{u"op"_s, u"listen"_s}, {u"host"_s, u"127.0.0.1"_s}, {u"port"_s, port}}));
    // One EVENT with the listening socket attached, then the answer: the request is over.
    const auto f = m_client->waitFrame(Event, id, 5000);
    QVERIFY(f);
    QCOMPARE(QJsonDocument::fromJson(f->payload).object()[u"listening"_s].toBool(), true);
    QVERIFY(f->fd >= 0);
    const Result done = m_client->wait(id, 5000);
    QVERIFY(done.received);
    QVERIFY(!done.json.contains(u"error"_s));
    int accepting = 0;
    socklen_t len = sizeof accepting;
    QVERIFY(::getsockopt(f->fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 && accepting);
    QVERIFY(::fcntl(f->fd, F_GETFL) & O_NONBLOCK);
    // Whoever holds it accepts: the supervisor keeps no copy (its connections are not its own).
    const int client = connectTcp(port);
    QVERIFY(client >= 0);
    pollfd p{f->fd, POLLIN, 0};
    QCOMPARE(::poll(&p, 1, 5000), 1);
    const int server = ::accept4(f->fd, nullptr, nullptr, SOCK_CLOEXEC);
    QVERIFY(server >= 0);
    QCOMPARE(::write(client, "ping", 4), 4);
    char buf[8] = {};
    QCOMPARE(::read(server, buf, sizeof buf), 4);
    QCOMPARE(QByteArray(buf, 4), "ping"_ba);

    // `peer`: who holds the client end (this test process, from outside the supervisor's view of
    // /proc here, so only the answer's shape is certain), and bad questions refused.
    sockaddr_in mine{};
    socklen_t mineLen = sizeof mine;
    QVERIFY(::getsockname(client, reinterpret_cast<sockaddr *>(&mine), &mineLen) == 0);
    const Result who = m_client->call(
        compact({{u"op"_s, u"peer"_s}, {u"port"_s, port}, {u"peerPort"_s, ntohs(mine.sin_port)}}));
    QVERIFY(who.received);
    QVERIFY2(who.json.contains(u"pid"_s) && who.json.contains(u"comm"_s),
             QJsonDocument(who.json).toJson().constData());
    if (!who.json[u"pid"_s].isNull()) {
        QCOMPARE(who.json[u"pid"_s].toInt(), int(::getpid()));
        QCOMPARE(who.json[u"comm"_s].toString(), u"tst_supervisor"_s.left(15));
    }
    QCOMPARE(m_client->call(compact({{u"op"_s, u"peer"_s}, {u"port"_s, port}})).errorCode(),
             u"bad_request"_s);
    ::close(server);
    ::close(client);
    // Closing the handed-over socket closes the port.
    ::close(f->fd);
    QCOMPARE(connectTcp(port), -1);
}

void TestSupervisor::listenRefusesBadRequests()
{
    Result r = m_client->call(
        compact({{u"op"_s, u"listen"_s}, {u"host"_s, u"0.0.0.0"_s}, {u"port"_s, 8080}}));
    QCOMPARE(r.errorCode(), u"bad_request"_s);
    r = m_client->call(compact({{u"op"_s, u"listen"_s}, {u"port"_s, 0}}));
    QCOMPARE(r.errorCode(), u"bad_request"_s);
    // A port that is taken.
    const int taken = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QVERIFY(::bind(taken, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    QVERIFY(::listen(taken, 1) == 0);
    socklen_t len = sizeof a;
    ::getsockname(taken, reinterpret_cast<sockaddr *>(&a), &len);
    r = m_client->call(compact({{u"op"_s, u"listen"_s}, {u"port"_s, ntohs(a.sin_port)}}));
    ::close(taken);
    QCOMPARE(r.errorCode(), u"file_error"_s);
    QCOMPARE(r.errnoName(), u"EADDRINUSE"_s);
}

void TestSupervisor::connectFailures_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("code");
    QTest::addColumn<QString>("errnoName");
    QTest::newRow("no such socket") << u"WS/none.sock"_s << u"not_found"_s << u"ENOENT"_s;
    QTest::newRow("a file, not a socket")
        << u"WS/file.txt"_s << u"file_error"_s << u"ECONNREFUSED"_s;
    QTest::newRow("relative") << u"none.sock"_s << u"bad_request"_s << QString();
    QTest::newRow("too long") << u"/"_s + QString(200, u'x') << u"bad_request"_s << QString();
}

void TestSupervisor::connectFailures()
{
    QFETCH(QString, path);
    QFETCH(QString, code);
    QFETCH(QString, errnoName);
    writeHost(u"file.txt"_s, "x");
    path.replace(u"WS"_s, m_dir->path());
    const Result r = m_client->call(compact({{u"op"_s, u"connect"_s}, {u"path"_s, path}}));
    QVERIFY(r.received);
    QCOMPARE(r.errorCode(), code);
    if (!errnoName.isEmpty())
        QCOMPARE(r.errnoName(), errnoName);
}

void TestSupervisor::connectFullBacklogTimesOut()
{
    // A listener that never accepts, its backlog full: the connect waits (without blocking the
    // supervisor) and gives up at its timeout.
    const QString path = ws(u"full.sock"_s);
    const int listener = listenAt(path, 0);
    QVERIFY(listener >= 0);
    QList<int> fillers;
    for (int i = 0; i < 8; ++i) {
        const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const QByteArray p = QFile::encodeName(path);
        memcpy(addr.sun_path, p.constData(), size_t(p.size()));
        const int rc = ::connect(c, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
        fillers << c;
        if (rc != 0 && errno == EAGAIN)
            break;
    }
    QElapsedTimer timer;
    timer.start();
    const quint32 id = m_client->request(
        compact({{u"op"_s, u"connect"_s}, {u"path"_s, path}, {u"timeoutMs"_s, 400}}));
    const Result ping = m_client->call(R"({"op":"ping"})"_ba);
    QVERIFY(ping.received);
    QVERIFY2(timer.elapsed() < 300, qPrintable(u"ping took %1 ms"_s.arg(timer.elapsed())));
    const Result r = m_client->wait(id);
    QCOMPARE(r.errorCode(), u"file_error"_s);
    QCOMPARE(r.errnoName(), u"ETIMEDOUT"_s);
    QVERIFY(timer.elapsed() >= 350);
    for (int fd : std::as_const(fillers))
        ::close(fd);
    ::close(listener);
}

void TestSupervisor::commandsCannotSignalTheSupervisor_data()
{
    QTest::addColumn<QString>("shell");
    QTest::addColumn<bool>(
        "onASpare"); // the guard is the spare reaper's, which its commands inherit
    const std::pair<const char *, QString> attacks[] = {
        {"kill -STOP", u"kill -STOP $SUP"_s},
        {"kill -KILL", u"kill -KILL $SUP"_s},
        {"kill -0", u"kill -0 $SUP"_s},
        {"kill -STOP -1 (everyone)", u"kill -STOP -1"_s},
        {"kill its process group", u"kill -STOP -- -$SUP"_s},
        {"pidfd_open", u"python3 -c 'import os; os.pidfd_open(int(os.environ[\"SUP\"]))'"_s},
        {"pidfd_send_signal through /proc/PID",
         u"python3 -c 'import os,signal; fd=os.open(\"/proc/\"+os.environ[\"SUP\"], "
         u"os.O_RDONLY); "
         "signal.pidfd_send_signal(fd, signal.SIGSTOP)'"_s},
    };
    for (const bool onASpare : {false, true}) {
        for (const auto &[name, shell] : attacks)
            QTest::addRow("%s%s", name, onASpare ? ", on a spare reaper" : "") << shell << onASpare;
    }
}

void TestSupervisor::commandsCannotSignalTheSupervisor()
{
    QFETCH(QString, shell);
    QFETCH(bool, onASpare);
    pid_t spare = 0;
    if (onASpare) {
        QVERIFY(m_client->call(R"({"op":"configure"})"_ba).received);
        QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
        spare = childrenOf(m_client->pid()).first();
    }
    const QString sup = QString::number(m_client->pid());
    const quint32 id = m_client->request(compact({{u"op"_s, u"exec"_s},
                                                  {u"shell"_s, shell},
                                                  {u"env"_s, QJsonObject{{u"SUP"_s, sup}}},
                                                  {u"timeoutMs"_s, 10000}}));
    const qint64 reaper = m_client->waitEvent(id)[u"pid"].toInteger();
    QVERIFY(onASpare ? reaper == spare : reaper > 0);
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QVERIFY2(r.json[u"exitCode"].toInt() != 0, r.err.constData());
    // Still running, not stopped, and answering.
    QFile stat(u"/proc/%1/stat"_s.arg(sup));
    QVERIFY(stat.open(QIODevice::ReadOnly));
    const QByteArray line = stat.readAll();
    QVERIFY2(line.mid(line.lastIndexOf(')') + 2, 1) != "T"_ba, line.constData());
    QVERIFY(m_client->call(R"({"op":"ping"})"_ba).received);
    // Other processes can still be signalled.
    const Result other = m_client->call(R"({"op":"exec","shell":"sleep 5 & kill $!"})"_ba);
    QCOMPARE(other.json[u"exitCode"].toInt(), 0);
}

void TestSupervisor::exec_data()
{
    QTest::addColumn<QByteArray>("request");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("signal");
    QTest::addColumn<QByteArray>("stdoutSuffix"); // the whole stdout unless it starts with '*'
    QTest::addColumn<QByteArray>("stderrContains");

    QTest::newRow("shell exits 0") << R"({"shell":"true"})"_ba << 0 << QString() << ""_ba
                                   << ""_ba;
    QTest::newRow("shell exit code 3") << R"({"shell":"exit 3"})"_ba << 3 << QString() << ""_ba
                                       << ""_ba;
    QTest::newRow("argv echo") << R"({"argv":["echo","hello","world"]})"_ba << 0 << QString()
                               << "hello world\n"_ba
                               << ""_ba;
    QTest::newRow("argv is not word-split")
        << R"({"argv":["printf","%s|","a b","c"]})"_ba << 0 << QString() << "a b|c|"_ba
        << ""_ba;
    QTest::newRow("argv false exits 1") << R"({"argv":["false"]})"_ba << 1 << QString() << ""_ba
                                        << ""_ba;
    QTest::newRow("stdout and stderr are separate")
        << R"({"shell":"echo out; echo err >&2"})"_ba << 0 << QString() << "out\n"_ba
        << "err\n"_ba;
    QTest::newRow("killed by SIGTERM is 143")
        << R"({"shell":"kill -TERM $$"})"_ba << 143 << u"SIGTERM"_s << ""_ba
        << ""_ba;
    QTest::newRow("killed by SIGKILL is 137")
        << R"({"argv":["sh","-c","kill -KILL $$"]})"_ba << 137 << u"SIGKILL"_s << ""_ba
        << ""_ba;
    QTest::newRow("env is added")
        << R"({"shell":"printf %s \"$GREETING\"","env":{"GREETING":"hi there"}})"_ba << 0
        << QString() << "hi there"_ba
        << ""_ba;
    QTest::newRow("env keeps the supervisor's PATH")
        << R"({"argv":["sh","-c","test -n \"$PATH\" && echo yes"],"env":{"X":"1"}})"_ba << 0
        << QString() << "yes\n"_ba
        << ""_ba;
    QTest::newRow("cwd defaults to the workspace")
        << R"({"shell":"cat marker.txt"})"_ba << 0 << QString() << "root marker"_ba
        << ""_ba;
    QTest::newRow("cwd relative") << R"({"shell":"pwd","cwd":"sub/dir"})"_ba << 0 << QString()
                                  << "*/sub/dir\n"_ba
                                  << ""_ba;
    QTest::newRow("cwd absolute") << R"({"shell":"pwd","cwd":"/workspace/sub"})"_ba << 0
                                  << QString() << "*/sub\n"_ba
                                  << ""_ba;
    QTest::newRow("missing command is 127")
        << R"({"argv":["no-such-command-xyz"]})"_ba << 127 << QString() << ""_ba
        << "no-such-command-xyz"_ba;
    QTest::newRow("missing absolute command is 127")
        << R"({"argv":["/nonexistent/bin/tool"]})"_ba << 127 << QString() << ""_ba
        << "No such file or directory"_ba;
    QTest::newRow("missing command via shell is 127")
        << R"({"shell":"no-such-command-xyz"})"_ba << 127 << QString() << ""_ba
        << "not found"_ba;
    QTest::newRow("not executable is 126")
        << R"({"argv":["./notexec.sh"]})"_ba << 126 << QString() << ""_ba
        << "Permission denied"_ba;
    QTest::newRow("not executable via shell is 126")
        << R"({"shell":"./notexec.sh"})"_ba << 126 << QString() << ""_ba
        << "Permission denied"_ba;
    QTest::newRow("missing cwd is 127")
        << R"({"shell":"true","cwd":"no/such/dir"})"_ba << 127 << QString() << ""_ba
        << "/workspace/no/such/dir"_ba;
}

void TestSupervisor::exec()
{
    QFETCH(QByteArray, request);
    QFETCH(int, exitCode);
    QFETCH(QString, signal);
    QFETCH(QByteArray, stdoutSuffix);
    QFETCH(QByteArray, stderrContains);

    QVERIFY(QDir(m_dir->path()).mkpath(u"sub/dir"_s));
    writeHost(u"marker.txt"_s, "root marker");
    writeHost(u"notexec.sh"_s, "echo should not run\n");
    QVERIFY(QFile::setPermissions(ws(u"notexec.sh"_s),
                                  QFileDevice::ReadOwner | QFileDevice::WriteOwner));

    QJsonObject req = QJsonDocument::fromJson(request).object();
    req[u"op"] = u"exec"_s;
    req[u"timeoutMs"] = 10000;
    const Result r = m_client->call(req);
    QVERIFY(r.received);
    QVERIFY2(!r.json.contains(u"error"), compact(r.json).constData());
    QCOMPARE(r.json[u"exitCode"].toInt(), exitCode);
    if (signal.isEmpty())
        QVERIFY(r.json[u"signal"].isNull());
    else
        QCOMPARE(r.json[u"signal"].toString(), signal);
    QCOMPARE(r.json[u"timedOut"].toBool(), false);
    QCOMPARE(r.json[u"cancelled"].toBool(), false);
    QCOMPARE(r.json[u"truncated"].toBool(), false);
    QVERIFY(r.json[u"durationMs"].toInteger() >= 0);
    if (stdoutSuffix.startsWith('*'))
        QVERIFY2(r.out.endsWith(stdoutSuffix.mid(1)), r.out.constData());
    else
        QCOMPARE(r.out, stdoutSuffix);
    if (stderrContains.isEmpty())
        QCOMPARE(r.err, QByteArray());
    else
        QVERIFY2(r.err.contains(stderrContains), r.err.constData());
}

void TestSupervisor::execStdin_data()
{
    QTest::addColumn<QByteArray>("request");
    QTest::addColumn<QByteArrayList>("chunks"); // sent as STDIN frames, then an empty one
    QTest::addColumn<QByteArray>("expectedStdout");

    QTest::newRow("cat echoes frames until EOF")
        << R"({"argv":["cat"],"stdin":true})"_ba
        << QByteArrayList{"hello "_ba, QByteArray("\0bin\xff\n", 6)}
        << QByteArray("hello \0bin\xff\n", 12);
    QTest::newRow("3 MiB through stdin")
        << R"({"shell":"wc -c","stdin":true})"_ba
        << QByteArrayList{QByteArray(3 * 1024 * 1024, 'x')} << "3145728\n"_ba;
    QTest::newRow("command that does not read stdin")
        << R"({"shell":"echo done","stdin":true})"_ba << QByteArrayList{QByteArray(200000, 'y')}
        << "done\n"_ba;
    QTest::newRow("no stdin means /dev/null")
        << R"({"argv":["cat"]})"_ba << QByteArrayList{"ignored"_ba} << ""_ba;
}

void TestSupervisor::execStdin()
{
    QFETCH(QByteArray, request);
    QFETCH(QByteArrayList, chunks);
    QFETCH(QByteArray, expectedStdout);

    QJsonObject req = QJsonDocument::fromJson(request).object();
    req[u"op"] = u"exec"_s;
    req[u"timeoutMs"] = 10000;
    const quint32 id = m_client->request(compact(req));
    for (const QByteArray &chunk : chunks)
        m_client->send(Stdin, id, chunk);
    m_client->send(Stdin, id, {});
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0);
    QCOMPARE(r.json[u"timedOut"].toBool(), false);
    QCOMPARE(r.out, expectedStdout);
    // Stray STDIN for a finished exec is dropped, and the supervisor keeps serving.
    m_client->send(Stdin, id, "late"_ba);
    QVERIFY(m_client->call(R"({"op":"ping"})"_ba).received);
}

void TestSupervisor::outputCap_data()
{
    QTest::addColumn<QString>("shell");
    QTest::addColumn<int>("maxOutputBytes"); // -1: the default
    QTest::addColumn<int>("expectedStdout");
    QTest::addColumn<int>("expectedStderr");
    QTest::addColumn<bool>("truncated");

    QTest::newRow("stdout over the cap")
        << u"head -c 100000 /dev/zero"_s << 1000 << 1000 << 0 << true;
    QTest::newRow("stderr over the cap")
        << u"head -c 100000 /dev/zero >&2"_s << 1000 << 0 << 1000 << true;
    QTest::newRow("each channel has its own cap")
        << u"head -c 5000 /dev/zero; head -c 5000 /dev/zero >&2"_s << 3000 << 3000 << 3000 << true;
    QTest::newRow("exactly the cap is not truncated")
        << u"head -c 1000 /dev/zero"_s << 1000 << 1000 << 0 << false;
    QTest::newRow("zero cap") << u"echo hi"_s << 0 << 0 << 0 << true;
    QTest::newRow("default cap is 1 MiB")
        << u"head -c 3000000 /dev/zero"_s << -1 << 1048576 << 0 << true;
}

void TestSupervisor::outputCap()
{
    QFETCH(QString, shell);
    QFETCH(int, maxOutputBytes);
    QFETCH(int, expectedStdout);
    QFETCH(int, expectedStderr);
    QFETCH(bool, truncated);

    QJsonObject req{{u"op"_s, u"exec"_s}, {u"shell"_s, shell}, {u"timeoutMs"_s, 20000}};
    if (maxOutputBytes >= 0)
        req[u"maxOutputBytes"] = maxOutputBytes;
    const Result r = m_client->call(req);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0); // the rest was read and dropped, not a SIGPIPE
    QCOMPARE(r.out.size(), expectedStdout);
    QCOMPARE(r.err.size(), expectedStderr);
    QCOMPARE(r.json[u"truncated"].toBool(), truncated);
}

// With `window` (the engine asks it for output it streams to a client), an exec's output goes
// out only as fast as the engine acknowledges it: never more than the window (1 MiB, stdout and
// stderr together) ahead, and all of it, in order, once acknowledged.
void TestSupervisor::windowedOutputWaitsForItsReader()
{
    constexpr qsizetype window = 1024 * 1024;
    const quint32 id = m_client->request(compact(
        {{u"op"_s, u"exec"_s},
         {u"shell"_s, u"head -c 3145728 /dev/zero; head -c 2097152 /dev/zero | tr '\\0' e >&2"_s},
         {u"maxOutputBytes"_s, 8 * 1024 * 1024},
         {u"timeoutMs"_s, 60000},
         {u"window"_s, true}}));
    QByteArray out, err;
    qsizetype acknowledged = 0;
    QJsonObject answer;
    while (answer.isEmpty()) {
        const auto f = m_client->nextFrame(id, 15000);
        QVERIFY2(f, "the exec stalled");
        takeOutput(*f, out, err, answer);
        const qsizetype received = out.size() + err.size();
        QVERIFY2(received <= acknowledged + window,
                 qPrintable(
                     u"%1 bytes received, %2 acknowledged"_s.arg(received).arg(acknowledged)));
        if (received == acknowledged + window) { // full: nothing comes until it is acknowledged
            m_client->acknowledge(id, quint32(window));
            acknowledged += window;
        }
    }
    QCOMPARE(answer[u"exitCode"].toInt(), 0);
    QCOMPARE(out, QByteArray(3 * window, '\0'));
    QCOMPARE(err, QByteArray(2 * window, 'e'));
    QCOMPARE(answer[u"truncated"].toBool(), false);
}

void TestSupervisor::windowedOutputIsWholeWhenItsReaderIsLate()
{
    // The command writes two windows and exits with the second one still in its pipe; the engine
    // acknowledges the first only later (a busy machine, a slow client). What was written before
    // the exit still arrives, all of it.
    constexpr qsizetype window = 1024 * 1024;
    const quint32 id = m_client->request(compact({{u"op"_s, u"exec"_s},
                                                  {u"shell"_s, u"head -c 2097152 /dev/zero"_s},
                                                  {u"maxOutputBytes"_s, 8 * 1024 * 1024},
                                                  {u"timeoutMs"_s, 60000},
                                                  {u"window"_s, true}}));
    QByteArray out, err;
    QJsonObject answer;
    bool acknowledged = false;
    while (answer.isEmpty()) {
        const auto f = m_client->nextFrame(id, 15000);
        QVERIFY2(f, "the exec stalled");
        takeOutput(*f, out, err, answer);
        if (!acknowledged && out.size() == window) {
            // On purpose: the reader is late, well past the supervisor's 50 ms drain time.
            QTest::qWait(300);
            m_client->acknowledge(id, quint32(window));
            acknowledged = true;
        }
    }
    QCOMPARE(answer[u"exitCode"].toInt(), 0);
    QCOMPARE(out.size(), 2 * window);
    QVERIFY(err.isEmpty());
    QCOMPARE(answer[u"truncated"].toBool(), false);
}

// With `pipes` (the engine asks it for output it streams to a client), the exec's EVENT carries
// the read ends of its stdout and stderr pipes and the supervisor keeps none: it sends no output
// frames and answers when the command exits, and what the command wrote is all in the pipes.
void TestSupervisor::outputPipesGoToTheEngine()
{
    const quint32 id = m_client->request(
        compact({{u"op"_s, u"exec"_s},
                 {u"shell"_s, u"head -c 3145728 /dev/zero | tr '\\0' o; printf done >&2"_s},
                 {u"timeoutMs"_s, 60000},
                 {u"pipes"_s, true}}));
    const auto event = m_client->waitFrame(Event, id, 15000);
    QVERIFY(event);
    const int fds[2] = {event->fd, event->fd2};
    auto closeFds = qScopeGuard([&] {
        for (int fd : fds)
            if (fd >= 0)
                ::close(fd);
    });
    QVERIFY2(fds[0] >= 0 && fds[1] >= 0, "the EVENT carries no pipes");
    const QJsonArray inodes = QJsonDocument::fromJson(event->payload).object()[u"pipes"].toArray();
    QCOMPARE(inodes.size(), 2);
    // What the supervisor's descriptors point at (it sends the EVENT, then closes its copies).
    const auto supervisorFds = [pid = m_client->pid()] {
        QStringList targets;
        const QString fdDir = u"/proc/%1/fd"_s.arg(pid);
        for (const QString &name : QDir(fdDir).entryList(QDir::Files | QDir::System)) {
            char target[256];
            const ssize_t n = ::readlink(QFile::encodeName(fdDir + u'/' + name).constData(), target,
                                         sizeof target);
            if (n > 0)
                targets.append(QString::fromLatin1(target, n));
        }
        return targets;
    };
    for (int i = 0; i < 2; ++i) {
        struct stat st = {};
        QVERIFY(::fstat(fds[i], &st) == 0 && S_ISFIFO(st.st_mode));
        QCOMPARE(quint64(st.st_ino), quint64(inodes[i].toDouble()));
        // The command still runs (it waits for this reader), and the supervisor has no copy.
        QTRY_VERIFY2(!supervisorFds().contains(u"pipe:[%1]"_s.arg(st.st_ino)),
                     "the supervisor kept a copy of the pipe");
        ::fcntl(fds[i], F_SETFL, ::fcntl(fds[i], F_GETFL) & ~O_NONBLOCK);
    }
    // The engine's part: read both pipes to their end (the command waits for this reader).
    QByteArray out, err;
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        out.append(buf, n);
    for (ssize_t n; (n = ::read(fds[1], buf, sizeof buf)) > 0;)
        err.append(buf, n);
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0);
    QVERIFY(r.out.isEmpty() && r.err.isEmpty()); // no output frames
    QCOMPARE(out, QByteArray(3145728, 'o'));
    QCOMPARE(err, "done"_ba);
}

void TestSupervisor::killsWholeTree_data()
{
    QTest::addColumn<bool>("cancel");
    QTest::newRow("timeout") << false;
    QTest::newRow("cancel") << true;
}

void TestSupervisor::killsWholeTree()
{
    QFETCH(bool, cancel);
    // A child in its own session and a double-forked orphan, both still running.
    writeHost(u"tree.sh"_s,
              "setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' &\n"
              "sh -c 'sh -c \"echo \\$\\$ > orphan.pid; exec sleep 60\" & exit 0'\n"
              "echo $$ > main.pid\n"
              "while [ ! -s setsid.pid ] || [ ! -s orphan.pid ]; do sleep 0.02; done\n"
              "echo ready\n"
              "sleep 60\n");
    QJsonObject req{{u"op"_s, u"exec"_s}, {u"argv"_s, QJsonArray{u"sh"_s, u"tree.sh"_s}}};
    req[u"timeoutMs"] = cancel ? 60000 : 1500;
    QElapsedTimer timer;
    timer.start();
    const quint32 id = m_client->request(compact(req));
    QVERIFY(m_client->waitForOutput(id, "ready\n"));
    const pid_t mainPid = readPid(u"main.pid"_s), setsidPid = readPid(u"setsid.pid"_s),
                orphanPid = readPid(u"orphan.pid"_s);
    QVERIFY(mainPid > 0 && setsidPid > 0 && orphanPid > 0);
    QVERIFY(::getsid(setsidPid) != ::getsid(mainPid)); // really in another session
    if (cancel)
        m_client->send(Cancel, id, {});

    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.out, "ready\n"_ba);
    QCOMPARE(r.json[u"timedOut"].toBool(), !cancel);
    QCOMPARE(r.json[u"cancelled"].toBool(), cancel);
    QCOMPARE(r.json[u"exitCode"].toInt(), 137);
    QCOMPARE(r.json[u"signal"].toString(), u"SIGKILL"_s);
    QVERIFY(timer.elapsed() < 10000);
    for (pid_t pid : {mainPid, setsidPid, orphanPid})
        QVERIFY2(processGone(pid), qPrintable(u"pid %1 survived"_s.arg(pid)));
}

void TestSupervisor::backgroundProcess_data()
{
    QTest::addColumn<QString>("shell");
    QTest::addColumn<bool>("holdsPipes");
    QTest::newRow("background process holds the output pipes")
        << u"sleep 30 & echo $! > bg.pid"_s << true;
    QTest::newRow("background process with redirected output")
        << u"sleep 30 >/dev/null 2>&1 & echo $! > bg.pid"_s << false;
}

void TestSupervisor::backgroundProcess()
{
    QFETCH(QString, shell);
    QFETCH(bool, holdsPipes);

    QElapsedTimer timer;
    timer.start();
    const Result r = m_client->call(
        QJsonObject{{u"op"_s, u"exec"_s}, {u"shell"_s, shell}, {u"timeoutMs"_s, 20000}});
    const qint64 elapsed = timer.elapsed();
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0);
    QVERIFY2(elapsed < 1000, qPrintable(u"the response took %1 ms"_s.arg(elapsed)));
    if (holdsPipes)
        QVERIFY(elapsed >= 50); // the 50 ms drain window

    const pid_t bg = readPid(u"bg.pid"_s);
    QVERIFY(bg > 0);
    QTest::qWait(100); // on purpose: time for a wrong kill of the background process to land
    QCOMPARE(::kill(bg, 0), 0);
    QCOMPARE(m_client->call(R"({"op":"ping"})"_ba).json[u"execs"].toInt(), 0);

    // The background process dies with the supervisor (the sandbox's stop).
    m_client->stop();
    QTRY_VERIFY_WITH_TIMEOUT(processGone(bg), 5000);
}

void TestSupervisor::execsTakeAReaperForkedAhead()
{
    // Before any exec there is no spare: an idle sandbox costs no extra process.
    QCOMPARE(childrenOf(m_client->pid()).size(), 0);
    // A command reading its stdin runs while the first exec's answer forks the spare.
    const quint32 reader = m_client->request(
        R"({"op":"exec","argv":["cat"],"stdin":true,"timeoutMs":20000})"_ba);
    const qint64 readerReaper = m_client->waitEvent(reader)[u"pid"].toInteger();
    QVERIFY(m_client->call(R"({"op":"exec","argv":["true"]})"_ba).received);
    QList<pid_t> spares;
    QTRY_VERIFY((spares = childrenOf(m_client->pid())).size() == 2);
    spares.removeAll(pid_t(readerReaper));
    QCOMPARE(spares.size(), 1);
    const pid_t spare = spares.first();
    // The spare holds the log and its socket only, none of the running exec's pipes: the
    // reader sees the end of its input when the client ends it.
    QCOMPARE(QDir(u"/proc/%1/fd"_s.arg(spare)).entryList(QDir::NoDotAndDotDot | QDir::System).size(),
             4);
    m_client->send(Stdin, reader, "bytes"_ba);
    m_client->send(Stdin, reader, {});
    const Result read = m_client->wait(reader);
    QVERIFY(read.received);
    QCOMPARE(read.out, "bytes"_ba);
    QCOMPARE(read.json[u"timedOut"].toBool(), false);

    // The next exec is the spare's: its reaper is the process forked ahead, and it works as one.
    QVERIFY(QDir(m_dir->path()).mkdir(u"sub"_s));
    const QJsonObject greet{{u"op"_s, u"exec"_s},
                            {u"shell"_s, u"echo \"$GREETING from ${PWD##*/}\""_s},
                            {u"cwd"_s, u"sub"_s},
                            {u"env"_s, QJsonObject{{u"GREETING"_s, u"hello"_s}}}};
    const quint32 id = m_client->request(compact(greet));
    QCOMPARE(m_client->waitEvent(id)[u"pid"].toInteger(), qint64(spare));
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0);
    QCOMPARE(r.out, "hello from sub\n"_ba);

    // Its tree gone, that reaper is the spare again; a spare goes with its supervisor.
    QCOMPARE(childrenOf(m_client->pid()), QList<pid_t>{spare});
    m_client->stop();
    QTRY_VERIFY_WITH_TIMEOUT(processGone(spare), 5000);
}

void TestSupervisor::aLoneCommandRunsWithoutAForkBesideIt()
{
    // The next exec's reaper is forked once the running one has answered, not while its command
    // runs: the fork took the CPU (and the sandbox's CPU quota) from the command.
    QVERIFY(m_client->call(R"({"op":"configure"})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    const quint32 reader = m_client->request(
        R"({"op":"exec","argv":["cat"],"stdin":true,"timeoutMs":20000})"_ba);
    QCOMPARE(m_client->waitEvent(reader)[u"pid"].toInteger(), qint64(spare));
    // The command's first output shows it runs; beside it is no other child of the supervisor.
    m_client->send(Stdin, reader, "running"_ba);
    QVERIFY(m_client->waitForOutput(reader, "running"_ba));
    QCOMPARE(childrenOf(m_client->pid()), QList<pid_t>{spare});
    m_client->send(Stdin, reader, {});
    QVERIFY(m_client->wait(reader).received);
    // Its answer is out and its tree gone: its reaper waits for the next exec, no fork follows.
    QCOMPARE(childrenOf(m_client->pid()), QList<pid_t>{spare});
}

void TestSupervisor::aReaperWhoseTreeIsGoneServesTheNextExec()
{
    // Nothing is forked, and nothing exits, per exec: a reaper whose command left nothing behind
    // serves the next exec. Each command starts afresh: its own environment and directory, none
    // of the last one's.
    QVERIFY(m_client->call(R"({"op":"configure"})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    QVERIFY(QDir(m_dir->path()).mkdir(u"sub"_s));
    const QJsonObject inSub{{u"op"_s, u"exec"_s},
                            {u"shell"_s, u"echo \"$GREETING from ${PWD##*/}\""_s},
                            {u"cwd"_s, u"sub"_s},
                            {u"env"_s, QJsonObject{{u"GREETING"_s, u"hello"_s}}}};
    const QJsonObject plain{{u"op"_s, u"exec"_s},
                            {u"shell"_s, u"echo \"${GREETING-none} from ${PWD##*/}\""_s}};
    const QByteArray workspace = QFileInfo(m_dir->path()).fileName().toUtf8();
    for (int i = 0; i < 2; ++i) {
        const quint32 first = m_client->request(compact(inSub));
        QCOMPARE(m_client->waitEvent(first)[u"pid"].toInteger(), qint64(spare));
        const Result r = m_client->wait(first);
        QVERIFY(r.received);
        QCOMPARE(r.out, "hello from sub\n"_ba);
        const quint32 second = m_client->request(compact(plain));
        QCOMPARE(m_client->waitEvent(second)[u"pid"].toInteger(), qint64(spare));
        const Result next = m_client->wait(second);
        QVERIFY(next.received);
        QCOMPARE(next.out, "none from " + workspace + '\n');
    }
    QCOMPARE(childrenOf(m_client->pid()), QList<pid_t>{spare});
    // Back to waiting (its answer may come first), it holds the log and its socket only (and
    // /dev/null), none of its execs' pipes.
    QTRY_COMPARE(QDir(u"/proc/%1/fd"_s.arg(spare))
                     .entryList(QDir::NoDotAndDotDot | QDir::System)
                     .size(),
                 4);
}

void TestSupervisor::aReaperWithBackgroundProcessesIsNotReused()
{
    // A background process keeps its exec's reaper (a timeout or the stop kills that tree): the
    // next exec gets another one.
    const quint32 server = m_client->request(
        R"({"op":"exec","shell":"sleep 30 >/dev/null 2>&1 & echo $! > bg.pid"})"_ba);
    const qint64 first = m_client->waitEvent(server)[u"pid"].toInteger();
    QVERIFY(m_client->wait(server).received);
    const pid_t bg = readPid(u"bg.pid"_s);
    QVERIFY(bg > 0);
    const quint32 next = m_client->request(R"({"op":"exec","argv":["true"]})"_ba);
    const qint64 second = m_client->waitEvent(next)[u"pid"].toInteger();
    QVERIFY(m_client->wait(next).received);
    QVERIFY(second > 0 && second != first);
    QCOMPARE(::kill(bg, 0), 0);
    QCOMPARE(::kill(pid_t(first), 0), 0); // still the background process's reaper
    m_client->stop();
    QTRY_VERIFY_WITH_TIMEOUT(processGone(bg), 5000);
}

void TestSupervisor::aReaperServingAgainKillsItsWholeTree()
{
    QVERIFY(m_client->call(R"({"op":"configure"})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    QVERIFY(m_client->call(R"({"op":"exec","argv":["true"]})"_ba).received);
    // The same reaper, serving again, kills the whole tree of a cancelled exec (a child in its
    // own session too), and then serves the next.
    const quint32 id = m_client->request(
        R"({"op":"exec","shell":"setsid sleep 60 & echo $! > bg.pid; echo ready; sleep 60"})"_ba);
    QCOMPARE(m_client->waitEvent(id)[u"pid"].toInteger(), qint64(spare));
    QVERIFY(m_client->waitForOutput(id, "ready\n"));
    const pid_t bg = readPid(u"bg.pid"_s);
    QVERIFY(bg > 0);
    m_client->send(Cancel, id, {});
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"cancelled"].toBool(), true);
    QCOMPARE(r.json[u"exitCode"].toInt(), 137);
    QVERIFY(processGone(bg));
    const quint32 next = m_client->request(R"({"op":"exec","argv":["true"]})"_ba);
    QCOMPARE(m_client->waitEvent(next)[u"pid"].toInteger(), qint64(spare));
    QVERIFY(m_client->wait(next).received);
}

void TestSupervisor::aSpareThatIsGoneIsReplaced()
{
    QVERIFY(m_client->call(R"({"op":"exec","argv":["true"]})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    // A command of the sandbox may kill it (same uid): the next exec forks its own reaper.
    QCOMPARE(::kill(spare, SIGKILL), 0);
    QTRY_VERIFY(childrenOf(m_client->pid()).isEmpty());
    const Result r = m_client->call(R"({"op":"exec","shell":"echo still here"})"_ba);
    QVERIFY(r.received);
    QCOMPARE(r.json[u"exitCode"].toInt(), 0);
    QCOMPARE(r.out, "still here\n"_ba);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    QVERIFY(childrenOf(m_client->pid()).first() != spare);
}

void TestSupervisor::theFirstExecAfterConfigureTakesASpare()
{
    // The engine configures a sandbox before its first command (a spare sandbox when it is
    // claimed): that command's reaper is forked ahead too, and gets the configured environment.
    const Result c = m_client->call(
        QJsonObject{{u"op"_s, u"configure"_s},
                    {u"env"_s, QJsonObject{{u"BASE"_s, u"configured"_s}}}});
    QVERIFY(c.received && !c.json.contains(u"error"_s));
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    const quint32 id = m_client->request(R"({"op":"exec","shell":"echo $BASE"})"_ba);
    QCOMPARE(m_client->waitEvent(id)[u"pid"].toInteger(), qint64(spare));
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.out, "configured\n"_ba);
}

void TestSupervisor::anUnusedSpareGoes()
{
    // A sandbox that stops running commands holds no extra process for long.
    m_client = std::make_unique<Client>();
    QVERIFY(m_client->start(m_dir->path(), {u"--spare-reaper-idle-ms"_s, u"300"_s}));
    QVERIFY(m_client->call(R"({"op":"exec","argv":["true"]})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    QTRY_VERIFY_WITH_TIMEOUT(processGone(spare), 5000);
    QCOMPARE(childrenOf(m_client->pid()).size(), 0);
    // The next exec forks its reaper as the first one did.
    const Result r = m_client->call(R"({"op":"exec","shell":"echo again"})"_ba);
    QVERIFY(r.received);
    QCOMPARE(r.out, "again\n"_ba);
}

void TestSupervisor::aSpecTooBigForTheSpareForksItsOwn()
{
    QVERIFY(m_client->call(R"({"op":"exec","argv":["true"]})"_ba).received);
    QTRY_VERIFY(childrenOf(m_client->pid()).size() == 1);
    const pid_t spare = childrenOf(m_client->pid()).first();
    const QJsonObject big{{u"op"_s, u"exec"_s},
                          {u"shell"_s, u"printf %s \"$BIG\" | wc -c"_s},
                          {u"env"_s, QJsonObject{{u"BIG"_s, QString(100 * 1024, u'x')}}}};
    const quint32 id = m_client->request(compact(big));
    QVERIFY(m_client->waitEvent(id)[u"pid"].toInteger() != qint64(spare));
    const Result r = m_client->wait(id);
    QVERIFY(r.received);
    QCOMPARE(r.out.trimmed(), "102400"_ba);
    // The spare still waits for the next exec.
    QCOMPARE(::kill(spare, 0), 0);
    const quint32 next = m_client->request(R"({"op":"exec","argv":["true"]})"_ba);
    QCOMPARE(m_client->waitEvent(next)[u"pid"].toInteger(), qint64(spare));
    QVERIFY(m_client->wait(next).received);
}

void TestSupervisor::concurrentExecs()
{
    QElapsedTimer timer;
    timer.start();
    QList<quint32> ids;
    for (int i = 0; i < 4; ++i)
        ids << m_client->request(
            compact({{u"op"_s, u"exec"_s}, {u"shell"_s, u"sleep 1; echo %1"_s.arg(i)}}));
    const Result ping = m_client->call(R"({"op":"ping"})"_ba);
    QCOMPARE(ping.json[u"execs"].toInt(), 4);
    QVERIFY(timer.elapsed() < 900); // answered while the execs run
    for (int i = 0; i < 4; ++i) {
        const Result r = m_client->wait(ids[i]);
        QVERIFY(r.received);
        QCOMPARE(r.out, QByteArray::number(i) + '\n');
    }
    QVERIFY2(timer.elapsed() < 3000, qPrintable(u"4 x sleep 1 took %1 ms"_s.arg(timer.elapsed())));
}

void TestSupervisor::readWriteRoundTrip_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<bool>("parents");

    QTest::newRow("all 256 byte values") << u"bytes.bin"_s << allBytes(4) << false;
    QTest::newRow("empty file") << u"empty"_s << QByteArray() << false;
    QTest::newRow("NUL bytes only") << u"/workspace/nul.bin"_s << QByteArray(1000, '\0') << false;
    QTest::newRow("3 MiB") << u"big.bin"_s << allBytes(3 * 4096) << false;
    QTest::newRow("nested with parents") << u"a/b/c/file.bin"_s << allBytes(1) << true;
}

void TestSupervisor::readWriteRoundTrip()
{
    QFETCH(QString, path);
    QFETCH(QByteArray, content);
    QFETCH(bool, parents);

    const Result w = m_client->call(QJsonObject{{u"op"_s, u"writeFile"_s},
                                                {u"path"_s, path},
                                                {u"parents"_s, parents}},
                                    content, true);
    QVERIFY2(!w.json.contains(u"error"), compact(w.json).constData());
    const QString rel = path.startsWith(u"/workspace/"_s) ? path.mid(11) : path;
    QCOMPARE(w.json[u"path"].toString(), u"/workspace/"_s + rel);
    QCOMPARE(w.json[u"size"].toInteger(), content.size());
    QCOMPARE(readHost(ws(rel)), content);

    const Result r = m_client->call(QJsonObject{{u"op"_s, u"readFile"_s}, {u"path"_s, path}});
    QCOMPARE(r.json[u"size"].toInteger(), content.size());
    QCOMPARE(r.json[u"offset"].toInteger(), 0);
    QCOMPARE(r.json[u"truncated"].toBool(), false);
    QCOMPARE(r.data, content);
}

void TestSupervisor::readRange_data()
{
    QTest::addColumn<int>("offset"); // -1: absent
    QTest::addColumn<int>("length");
    QTest::addColumn<QByteArray>("expected");
    QTest::addColumn<bool>("truncated");

    QTest::newRow("offset 3 length 4") << 3 << 4 << "3456"_ba << true;
    QTest::newRow("offset to the end") << 7 << -1 << "789"_ba << false;
    QTest::newRow("length past the end") << 5 << 100 << "56789"_ba << false;
    QTest::newRow("length exactly to the end") << 0 << 10 << "0123456789"_ba << false;
    QTest::newRow("length zero") << 2 << 0 << ""_ba << true;
    QTest::newRow("offset past the end") << 20 << -1 << ""_ba << false;
}

void TestSupervisor::readRange()
{
    QFETCH(int, offset);
    QFETCH(int, length);
    QFETCH(QByteArray, expected);
    QFETCH(bool, truncated);

    writeHost(u"digits.txt"_s, "0123456789");
    QJsonObject req{{u"op"_s, u"readFile"_s}, {u"path"_s, u"digits.txt"_s}};
    if (offset >= 0)
        req[u"offset"] = offset;
    if (length >= 0)
        req[u"length"] = length;
    const Result r = m_client->call(req);
    QCOMPARE(r.data, expected);
    QCOMPARE(r.json[u"size"].toInt(), 10);
    QCOMPARE(r.json[u"truncated"].toBool(), truncated);
}

void TestSupervisor::writeIsAtomic()
{
    // Replaced by rename: a hard link to the old file keeps the old content, the inode changes,
    // and no temporary file is left behind.
    writeHost(u"f.txt"_s, "old content");
    QVERIFY(
        ::link(ws(u"f.txt"_s).toLocal8Bit().constData(), ws(u"f.link"_s).toLocal8Bit().constData())
        == 0);
    struct stat before;
    QCOMPARE(::stat(ws(u"f.txt"_s).toLocal8Bit().constData(), &before), 0);

    const Result w = m_client->call(R"({"op":"writeFile","path":"f.txt","mode":384})"_ba,
                                    "new content"_ba, true);
    QCOMPARE(w.json[u"size"].toInt(), 11);
    QCOMPARE(readHost(ws(u"f.txt"_s)), "new content"_ba);
    QCOMPARE(readHost(ws(u"f.link"_s)), "old content"_ba);
    struct stat after;
    QCOMPARE(::stat(ws(u"f.txt"_s).toLocal8Bit().constData(), &after), 0);
    QVERIFY(after.st_ino != before.st_ino);
    QCOMPARE(after.st_mode & 07777, 0600u);
    QCOMPARE(QDir(m_dir->path())
                 .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name),
             (QStringList{u"f.link"_s, u"f.txt"_s}));

    // Without a mode the existing mode is kept; octal strings are accepted.
    m_client->call(R"({"op":"writeFile","path":"f.txt"})"_ba, "again"_ba, true);
    QCOMPARE(m_client->call(R"({"op":"stat","path":"f.txt"})"_ba).json[u"mode"].toInt(), 0600);
    m_client->call(R"({"op":"writeFile","path":"f.txt","mode":"0755"})"_ba, "x"_ba, true);
    QCOMPARE(m_client->call(R"({"op":"stat","path":"f.txt"})"_ba).json[u"mode"].toInt(), 0755);
}

void TestSupervisor::writeAppend()
{
    Result r = m_client->call(R"({"op":"writeFile","path":"log.txt","append":true})"_ba, "abc"_ba,
                              true);
    QCOMPARE(r.json[u"size"].toInt(), 3);
    r = m_client->call(R"({"op":"writeFile","path":"log.txt","append":true})"_ba,
                       QByteArray("d\0f", 3), true);
    QCOMPARE(r.json[u"size"].toInt(), 6);
    QCOMPARE(readHost(ws(u"log.txt"_s)), QByteArray("abcd\0f", 6));
}

void TestSupervisor::writeErrors_data()
{
    QTest::addColumn<QByteArray>("request");
    QTest::addColumn<QString>("code");
    QTest::addColumn<QString>("errnoName");

    QTest::newRow("missing parent without parents")
        << R"({"op":"writeFile","path":"no/such/file"})"_ba << u"not_found"_s << u"ENOENT"_s;
    QTest::newRow("over a directory")
        << R"({"op":"writeFile","path":"dir"})"_ba << u"file_error"_s << u"EISDIR"_s;
    QTest::newRow("the workspace root")
        << R"({"op":"writeFile","path":"/workspace"})"_ba << u"file_error"_s << u"EISDIR"_s;
    QTest::newRow("parent is a file") << R"({"op":"writeFile","path":"file/x","parents":true})"_ba
                                      << u"file_error"_s << u"ENOTDIR"_s;
    QTest::newRow("readFile of a directory")
        << R"({"op":"readFile","path":"dir"})"_ba << u"file_error"_s << u"EISDIR"_s;
    QTest::newRow("readFile of a missing file")
        << R"({"op":"readFile","path":"missing"})"_ba << u"not_found"_s << u"ENOENT"_s;
}

void TestSupervisor::writeErrors()
{
    QFETCH(QByteArray, request);
    QFETCH(QString, code);
    QFETCH(QString, errnoName);
    QVERIFY(QDir(m_dir->path()).mkdir(u"dir"_s));
    writeHost(u"file"_s, "x");
    const Result r = m_client->call(request, "data"_ba, true);
    QCOMPARE(r.errorCode(), code);
    QCOMPARE(r.errnoName(), errnoName);
    QVERIFY(!r.json[u"error"].toObject()[u"message"].toString().isEmpty());
}

void TestSupervisor::list()
{
    writeHost(u"a.txt"_s, "aaa");
    writeHost(u"d/b.txt"_s, "b");
    writeHost(u"d/e/c.txt"_s, "c");
    symlink(u"a.txt"_s, u"link"_s);
    symlink(m_outside->path(), u"d/out"_s); // listed, never followed

    Result r = m_client->call(R"({"op":"list","path":"/workspace"})"_ba);
    QCOMPARE(r.json[u"path"].toString(), u"/workspace"_s);
    QCOMPARE(r.json[u"truncated"].toBool(), false);
    QStringList names;
    for (const auto &e : r.json[u"entries"].toArray())
        names << e.toObject()[u"name"].toString();
    QCOMPARE(names, (QStringList{u"a.txt"_s, u"d"_s, u"link"_s}));
    const QJsonObject link = r.json[u"entries"].toArray()[2].toObject();
    QCOMPARE(link[u"type"].toString(), u"symlink"_s);
    QCOMPARE(link[u"target"].toString(), u"a.txt"_s);
    QCOMPARE(link[u"path"].toString(), u"/workspace/link"_s);
    QVERIFY(r.json[u"entries"].toArray()[0].toObject()[u"target"].isNull());

    r = m_client->call(R"({"op":"list","path":"d","recursive":true})"_ba);
    QStringList paths;
    for (const auto &e : r.json[u"entries"].toArray())
        paths << e.toObject()[u"path"].toString() + u':' + e.toObject()[u"type"].toString();
    QCOMPARE(paths, (QStringList{u"/workspace/d/b.txt:file"_s, u"/workspace/d/e:directory"_s,
                                 u"/workspace/d/e/c.txt:file"_s, u"/workspace/d/out:symlink"_s}));

    QCOMPARE(m_client->call(R"({"op":"list","path":"a.txt"})"_ba).errnoName(), u"ENOTDIR"_s);
    QCOMPARE(m_client->call(R"({"op":"list","path":"nope"})"_ba).errorCode(), u"not_found"_s);
}

void TestSupervisor::listTruncated()
{
    QVERIFY(QDir(m_dir->path()).mkdir(u"many"_s));
    for (int i = 0; i < 10010; ++i) {
        QFile f(ws(u"many/f%1"_s.arg(i)));
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    const Result r = m_client->call(R"({"op":"list","path":"/workspace","recursive":true})"_ba);
    QCOMPARE(r.json[u"entries"].toArray().size(), 10000);
    QCOMPARE(r.json[u"truncated"].toBool(), true);
}

void TestSupervisor::stat_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("type");
    QTest::addColumn<int>("size");
    QTest::addColumn<QString>("target");

    QTest::newRow("file") << u"dir/file.txt"_s << u"file.txt"_s << u"file"_s << 5 << QString();
    QTest::newRow("directory") << u"/workspace/dir"_s << u"dir"_s << u"directory"_s << -1
                               << QString();
    QTest::newRow("symlink is not followed")
        << u"link"_s << u"link"_s << u"symlink"_s << -1 << u"dir/file.txt"_s;
    QTest::newRow("symlink pointing outside is reported, not followed")
        << u"out"_s << u"out"_s << u"symlink"_s << -1 << u"/etc"_s;
    QTest::newRow("workspace root")
        << u"/workspace"_s << u"workspace"_s << u"directory"_s << -1 << QString();
}

void TestSupervisor::stat()
{
    QFETCH(QString, path);
    QFETCH(QString, name);
    QFETCH(QString, type);
    QFETCH(int, size);
    QFETCH(QString, target);

    writeHost(u"dir/file.txt"_s, "hello");
    symlink(u"dir/file.txt"_s, u"link"_s);
    symlink(u"/etc"_s, u"out"_s);
    const Result r = m_client->call(QJsonObject{{u"op"_s, u"stat"_s}, {u"path"_s, path}});
    QVERIFY2(!r.json.contains(u"error"), compact(r.json).constData());
    QCOMPARE(r.json[u"name"].toString(), name);
    QCOMPARE(r.json[u"type"].toString(), type);
    QVERIFY(r.json[u"path"].toString().startsWith(u"/workspace"_s));
    if (size >= 0)
        QCOMPARE(r.json[u"size"].toInt(), size);
    if (target.isNull())
        QVERIFY(r.json[u"target"].isNull());
    else
        QCOMPARE(r.json[u"target"].toString(), target);
    QVERIFY(r.json[u"mode"].isDouble());
    static const QRegularExpression iso(u"^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$"_s);
    QVERIFY2(iso.match(r.json[u"mtime"].toString()).hasMatch(),
             qPrintable(r.json[u"mtime"].toString()));

    QCOMPARE(m_client->call(R"({"op":"stat","path":"missing"})"_ba).errorCode(), u"not_found"_s);
}

void TestSupervisor::mkdir_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("parents");
    QTest::addColumn<QString>("code"); // empty: success

    QTest::newRow("new directory") << u"x"_s << false << QString();
    QTest::newRow("nested without parents") << u"x/y/z"_s << false << u"not_found"_s;
    QTest::newRow("nested with parents") << u"/workspace/x/y/z"_s << true << QString();
    QTest::newRow("existing without parents") << u"exists"_s << false << u"already_exists"_s;
    QTest::newRow("existing with parents") << u"exists"_s << true << QString();
    QTest::newRow("existing file with parents") << u"file"_s << true << u"already_exists"_s;
    QTest::newRow("existing file without parents") << u"file"_s << false << u"already_exists"_s;
}

void TestSupervisor::mkdir()
{
    QFETCH(QString, path);
    QFETCH(bool, parents);
    QFETCH(QString, code);

    QVERIFY(QDir(m_dir->path()).mkdir(u"exists"_s));
    writeHost(u"file"_s, "x");
    const Result r = m_client->call(
        QJsonObject{{u"op"_s, u"mkdir"_s}, {u"path"_s, path}, {u"parents"_s, parents}});
    QCOMPARE(r.errorCode(), code);
    if (code.isEmpty()) {
        const QString rel = path.startsWith(u'/') ? path.mid(11) : path;
        QCOMPARE(r.json[u"path"].toString(), u"/workspace/"_s + rel);
        QVERIFY(QFileInfo(ws(rel)).isDir());
    }
}

void TestSupervisor::remove_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("recursive");
    QTest::addColumn<QString>("code");
    QTest::addColumn<QString>("errnoName");

    QTest::newRow("file") << u"file"_s << false << QString() << QString();
    QTest::newRow("empty directory") << u"empty"_s << false << QString() << QString();
    QTest::newRow("non-empty directory without recursive")
        << u"full"_s << false << u"file_error"_s << u"ENOTEMPTY"_s;
    QTest::newRow("non-empty directory recursive")
        << u"/workspace/full"_s << true << QString() << QString();
    QTest::newRow("symlink to a directory removes the link only")
        << u"linkdir"_s << true << QString() << QString();
    QTest::newRow("missing") << u"nope"_s << false << u"not_found"_s << u"ENOENT"_s;
    QTest::newRow("workspace root")
        << u"/workspace"_s << true << u"path_not_allowed"_s << QString();
    QTest::newRow("workspace root as dot") << u"."_s << true << u"path_not_allowed"_s << QString();
    QTest::newRow("workspace root via dot-dot")
        << u"full/.."_s << true << u"path_not_allowed"_s << QString();
}

void TestSupervisor::remove()
{
    QFETCH(QString, path);
    QFETCH(bool, recursive);
    QFETCH(QString, code);
    QFETCH(QString, errnoName);

    writeHost(u"file"_s, "x");
    QVERIFY(QDir(m_dir->path()).mkdir(u"empty"_s));
    writeHost(u"full/sub/deep.txt"_s, "deep");
    writeHost(u"full/top.txt"_s, "top");
    symlink(u"full"_s, u"linkdir"_s);

    const Result r = m_client->call(
        QJsonObject{{u"op"_s, u"delete"_s}, {u"path"_s, path}, {u"recursive"_s, recursive}});
    QCOMPARE(r.errorCode(), code);
    QCOMPARE(r.errnoName(), errnoName);
    const QString rel = path.startsWith(u'/') ? path.mid(11) : path;
    if (code.isEmpty())
        QVERIFY(!QFileInfo::exists(ws(rel)) && !QFileInfo(ws(rel)).isSymLink());
    QCOMPARE(QFileInfo::exists(ws(u"full/sub/deep.txt"_s)), rel != u"full"_s || !code.isEmpty());
    QVERIFY(QFileInfo(m_dir->path()).isDir());
}

void TestSupervisor::rename_data()
{
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("code");

    QTest::newRow("rename a file") << u"a.txt"_s << u"b.txt"_s << QString();
    QTest::newRow("move into a directory") << u"/workspace/a.txt"_s << u"dir/a.txt"_s << QString();
    QTest::newRow("rename a directory") << u"dir"_s << u"dir2"_s << QString();
    QTest::newRow("missing source") << u"nope"_s << u"x"_s << u"not_found"_s;
    QTest::newRow("target outside") << u"a.txt"_s << u"../a.txt"_s << u"path_not_allowed"_s;
    QTest::newRow("the root") << u"/workspace"_s << u"x"_s << u"path_not_allowed"_s;
}

void TestSupervisor::rename()
{
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, code);

    writeHost(u"a.txt"_s, "content a");
    QVERIFY(QDir(m_dir->path()).mkdir(u"dir"_s));
    const Result r = m_client->call(
        QJsonObject{{u"op"_s, u"rename"_s}, {u"from"_s, from}, {u"to"_s, to}});
    QCOMPARE(r.errorCode(), code);
    if (code.isEmpty()) {
        QCOMPARE(r.json[u"to"].toString(), u"/workspace/"_s + to);
        QVERIFY(QFileInfo::exists(ws(to)));
        QVERIFY(!QFileInfo::exists(ws(from.startsWith(u'/') ? from.mid(11) : from)));
    }
}

void TestSupervisor::pathEscapes_data()
{
    QTest::addColumn<QByteArray>("request");

    QTest::newRow("readFile ../x") << R"({"op":"readFile","path":"../x"})"_ba;
    QTest::newRow("readFile /etc/passwd") << R"({"op":"readFile","path":"/etc/passwd"})"_ba;
    QTest::newRow("readFile a/../../x") << R"({"op":"readFile","path":"a/../../x"})"_ba;
    QTest::newRow("readFile /workspace/../etc/passwd")
        << R"({"op":"readFile","path":"/workspace/../etc/passwd"})"_ba;
    QTest::newRow("readFile /workspacefoo") << R"({"op":"readFile","path":"/workspacefoo/x"})"_ba;
    QTest::newRow("readFile through a symlink to /etc")
        << R"({"op":"readFile","path":"link_etc/passwd"})"_ba;
    QTest::newRow("readFile through a symlink to ..")
        << R"({"op":"readFile","path":"link_up/x"})"_ba;
    QTest::newRow("readFile of a symlink to a file outside")
        << R"({"op":"readFile","path":"link_outfile"})"_ba;
    QTest::newRow("readFile through a relative symlink leaving")
        << R"({"op":"readFile","path":"a/link_rel_up/secret.txt"})"_ba;
    QTest::newRow("writeFile through a symlink to /etc")
        << R"({"op":"writeFile","path":"link_etc/evil"})"_ba;
    QTest::newRow("writeFile through a symlink to a dir outside")
        << R"({"op":"writeFile","path":"link_out/evil.txt"})"_ba;
    QTest::newRow("writeFile onto a symlink to a file outside")
        << R"({"op":"writeFile","path":"link_outfile"})"_ba;
    QTest::newRow("writeFile append onto a symlink to a file outside")
        << R"({"op":"writeFile","path":"link_outfile","append":true})"_ba;
    QTest::newRow("writeFile through a symlink to ..")
        << R"({"op":"writeFile","path":"link_up/evil.txt"})"_ba;
    QTest::newRow("writeFile with parents through a symlink")
        << R"({"op":"writeFile","path":"link_out/new/evil.txt","parents":true})"_ba;
    QTest::newRow("writeFile ../evil.txt") << R"({"op":"writeFile","path":"../evil.txt"})"_ba;
    QTest::newRow("list /etc") << R"({"op":"list","path":"/etc"})"_ba;
    QTest::newRow("list through a symlink to /etc") << R"({"op":"list","path":"link_etc"})"_ba;
    QTest::newRow("list a symlink to ..") << R"({"op":"list","path":"link_up"})"_ba;
    QTest::newRow("stat through a symlink to ..") << R"({"op":"stat","path":"link_up/x"})"_ba;
    QTest::newRow("mkdir through a symlink outside")
        << R"({"op":"mkdir","path":"link_out/newdir"})"_ba;
    QTest::newRow("mkdir parents through a symlink outside")
        << R"({"op":"mkdir","path":"link_out/a/b","parents":true})"_ba;
    QTest::newRow("delete through a symlink outside")
        << R"({"op":"delete","path":"link_out/secret.txt"})"_ba;
    QTest::newRow("rename into a symlink outside")
        << R"({"op":"rename","from":"a/file.txt","to":"link_out/moved"})"_ba;
    QTest::newRow("rename from outside")
        << R"({"op":"rename","from":"link_out/secret.txt","to":"stolen"})"_ba;
    QTest::newRow("exec cwd ..") << R"({"op":"exec","shell":"touch escaped","cwd":".."})"_ba;
    QTest::newRow("exec cwd through a symlink to a dir outside")
        << R"({"op":"exec","shell":"touch escaped","cwd":"link_out"})"_ba;
    QTest::newRow("exec cwd /etc") << R"({"op":"exec","shell":"true","cwd":"/etc"})"_ba;
}

void TestSupervisor::pathEscapes()
{
    QFETCH(QByteArray, request);

    writeHost(u"a/file.txt"_s, "inside");
    symlink(u"/etc"_s, u"link_etc"_s);
    symlink(u".."_s, u"link_up"_s);
    symlink(m_outside->path(), u"link_out"_s);
    symlink(m_outside->filePath(u"secret.txt"_s), u"link_outfile"_s);
    const QString outsideRel = QDir(ws(u"a"_s)).relativeFilePath(m_outside->path());
    symlink(outsideRel, u"a/link_rel_up"_s);

    // Both resolvers: openat2, and the O_NOFOLLOW walk used where openat2 is missing.
    for (const bool fallback : {false, true}) {
        Client walkClient;
        Client *client = m_client.get();
        if (fallback) {
            QVERIFY(walkClient.start(m_dir->path(), {u"--no-openat2"_s}));
            client = &walkClient;
        }
        const Result r = client->call(request, "evil data"_ba, true);
        QVERIFY(r.received);
        QVERIFY2(r.errorCode() == u"path_not_allowed"_s,
                 QByteArray(compact(r.json) + (fallback ? " (walk)" : " (openat2)")).constData());
        QVERIFY(r.data.isEmpty() && r.out.isEmpty());
        QCOMPARE(QDir(m_outside->path())
                     .entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                 QStringList{u"secret.txt"_s});
        QCOMPARE(readHost(m_outside->filePath(u"secret.txt"_s)), "secret\n"_ba);
        QVERIFY(!QFileInfo::exists(QFileInfo(m_dir->path()).dir().filePath(u"escaped"_s)));
        QVERIFY(QFileInfo(ws(u"link_outfile"_s)).isSymLink());
        QVERIFY(client->call(R"({"op":"ping"})"_ba).received);
    }
}

void TestSupervisor::pathsInside_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("normalised");

    QTest::newRow("plain") << u"a/file.txt"_s << u"/workspace/a/file.txt"_s;
    QTest::newRow("dot-dot that stays inside")
        << u"a/../a/./file.txt"_s << u"/workspace/a/file.txt"_s;
    QTest::newRow("absolute with dots and slashes")
        << u"/workspace//./a//file.txt"_s << u"/workspace/a/file.txt"_s;
    QTest::newRow("symlink to a file inside") << u"link_in"_s << u"/workspace/link_in"_s;
    QTest::newRow("symlink to a directory inside")
        << u"link_dir/file.txt"_s << u"/workspace/link_dir/file.txt"_s;
    QTest::newRow("relative symlink going up but staying inside")
        << u"b/link_sibling"_s << u"/workspace/b/link_sibling"_s;
    QTest::newRow("chain of symlinks") << u"link_chain"_s << u"/workspace/link_chain"_s;
}

void TestSupervisor::pathsInside()
{
    QFETCH(QString, path);
    QFETCH(QString, normalised);

    writeHost(u"a/file.txt"_s, "inside");
    QVERIFY(QDir(m_dir->path()).mkdir(u"b"_s));
    symlink(u"a/file.txt"_s, u"link_in"_s);
    symlink(u"a"_s, u"link_dir"_s);
    symlink(u"../a/file.txt"_s, u"b/link_sibling"_s);
    symlink(u"link_in"_s, u"link_chain"_s);

    for (const bool fallback : {false, true}) {
        Client walkClient;
        Client *client = m_client.get();
        if (fallback) {
            QVERIFY(walkClient.start(m_dir->path(), {u"--no-openat2"_s}));
            client = &walkClient;
        }
        const Result r = client->call(QJsonObject{{u"op"_s, u"readFile"_s}, {u"path"_s, path}});
        QVERIFY2(!r.json.contains(u"error"), compact(r.json).constData());
        QCOMPARE(r.json[u"path"].toString(), normalised);
        QCOMPARE(r.data, "inside"_ba);
    }
    // Writing through an inside symlink writes its target and keeps the link.
    const Result w = m_client->call(QJsonObject{{u"op"_s, u"writeFile"_s}, {u"path"_s, path}},
                                    "changed"_ba, true);
    QVERIFY2(!w.json.contains(u"error"), compact(w.json).constData());
    QCOMPARE(readHost(ws(u"a/file.txt"_s)), "changed"_ba);
    QVERIFY(QFileInfo(ws(u"link_in"_s)).isSymLink());
}

void TestSupervisor::malformedRequests_data()
{
    QTest::addColumn<QByteArray>("payload");

    QTest::newRow("invalid JSON") << "{not json"_ba;
    QTest::newRow("empty payload") << QByteArray();
    QTest::newRow("JSON array instead of object") << "[1,2]"_ba;
    QTest::newRow("missing op") << "{}"_ba;
    QTest::newRow("op is not a string") << R"({"op":5})"_ba;
    QTest::newRow("unknown op") << R"({"op":"frobnicate"})"_ba;
    QTest::newRow("exec without argv or shell") << R"({"op":"exec"})"_ba;
    QTest::newRow("exec with argv and shell")
        << R"({"op":"exec","argv":["true"],"shell":"true"})"_ba;
    QTest::newRow("exec with empty argv") << R"({"op":"exec","argv":[]})"_ba;
    QTest::newRow("exec with non-string argv") << R"({"op":"exec","argv":[1]})"_ba;
    QTest::newRow("exec with non-string env") << R"({"op":"exec","shell":"true","env":{"A":1}})"_ba;
    QTest::newRow("exec with negative timeout")
        << R"({"op":"exec","shell":"true","timeoutMs":-1})"_ba;
    QTest::newRow("readFile without path") << R"({"op":"readFile"})"_ba;
    QTest::newRow("readFile with numeric path") << R"({"op":"readFile","path":7})"_ba;
    QTest::newRow("readFile with negative offset")
        << R"({"op":"readFile","path":"x","offset":-3})"_ba;
    QTest::newRow("writeFile with bad mode") << R"({"op":"writeFile","path":"x","mode":"rwx"})"_ba;
    QTest::newRow("list with string recursive")
        << R"({"op":"list","path":"/workspace","recursive":"yes"})"_ba;
    QTest::newRow("rename without to") << R"({"op":"rename","from":"x"})"_ba;
}

void TestSupervisor::malformedRequests()
{
    QFETCH(QByteArray, payload);
    m_client->send(Request, 77, payload);
    const Result r = m_client->wait(77);
    QVERIFY(r.received);
    QCOMPARE(r.errorCode(), u"bad_request"_s);
    QVERIFY(!r.json[u"error"].toObject()[u"message"].toString().isEmpty());
    // Unknown frame types are ignored too, and the supervisor keeps serving.
    m_client->send(99, 5, "junk"_ba);
    const Result ping = m_client->call(R"({"op":"ping"})"_ba);
    QVERIFY(ping.received);
    QCOMPARE(ping.json[u"pid"].toInteger(), m_client->pid());
}

void TestSupervisor::invalidFrameLength_data()
{
    QTest::addColumn<quint32>("length");
    QTest::newRow("0xFFFFFFFF") << quint32(0xFFFFFFFF);
    QTest::newRow("one above 32 MiB + 5") << quint32(32 * 1024 * 1024 + 6);
    QTest::newRow("below 5") << quint32(4);
    QTest::newRow("zero") << quint32(0);
}

void TestSupervisor::invalidFrameLength()
{
    QFETCH(quint32, length);
    QByteArray bytes(4, Qt::Uninitialized);
    qToLittleEndian(length, bytes.data());
    m_client->sendRaw(bytes + QByteArray(16, 'x'));
    QVERIFY(m_client->waitForExit(5000));
    QCOMPARE(m_client->exitStatus(), QProcess::NormalExit);
    QCOMPARE(m_client->exitCode(), 2);
}

QTEST_GUILESS_MAIN(TestSupervisor)
#include "tst_supervisor.moc"
