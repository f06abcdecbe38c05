#include "supervisorchannel.h"

#include "egress/fdpoller.h"
#include "protocol/json.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QPointer>
#include <QTimer>
#include <QtEndian>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

Q_LOGGING_CATEGORY(lcSupervisor, "sandboxd.supervisor")

namespace Sandbox::Engine {

using SupervisorWire::FrameType;

namespace {

constexpr qsizetype kHeader = FrameParser::kHeaderBytes; // u32 length, u8 type, u32 id
// A whole output frame (SupervisorWire::MaxChunk and its header) in one read, mostly.
constexpr qsizetype kReadChunk = SupervisorWire::MaxChunk + 4096;
constexpr qsizetype kReadBudget = 1024 * 1024; // per wake-up, so one sandbox cannot hog the loop
constexpr qsizetype kSmallResponse = 1024 * 1024;
constexpr qsizetype kLargeResponse = FrameParser::kMaxResponse; // readFile, list
constexpr quint64 kDefaultMaxOutput = 1024 * 1024;
constexpr quint64 kMaxOutput = 64 * 1024 * 1024;
constexpr int kDeadlineTickMs = 250;
constexpr qsizetype kMaxSignalName = 32;

QString opOf(const QJsonObject &json)
{
    return json.value(QStringLiteral("op")).toString();
}

qint64 nonNegative(const QJsonValue &v)
{
    const double d = v.toDouble(0);
    return d > 0 && d < 1e15 ? qint64(d) : 0;
}

// An exec's answer, as the engine passes it on: only the members and types PROTOCOL.md names.
bool sanitizeExecAnswer(QJsonObject &json)
{
    const QJsonValue exitCode = json.value(QStringLiteral("exitCode"));
    const QJsonValue signal = json.value(QStringLiteral("signal"));
    const QJsonValue duration = json.value(QStringLiteral("durationMs"));
    if (!exitCode.isDouble() || exitCode.toDouble() != double(exitCode.toInt())
        || !(signal.isNull() || signal.isUndefined()
             || (signal.isString() && signal.toString().size() <= kMaxSignalName))
        || !duration.isDouble())
        return false;
    QJsonObject clean{
        {QStringLiteral("exitCode"), exitCode.toInt()},
        {QStringLiteral("signal"), signal.isString() ? signal : QJsonValue()},
        {QStringLiteral("durationMs"), double(nonNegative(duration))},
    };
    for (const char *flag : {"timedOut", "cancelled", "truncated"}) {
        const QJsonValue v = json.value(QLatin1String(flag));
        if (!v.isUndefined() && !v.isBool())
            return false;
        clean.insert(QLatin1String(flag), v.toBool());
    }
    json = clean;
    return true;
}

} // namespace

Error supervisorError(const QJsonObject &error)
{
    const QString code = error.value(QStringLiteral("code")).toString();
    const QString message = error.value(QStringLiteral("message")).toString().left(4096);
    const QString err = error.value(QStringLiteral("errno")).toString().left(32);
    QJsonObject data;
    if (!err.isEmpty())
        data.insert(QStringLiteral("errno"), err);
    ErrorCode c = ErrorCode::SandboxError;
    if (code == QLatin1String("not_found"))
        c = ErrorCode::NotFound;
    else if (code == QLatin1String("path_not_allowed"))
        c = ErrorCode::PathNotAllowed;
    else if (code == QLatin1String("already_exists"))
        c = ErrorCode::AlreadyExists;
    else if (code == QLatin1String("file_error"))
        c = ErrorCode::FileError;
    else if (code == QLatin1String("too_large"))
        c = ErrorCode::PayloadTooLarge;
    else if (code == QLatin1String("bad_request"))
        c = ErrorCode::InvalidParams;
    return Error{c, message, data.isEmpty() ? QJsonValue() : QJsonValue(data)};
}

SupervisorChannel::SupervisorChannel(UniqueFd socket, FdPoller *poller, QObject *parent)
    : QObject(parent)
    , m_socket(std::move(socket))
    , m_poller(poller ? poller : new FdPoller(this))
    , m_parser([this](FrameType type, quint32 id, quint32 payload) {
        return checkHeader(type, id, payload);
    })
{
    m_readChunk.resize(kReadChunk);
    ::fcntl(m_socket.get(), F_SETFL, ::fcntl(m_socket.get(), F_GETFL) | O_NONBLOCK);
    ::fcntl(m_socket.get(), F_SETFD, FD_CLOEXEC);
    setInterest(true, false);
    m_deadlineTimer = new QTimer(this);
    m_deadlineTimer->setInterval(kDeadlineTickMs);
    connect(m_deadlineTimer, &QTimer::timeout, this, &SupervisorChannel::checkDeadlines);
}

SupervisorChannel::~SupervisorChannel()
{
    failAll(Error{ErrorCode::SandboxNotRunning, QStringLiteral("the sandbox stopped"), {}});
    setInterest(false, false); // before the socket closes (see FdPoller)
}

void SupervisorChannel::setInterest(bool read, bool write)
{
    if (read == m_reading && write == m_writing)
        return;
    const bool watched = m_reading || m_writing;
    m_reading = read;
    m_writing = write;
    if (!m_poller)
        return;
    // Out of the poller when waiting for nothing: a hang-up would be reported for ever.
    if (!read && !write)
        return m_poller->remove(m_socket.get());
    const uint32_t events = (read ? EPOLLIN : 0U) | (write ? EPOLLOUT : 0U);
    if (watched)
        return m_poller->modify(m_socket.get(), events);
    const bool added = m_poller->add(m_socket.get(), events, [this](uint32_t ready) {
        // Writing first: a read may end the channel (and its owner with it, later).
        if (m_writing && (ready & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            onWritable();
        if (m_reading && (ready & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)))
            onReadable();
    });
    if (!added)
        qCWarning(lcSupervisor) << "cannot watch the supervisor's socket:" << std::strerror(errno);
}

quint32 SupervisorChannel::request(const QJsonObject &json, const QByteArray &data,
                                   ReplyHandler onReply, OutputHandler onOutput,
                                   EventHandler onEvent)
{
    const quint32 id = m_nextId++;
    if (m_nextId == 0)
        m_nextId = 1;
    if (!m_failure.isEmpty() || m_closing) {
        deliverLater(std::move(onReply),
                     Error{ErrorCode::SandboxNotRunning,
                           m_failure.isEmpty()
                               ? QStringLiteral("the sandbox is stopping")
                               : QStringLiteral("the sandbox was stopped: ") + m_failure,
                           {}});
        return id;
    }
    Pending p;
    p.op = opOf(json);
    p.onReply = std::move(onReply);
    p.onOutput = std::move(onOutput);
    p.onEvent = std::move(onEvent);
    p.maxResponse = kSmallResponse;
    qint64 deadlineMs = kDefaultDeadlineMs;
    if (p.op == QLatin1String("exec")) {
        p.exec = true;
        p.allowsEvents = true;
        const QJsonValue max = json.value(QStringLiteral("maxOutputBytes"));
        p.maxOutput = max.isDouble() ? quint64(qBound(0.0, max.toDouble(), double(kMaxOutput)))
                                     : kDefaultMaxOutput;
        p.timeoutMs = nonNegative(json.value(QStringLiteral("timeoutMs")));
        p.sentFor.start();
        // A terminal has no output cap: its window bounds what may be in flight instead.
        p.pty = json.value(QStringLiteral("pty")).isObject();
        if (p.pty)
            p.maxOutput = std::numeric_limits<quint64>::max();
        p.piped = !p.pty && json.value(QStringLiteral("pipes")).toBool();
        p.windowed = p.pty || p.piped || json.value(QStringLiteral("window")).toBool();
        deadlineMs = p.timeoutMs > 0 ? p.timeoutMs + kGraceMs : -1; // -1: until cancelled
    } else if (p.op == QLatin1String("readFile") || p.op == QLatin1String("list")) {
        p.maxResponse = kLargeResponse;
    } else if (p.op == QLatin1String("connect")) {
        p.responseFdDomain = AF_UNIX;
        const qint64 t = nonNegative(json.value(QStringLiteral("timeoutMs")));
        deadlineMs = (t > 0 ? qMin<qint64>(t, 60000) : 5000) + kGraceMs;
    } else if (p.op == QLatin1String("listen")) {
        p.allowsEvents = true;
        p.eventFdDomain = AF_INET; // or AF_INET6, see checkFd()
    } else if (p.op == QLatin1String("watch")) {
        p.allowsEvents = true;
        p.watchRoot = json.value(QStringLiteral("path")).toString();
        p.watchRecursive = json.value(QStringLiteral("recursive")).toBool();
        deadlineMs = -1;
    }
    if (deadlineMs >= 0)
        p.deadline = QDeadlineTimer(deadlineMs);

    const QByteArray text = QJsonDocument(json).toJson(QJsonDocument::Compact);
    const bool queued = data.isEmpty()
                            ? queueFrame(FrameType::Request, id, text)
                            : queueFrame(FrameType::Request, id, QByteArray(text + '\0'), data);
    if (!queued) {
        deliverLater(std::move(p.onReply),
                     Error{ErrorCode::SandboxError,
                           QStringLiteral("the sandbox is not reading its requests"),
                           {}});
        return id;
    }
    m_pending.emplace(id, std::move(p));
    armDeadlines();
    return id;
}

bool SupervisorChannel::sendStdin(quint32 id, QByteArrayView bytes)
{
    return m_pending.contains(id) && queueFrame(FrameType::Stdin, id, bytes);
}

void SupervisorChannel::resize(quint32 id, quint16 cols, quint16 rows)
{
    if (!m_pending.contains(id))
        return;
    char payload[4];
    qToLittleEndian<quint16>(cols, payload);
    qToLittleEndian<quint16>(rows, payload + 2);
    queueFrame(FrameType::Resize, id, QByteArrayView(payload, 4));
}

void SupervisorChannel::cancel(quint32 id)
{
    const auto it = m_pending.find(id);
    if (it == m_pending.end() || it->cancelled)
        return;
    it->cancelled = true;
    if (it->held) { // answered already: what is left in its pipes is not wanted
        for (const auto &pipe : it->pipes)
            if (pipe)
                pipe->close();
        return checkDrain(id);
    }
    // The answer must follow within the grace time, whatever the request asked for.
    if (it->deadline.isForever() || it->deadline.remainingTime() > kGraceMs)
        it->deadline = QDeadlineTimer(kGraceMs);
    queueFrame(FrameType::Cancel, id, {});
    armDeadlines();
    Q_EMIT cancelRequested(id);
}

void SupervisorChannel::markTimedOut(quint32 id)
{
    const auto it = m_pending.find(id);
    if (it != m_pending.end())
        it->timedOut = true;
}

void SupervisorChannel::acknowledge(quint32 id, quint32 bytes)
{
    const auto it = m_pending.find(id);
    if (it == m_pending.end() || !it->windowed || bytes == 0)
        return;
    it->unacknowledged -= qMin<quint64>(it->unacknowledged, bytes);
    if (it->piped) { // no frame: the engine reads the pipes itself, now that there is room
        for (const auto &pipe : it->pipes)
            if (pipe && it->unacknowledged < SupervisorWire::PtyWindowBytes)
                pipe->setReading(true);
        if (it->held)
            checkDrain(id); // the window may have opened: its quiet time starts
        return;
    }
    char payload[4];
    qToLittleEndian<quint32>(bytes, payload);
    queueFrame(FrameType::Window, id, QByteArrayView(payload, 4));
}

qint64 SupervisorChannel::pendingWriteBytes() const
{
    return m_out.size() - m_outPos;
}

void SupervisorChannel::failAll(const Error &error)
{
    const auto pending = std::exchange(m_pending, {});
    m_deadlineTimer->stop();
    for (auto it = pending.cbegin(); it != pending.cend(); ++it) {
        if (it->exec && !it->held) // a held one ended when its answer came
            Q_EMIT execEnded(it.key(), false);
        if (it->onReply)
            it->onReply(error);
    }
}

void SupervisorChannel::closeChannel()
{
    m_closing = true;
    flush();
}

void SupervisorChannel::deliverLater(ReplyHandler handler, Result<Reply> result)
{
    if (!handler)
        return;
    QTimer::singleShot(0, this, [handler = std::move(handler), result = std::move(result)] {
        handler(result);
    });
}

bool SupervisorChannel::queueFrame(FrameType type, quint32 id, QByteArrayView a, QByteArrayView b)
{
    if (!m_socket.isValid() || !m_failure.isEmpty() || m_eof)
        return false;
    const qsizetype size = kHeader + a.size() + b.size();
    if (m_out.size() - m_outPos + size > kMaxQueuedBytes)
        return false;
    if (m_outPos > 0 && m_outPos >= m_out.size() / 2) {
        m_out.remove(0, m_outPos);
        m_outPos = 0;
    }
    char header[kHeader];
    qToLittleEndian<quint32>(quint32(SupervisorWire::HeaderBytes + a.size() + b.size()), header);
    header[4] = char(type);
    qToLittleEndian<quint32>(id, header + 5);
    m_out.append(header, kHeader);
    m_out.append(a.data(), a.size());
    m_out.append(b.data(), b.size());
    flush();
    return true;
}

void SupervisorChannel::flush()
{
    while (m_outPos < m_out.size()) {
        const ssize_t n = ::send(m_socket.get(), m_out.constData() + m_outPos,
                                 size_t(m_out.size() - m_outPos), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            m_outPos += n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            setInterest(m_reading, true);
            return;
        }
        // The supervisor is gone (EPIPE): what is queued has nowhere to go. Its exit is
        // reported by the process, not here.
        m_out.clear();
        m_outPos = 0;
        m_eof = true;
        break;
    }
    m_out.clear();
    m_outPos = 0;
    setInterest(m_reading, false);
    if (m_closing && m_socket.isValid())
        ::shutdown(m_socket.get(), SHUT_WR);
}

void SupervisorChannel::onWritable()
{
    flush();
}

void SupervisorChannel::onReadable()
{
    qsizetype budget = kReadBudget;
    while (budget > 0 && m_failure.isEmpty()) {
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
        iovec iov{m_readChunk.data(), size_t(m_readChunk.size())};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(m_socket.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n >= 0) {
            // Descriptors first, so that none leaks whatever happens next. Each belongs to the
            // frame that holds the last byte of the read it came with.
            const qint64 lastByte = m_parser.streamOffset() + n - 1;
            for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                    continue;
                const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; ++i) {
                    int fd = -1;
                    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    m_fds.append({lastByte, std::make_shared<UniqueFd>(fd)});
                }
            }
            if (msg.msg_flags & MSG_CTRUNC)
                return violation(QStringLiteral("more descriptors than a frame may carry"));
            if (m_fds.size() > kMaxQueuedFds)
                return violation(
                    QStringLiteral("more than %1 descriptors in flight").arg(kMaxQueuedFds));
            if (!m_fds.isEmpty() && n == 0)
                return violation(QStringLiteral("a descriptor without data"));
        }
        if (n == 0) {
            // The supervisor closed its end (it exited): its process reports why.
            m_eof = true;
            setInterest(false, m_writing);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN) {
                m_eof = true;
                setInterest(false, m_writing);
            }
            return;
        }
        budget -= n;
        m_parser.feed(QByteArrayView(m_readChunk.constData(), n));

