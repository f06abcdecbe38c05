#include "methods.h"

#include "keystore.h"
#include "protocol/fieldreader.h"
#include "protocol/utf8.h"
#include "runtime/outputpipe.h"
#include "runtime/supervisorchannel.h"
#include "service/sandboxmanager.h"
#include "service/sandboxnetwork.h"
#include "service/streamhub.h"
#include "service/terminalhub.h"
#include "service/watchhub.h"

#include <QJsonArray>
#include <QRegularExpression>

namespace Sandbox::Engine {

namespace {

constexpr qint64 kDefaultTimeoutMs = 300000;
constexpr qint64 kMaxTimeoutMs = 3600000;
constexpr qint64 kDefaultMaxOutput = 1024 * 1024;
constexpr qint64 kMaxOutput = 64 * 1024 * 1024;
constexpr qint64 kMaxFileBytes = 16 * 1024 * 1024;
constexpr qint64 kMaxSleepAfterMs = 7LL * 24 * 3600 * 1000;

const QString kAgent = QStringLiteral("agent");

QStringList agentTypes()
{
    return {QStringLiteral("claude-code"), QStringLiteral("opencode"), QStringLiteral("codex")};
}

Result<QJsonValue> toValue(Result<QJsonObject> r)
{
    if (!r)
        return r.error();
    return QJsonValue(r.value());
}

SandboxManager::Done forward(const Methods::Reply &reply)
{
    return [reply](Result<QJsonObject> r) { reply(toValue(std::move(r))); };
}

struct ExecState
{
    quint32 execId = 0;
    QPointer<SupervisorChannel> channel;
    QByteArray out;
    QByteArray err;
    QString streamId;
    bool cancelled = false;

