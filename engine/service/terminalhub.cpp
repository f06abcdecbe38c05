#include "terminalhub.h"

#include "protocol/fieldreader.h"
#include "runtime/supervisorchannel.h"
#include "sandboxmanager.h"
#include "streamhub.h"
#include "terminalmodes.h"

#include <QElapsedTimer>
#include <QLoggingCategory>
#include <QPointer>

Q_LOGGING_CATEGORY(lcTerminal, "sandboxd.terminal")

namespace Sandbox::Engine {

struct TerminalHub::Terminal
{
    QString streamId;
    QString keyId;
    QString sandboxId;
    QPointer<SupervisorChannel> channel;
    quint32 execId = 0;
    quint16 cols = 80;
    quint16 rows = 24;
    TerminalModes modes;
    qint64 unacknowledged = 0; // output received and not yet acknowledged to the supervisor
    QElapsedTimer detached;    // valid while nobody follows the stream
    bool cancelled = false;

    void cancel()
    {
        cancelled = true;
        if (channel && execId)
            channel->cancel(execId);
    }
    QJsonObject describe() const
    {
        return {{QStringLiteral("cols"), cols},
                {QStringLiteral("rows"), rows},
                {QStringLiteral("modes"), QString::fromLatin1(modes.restoreSequence())}};
    }
};

TerminalHub::TerminalHub(SandboxManager *sandboxes, StreamHub *streams, Methods *methods,
                         QObject *parent)
    : QObject(parent)
    , m_sandboxes(sandboxes)
    , m_streams(streams)
{
    methods->add(QStringLiteral("stream.input"),
                 [this](const QJsonObject &p, const CallContext &c, const Methods::Reply &r) {
                     input(p, c, r);
                 });
    methods->add(QStringLiteral("stream.resize"),
                 [this](const QJsonObject &p, const CallContext &c, const Methods::Reply &r) {
                     resize(p, c, r);
                 });
    m_ackTimer.setInterval(10);
    connect(&m_ackTimer, &QTimer::timeout, this, [this] {
        bool waiting = false;
        for (const auto &t : std::as_const(m_terminals)) {
            acknowledge(*t);
            waiting = waiting || t->unacknowledged > 0;
        }
        if (!waiting)
            m_ackTimer.stop();
    });
    m_idleTimer.setInterval(15000);
    connect(&m_idleTimer, &QTimer::timeout, this, &TerminalHub::sweep);
    m_idleTimer.start();
}

TerminalHub::~TerminalHub()
{
    for (const auto &t : std::as_const(m_terminals))
        t->cancel();
}

void TerminalHub::start(const QString &id, const QString &kind, const QJsonObject &request,
                        const CallContext &ctx, const Methods::Reply &reply)
{
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    const CallContext c = ctx;
    QPointer<TerminalHub> self(this);
    m_sandboxes->withSupervisor(ctx.keyId, id, kind, context, [this, self, id, request, c, reply](Result<SupervisorChannel *> r) {
        if (!r)
            return reply(r.error());
        auto t = std::make_shared<Terminal>();
        t->keyId = c.keyId;
        t->sandboxId = id;
        t->channel = r.value();
        const QJsonObject pty = request.value(QStringLiteral("pty")).toObject();
        t->cols = quint16(pty.value(QStringLiteral("cols")).toInt(80));
        t->rows = quint16(pty.value(QStringLiteral("rows")).toInt(24));
        std::weak_ptr<Terminal> weak = t;
        t->streamId = m_streams->open(c.keyId, c.requestId, c.notify, [weak] {
            if (auto t = weak.lock())
                t->cancel();
        });
        m_streams->setSinkOwner(t->streamId, c.connection);
        m_streams->setTerminal(t->streamId, [weak] {
            const auto t = weak.lock();
            return t ? t->describe() : QJsonObject();
        });
        *c.onCancel = [weak] {
            if (auto t = weak.lock())
                t->cancel();
        };
        m_terminals.insert(t->streamId, t);
        // The first notification names the stream at once, so that the client can type
        // before the program prints anything.
        m_streams->event(t->streamId, {{QStringLiteral("type"), QStringLiteral("terminal")},
                                       {QStringLiteral("cols"), t->cols},
                                       {QStringLiteral("rows"), t->rows}});

        const auto onOutput = [this, self, weak](int, QByteArrayView bytes) {
            const auto t = weak.lock();
            if (!self || !t)
                return;
            m_streams->output(t->streamId, 1, bytes);
            t->modes.feed(bytes);
            t->unacknowledged += bytes.size();
            acknowledge(*t);
            if (t->unacknowledged > 0 && !m_ackTimer.isActive())
                m_ackTimer.start();
        };
        const auto onReply = [this, self, id, t, reply](Result<SupervisorChannel::Reply> r) {
            if (!self)
                return;
            m_sandboxes->endActivity(id);
            m_terminals.remove(t->streamId);
            if (!r) {
                m_streams->end(t->streamId, {{QStringLiteral("error"), r.error().toJson()}});
                return reply(r.error());
            }
            const QJsonObject &j = r->json;
            if (t->cancelled || j.value(QStringLiteral("cancelled")).toBool()) {
                const Error e{ErrorCode::Cancelled, QStringLiteral("the terminal was closed"), {}};
                m_streams->end(t->streamId, {{QStringLiteral("error"), e.toJson()}});
                return reply(e);
            }
            QJsonObject result{
                {QStringLiteral("exitCode"), j.value(QStringLiteral("exitCode"))},
                {QStringLiteral("signal"), j.value(QStringLiteral("signal")).isString()
                                               ? j.value(QStringLiteral("signal"))
                                               : QJsonValue()},
                {QStringLiteral("stdout"), QString()},
                {QStringLiteral("stderr"), QString()},
                {QStringLiteral("durationMs"), j.value(QStringLiteral("durationMs"))},
                {QStringLiteral("truncated"), false},
                {QStringLiteral("timedOut"), j.value(QStringLiteral("timedOut")).toBool()},
                {QStringLiteral("streamId"), t->streamId},
            };
            m_streams->end(t->streamId, {{QStringLiteral("result"), result}});
            reply(QJsonValue(result));
        };
        t->execId = t->channel->request(request, {}, onReply, onOutput);
    });
}

void TerminalHub::acknowledge(Terminal &t)
{
    if (t.unacknowledged <= 0 || !t.channel)
        return;
    // Nobody follows the stream: the output goes to its bounded backlog, the program runs on
    // (as in a detached tmux). Someone does: only as fast as their connection takes it.
    const qint64 backlog = m_streams->sinkBacklog(t.streamId);
    if (backlog > kClientHighWater)
        return;
    t.channel->acknowledge(t.execId, quint32(t.unacknowledged));
    t.unacknowledged = 0;
}

Result<std::shared_ptr<TerminalHub::Terminal>> TerminalHub::find(const QString &keyId,
                                                                 const QString &streamId) const
{
    const auto t = m_terminals.value(streamId);
    if (!t || t->keyId != keyId)
        return Error::notFound(QStringLiteral("terminal %1 (it may have ended)").arg(streamId));
    return t;
}

void TerminalHub::input(const QJsonObject &params, const CallContext &ctx,
                        const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString streamId = p.requiredString(QStringLiteral("streamId"));
    const bool text = p.has(QStringLiteral("data"));
    const bool binary = p.has(QStringLiteral("dataBase64"));
    QByteArray bytes;
    if (!p.failed() && text == binary)
        p.fail(QStringLiteral("data"), QStringLiteral("give exactly one of data and dataBase64"));
    if (!p.failed() && text)
        bytes = p.optionalString(QStringLiteral("data")).toUtf8();
    if (!p.failed() && binary) {
        auto decoded = QByteArray::fromBase64Encoding(p.optionalString(QStringLiteral("dataBase64"))
                                                          .toLatin1(),
                                                      QByteArray::AbortOnBase64DecodingErrors);
        if (!decoded)
            p.fail(QStringLiteral("dataBase64"), QStringLiteral("is not valid base64"));
        bytes = std::move(decoded.decoded);
    }
    if (p.failed())
        return reply(p.error());
    if (bytes.size() > kMaxInputBytes)
        return reply(Error{ErrorCode::PayloadTooLarge,
                           QStringLiteral("at most %1 bytes of input per call").arg(kMaxInputBytes),
                           {}});
    const auto t = find(ctx.keyId, streamId);
    if (!t)
        return reply(t.error());
    const auto &terminal = t.value();
    if (!terminal->channel)
        return reply(Error::notFound(QStringLiteral("terminal %1").arg(streamId)));
    if (terminal->channel->pendingWriteBytes() > kMaxPendingInput)
        return reply(Error{ErrorCode::PayloadTooLarge,
                           QStringLiteral("the terminal is not taking input this fast; send it "
                                          "again later"),
                           {}});
    if (!bytes.isEmpty())
        terminal->channel->sendStdin(terminal->execId, bytes);
    reply(QJsonValue(QJsonObject{{QStringLiteral("streamId"), streamId},
                                 {QStringLiteral("bytes"), double(bytes.size())}}));
}

void TerminalHub::resize(const QJsonObject &params, const CallContext &ctx,
                         const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString streamId = p.requiredString(QStringLiteral("streamId"));
    if (!p.has(QStringLiteral("cols")))
        p.fail(QStringLiteral("cols"), QStringLiteral("is required"));
    if (!p.has(QStringLiteral("rows")))
        p.fail(QStringLiteral("rows"), QStringLiteral("is required"));
    const qint64 cols = p.optionalInteger(QStringLiteral("cols"), 80, 1, 1000);
    const qint64 rows = p.optionalInteger(QStringLiteral("rows"), 24, 1, 500);
    if (p.failed())
        return reply(p.error());
    const auto t = find(ctx.keyId, streamId);
    if (!t)
        return reply(t.error());
    Terminal &terminal = *t.value();
    terminal.cols = quint16(cols);
    terminal.rows = quint16(rows);
    if (terminal.channel)
        terminal.channel->resize(terminal.execId, terminal.cols, terminal.rows);
    reply(QJsonValue(QJsonObject{{QStringLiteral("streamId"), streamId},
                                 {QStringLiteral("cols"), cols},
                                 {QStringLiteral("rows"), rows}}));
}

void TerminalHub::sweep()
{
    for (const auto &t : std::as_const(m_terminals)) {
        const bool followed = m_streams->sinkBacklog(t->streamId) >= 0;
        if (followed) {
            t->detached.invalidate();
        } else if (!t->detached.isValid()) {
            t->detached.start();
        } else if (t->detached.elapsed() > kIdleHangupMs && !t->cancelled) {
            qCInfo(lcTerminal).noquote()
                << "hanging up terminal" << t->streamId << "of" << t->sandboxId
                << ": nobody followed it for" << kIdleHangupMs / 60000 << "minutes";
            t->cancel();
        }
    }
}

} // namespace Sandbox::Engine