        FrameParser::Frame frame;
        while (m_failure.isEmpty()) {
            const FrameParser::Status status = m_parser.next(&frame);
            if (status == FrameParser::Status::NeedMore)
                break;
            if (status == FrameParser::Status::Violation)
                return violation(m_parser.violation());
            QList<std::shared_ptr<UniqueFd>> fds;
            while (!m_fds.isEmpty() && m_fds.first().offset < frame.end) {
                if (m_fds.first().offset < frame.start)
                    return violation(QStringLiteral("a descriptor between frames"));
                fds.append(m_fds.takeFirst().fd);
            }
            dispatch(frame.type, frame.id, frame.payload, std::move(fds));
        }
    }
}

QString SupervisorChannel::checkHeader(FrameType type, quint32 id, quint32 payload) const
{
    // The parser has checked the length, the type and its absolute size limit.
    if (type == FrameType::Hello)
        return m_helloSeen ? QStringLiteral("a second HELLO") : QString();
    if (!m_helloSeen)
        return QStringLiteral("a frame before HELLO");
    const auto it = m_pending.constFind(id);
    if (it == m_pending.constEnd() || it->held) // held: answered, its pipes still read
        return QStringLiteral("a frame of type %1 for request %2, which is not pending")
            .arg(int(type))
            .arg(id);
    switch (type) {
    case FrameType::Response:
        return qsizetype(payload) <= it->maxResponse
                   ? QString()
                   : QStringLiteral("a RESPONSE frame of %1 bytes to '%2' (at most %3)")
                         .arg(payload)
                         .arg(it->op)
                         .arg(it->maxResponse);
    case FrameType::Stdout:
    case FrameType::Stderr:
        if (it->piped)
            return QStringLiteral("output frames for exec %1, whose pipes the engine reads").arg(id);
        return it->exec ? QString()
                        : QStringLiteral("output for '%1' (request %2)").arg(it->op).arg(id);
    case FrameType::Event:
        return it->allowsEvents
                   ? QString()
                   : QStringLiteral("an EVENT for '%1' (request %2)").arg(it->op).arg(id);
    default:
        return QStringLiteral("a frame of unknown type %1").arg(int(type));
    }
}