    void cancel()
    {
        cancelled = true;
        if (channel && execId)
            channel->cancel(execId);
    }
};

// A key as keys.* answer it; its secret only when it was just made.
QJsonObject keyJson(const NewKey &k)
{
    QJsonObject o{{QStringLiteral("id"), k.id},
                  {QStringLiteral("name"), k.name},
                  {QStringLiteral("admin"), k.admin},
                  {QStringLiteral("createdAt"), k.createdAt.toString(Qt::ISODateWithMs)}};
    if (!k.key.isEmpty())
        o.insert(QStringLiteral("key"), k.key);
    return o;
}

// A key as keys.list answers it: with its last use (null when never used).
QJsonObject listedKeyJson(const NewKey &k)
{
    QJsonObject o = keyJson(k);
    o.insert(QStringLiteral("lastUsedAt"),
             k.lastUsedAt.isValid() ? QJsonValue(k.lastUsedAt.toString(Qt::ISODateWithMs))
                                    : QJsonValue(QJsonValue::Null));
    return o;
}

Error notAdmin()
{
    return Error{ErrorCode::Unauthorized,
                 QStringLiteral("only an admin key can manage other keys"),
                 {}};
}

} // namespace

Methods::Methods(SandboxManager *sandboxes, StreamHub *streams, KeyStore *keys, QObject *parent)
    : QObject(parent)
    , m_sandboxes(sandboxes)
    , m_streams(streams)
    , m_keys(keys)
    , m_pipedStreams(OutputPipe::readsWithoutWaiting())
{
    m_terminals = new TerminalHub(sandboxes, streams, this, this); // adds stream.input, .resize
    new WatchHub(sandboxes, streams, this, this);                  // adds sandbox.watch
    addAgentMethods();
    // databases.*: registered by the database adapter (engine/databases/databaseadapter.cpp).
    addAnySandboxMethods();
    addSessionMethods();
    addKeyMethods();
    addStreamMethods();
}

// agents.*
void Methods::addAgentMethods()
{
    add(QStringLiteral("agents.create"), [this](const QJsonObject &params, const CallContext &ctx,
                                                const Reply &reply) {
        FieldReader p(params);
        CreateSandbox c;
        c.keyId = ctx.keyId;
        c.kind = kAgent;
        c.type = p.requiredString(QStringLiteral("type"));
        if (!p.failed() && !agentTypes().contains(c.type))
            p.fail(QStringLiteral("type"), QStringLiteral("must be one of: %1")
                                               .arg(agentTypes().join(QStringLiteral(", "))));
        c.size = p.optionalChoice(QStringLiteral("size"), SandboxManager::sizes(),
                                  QStringLiteral("standard-1"));
        c.env = p.optionalEnv(QStringLiteral("env"));
        c.gateway = p.optionalBool(QStringLiteral("gateway"), true);
        const NetworkPolicy network = NetworkPolicy::read(p, QStringLiteral("network"));
        c.sleepAfterMs = p.optionalInteger(QStringLiteral("sleepAfter"), -1, 0, kMaxSleepAfterMs);
        c.name = p.optionalName(QStringLiteral("name"));
        if (p.failed())
            return reply(p.error());
        if (const auto admitted = admitPolicy(network, ctx); !admitted)
            return reply(admitted.error());
        c.network = network.toJson();
        m_sandboxes->create(c, ctx.guard ? ctx.guard.data() : this, forward(reply));
    });
    add(QStringLiteral("agents.list"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            reply(QJsonValue(
                QJsonObject{{QStringLiteral("agents"), m_sandboxes->list(ctx.keyId, kAgent)}}));
        });
    add(QStringLiteral("agents.run"), [](const QJsonObject &, const CallContext &,
                                         const Reply &reply) {
        reply(Error{ErrorCode::NotImplemented,
                    QStringLiteral(
                        "agents.run is not available in this engine version yet; use agents.exec"),
                    {}});
    });
    add(QStringLiteral("agents.cloneRepo"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            cloneRepo(params, ctx, reply);
        });
    addSandboxMethods(QStringLiteral("agents."), kAgent);
}

// sandbox.*: any sandbox by id.
void Methods::addAnySandboxMethods()
{
    addSandboxMethods(QStringLiteral("sandbox."), {});
    add(QStringLiteral("sandbox.setNetwork"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            FieldReader p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            if (!p.failed() && !p.has(QStringLiteral("network")))
                p.fail(QStringLiteral("network"),
                       QStringLiteral("is required: false, true or {allow, deny}"));
            const NetworkPolicy network = NetworkPolicy::read(p, QStringLiteral("network"));
            if (p.failed())
                return reply(p.error());
            if (const auto r = m_sandboxes->record(ctx.keyId, id); !r)
                return reply(r.error());
            if (const auto admitted = admitPolicy(network, ctx); !admitted)
                return reply(admitted.error());
            m_sandboxes->setPolicy(ctx.keyId, id, network.toJson(), forward(reply));
        });
    add(QStringLiteral("sandbox.networkLog"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            FieldReader p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            if (p.failed())
                return reply(p.error());
            const auto r = m_sandboxes->record(ctx.keyId, id);
            if (!r)
                return reply(r.error());
            reply(QJsonValue(QJsonObject{{QStringLiteral("id"), id},
                                         {QStringLiteral("network"), r->network},
                                         {QStringLiteral("denied"),
                                          m_network ? m_network->log(id) : QJsonArray()}}));
        });
}

// sessions.* and engine.pool: who calls, and what the engine holds for them.
void Methods::addSessionMethods()
{
    add(QStringLiteral("sessions.current"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            QJsonObject o{{QStringLiteral("id"), ctx.keyId},
                          {QStringLiteral("backend"), QStringLiteral("local")},
                          {QStringLiteral("version"), QStringLiteral(SANDBOX_VERSION)},
                          {QStringLiteral("sandboxes"), m_sandboxes->counts(ctx.keyId)}};
            for (const NewKey &k : m_keys->list()) {
                if (k.id == ctx.keyId) {
                    o.insert(QStringLiteral("name"), k.name);
                    o.insert(QStringLiteral("createdAt"), k.createdAt.toString(Qt::ISODateWithMs));
                }
            }
            reply(QJsonValue(o));
        });
    add(QStringLiteral("sessions.quota"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            reply(QJsonValue(m_sandboxes->quota(ctx.keyId)));
        });

    // engine.pool: the spare sandboxes (docs/protocol.md 6); an admin key's view of the host.
    add(QStringLiteral("engine.pool"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            if (!m_keys->isAdmin(ctx.keyId))
                return reply(Error{ErrorCode::Unauthorized,
                                   QStringLiteral("only an admin key can see the engine's spares"),
                                   {}});
            reply(QJsonValue(m_sandboxes->pool()));
        });
}

// keys.*: every key sees itself; only an admin key (the engine's first) manages others.
void Methods::addKeyMethods()
{
    add(QStringLiteral("keys.create"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            if (!m_keys->isAdmin(ctx.keyId))
                return reply(notAdmin());
            FieldReader p(params);
            const QString name = p.optionalName(QStringLiteral("name"), QStringLiteral("unnamed"));
            const bool admin = p.optionalBool(QStringLiteral("admin"), false);
            if (p.failed())
                return reply(p.error());
            const auto k = m_keys->create(name, admin);
            if (!k)
                return reply(k.error());
            reply(QJsonValue(keyJson(k.value())));
        });
    add(QStringLiteral("keys.list"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            const bool admin = m_keys->isAdmin(ctx.keyId);
            QJsonArray keys;
            for (const NewKey &k : m_keys->list()) {
                if (admin || k.id == ctx.keyId)
                    keys.append(listedKeyJson(k));
            }
            reply(QJsonValue(QJsonObject{{QStringLiteral("keys"), keys}}));
        });
    add(QStringLiteral("keys.revoke"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            FieldReader p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            if (p.failed())
                return reply(p.error());
            if (!m_keys->isAdmin(ctx.keyId))
                return reply(notAdmin());
            const QList<NewKey> all = m_keys->list();
            const bool lastAdmin = m_keys->isAdmin(id)
                                   && std::count_if(all.begin(), all.end(), [](const NewKey &k) {
                                          return k.admin;
                                      }) == 1;
            if (lastAdmin)
                return reply(
                    Error::invalidParams(QStringLiteral("id"),
                                         QStringLiteral("the last admin key cannot be revoked")));
            const auto revoked = m_keys->revoke(id);
            if (!revoked)
                return reply(revoked.error());
            if (!*revoked)
                return reply(Error::notFound(QStringLiteral("key %1").arg(id)));
            m_sandboxes->removeAllOf(id);
            Q_EMIT keyRevoked(id);
            reply(QJsonValue(
                QJsonObject{{QStringLiteral("id"), id}, {QStringLiteral("revoked"), true}}));
        });
}

// stream.cancel (stream.resume and rpc.cancel belong to the connection: see RpcSession).
void Methods::addStreamMethods()
{
    add(QStringLiteral("stream.cancel"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            FieldReader p(params);
            const QString id = p.requiredString(QStringLiteral("streamId"));
            if (p.failed())
                return reply(p.error());
            const auto r = m_streams->cancel(ctx.keyId, id);
            if (!r)
                return reply(r.error());
            reply(QJsonValue(QJsonObject{{QStringLiteral("streamId"), id},
                                         {QStringLiteral("cancelled"), true}}));
        });
}

bool Methods::isAdmin(const QString &keyId) const
{
    return m_keys->isAdmin(keyId);
}

void Methods::add(const QString &name, Handler handler)
{
    m_handlers.emplace(name, std::move(handler));
}

Result<bool> Methods::admitPolicy(const NetworkPolicy &policy, const CallContext &context) const
{
    return SandboxNetwork::checkPolicy(policy, m_keys->isAdmin(context.keyId));
}

void Methods::call(const QString &method, const QJsonObject &params, const CallContext &context,
                   Reply reply)
{
    const auto it = m_handlers.constFind(method);
    if (it == m_handlers.constEnd())
        return reply(Error{ErrorCode::MethodNotFound,
                           QStringLiteral("Method not found: %1").arg(method),
                           {}});
    (*it)(params, context, reply);
}

void Methods::addSandboxMethods(const QString &prefix, const QString &kind)
{
    const auto idOnly = [](const QJsonObject &params, QString *id) -> std::optional<Error> {
        FieldReader p(params);
        *id = p.requiredString(QStringLiteral("id"));
        if (p.failed())
            return p.error();
        return std::nullopt;
    };
    const QString getName = kind.isEmpty() ? QStringLiteral("status") : QStringLiteral("get");
    add(prefix + getName, [this, kind, idOnly](const QJsonObject &params, const CallContext &ctx,
                                               const Reply &reply) {
        QString id;
        if (const auto e = idOnly(params, &id))
            return reply(*e);
        reply(toValue(m_sandboxes->info(ctx.keyId, id, kind)));
    });
    for (const QString &verb :
         {QStringLiteral("stop"), QStringLiteral("start"), QStringLiteral("delete")}) {
        add(prefix + verb, [this, kind, verb, idOnly](const QJsonObject &params,
                                                      const CallContext &ctx, const Reply &reply) {
            QString id;
            if (const auto e = idOnly(params, &id))
                return reply(*e);
            QObject *context = ctx.guard ? ctx.guard.data() : this;
            if (verb == QLatin1String("stop"))
                m_sandboxes->stop(ctx.keyId, id, kind, context, forward(reply));
            else if (verb == QLatin1String("start"))
                m_sandboxes->start(ctx.keyId, id, kind, context, forward(reply));
            else
                m_sandboxes->remove(ctx.keyId, id, kind, context, forward(reply));
        });
    }
    add(prefix + QStringLiteral("setName"),
        [this, kind](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            reply(toValue(setName(kind, params, ctx)));
        });
    add(prefix + QStringLiteral("exec"),
        [this, kind](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            exec(kind, params, ctx, reply);
        });
    static const char *const fileMethods[][2] = {
        {"writeFile", "writeFile"}, {"readFile", "readFile"}, {"listFiles", "list"},
        {"mkdir", "mkdir"},         {"deleteFile", "delete"}, {"stat", "stat"},
        {"rename", "rename"},
    };
    for (const auto &[method, op] : fileMethods) {
        const QString opName = QLatin1String(op);
        add(prefix + QLatin1String(method),
            [this, kind, opName](const QJsonObject &params, const CallContext &ctx,
                                 const Reply &reply) { fileOp(kind, opName, params, ctx, reply); });
    }
}

Result<QJsonObject> Methods::setName(const QString &kind, const QJsonObject &params,
                                     const CallContext &ctx)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    if (p.failed())
        return p.error();
    if (!p.raw(QStringLiteral("name")).isString())
        return Error::invalidParams(QStringLiteral("name"),
                                    QStringLiteral("name must be a string (\"\" clears it)"));
    const QString name = p.optionalName(QStringLiteral("name")).trimmed();
    if (p.failed())
        return p.error();
    return m_sandboxes->setName(ctx.keyId, id, kind, name);
}

