#include "watchhub.h"

#include "protocol/fieldreader.h"
#include "runtime/supervisorchannel.h"
#include "sandboxmanager.h"
#include "streamhub.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QPointer>

namespace Sandbox::Engine {

struct WatchHub::Watch
{
    QString streamId;
    QString sandboxId;
    QString path;
    QPointer<SupervisorChannel> channel;
    quint32 requestId = 0;
    QElapsedTimer detached; // valid while nobody follows the stream
    bool ready = false;
    bool cancelled = false;

    void cancel()
    {
        cancelled = true;
        if (channel && requestId)
            channel->cancel(requestId);
    }
};

WatchHub::WatchHub(SandboxManager *sandboxes, StreamHub *streams, Methods *methods, QObject *parent)
    : QObject(parent)
    , m_sandboxes(sandboxes)
    , m_streams(streams)
{
    methods->add(QStringLiteral("sandbox.watch"),
                 [this](const QJsonObject &p, const CallContext &c, const Methods::Reply &r) {
                     start(p, c, r);
                 });
    m_idleTimer.setInterval(15000);
    connect(&m_idleTimer, &QTimer::timeout, this, &WatchHub::sweep);
    m_idleTimer.start();
}

WatchHub::~WatchHub()
{
    for (const auto &w : std::as_const(m_watches))
        w->cancel();
}

void WatchHub::start(const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    QString path = p.optionalPath(QStringLiteral("path"), QStringLiteral("/workspace"));
    const bool recursive = p.optionalBool(QStringLiteral("recursive"), false);
    if (p.failed())
        return reply(p.error());
    if (!ctx.notify)
        return reply(
            Error::invalidParams(QStringLiteral("id"),
                                 QStringLiteral(
                                     "sandbox.watch needs the WebSocket (/rpc): it is a stream")));
    // The supervisor resolves the path (confined, by the kernel); the engine names it the same
    // way, so that it can tell the supervisor's paths apart from anything else.
    if (!path.startsWith(u'/'))
        path = QStringLiteral("/workspace/") + path;
    path = QDir::cleanPath(path);
    if (path != QLatin1String("/workspace") && !path.startsWith(QLatin1String("/workspace/")))
        return reply(Error{ErrorCode::PathNotAllowed,
                           QStringLiteral("path '%1' is outside /workspace").arg(path),
                           QJsonObject{{QStringLiteral("field"), QStringLiteral("path")}}});
    int here = 0;
    for (const auto &w : std::as_const(m_watches))
        here += w->sandboxId == id ? 1 : 0;
    if (here >= kMaxPerSandbox)
        return reply(Error{ErrorCode::QuotaExceeded,
                           QStringLiteral("sandbox %1 has %2 watches already (at most %2): "
                                          "cancel one (stream.cancel)")
                               .arg(id)
                               .arg(kMaxPerSandbox),
                           {}});

    QObject *context = ctx.guard ? ctx.guard.data() : this;
    const CallContext c = ctx;
    QPointer<WatchHub> self(this);
    m_sandboxes->withSupervisor(
        ctx.keyId, id, {}, context,
        [this, self, id, path, recursive, c, reply](Result<SupervisorChannel *> r) {
            if (!r)
                return reply(r.error());
            // A watch does not keep the sandbox awake.
            m_sandboxes->endActivity(id);
            auto w = std::make_shared<Watch>();
            w->sandboxId = id;
            w->path = path;
            w->channel = r.value();
            std::weak_ptr<Watch> weak = w;
            const auto onEvent = [this, self, weak, c, reply](const QJsonObject &event,
                                                              std::shared_ptr<UniqueFd>) {
                const auto w = weak.lock();
                if (!self || !w)
                    return;
                if (!w->ready) {
                    // Set up: the answer, then the changes as stream.event.
                    w->ready = true;
                    w->streamId = m_streams->open(c.keyId, c.requestId, c.notify, [weak] {
                        if (auto w = weak.lock())
                            w->cancel();
                    });
                    m_streams->setSinkOwner(w->streamId, c.connection);
                    m_watches.insert(w->streamId, w);
                    QJsonObject answer = event;
                    answer.remove(QStringLiteral("ready"));
                    answer.insert(QStringLiteral("streamId"), w->streamId);
                    reply(QJsonValue(answer));
                    return;
                }
                for (const QJsonValue &e : event.value(QStringLiteral("events")).toArray())
                    m_streams->event(w->streamId, e.toObject());
            };
            const auto onReply = [this, self, w, reply](Result<SupervisorChannel::Reply> r) {
                if (!self)
                    return;
                if (!w->ready) // refused before it began: not found, not a directory, ...
                    return reply(r ? Result<QJsonValue>(Error{ErrorCode::SandboxError,
                                                              QStringLiteral("the watch ended "
                                                                             "before it began"),
                                                              {}})
                                   : Result<QJsonValue>(r.error()));
                m_watches.remove(w->streamId);
                if (!r) {
                    m_streams->end(w->streamId, {{QStringLiteral("error"), r.error().toJson()}});
                    return;
                }
                QJsonObject result{{QStringLiteral("path"), w->path}};
                if (r->json.value(QStringLiteral("deleted")).toBool())
                    result.insert(QStringLiteral("deleted"), true);
                if (w->cancelled || r->json.value(QStringLiteral("cancelled")).toBool())
                    result.insert(QStringLiteral("cancelled"), true);
                m_streams->end(w->streamId, {{QStringLiteral("result"), result}});
            };
            *c.onCancel = [weak] {
                if (auto w = weak.lock())
                    w->cancel();
            };
            w->requestId = w->channel->request({{QStringLiteral("op"), QStringLiteral("watch")},
                                                {QStringLiteral("path"), path},
                                                {QStringLiteral("recursive"), recursive}},
                                               {}, onReply, {}, onEvent);
        });
}

void WatchHub::sweep()
{
    // A watch nobody has followed for a while ends (its client is gone for good).
    const auto watches = m_watches;
    for (const auto &w : watches) {
        if (m_streams->sinkBacklog(w->streamId) >= 0) {
            w->detached.invalidate();
        } else if (!w->detached.isValid()) {
            w->detached.start();
        } else if (w->detached.hasExpired(kIdleEndMs)) {
            w->cancel();
        }
    }
}

} // namespace Sandbox::Engine