void SupervisorChannel::dispatch(FrameType type, quint32 id, QByteArrayView payload,
                                 QList<std::shared_ptr<UniqueFd>> fds)
{
    // Two only on the EVENT of an exec with `pipes` (its output pipes), checked there.
    if (fds.size() > (type == FrameType::Event ? 2 : 1))
        return violation(QStringLiteral("%1 descriptors on one frame").arg(fds.size()));
    std::shared_ptr<UniqueFd> fd = fds.isEmpty() ? nullptr : fds.first();
    switch (type) {
    case FrameType::Hello: {
        if (fd)
            return violation(QStringLiteral("a descriptor on HELLO"));
        const Json::Parsed parsed = Json::parse(payload);
        const QJsonObject json = parsed.value.toObject();
        if (parsed.error || !parsed.value.isObject()
            || json.value(QStringLiteral("pid")).toInteger() <= 0)
            return violation(QStringLiteral("a malformed HELLO"));
        if (json.value(QStringLiteral("version")).toString()
            != QLatin1String(SupervisorWire::Version))
            return violation(QStringLiteral("HELLO of protocol version '%1' (expected '%2')")
                                 .arg(json.value(QStringLiteral("version")).toString().left(16),
                                      QLatin1String(SupervisorWire::Version)));
        m_helloSeen = true;
        Q_EMIT hello(json);
        return;
    }
    case FrameType::Stdout:
    case FrameType::Stderr: {
        if (fd)
            return violation(QStringLiteral("a descriptor on output of request %1").arg(id));
        const auto it = m_pending.find(id);
        const int channel = type == FrameType::Stdout ? 1 : 2;
        // A terminal has one output. Windowed output is sent only while the window has room.
        if (it->pty && channel != 1)
            return violation(QStringLiteral("STDERR for terminal %1").arg(id));
        if (it->windowed
            && it->unacknowledged + quint64(payload.size()) > SupervisorWire::PtyWindowBytes)
            return violation(QStringLiteral("output of exec %1 beyond its window").arg(id));
        return passOutput(it, channel, payload);
    }
    case FrameType::Event:
        return dispatchEvent(id, payload, std::move(fds));
    case FrameType::Response:
        return dispatchResponse(id, payload, std::move(fd));
    default:
        return;
    }
}