namespace {

// `command`: a shell command line or an argv. The kernel's own limits (one argument, the whole
// argv) are checked here, so that the answer is a clear -32602 rather than E2BIG inside the
// sandbox.
void readCommand(FieldReader &p, QJsonObject &request)
{
    const QJsonValue command = p.raw(QStringLiteral("command"));
    const QJsonArray argv = command.toArray();
    const bool argvOk = !argv.isEmpty()
                        && std::all_of(argv.begin(), argv.end(), [](const QJsonValue &v) {
                               return v.isString() && !v.toString().contains(QChar(0));
                           });
    qsizetype argvBytes = 0, longestArgument = 0;
    for (const QJsonValue &v : argv) {
        const qsizetype n = v.toString().toUtf8().size();
        longestArgument = qMax(longestArgument, n);
        argvBytes += n + 1 + qsizetype(sizeof(char *));
    }
    if (command.isString())
        longestArgument = command.toString().toUtf8().size();
    if (command.isString() && !command.toString().trimmed().isEmpty()
        && !command.toString().contains(QChar(0))
        && longestArgument <= FieldReader::MaxArgumentBytes)
        request.insert(QStringLiteral("shell"), command);
    else if (command.isArray() && argvOk && !argv.first().toString().isEmpty()
             && longestArgument <= FieldReader::MaxArgumentBytes
             && argvBytes <= FieldReader::MaxArgvBytes)
        request.insert(QStringLiteral("argv"), command);
    else if (!p.failed() && longestArgument > FieldReader::MaxArgumentBytes)
        p.fail(QStringLiteral("command"),
               QStringLiteral("one argument (or the shell command) must be at most %1 bytes")
                   .arg(FieldReader::MaxArgumentBytes));
    else if (!p.failed() && argvBytes > FieldReader::MaxArgvBytes)
        p.fail(QStringLiteral("command"), QStringLiteral("argv must be at most %1 KiB in all")
                                              .arg(FieldReader::MaxArgvBytes / 1024));
    else if (!p.failed())
        p.fail(QStringLiteral("command"),
               QStringLiteral("must be a non-empty string or a non-empty array of strings"));
}

// A terminal (4.8): always streamed, no output cap (its window bounds it), no timeout unless one
// is given (an idle terminal is hung up instead).
void readPty(FieldReader &o, const CallContext &ctx, bool hasStdin, QJsonObject &request)
{
    FieldReader pty(o.optionalObject(QStringLiteral("pty")), QStringLiteral("options.pty"));
    const QString term = pty.optionalString(QStringLiteral("term"),
                                            QStringLiteral("xterm-256color"));
    static const QRegularExpression termRe(QStringLiteral("^[A-Za-z0-9._+-]{1,64}$"));
    if (!termRe.match(term).hasMatch())
        pty.fail(QStringLiteral("term"),
                 QStringLiteral("must be a terminal name such as xterm-256color"));
    request.insert(QStringLiteral("pty"),
                   QJsonObject{{QStringLiteral("cols"),
                                double(pty.optionalInteger(QStringLiteral("cols"), 80, 1, 1000))},
                               {QStringLiteral("rows"),
                                double(pty.optionalInteger(QStringLiteral("rows"), 24, 1, 500))},
                               {QStringLiteral("term"), term}});
    o.merge(pty);
    if (!o.failed() && hasStdin)
        o.fail(QStringLiteral("stdin"), QStringLiteral("cannot be given with pty"));
    if (!o.failed() && !ctx.notify)
        o.fail(QStringLiteral("pty"),
               QStringLiteral("needs the WebSocket (/rpc): a terminal is a stream"));
    if (!o.has(QStringLiteral("timeout")))
        request.insert(QStringLiteral("timeoutMs"), 0);
    request.remove(QStringLiteral("maxOutputBytes"));
}

// A finished command's answer (docs/protocol.md 4.3).
QJsonObject execResult(const QJsonObject &j, const ExecState &state)
{
    QJsonObject result{
        {QStringLiteral("exitCode"), j.value(QStringLiteral("exitCode"))},
        {QStringLiteral("signal"), j.value(QStringLiteral("signal"))},
        {QStringLiteral("stdout"), QString::fromUtf8(state.out)},
        {QStringLiteral("stderr"), QString::fromUtf8(state.err)},
        {QStringLiteral("durationMs"), j.value(QStringLiteral("durationMs"))},
        {QStringLiteral("truncated"), j.value(QStringLiteral("truncated")).toBool()},
        {QStringLiteral("timedOut"), j.value(QStringLiteral("timedOut")).toBool()},
        {QStringLiteral("streamId"),
         state.streamId.isEmpty() ? QJsonValue() : QJsonValue(state.streamId)},
    };
    if (result.value(QStringLiteral("signal")).isUndefined())
        result.insert(QStringLiteral("signal"), QJsonValue());
    return result;
}

} // namespace

