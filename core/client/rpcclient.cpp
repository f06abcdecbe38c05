#include "rpcclient.h"

#include "transport.h"

#include <protocol/json.h>
#include <protocol/streamframe.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QRandomGenerator>

#include <algorithm>
#include <limits>
#include <vector>

Q_LOGGING_CATEGORY(lcRpc, "sandbox.core.rpc", QtWarningMsg)

namespace Sandbox {

namespace {

constexpr int MaxRememberedCancels = 1024;
constexpr qint64 StableConnectionMs = 5000;

const QString kStreamOutput = QStringLiteral("stream.output");
const QString kStreamEnd = QStringLiteral("stream.end");
const QString kStreamEvent = QStringLiteral("stream.event");
const QString kStreamId = QStringLiteral("streamId");
const QString kStdout = QStringLiteral("stdout");
const QString kStderr = QStringLiteral("stderr");

Error connectionError(const QString &why)
{
    return Error{ErrorCode::ConnectionError, why, {}};
}

// A positive integer JSON number, or 0.
qint64 positiveInteger(const QJsonValue &v)
{
    if (!v.isDouble())
        return 0;
    const double d = v.toDouble();
    if (d < 1 || d > 9007199254740992.0 || qint64(d) != d)
        return 0;
    return qint64(d);
}

} // namespace

RpcClient::RpcClient(Transport *transport, QObject *parent)
    : QObject(parent)
    , m_transport(transport)
{
    m_transport->setParent(this);
    m_clock.start();
    m_reconnectTimer.setSingleShot(true);
    m_timeoutTimer.setSingleShot(true);
    connect(&m_reconnectTimer, &QTimer::timeout, this, &RpcClient::attempt);
    connect(&m_timeoutTimer, &QTimer::timeout, this, &RpcClient::onTimeoutTimer);
    connect(m_transport, &Transport::opened, this, &RpcClient::onOpened);
    connect(m_transport, &Transport::closed, this, &RpcClient::onClosed);
    connect(m_transport, &Transport::textReceived, this, &RpcClient::onText);
    connect(m_transport, &Transport::binaryReceived, this, &RpcClient::onBinary);
    connect(m_transport, &Transport::protocolViolation, this, [this](const QString &why) {
        reportProtocolError(Error{ErrorCode::InvalidRequest, why, {}});
    });
}

RpcClient::~RpcClient()
{
    m_transport->disconnect(this);
    for (ExecStream *s : std::as_const(m_unboundStreams))
        s->m_client = nullptr;
    for (ExecStream *s : std::as_const(m_streams))
        s->m_client = nullptr;
    // Callbacks do not run from a destructor; the handles see the calls as finished.
    for (auto &[id, p] : m_pending) {
        if (p.state) {
            p.state->finished = true;
            p.state->cancel = nullptr;
        }
        if (p.contextGuard)
            disconnect(p.contextGuard);
    }
}

// --- connection -------------------------------------------------------------------------------

void RpcClient::setState(State state)
{
    if (m_state == state)
        return;
    m_state = state;
    qCDebug(lcRpc) << "state" << state;
    Q_EMIT stateChanged(state);
}

int RpcClient::msUntilReconnect() const
{
    if (m_state != State::Reconnecting || !m_reconnectTimer.isActive())
        return -1;
    return m_reconnectTimer.remainingTime();
}

void RpcClient::open()
{
    m_wantOpen = true;
    if (m_state == State::Connected || m_state == State::Connecting)
        return;
    m_failedAttempts = 0;
    attempt();
}

void RpcClient::attempt()
{
    if (!m_wantOpen)
        return;
    m_reconnectTimer.stop();
    setState(State::Connecting);
    m_transport->open();
}

void RpcClient::close()
{
    m_wantOpen = false;
    m_reconnectTimer.stop();
    m_transport->close(); // emits closed() if it was open or connecting
    if (m_state != State::Disconnected && m_state != State::Unauthorized) {
        failAll(connectionError(QStringLiteral("the connection was closed")), true);
        setState(State::Disconnected);
    }
}

void RpcClient::onOpened()
{
    m_connectionAge.start();
    m_gotMessage = false;
    setState(State::Connected);
    // Before anything else, so that streams started or resumed on this connection get it.
    if (m_binaryStreams)
        notify(QStringLiteral("rpc.streamEncoding"),
               QJsonObject{{QStringLiteral("encoding"), QStringLiteral("binary")}});
    QPointer<RpcClient> guard(this);
    // Streams first, so that their backlog is asked for before new work is queued behind it.
    const QList<ExecStream *> streams = m_streams.values();
    for (ExecStream *s : streams) {
        if (!guard || m_state != State::Connected)
            return;
        if (m_streams.contains(s->m_streamId) && !s->m_done)
            resumeStream(s);
    }
    while (guard && m_state == State::Connected && !m_queue.empty()) {
        const qint64 id = m_queue.front();
        m_queue.pop_front();
        if (!sendNow(id)) {
            m_queue.push_front(id);
            break;
        }
    }
}

void RpcClient::onClosed(int closeCode, const QString &reason)
{
    const bool wasConnected = m_state == State::Connected;
    const bool stable = wasConnected
                        && (m_gotMessage || m_connectionAge.elapsed() >= StableConnectionMs);
    qCInfo(lcRpc) << "connection closed" << closeCode << reason;

    // Requests in flight are lost with the connection (streams with a known id are resumed).
    m_observed.clear();
    for (ExecStream *s : std::as_const(m_streams))
        s->m_resuming = false;
    if (closeCode == Transport::CloseUnauthorized) {
        m_wantOpen = false;
        m_reconnectTimer.stop();
        setState(State::Unauthorized);
        failAll(Error{ErrorCode::Unauthorized, QStringLiteral("the server refused the API key"), {}},
                true);
        return;
    }
    failAll(connectionError(reason.isEmpty() ? QStringLiteral("connection lost")
                                             : QStringLiteral("connection lost: ") + reason),
            !m_wantOpen);
    if (!m_wantOpen) {
        setState(State::Disconnected);
        return;
    }
    // A connection that dropped before it proved useful counts as a failed attempt.
    if (stable)
        m_failedAttempts = 0;
    ++m_failedAttempts;
    if (m_policy.maxAttempts > 0 && m_failedAttempts >= m_policy.maxAttempts) {
        m_wantOpen = false;
        failAll(connectionError(QStringLiteral("could not connect: ") + reason), true);
        setState(State::Disconnected);
        return;
    }
    scheduleReconnect();
}

void RpcClient::scheduleReconnect()
{
    const int exponent = std::clamp(m_failedAttempts - 1, 0, 20);
    const qint64 base = std::min<qint64>(qint64(m_policy.initialDelayMs) << exponent,
                                         m_policy.maxDelayMs);
    const qint64 extra = m_policy.jitter > 0 ? qint64(QRandomGenerator::global()->generateDouble()
                                                      * m_policy.jitter * double(base))
                                             : 0;
    const int delay = int(base + extra);
    m_reconnectTimer.start(delay);
    setState(State::Reconnecting);
    qCInfo(lcRpc) << "reconnecting in" << delay << "ms";
    Q_EMIT reconnectScheduled(delay);
}

// Fails every sent request (stream requests hand over to resume), and the queued ones too when
// asked; streams fail too when the client will not reconnect.
void RpcClient::failAll(const Error &error, bool includingQueued)
{
    QPointer<RpcClient> guard(this);
    std::vector<qint64> ids;
    for (const auto &[id, p] : m_pending) {
        if (p.sent || includingQueued)
            ids.push_back(id);
    }
    for (qint64 id : ids) {
        if (!guard)
            return;
        complete(id, error);
    }
    if (!guard || !includingQueued)
        return;
    const QList<ExecStream *> streams = m_streams.values() + m_unboundStreams.values();
    for (ExecStream *s : streams) {
        if (!guard)
            return;
        if ((m_streams.contains(s->m_streamId) && m_streams.value(s->m_streamId) == s)
            || m_unboundStreams.contains(s))
            failStream(s, error);
    }
}

// --- requests ---------------------------------------------------------------------------------

RpcCall RpcClient::call(const QString &method, const QJsonObject &params, QObject *context,
                        JsonCallback callback, CallOptions options)
{
    auto state = std::make_shared<Internal::CallState>();
    const int timeoutMs = options.timeoutMs < 0 ? m_defaultTimeoutMs : options.timeoutMs;
    const qint64 id = enqueue(method, params, context, std::move(callback), timeoutMs, state);
    m_pending[id].rowsText = std::move(options.rowsText);
    state->cancel = [guard = QPointer<RpcClient>(this), id] {
        if (guard)
            guard->cancelRequest(id);
    };
    submit(id);
    return RpcCall(state);
}

qint64 RpcClient::enqueue(const QString &method, const QJsonObject &params, QObject *context,
                          JsonCallback callback, int timeoutMs,
                          std::shared_ptr<Internal::CallState> state)
{
    const qint64 id = m_nextId++;
    Pending p;
    p.message = JsonRpc::serialize(JsonRpc::requestObject(double(id), method, params));
    p.context = context;
    p.hasContext = context != nullptr;
    p.callback = std::move(callback);
    p.state = std::move(state);
    if (context) {
        p.contextGuard = connect(context, &QObject::destroyed, this,
                                 [this, id] { cancelRequest(id); });
    }
    if (timeoutMs > 0) {
        p.deadline = m_clock.elapsed() + timeoutMs;
        m_deadlines.emplace(p.deadline, id);
        armTimeoutTimer();
    }
    m_pending.emplace(id, std::move(p));
    return id;
}

void RpcClient::submit(qint64 id)
{
    switch (m_state) {
    case State::Connected:
        if (sendNow(id))
            return;
        [[fallthrough]];
    case State::Connecting:
    case State::Reconnecting:
        if (m_queue.size() < size_t(MaxQueuedRequests)) {
            m_queue.push_back(id);
            return;
        }
        failSoon(id, connectionError(QStringLiteral("not connected, and %1 requests are already "
                                                    "waiting for the connection")
                                         .arg(MaxQueuedRequests)));
        return;
    case State::Unauthorized:
        failSoon(id, Error{ErrorCode::Unauthorized,
                           QStringLiteral("the server refused the API key"),
                           {}});
        return;
    case State::Disconnected:
        failSoon(id, connectionError(QStringLiteral("not connected")));
        return;
    }
}

bool RpcClient::sendNow(qint64 id)
{
    auto it = m_pending.find(id);
    if (it == m_pending.end())
        return true; // cancelled meanwhile: nothing to send
    if (!m_transport->sendText(it->second.message))
        return false;
    it->second.sent = true;
    it->second.message = QByteArray();
    return true;
}

void RpcClient::failSoon(qint64 id, const Error &error)
{
    QMetaObject::invokeMethod(
        this, [this, id, error] { complete(id, error); }, Qt::QueuedConnection);
}

void RpcClient::complete(qint64 id, Result<QJsonValue> result, TellServer tell)
{
    auto it = m_pending.find(id);
    if (it == m_pending.end())
        return;
    Pending p = std::move(it->second);
    m_pending.erase(it);
    if (!p.sent) {
        const auto q = std::find(m_queue.begin(), m_queue.end(), id);
        if (q != m_queue.end())
            m_queue.erase(q);
    }
    if (p.deadline >= 0) {
        auto [from, to] = m_deadlines.equal_range(p.deadline);
        for (auto d = from; d != to; ++d) {
            if (d->second == id) {
                m_deadlines.erase(d);
                break;
            }
        }
    }
    if (p.contextGuard)
        disconnect(p.contextGuard);
    if (p.state) {
        p.state->finished = true;
        p.state->cancel = nullptr;
    }
    if (tell == TellServer::Yes && p.sent && m_state == State::Connected) {
        notify(QStringLiteral("rpc.cancel"), QJsonObject{{QStringLiteral("id"), double(id)}});
        rememberCancelled(id);
    }
    if (p.stream) {
        handleStreamResponse(p.stream, result);
        return;
    }
    if (p.hasContext && !p.context)
        return;
    if (p.callback)
        p.callback(std::move(result));
}

void RpcClient::cancelRequest(qint64 id)
{
    auto it = m_pending.find(id);
    if (it == m_pending.end())
        return;
    it->second.callback = nullptr; // never runs
    it->second.stream = nullptr;
    it->second.hasContext = false;
    complete(id, Error{ErrorCode::Cancelled, QStringLiteral("cancelled"), {}}, TellServer::Yes);
}

void RpcClient::rememberCancelled(qint64 id)
{
    if (m_cancelled.contains(id))
        return;
    m_cancelled.insert(id);
    m_cancelledOrder.push_back(id);
    while (m_cancelledOrder.size() > size_t(MaxRememberedCancels)) {
        m_cancelled.remove(m_cancelledOrder.front());
        m_cancelledOrder.pop_front();
    }
}

void RpcClient::armTimeoutTimer()
{
    if (m_deadlines.empty()) {
        m_timeoutTimer.stop();
        return;
    }
    const qint64 wait = std::max<qint64>(0, m_deadlines.begin()->first - m_clock.elapsed());
    if (!m_timeoutTimer.isActive() || m_timeoutTimer.remainingTime() > wait)
        m_timeoutTimer.start(int(std::min<qint64>(wait, std::numeric_limits<int>::max())));
}

void RpcClient::onTimeoutTimer()
{
    QPointer<RpcClient> guard(this);
    const qint64 now = m_clock.elapsed();
    std::vector<qint64> expired;
    for (auto it = m_deadlines.begin(); it != m_deadlines.end() && it->first <= now; ++it)
        expired.push_back(it->second);
    for (qint64 id : expired) {
        if (!guard)
            return;
        complete(id,
                 Error{ErrorCode::Timeout, QStringLiteral("no answer from the server in time"), {}},
                 TellServer::Yes);
    }
    if (guard)
        armTimeoutTimer();
}

bool RpcClient::notify(const QString &method, const QJsonObject &params)
{
    if (m_state != State::Connected)
        return false;
    return m_transport->sendText(JsonRpc::serialize(JsonRpc::notificationObject(method, params)));
}

// --- incoming ---------------------------------------------------------------------------------

void RpcClient::reportProtocolError(const Error &error)
{
    qCWarning(lcRpc).noquote() << "malformed message from the server:" << error.message;
    Q_EMIT protocolError(error);
}

std::optional<RpcClient::PageResponse> RpcClient::pageResponse(const QByteArray &text) const
{
    // Only worth a look while a call that takes rows as text waits; any other message goes the
    // usual way.
    if (std::none_of(m_pending.begin(), m_pending.end(),
                     [](const auto &p) { return bool(p.second.rowsText); })
        || !text.contains("\"rows\""))
        return std::nullopt;
    // One pass checks the message and finds its rows.
    Json::Member rows;
    if (Json::validate(text, {"result", "rows"}, &rows) || !rows.isArrayOfArrays())
        return std::nullopt;
    // The message without its rows: small, read the usual way.
    const QByteArrayView whole(text);
    QByteArray rest;
    rest.reserve(text.size() - (rows.end - rows.begin) + 2);
    rest += whole.first(rows.begin);
    rest += "[]";
    rest += whole.sliced(rows.end);
    JsonRpc::Incoming in = JsonRpc::parse(rest);
    if (in.error || in.messages.size() != 1
        || in.messages.front().kind != JsonRpc::Message::Kind::Response
        || !in.messages.front().result.isObject())
        return std::nullopt;
    JsonRpc::Message m = std::move(in.messages.front());
    const auto pending = m_pending.find(positiveInteger(m.id));
    if (pending == m_pending.end() || !pending->second.rowsText)
        return std::nullopt; // a page for a call that did not ask: its rows as values
    QJsonObject members = m.result.toObject();
    members.remove(QStringLiteral("rows"));
    m.result = members;
    return PageResponse{std::move(m), text.sliced(rows.begin, rows.end - rows.begin)};
}

void RpcClient::onText(const QByteArray &text)
{
    if (std::optional<PageResponse> page = pageResponse(text)) {
        m_gotMessage = true;
        *m_pending.at(positiveInteger(page->message.id)).rowsText = std::move(page->rows);
        handleMessage(page->message);
        return;
    }
    const JsonRpc::Incoming in = JsonRpc::parse(text);
    if (in.error) {
        reportProtocolError(*in.error);
        return;
    }
    m_gotMessage = true;
    QPointer<RpcClient> guard(this);
    for (const JsonRpc::Message &m : in.messages) {
        if (!guard)
            return;
        handleMessage(m);
    }
}

void RpcClient::onBinary(const QByteArray &message)
{
    if (!m_binaryStreams) {
        reportProtocolError(
            Error{ErrorCode::InvalidRequest,
                  QStringLiteral("binary message of %1 bytes ignored").arg(message.size()),
                  {}});
        return;
    }
    QString why;
    std::optional<StreamFrame::Output> frame = StreamFrame::decode(message, &why);
    if (!frame) {
        reportProtocolError(Error{ErrorCode::InvalidParams, why, {}});
        return;
    }
    m_gotMessage = true;
    const QString &channel = frame->channel == StreamFrame::Channel::Stderr ? kStderr : kStdout;
    bool numeric = false;
    const qint64 requestId = frame->requestIdJson.toLongLong(&numeric);
    ExecStream *stream = followedStream(frame->streamId,
                                        numeric && !m_observed.contains(frame->streamId) ? requestId
                                                                                         : 0);
    if (!stream) {
        // A stream someone else may follow: the same params a JSON notification would carry.
        QJsonObject params{{kStreamId, frame->streamId},
                           {QStringLiteral("seq"), double(frame->seq)},
                           {QStringLiteral("requestId"),
                            QJsonDocument::fromJson("[" + frame->requestIdJson + "]").array().at(0)},
                           {QStringLiteral("channel"), channel}};
        params.insert(QStringLiteral("dataBase64"), QString::fromLatin1(frame->data.toBase64()));
        Q_EMIT notification(kStreamOutput, params);
        return;
    }
    if (takeSeq(stream, frame->seq))
        Q_EMIT stream->output(channel, frame->data);
}

void RpcClient::handleMessage(const JsonRpc::Message &m)
{
    using Kind = JsonRpc::Message::Kind;
    const qint64 id = positiveInteger(m.id);
    switch (m.kind) {
    case Kind::Response: {
        auto it = m_pending.find(id);
        if (it == m_pending.end() || !it->second.sent) {
            if (!m_cancelled.contains(id)) {
                reportProtocolError(
                    Error{ErrorCode::InvalidRequest,
                          QStringLiteral("a response for an unknown request id %1")
                              .arg(QString::fromUtf8(
                                  QJsonDocument(QJsonArray{m.id}).toJson(QJsonDocument::Compact))),
                          {}});
            }
            return;
        }
        if (m.error)
            complete(id, *m.error);
        else
            complete(id, m.result);
        return;
    }
    case Kind::Notification:
        if (m.error) {
            reportProtocolError(*m.error);
            return;
        }
        if (m.method == kStreamOutput || m.method == kStreamEnd || m.method == kStreamEvent)
            handleStreamNotification(m.method, m.params);
        else
            Q_EMIT notification(m.method, m.params);
        return;
    case Kind::Request:
        // This client offers no methods.
        m_transport->sendText(JsonRpc::serialize(
            JsonRpc::errorObject(m.id, Error{ErrorCode::MethodNotFound,
                                             QStringLiteral(
                                                 "Method not found: the client offers no methods"),
                                             {}})));
        return;
    case Kind::Invalid: {
        const Error why = m.error.value_or(Error{ErrorCode::InvalidRequest, {}, {}});
        reportProtocolError(why);
        // A malformed answer to a request of ours: fail that request now rather than at timeout.
        auto it = m_pending.find(id);
        if (it != m_pending.end() && it->second.sent)
            complete(id, Error{ErrorCode::InternalError,
                               QStringLiteral("malformed response from the server: ") + why.message,
                               {}});
        return;
    }
    }
}

// --- streams ----------------------------------------------------------------------------------

ExecStream *RpcClient::startStream(const QString &method, const QJsonObject &params,
                                   QObject *parent, ExecStream::ResultKind kind)
{
    auto *stream = new ExecStream(this, parent);
    stream->m_resultKind = kind;
    const qint64 id = enqueue(method, params, nullptr, nullptr, 0, nullptr);
    m_pending[id].stream = stream;
    stream->m_requestId = id;
    m_unboundStreams.insert(stream);
    submit(id);
    return stream;
}

ExecStream *RpcClient::watchStream(const QString &streamId, qint64 after, QObject *parent,
                                   ExecStream::ResultKind kind)
{
    auto *stream = new ExecStream(this, parent);
    stream->m_resultKind = kind;
    stream->m_watching = true;
    if (streamId.isEmpty() || m_streams.contains(streamId)) {
        QTimer::singleShot(0, stream, [this, stream, streamId] {
            failStream(stream,
                       Error{ErrorCode::AlreadyExists,
                             QStringLiteral("this client follows stream %1 already").arg(streamId),
                             {}});
        });
        return stream;
    }
    stream->m_lastSeq = qMax<qint64>(after, 0);
    bindStream(stream, streamId);
    resumeStream(stream); // when connected; else the connection's start watches it
    return stream;
}

RpcCall RpcClient::observeStream(const QString &streamId, qint64 after, QObject *context,
                                 JsonCallback callback)
{
    m_observed.insert(streamId);
    return call(QStringLiteral("stream.watch"),
                QJsonObject{{kStreamId, streamId}, {QStringLiteral("after"), double(after)}},
                context, std::move(callback));
}

void RpcClient::bindStream(ExecStream *stream, const QString &streamId)
{
    m_unboundStreams.remove(stream);
    stream->m_streamId = streamId;
    m_streams.insert(streamId, stream);
    Q_EMIT stream->started(streamId);
}

void RpcClient::handleStreamNotification(const QString &method, const QJsonObject &params)
{
    const QJsonValue streamIdValue = params.value(kStreamId);
    const qint64 seq = positiveInteger(params.value(QStringLiteral("seq")));
    if (!streamIdValue.isString() || streamIdValue.toString().isEmpty() || seq == 0) {
        reportProtocolError(Error{ErrorCode::InvalidParams,
                                  method + QStringLiteral(" without a valid streamId and seq"),
                                  {}});
        return;
    }
    const QString streamId = streamIdValue.toString();
    if (method != kStreamOutput)
        Q_EMIT streamActivity(method, params);
    // An observed stream's notifications carry the request id of another connection: never taken
    // for one of ours.
    const bool observed = method == kStreamEnd ? m_observed.remove(streamId)
                                               : m_observed.contains(streamId);
    ExecStream *stream = followedStream(streamId, observed ? 0
                                                           : positiveInteger(params.value(
                                                               QStringLiteral("requestId"))));
    if (!stream) {
        Q_EMIT notification(method, params); // a stream someone else may follow
        return;
    }
    if (!takeSeq(stream, seq))
        return;
    if (method == kStreamEnd) {
        // A stream whose work failed or was cancelled ends with `error` instead of `result`.
        const QJsonValue error = params.value(QStringLiteral("error"));
        if (error.isObject() && !params.contains(QStringLiteral("result"))) {
            failStream(stream, Error::fromJson(error));
            return;
        }
        endStream(stream, params.value(QStringLiteral("result")));
        return;
    }
    if (method == kStreamEvent) {
        Q_EMIT stream->event(params.value(QStringLiteral("event")).toObject());
        return;
    }
    QByteArray data;
    const QJsonValue base64 = params.value(QStringLiteral("dataBase64"));
    if (base64.isString()) {
        auto decoded = QByteArray::fromBase64Encoding(base64.toString().toLatin1(),
                                                      QByteArray::AbortOnBase64DecodingErrors);
        if (!decoded) {
            reportProtocolError(Error{ErrorCode::InvalidParams,
                                      QStringLiteral("stream.output with invalid dataBase64"),
                                      {}});
            return;
        }
        data = std::move(decoded.decoded);
    } else {
        data = params.value(QStringLiteral("data")).toString().toUtf8();
    }
    Q_EMIT stream->output(params.value(QStringLiteral("channel")).toString() == kStderr ? kStderr
                                                                                        : kStdout,
                          data);
}

ExecStream *RpcClient::followedStream(const QString &streamId, qint64 requestId)
{
    ExecStream *stream = m_streams.value(streamId);
    if (!stream) {
        // The first notification may come before the response: requestId ties them.
        auto it = m_pending.find(requestId);
        if (it != m_pending.end() && it->second.stream && it->second.stream->m_streamId.isEmpty()) {
            stream = it->second.stream;
            bindStream(stream, streamId);
        }
    }
    return stream && !stream->m_done ? stream : nullptr;
}

// Takes notification `seq` of `stream` if it is the next one; asks for the missing ones when it
// is ahead.
bool RpcClient::takeSeq(ExecStream *stream, qint64 seq)
{
    if (seq <= stream->m_lastSeq)
        return false; // already delivered (a resume may send some again)
    if (seq > stream->m_lastSeq + 1) {
        // Something is missing: ask for it rather than skip it. While a resume is under way,
        // the replay will bring this one again in its turn.
        if (!stream->m_resuming) {
            qCInfo(lcRpc) << "stream" << stream->m_streamId << "jumped from" << stream->m_lastSeq
                          << "to" << seq << "- resuming";
            resumeStream(stream);
        }
        return false;
    }
    stream->m_lastSeq = seq;
    return true;
}

void RpcClient::handleStreamResponse(ExecStream *stream, const Result<QJsonValue> &result)
{
    stream->m_requestId = 0;
    if (stream->m_done)
        return;
    if (!result) {
        if (result.error().code == ErrorCode::ConnectionError && !stream->m_streamId.isEmpty())
            return; // the next connection resumes it
        failStream(stream, result.error());
        return;
    }
    const QJsonValue streamId = result.value().toObject().value(kStreamId);
    if (streamId.isString() && !streamId.toString().isEmpty()) {
        if (stream->m_streamId.isEmpty())
            bindStream(stream, streamId.toString());
        return; // stream.end brings the result
    }
    // The server answered without streaming: deliver the whole result at once.
    if (stream->m_resultKind == ExecStream::ResultKind::Raw) {
        stream->m_done = true;
        m_unboundStreams.remove(stream);
        Q_EMIT stream->ended(result.value());
        return;
    }
    Result<ExecResult> r = ExecResult::fromJson(result.value());
    if (!r) {
        failStream(stream, r.error());
        return;
    }
    QPointer<ExecStream> guard(stream);
    if (!r->standardOutput.isEmpty())
        Q_EMIT stream->output(QStringLiteral("stdout"), r->standardOutput);
    if (guard && !r->standardError.isEmpty())
        Q_EMIT stream->output(QStringLiteral("stderr"), r->standardError);
    if (!guard)
        return;
    stream->m_done = true;
    m_unboundStreams.remove(stream);
    Q_EMIT stream->ended(result.value());
    if (guard)
        Q_EMIT stream->finished(r.value());
}

void RpcClient::resumeStream(ExecStream *stream)
{
    if (m_state != State::Connected || stream->m_done || stream->m_streamId.isEmpty())
        return;
    stream->m_resuming = true;
    const QJsonObject params{{kStreamId, stream->m_streamId},
                             {QStringLiteral("after"), double(stream->m_lastSeq)}};
    call(stream->m_watching ? QStringLiteral("stream.watch") : QStringLiteral("stream.resume"),
         params, this,
         [this, s = QPointer<ExecStream>(stream)](Result<QJsonValue> r) {
             if (!s || s->m_done)
                 return;
             s->m_resuming = false;
             if (r) {
                 if (r->toObject().contains(QStringLiteral("terminal")))
                     s->m_terminal = r->toObject().value(QStringLiteral("terminal")).toObject();
                 return; // the replay follows (or came first)
             }
             const Error &e = r.error();
             if (e.code == ErrorCode::ConnectionError)
                 return; // the next connection resumes it
             if (e.code == ErrorCode::StreamGap) {
                 const qint64 first = positiveInteger(
                     e.data.toObject().value(QStringLiteral("first")));
                 if (first > s->m_lastSeq + 1) {
                     if (e.data.toObject().contains(QStringLiteral("terminal")))
                         s->m_terminal
                             = e.data.toObject().value(QStringLiteral("terminal")).toObject();
                     const qint64 missingFrom = s->m_lastSeq + 1;
                     s->m_lastSeq = first - 1;
                     qCWarning(lcRpc)
                         << "stream" << s->m_streamId << "lost" << missingFrom << "to" << first - 1;
                     Q_EMIT s->gap(missingFrom, first - 1);
                     if (s)
                         resumeStream(s);
                     return;
                 }
             }
             failStream(s, e);
         })
        .detach();
}

void RpcClient::endStream(ExecStream *stream, const QJsonValue &result)
{
    stream->m_done = true;
    m_streams.remove(stream->m_streamId);
    m_unboundStreams.remove(stream);
    QPointer<ExecStream> guard(stream);
    Q_EMIT stream->ended(result);
    if (!guard || stream->m_resultKind == ExecStream::ResultKind::Raw)
        return;
    Result<ExecResult> r = ExecResult::fromJson(result);
    if (r)
        Q_EMIT stream->finished(r.value());
    else
        Q_EMIT stream->failed(r.error());
}

void RpcClient::failStream(ExecStream *stream, const Error &error)
{
    if (stream->m_done)
        return;
    stream->m_done = true;
    if (!stream->m_streamId.isEmpty() && m_streams.value(stream->m_streamId) == stream)
        m_streams.remove(stream->m_streamId);
    m_unboundStreams.remove(stream);
    Q_EMIT stream->failed(error);
}

void RpcClient::cancelStream(ExecStream *stream)
{
    if (!stream->m_streamId.isEmpty()) {
        call(QStringLiteral("stream.cancel"), QJsonObject{{kStreamId, stream->m_streamId}}, this,
             [](Result<QJsonValue>) {})
            .detach();
    } else if (stream->m_requestId != 0 && m_pending.count(stream->m_requestId)
               && m_pending[stream->m_requestId].sent) {
        notify(QStringLiteral("rpc.cancel"),
               QJsonObject{{QStringLiteral("id"), double(stream->m_requestId)}});
    } else if (stream->m_requestId != 0) {
        // Not sent yet: just drop it.
        const qint64 id = stream->m_requestId;
        complete(id, Error{ErrorCode::Cancelled, QStringLiteral("cancelled"), {}});
    }
}

void RpcClient::forgetStream(ExecStream *stream)
{
    m_unboundStreams.remove(stream);
    if (!stream->m_streamId.isEmpty() && m_streams.value(stream->m_streamId) == stream)
        m_streams.remove(stream->m_streamId);
    if (stream->m_requestId != 0) {
        auto it = m_pending.find(stream->m_requestId);
        if (it != m_pending.end())
            it->second.stream = nullptr; // its answer is dropped
    }
}

} // namespace Sandbox