void SupervisorChannel::passOutput(QHash<quint32, Pending>::iterator it, int channel,
                                   OutputBytes bytes)
{
    quint64 &sent = it->sent[channel - 1];
    const quint64 room = it->maxOutput - qMin(sent, it->maxOutput);
    const qsizetype allowed = qsizetype(qMin<quint64>(quint64(bytes.size()), room));
    if (allowed < bytes.size())
        it->truncated = true; // the engine's count, whatever the supervisor says
    sent += quint64(allowed);
    if (sent >= it->maxOutput && it->pipes[channel - 1])
        it->pipes[channel - 1]->discardRest(); // nothing more of it goes anywhere
    // What is dropped (over maxOutputBytes) is never acknowledged, so it takes no window.
    if (it->windowed)
        it->unacknowledged += quint64(allowed);
    if (it->held && it->unacknowledged >= SupervisorWire::PtyWindowBytes)
        it->quietFor.invalidate(); // the drain waits for the reader (checkDrain)
    else if (it->held)
        it->quietFor.start(); // not quiet: the drain goes on
    if (allowed > 0 && it->onOutput) {
        const OutputHandler onOutput = it->onOutput; // the handler may cancel the request
        onOutput(channel, bytes.first(allowed));
    }
}

QString SupervisorChannel::takePipes(quint32 id, Pending &p, const QList<quint64> &inodes,
                                     const QList<std::shared_ptr<UniqueFd>> &fds)
{
    if (fds.size() != 2 || inodes.size() != 2 || inodes[0] == inodes[1])
        return QStringLiteral("exec %1 started without its two output pipes").arg(id);
    for (int i = 0; i < 2; ++i) {
        if (QString why = OutputPipe::check(fds[i]->get(), inodes[i]); !why.isEmpty())
            return QStringLiteral("the %1 pipe of exec %2: %3")
                .arg(QLatin1String(i == 0 ? "stdout" : "stderr"))
                .arg(id)
                .arg(why);
    }
    for (int i = 0; i < 2; ++i) {
        const int channel = i + 1;
        const auto room = [this, id] {
            const auto it = m_pending.constFind(id);
            if (it == m_pending.constEnd())
                return qsizetype(0);
            return qsizetype(SupervisorWire::PtyWindowBytes
                             - qMin<quint64>(it->unacknowledged, SupervisorWire::PtyWindowBytes));
        };
        const auto onData = [this, id, channel](OutputBytes bytes) {
            const auto it = m_pending.find(id);
            if (it != m_pending.end())
                passOutput(it, channel, bytes);
        };
        p.pipes[i] = std::make_shared<OutputPipe>(UniqueFd(fds[i]->release()), m_poller.data(),
                                                  &m_pipeChunk, room, onData,
                                                  [this, id] { checkDrain(id); });
        p.pipes[i]->setReading(true);
    }
    return {};
}