// An exec's parameters, read: the supervisor's request and how the answer goes back.
struct Methods::ExecCall
{
    QString id;
    QJsonObject request;
    bool stream = false; // the output as stream notifications (over /rpc only)
    bool hasStdin = false;
    bool hasPty = false; // a terminal: TerminalHub runs it
    QByteArray stdinBytes;
};

Result<Methods::ExecCall> Methods::readExec(const QJsonObject &params, const CallContext &ctx)
{
    ExecCall call;
    FieldReader p(params);
    call.id = p.requiredString(QStringLiteral("id"));
    call.request = QJsonObject{{QStringLiteral("op"), QStringLiteral("exec")}};
    readCommand(p, call.request);

    FieldReader o(p.optionalObject(QStringLiteral("options")), QStringLiteral("options"));
    QJsonObject &request = call.request;
    request.insert(QStringLiteral("cwd"),
                   o.optionalPath(QStringLiteral("cwd"), QStringLiteral("/workspace")));
    request.insert(QStringLiteral("timeoutMs"),
                   double(o.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1,
                                            kMaxTimeoutMs)));
    QJsonObject env;
    const auto envMap = o.optionalEnv(QStringLiteral("env"));
    for (auto it = envMap.cbegin(); it != envMap.cend(); ++it)
        env.insert(it.key(), it.value());
    request.insert(QStringLiteral("env"), env);
    request.insert(QStringLiteral("maxOutputBytes"),
                   double(o.optionalInteger(QStringLiteral("maxOutputBytes"), kDefaultMaxOutput, 0,
                                            kMaxOutput)));
    call.stream = o.optionalBool(QStringLiteral("stream"), false) && ctx.notify;
    call.hasStdin = o.has(QStringLiteral("stdin"));
    call.hasPty = o.has(QStringLiteral("pty")) && !o.raw(QStringLiteral("pty")).isNull();
    if (call.hasPty)
        readPty(o, ctx, call.hasStdin, request);
    call.stdinBytes = o.optionalString(QStringLiteral("stdin")).toUtf8();
    request.insert(QStringLiteral("stdin"), call.hasStdin);
    p.merge(o);
    if (p.failed())
        return p.error();
    return call;
}