void SupervisorChannel::checkDrain(quint32 id)
{
    const auto it = m_pending.find(id);
    if (it == m_pending.end() || !it->held)
        return;
    const bool open = (it->pipes[0] && it->pipes[0]->isOpen())
                      || (it->pipes[1] && it->pipes[1]->isOpen());
    const bool windowOpen = it->unacknowledged < SupervisorWire::PtyWindowBytes;
    if (!windowOpen)
        it->quietFor.invalidate();
    else if (!it->quietFor.isValid())
        it->quietFor.start();
    const qint64 limit = kDrainLimitMs - it->heldFor.elapsed();
    const qint64 drain = windowOpen ? kDrainMs - it->quietFor.elapsed() : kDrainMs;
    if (open && limit > 0 && drain > 0) {
        if (!it->drainCheck) { // while the window is full, look again soon: it may open
            it->drainCheck = true;
            QTimer::singleShot(qMin(limit, drain), this, [this, id] {
                const auto it = m_pending.find(id);
                if (it != m_pending.end())
                    it->drainCheck = false;
                checkDrain(id);
            });
        }
        return;
    }
    Pending p = m_pending.take(id);
    if (m_pending.isEmpty())
        m_deadlineTimer->stop();
    const bool anyPiped = std::any_of(m_pending.cbegin(), m_pending.cend(),
                                      [](const Pending &q) { return q.piped; });
    for (const auto &pipe : p.pipes)
        if (pipe)
            pipe->close(); // a background process still holding one is not waited for
    Result<Reply> result = std::move(*p.held);
    if (result && p.truncated) // output read after the answer came may have been cut
        result.value().json.insert(QStringLiteral("truncated"), true);
    if (!anyPiped)
        m_pipeChunk = QByteArray(); // an idle sandbox keeps no read buffer
    if (p.onReply)
        p.onReply(std::move(result));
}

void SupervisorChannel::dispatchEvent(quint32 id, QByteArrayView payload,
                                      QList<std::shared_ptr<UniqueFd>> fds)
{
    const auto it = m_pending.find(id);
    if (fds.size() > 1 && !it->piped)
        return violation(QStringLiteral("%1 descriptors on one frame").arg(fds.size()));
    std::shared_ptr<UniqueFd> fd = fds.isEmpty() ? nullptr : fds.first();
    const Json::Parsed parsed = Json::parse(payload);
    if (parsed.error || !parsed.value.isObject())
        return violation(QStringLiteral("a malformed EVENT for request %1").arg(id));
    const QJsonObject event = parsed.value.toObject();
    if (it->exec) {
        // One EVENT only: the exec's process tree.
        const qint64 pid = event.value(QStringLiteral("pid")).toInteger();
        const QJsonArray pipes = event.value(QStringLiteral("pipes")).toArray();
        if ((fd && !it->piped) || it->started || pid <= 0 || pipes.size() > 2)
            return violation(QStringLiteral("an unexpected EVENT for exec %1").arg(id));
        QList<quint64> inodes;
        for (const QJsonValue &v : pipes)
            inodes.append(quint64(nonNegative(v)));
        if (it->piped) {
            if (QString why = takePipes(id, *it, inodes, fds); !why.isEmpty())
                return violation(why);
        }
        it->started = true;
        const bool cancelled = it->cancelled;
        // The timeout counts from the request, not from this EVENT (which may come later).
        const qint64 left = it->timeoutMs > 0
                                ? qMax<qint64>(1, it->timeoutMs - it->sentFor.elapsed())
                                : 0;
        Q_EMIT execStarted(id, pid, inodes, left);
        // Cancelled before its tree was known (the supervisor holds a short command's EVENT
        // back, see PROTOCOL.md): the engine's own kill of that tree follows now.
        if (cancelled)
            Q_EMIT cancelRequested(id);
        return;
    }
    if (it->op == QLatin1String("watch")) {
        if (fd)
            return violation(QStringLiteral("a descriptor on an EVENT of 'watch'"));
        QString why;
        const QJsonObject clean = checkWatchEvent(*it, event, &why);
        if (!why.isEmpty())
            return violation(QStringLiteral("EVENT of watch %1: %2").arg(id).arg(why));
        if (it->onEvent) {
            const EventHandler onEvent = it->onEvent;
            onEvent(clean, nullptr);
        }
        return;
    }
    if (it->eventFdDomain != 0) {
        // `listen`: one EVENT, carrying the listening socket.
        QString why;
        if (it->started || !fd)
            return violation(QStringLiteral("an unexpected EVENT for '%1'").arg(it->op));
        if (!checkFd(*fd, it->eventFdDomain, true, &why))
            return violation(QStringLiteral("EVENT of '%1': %2").arg(it->op, why));
        it->started = true;
    } else if (fd) {
        return violation(QStringLiteral("a descriptor on an EVENT of '%1'").arg(it->op));
    }
    if (it->onEvent) {
        const EventHandler onEvent = it->onEvent;
        onEvent(event, std::move(fd));
    }
}