void Methods::exec(const QString &kind, const QJsonObject &params, const CallContext &ctx,
                   const Reply &reply)
{
    const auto read = readExec(params, ctx);
    if (!read)
        return reply(read.error());
    if (read->hasPty)
        return m_terminals->start(read->id, kind, read->request, ctx, reply);

    QObject *context = ctx.guard ? ctx.guard.data() : this;
    m_sandboxes->withSupervisor(ctx.keyId, read->id, kind, context,
                                [this, call = *read, c = ctx, reply](Result<SupervisorChannel *> r) {
                                    if (!r)
                                        return reply(r.error());
                                    runExec(r.value(), call, c, reply);
                                });
}

void Methods::runExec(SupervisorChannel *channel, const ExecCall &call, const CallContext &c,
                      const Reply &reply)
{
    auto state = std::make_shared<ExecState>();
    state->channel = channel;
    if (call.stream)
        state->streamId = m_streams->open(c.keyId, c.requestId, c.notify,
                                          [state] { state->cancel(); });
    if (!state->streamId.isEmpty())
        m_streams->setSinkOwner(state->streamId, c.connection);
    *c.onCancel = [state] { state->cancel(); };
    // A stream's output is read by the engine from the command's pipes (PROTOCOL.md,
    // "Output pipes"), one copy and no hop through the supervisor, and only as fast as
    // the connection that follows it takes it: the engine holds a bounded amount of it,
    // however slowly that reads.
    QJsonObject execRequest = call.request;
    if (!state->streamId.isEmpty()) {
        // (On a kernel that cannot read a pipe without waiting, through the supervisor,
        // paced by WINDOW frames.)
        execRequest.insert(m_pipedStreams ? QStringLiteral("pipes") : QStringLiteral("window"),
                           true);
        m_streams->setWindow(state->streamId, [state](qint64 bytes) {
            if (state->channel && state->execId)
                state->channel->acknowledge(state->execId, quint32(bytes));
        });
    }

    const auto onOutput = [this, state](int channel, OutputBytes bytes) {
        if (!state->streamId.isEmpty())
            m_streams->output(state->streamId, channel, bytes);
        else
            (channel == 2 ? state->err : state->out).append(bytes.view());
    };
    const auto onReply = [this, id = call.id, state, reply](Result<SupervisorChannel::Reply> r) {
        m_sandboxes->endActivity(id);
        if (!r) {
            if (!state->streamId.isEmpty())
                m_streams->end(state->streamId, {{QStringLiteral("error"), r.error().toJson()}});
            return reply(r.error());
        }
        if (state->cancelled || r->json.value(QStringLiteral("cancelled")).toBool()) {
            const Error e{ErrorCode::Cancelled, QStringLiteral("the command was cancelled"), {}};
            if (!state->streamId.isEmpty())
                m_streams->end(state->streamId, {{QStringLiteral("error"), e.toJson()}});
            return reply(e);
        }
        const QJsonObject result = execResult(r->json, *state);
        if (!state->streamId.isEmpty())
            m_streams->end(state->streamId, {{QStringLiteral("result"), result}});
        reply(QJsonValue(result));
    };
    state->execId = state->channel->request(execRequest, {}, onReply, onOutput);
    if (call.hasStdin) {
        if (!call.stdinBytes.isEmpty())
            state->channel->sendStdin(state->execId, call.stdinBytes);
        state->channel->sendStdin(state->execId, {});
    }
}