void SupervisorChannel::dispatchResponse(quint32 id, QByteArrayView payload,
                                         std::shared_ptr<UniqueFd> fd)
{
    Pending p = m_pending.take(id);
    if (m_pending.isEmpty())
        m_deadlineTimer->stop();
    bool treeGone = false; // an exec's: nothing of its tree is left (the supervisor's word)
    auto finish = [&](Result<Reply> result) {
        if (p.exec)
            Q_EMIT execEnded(id, treeGone);
        if (p.onReply)
            p.onReply(std::move(result));
    };
    auto broken = [&](const QString &why) {
        finish(
            Error{ErrorCode::SandboxError, QStringLiteral("the sandbox was stopped: ") + why, {}});
        violation(why);
    };
    const qsizetype nul = payload.indexOf('\0');
    if (nul >= 0 && p.op != QLatin1String("readFile"))
        return broken(QStringLiteral("binary data in the answer to '%1'").arg(p.op));
    const QByteArrayView jsonPart = nul < 0 ? payload : payload.first(nul);
    // Strict RFC 8259, as everything read from outside (core/protocol/json.h).
    const Json::Parsed parsed = Json::parse(jsonPart);
    Reply reply;
    reply.json = parsed.value.toObject();
    bool ok = !parsed.error && parsed.value.isObject();
    const QJsonValue err = reply.json.value(QStringLiteral("error"));
    if (ok && err.isObject()) {
        if (fd)
            return broken(QStringLiteral("a descriptor on an error answer"));
        return finish(supervisorError(err.toObject()));
    }
    QString why;
    if (ok && p.exec) {
        treeGone = reply.json.value(QStringLiteral("treeGone")).toBool();
        ok = sanitizeExecAnswer(reply.json);
        if (ok) {
            if (p.truncated)
                reply.json.insert(QStringLiteral("truncated"), true);
            if (p.timedOut)
                reply.json.insert(QStringLiteral("timedOut"), true);
        }
    } else if (ok && p.responseFdDomain != 0) {
        if (!fd)
            why = QStringLiteral("'%1' answered without its descriptor").arg(p.op);
        else if (!checkFd(*fd, p.responseFdDomain, false, &why))
            why = QStringLiteral("'%1': %2").arg(p.op, why);
    } else if (fd) {
        why = QStringLiteral("a descriptor on the answer to '%1'").arg(p.op);
    }
    if (!ok && why.isEmpty())
        why = QStringLiteral("a malformed answer to '%1' (request %2)").arg(p.op).arg(id);
    if (!why.isEmpty())
        return broken(why);
    if (nul >= 0)
        reply.data = payload.sliced(nul + 1).toByteArray();
    reply.fd = std::move(fd);
    if (p.piped && p.started) {
        // The main process has exited; its output may still be in its pipes: the answer waits
        // for them (checkDrain), so that it comes after the last of the output, as before.
        p.held = std::make_shared<Result<Reply>>(std::move(reply));
        p.heldFor.start();
        p.deadline = QDeadlineTimer(QDeadlineTimer::Forever);
        m_pending.emplace(id, std::move(p));
        // Its tree ends now: the supervisor may hand its reaper the next exec.
        Q_EMIT execEnded(id, treeGone);
        return checkDrain(id);
    }
    finish(std::move(reply));
}