namespace {

bool readsBase64(FieldReader &p)
{
    return p.optionalChoice(QStringLiteral("encoding"),
                            {QStringLiteral("utf8"), QStringLiteral("base64")},
                            QStringLiteral("utf8"))
           == QLatin1String("base64");
}

// writeFile's content (UTF-8 text or base64) and how it is written. An error only when the
// content is over the limit; the others are p's.
std::optional<Error> readWriteFile(FieldReader &p, QJsonObject &request, QByteArray &data)
{
    const bool base64 = readsBase64(p);
    const QJsonValue content = p.raw(QStringLiteral("content"));
    if (!content.isString()) {
        p.fail(QStringLiteral("content"), QStringLiteral("must be a string"));
    } else if (base64) {
        auto decoded = QByteArray::fromBase64Encoding(content.toString().toLatin1(),
                                                      QByteArray::AbortOnBase64DecodingErrors);
        if (!decoded)
            p.fail(QStringLiteral("content"), QStringLiteral("is not valid base64"));
        data = std::move(decoded.decoded);
    } else {
        data = content.toString().toUtf8();
    }
    if (data.size() > kMaxFileBytes)
        return Error{ErrorCode::PayloadTooLarge,
                     QStringLiteral("a file of %1 bytes is over the limit of %2 bytes per call")
                         .arg(data.size())
                         .arg(kMaxFileBytes),
                     {}};
    // Missing parent directories are created unless the caller says `parents: false` (as
    // E2B's files.write does).
    request.insert(QStringLiteral("parents"), p.optionalBool(QStringLiteral("parents"), true));
    request.insert(QStringLiteral("append"), p.optionalBool(QStringLiteral("append"), false));
    if (p.has(QStringLiteral("mode")))
        request.insert(QStringLiteral("mode"),
                       double(p.optionalInteger(QStringLiteral("mode"), 0644, 0, 07777)));
    return std::nullopt;
}

// A file method's parameters, read: the supervisor's request and the bytes to write.
struct FileCall
{
    QString id;
    QJsonObject request;
    QByteArray data;
    bool wantBase64 = false; // readFile: base64 even when the content is UTF-8
};

Result<FileCall> readFileOp(const QString &op, const QJsonObject &params)
{
    FileCall call;
    FieldReader p(params);
    call.id = p.requiredString(QStringLiteral("id"));
    QJsonObject &request = call.request;
    request.insert(QStringLiteral("op"), op);
    if (op == QLatin1String("rename")) {
        request.insert(QStringLiteral("from"), p.requiredPath(QStringLiteral("from")));
        request.insert(QStringLiteral("to"), p.requiredPath(QStringLiteral("to")));
    } else if (op == QLatin1String("list")) {
        request.insert(QStringLiteral("path"),
                       p.optionalPath(QStringLiteral("path"), QStringLiteral("/workspace")));
        request.insert(QStringLiteral("recursive"),
                       p.optionalBool(QStringLiteral("recursive"), false));
    } else {
        request.insert(QStringLiteral("path"), p.requiredPath(QStringLiteral("path")));
    }
    if (op == QLatin1String("readFile")) {
        call.wantBase64 = readsBase64(p);
        request.insert(QStringLiteral("offset"),
                       double(p.optionalInteger(QStringLiteral("offset"), 0, 0,
                                                std::numeric_limits<qint64>::max() / 2)));
        request.insert(QStringLiteral("length"),
                       double(p.optionalInteger(QStringLiteral("length"), kMaxFileBytes, 0,
                                                kMaxFileBytes)));
    } else if (op == QLatin1String("writeFile")) {
        if (auto tooLarge = readWriteFile(p, request, call.data))
            return *std::move(tooLarge);
    } else if (op == QLatin1String("mkdir")) {
        request.insert(QStringLiteral("parents"), p.optionalBool(QStringLiteral("parents"), false));
    } else if (op == QLatin1String("delete")) {
        request.insert(QStringLiteral("recursive"),
                       p.optionalBool(QStringLiteral("recursive"), false));
    }
    if (p.failed())
        return p.error();
    return call;
}

// The supervisor's answer, with readFile's content and encoding, or delete's `deleted`.
QJsonObject fileResult(const QString &op, bool wantBase64, const SupervisorChannel::Reply &r)
{
    QJsonObject result = r.json;
    if (op == QLatin1String("readFile")) {
        const bool utf8 = !wantBase64 && Utf8::isValid(r.data);
        result.insert(QStringLiteral("content"),
                      utf8 ? QString::fromUtf8(r.data) : QString::fromLatin1(r.data.toBase64()));
        result.insert(QStringLiteral("encoding"),
                      utf8 ? QStringLiteral("utf8") : QStringLiteral("base64"));
    } else if (op == QLatin1String("delete")) {
        result.insert(QStringLiteral("deleted"), true);
    }
    return result;
}

} // namespace