QJsonObject SupervisorChannel::checkWatchEvent(Pending &p, const QJsonObject &event,
                                               QString *why) const
{
    const QString &root = p.watchRoot;
    // A path below the watched directory (or the directory itself), as the supervisor names
    // them: absolute, normalised, bounded.
    const auto pathOk = [&root](const QJsonValue &v) {
        if (!v.isString())
            return false;
        const QString path = v.toString();
        if (path == root)
            return true;
        if (path.size() > kMaxWatchPath || path.toUtf8().size() > kMaxWatchPath
            || !path.startsWith(root) || path.size() <= root.size() + 1
            || path.at(root.size()) != u'/' || path.contains(QChar(0)))
            return false;
        const QStringView rest = QStringView(path).sliced(root.size() + 1);
        for (const QStringView part : rest.split(u'/')) {
            if (part.isEmpty() || part == QLatin1String(".") || part == QLatin1String(".."))
                return false;
        }
        return true;
    };
    if (!p.started) {
        // The first EVENT says the watch is set up, and on what.
        if (event.value(QStringLiteral("ready")) != QJsonValue(true)
            || event.value(QStringLiteral("path")) != QJsonValue(root)) {
            *why = QStringLiteral("the first EVENT is not 'ready' for %1").arg(root);
            return {};
        }
        p.started = true;
        const double dirs = event.value(QStringLiteral("dirs")).toDouble(-1);
        if (dirs < 0 || dirs > 1e6) {
            *why = QStringLiteral("a malformed 'ready'");
            return {};
        }
        return {{QStringLiteral("ready"), true},
                {QStringLiteral("path"), root},
                {QStringLiteral("recursive"), p.watchRecursive},
                {QStringLiteral("truncated"), event.value(QStringLiteral("truncated")).toBool()}};
    }
    const QJsonArray events = event.value(QStringLiteral("events")).toArray();
    if (events.isEmpty() || events.size() > kMaxWatchBatch) {
        *why = QStringLiteral("%1 entries (1 to %2 allowed)").arg(events.size()).arg(kMaxWatchBatch);
        return {};
    }
    const qint64 second = QDateTime::currentMSecsSinceEpoch() / 1000;
    if (second != p.watchSecond) {
        p.watchSecond = second;
        p.watchFrames = 0;
        p.watchEntries = 0;
    }
    p.watchFrames += 1;
    p.watchEntries += int(events.size());
    if (p.watchFrames > kMaxWatchFramesPerSecond || p.watchEntries > kMaxWatchEntriesPerSecond) {
        *why = QStringLiteral("more than %1 frames or %2 entries in a second")
                   .arg(kMaxWatchFramesPerSecond)
                   .arg(kMaxWatchEntriesPerSecond);
        return {};
    }
    static const QStringList types{QStringLiteral("create"), QStringLiteral("modify"),
                                   QStringLiteral("delete"), QStringLiteral("rename"),
                                   QStringLiteral("rescan")};
    QJsonArray clean;
    for (const QJsonValue &v : events) {
        const QJsonObject e = v.toObject();
        const QString type = e.value(QStringLiteral("type")).toString();
        const QJsonValue path = e.value(QStringLiteral("path"));
        const QJsonValue isDir = e.value(QStringLiteral("isDir"));
        const bool rename = type == QLatin1String("rename");
        if (!v.isObject() || !types.contains(type) || !pathOk(path) || !isDir.isBool()
            || (rename && !pathOk(e.value(QStringLiteral("from"))))
            || (!rename && e.contains(QStringLiteral("from")))
            || (!p.watchRecursive && type != QLatin1String("rescan") && path != QJsonValue(root)
                && path.toString().indexOf(u'/', root.size() + 1) >= 0)) {
            *why = QStringLiteral("an entry that is not a change below %1").arg(root);
            return {};
        }
        QJsonObject out{{QStringLiteral("type"), type},
                        {QStringLiteral("path"), path},
                        {QStringLiteral("isDir"), isDir}};
        if (rename)
            out.insert(QStringLiteral("from"), e.value(QStringLiteral("from")));
        clean.append(out);
    }
    return {{QStringLiteral("events"), clean}};
}

bool SupervisorChannel::checkFd(const UniqueFd &fd, int domain, bool listening, QString *why) const
{
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
        *why = QStringLiteral("the descriptor is not a socket");
        return false;
    }
    int value = 0;
    socklen_t len = sizeof value;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &value, &len) != 0 || value != SOCK_STREAM) {
        *why = QStringLiteral("the descriptor is not a stream socket");
        return false;
    }
    len = sizeof value;
    const bool domainOk = ::getsockopt(fd.get(), SOL_SOCKET, SO_DOMAIN, &value, &len) == 0
                          && (value == domain || (domain == AF_INET && value == AF_INET6));
    if (!domainOk) {
        *why = QStringLiteral("the socket is of the wrong family");
        return false;
    }
    len = sizeof value;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0
        || (value != 0) != listening) {
        *why = listening ? QStringLiteral("the socket is not listening")
                         : QStringLiteral("the socket is a listening one");
        return false;
    }
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
    ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
    return true;
}

void SupervisorChannel::violation(const QString &why)
{
    if (!m_failure.isEmpty())
        return;
    m_failure = why;
    qCWarning(lcSupervisor).noquote() << "supervisor violation:" << why;
    setInterest(false, false);
    m_fds.clear();
    failAll(Error{ErrorCode::SandboxError, QStringLiteral("the sandbox was stopped: ") + why, {}});
    Q_EMIT failed(why);
}

void SupervisorChannel::armDeadlines()
{
    for (const Pending &p : std::as_const(m_pending)) {
        if (!p.deadline.isForever()) {
            if (!m_deadlineTimer->isActive())
                m_deadlineTimer->start();
            return;
        }
    }
    m_deadlineTimer->stop();
}

void SupervisorChannel::checkDeadlines()
{
    for (auto it = m_pending.cbegin(); it != m_pending.cend(); ++it) {
        if (it->deadline.hasExpired()) {
            return violation(QStringLiteral("the supervisor did not answer '%1' (request %2) in "
                                            "time")
                                 .arg(it->op)
                                 .arg(it.key()));
        }
    }
    armDeadlines();
}

} // namespace Sandbox::Engine