void Methods::fileOp(const QString &kind, const QString &op, const QJsonObject &params,
                     const CallContext &ctx, const Reply &reply)
{
    const auto read = readFileOp(op, params);
    if (!read)
        return reply(read.error());
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    m_sandboxes->withSupervisor(ctx.keyId, read->id, kind, context,
                                [this, call = *read, op, reply](Result<SupervisorChannel *> r) {
                                    if (!r)
                                        return reply(r.error());
                                    r.value()->request(call.request, call.data,
                                                       [this, id = call.id, op,
                                                        wantBase64 = call.wantBase64,
                                                        reply](Result<SupervisorChannel::Reply> r) {
                                                           m_sandboxes->endActivity(id);
                                                           if (!r)
                                                               return reply(r.error());
                                                           reply(QJsonValue(
                                                               fileResult(op, wantBase64, *r)));
                                                       });
                                });
}

void Methods::cloneRepo(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString url = p.requiredString(QStringLiteral("url"));
    FieldReader o(p.optionalObject(QStringLiteral("options")), QStringLiteral("options"));
    const QString branch = o.optionalString(QStringLiteral("branch"));
    const bool shallow = o.optionalBool(QStringLiteral("shallow"), false);
    QString path = o.optionalPath(QStringLiteral("path"));
    p.merge(o);
    const bool schemeOk = url.startsWith(QLatin1String("https://"))
                          || url.startsWith(QLatin1String("http://"))
                          || url.startsWith(QLatin1String("ssh://"))
                          || url.startsWith(QLatin1String("git://"));
    if (!p.failed() && !schemeOk)
        p.fail(QStringLiteral("url"), QStringLiteral("must be an https, http, ssh or git URL"));
    if (!p.failed() && branch.startsWith(u'-'))
        p.fail(QStringLiteral("options.branch"), QStringLiteral("must not start with '-'"));
    if (p.failed())
        return reply(p.error());
    // The clone goes through the egress proxy: a policy that denies the host makes git fail
    // with the proxy's reason.
    const auto info = m_sandboxes->info(ctx.keyId, id, kAgent);
    if (!info)
        return reply(info.error());
    if (path.isEmpty()) {
        QString name = url.section(u'/', -1);
        if (name.endsWith(QLatin1String(".git")))
            name.chop(4);
        path = QStringLiteral("/workspace/") + (name.isEmpty() ? QStringLiteral("repo") : name);
    }
    QJsonArray argv{QStringLiteral("git"), QStringLiteral("clone")};
    if (shallow)
        argv << QStringLiteral("--depth") << QStringLiteral("1");
    if (!branch.isEmpty())
        argv << QStringLiteral("--branch") << branch;
    argv << QStringLiteral("--") << url << path;
    exec(kAgent,
         {{QStringLiteral("id"), id},
          {QStringLiteral("command"), argv},
          {QStringLiteral("options"), QJsonObject{{QStringLiteral("timeout"), 600000}}}},
         ctx, reply);
}

} // namespace Sandbox::Engine
