#include "agentservice.h"

#include "agentcliinstaller.h"
#include "doctor/agentclis.h"
#include "protocol/fieldreader.h"
#include "protocol/sandboxenums.h"
#include "runtime/fsuidguard.h"
#include "runtime/hostfs.h"
#include "runtime/offloop.h"
#include "runtime/sandboxprocess.h"
#include "runtime/supervisorchannel.h"
#include "runtime/workspacevolume.h"
#include "secretredactor.h"
#include "service/sandboxmanager.h"
#include "service/sandboxnetwork.h"
#include "service/streamhub.h"
#include "state/runstore.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QRegularExpression>
#include <QSaveFile>
#include <QUrl>

#include <fcntl.h>
#include <unistd.h>

#include <utility>

Q_LOGGING_CATEGORY(lcAgents, "sandboxd.agents")

namespace Sandbox::Engine {

namespace {

const QString kAgent = QStringLiteral("agent");
constexpr qint64 kDefaultTimeoutMs = 600000;
constexpr qint64 kMaxTimeoutMs = 3600000;
constexpr qsizetype kMaxPromptChars = 1024 * 1024;
constexpr qsizetype kMaxSystemPromptChars = 256 * 1024;
constexpr qint64 kMaxCliOutput = 64 * 1024 * 1024; // read and parsed; the answer keeps less
constexpr qsizetype kKeptStdout = 1024 * 1024;
constexpr qsizetype kKeptStderr = 16 * 1024;
constexpr int kMaxConversationTurns = 100;
constexpr int kDefaultRunsListed = 100;
constexpr int kDefaultEventsListed = 1000;
constexpr int kMaxEventsListed = 10000;

QStringList stringList(FieldReader &p, const QString &name)
{
    QStringList out;
    const QJsonValue v = p.raw(name);
    if (v.isUndefined() || v.isNull())
        return out;
    const QJsonArray a = v.toArray();
    const bool ok = v.isArray() && a.size() <= 200
                    && std::all_of(a.begin(), a.end(), [](const QJsonValue &e) {
                           static const QRegularExpression re(
                               QStringLiteral("^[A-Za-z0-9_.:()*,/ -]{1,200}$"));
                           return e.isString() && re.match(e.toString()).hasMatch();
                       });
    if (!ok) {
        p.fail(name, QStringLiteral("must be an array of tool names"));
        return out;
    }
    for (const QJsonValue &e : a)
        out.append(e.toString());
    return out;
}

// Reads `options` of agents.run (docs/protocol.md, 4.7) into `o`; answers false with the error.
bool readRunOptions(FieldReader &p, const QJsonObject &object, AgentRunOptions &o,
                    qint64 &timeoutMs, bool &newSession, bool &cwdGiven)
{
    FieldReader opt(object, QStringLiteral("options"));
    o.model = opt.optionalString(QStringLiteral("model"));
    o.permissionMode = opt.optionalChoice(QStringLiteral("permissionMode"),
                                          {QStringLiteral("default"), QStringLiteral("acceptEdits"),
                                           QStringLiteral("bypassPermissions"),
                                           QStringLiteral("plan")},
                                          QStringLiteral("bypassPermissions"));
    o.maxThinkingTokens = opt.optionalInteger(QStringLiteral("maxThinkingTokens"), -1, 0, 1000000);
    o.systemPrompt = opt.optionalString(QStringLiteral("systemPrompt"));
    if (o.systemPrompt.size() > kMaxSystemPromptChars)
        opt.fail(QStringLiteral("systemPrompt"),
                 QStringLiteral("must be at most %1 characters").arg(kMaxSystemPromptChars));
    o.allowedTools = stringList(opt, QStringLiteral("allowedTools"));
    o.disallowedTools = stringList(opt, QStringLiteral("disallowedTools"));
    timeoutMs = opt.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1, kMaxTimeoutMs);
    o.sessionId = opt.optionalString(QStringLiteral("sessionId"));
    static const QRegularExpression sessionRe(QStringLiteral("^[A-Za-z0-9_.-]{1,200}$"));
    if (!o.sessionId.isEmpty() && !sessionRe.match(o.sessionId).hasMatch())
        opt.fail(QStringLiteral("sessionId"),
                 QStringLiteral("must be letters, digits, '_', '.' or '-'"));
    newSession = opt.optionalBool(QStringLiteral("newSession"), false);
    cwdGiven = opt.has(QStringLiteral("cwd"));
    o.cwd = opt.optionalPath(QStringLiteral("cwd"), QStringLiteral("/workspace"));
    if (!o.cwd.startsWith(QLatin1String("/workspace")))
        o.cwd = QStringLiteral("/workspace/") + o.cwd;
    o.baseUrl = opt.optionalString(QStringLiteral("baseUrl"));
    if (!o.baseUrl.isEmpty()) {
        const QUrl url(o.baseUrl, QUrl::StrictMode);
        if (!url.isValid()
            || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https"))
            || url.host().isEmpty())
            opt.fail(QStringLiteral("baseUrl"), QStringLiteral("must be an http or https URL"));
    }
    if (opt.has(QStringLiteral("provider")))
        o.provider = opt.optionalChoice(QStringLiteral("provider"),
                                        {QStringLiteral("openai"), QStringLiteral("anthropic"),
                                         QStringLiteral("ollama")},
                                        QStringLiteral("openai"));
    o.env = opt.optionalEnv(QStringLiteral("env"));
    p.merge(opt);
    return !p.failed();
}

QJsonObject failureResult(const QString &reason, const QString &sessionId = {})
{
    return {{QStringLiteral("success"), false},
            {QStringLiteral("result"), QString()},
            {QStringLiteral("stdout"), QString()},
            {QStringLiteral("sessionId"),
             sessionId.isEmpty() ? QJsonValue() : QJsonValue(sessionId)},
            {QStringLiteral("usage"), QJsonObject{}},
            {QStringLiteral("costUsd"), QJsonValue()},
            {QStringLiteral("durationMs"), 0},
            {QStringLiteral("exitCode"), QJsonValue()},
            {QStringLiteral("timedOut"), false},
            {QStringLiteral("error"), reason},
            {QStringLiteral("needsInput"), QJsonValue()}};
}

} // namespace

// One request's work: a run, a conversation or a run on a repository. Registered per sandbox.
struct AgentService::Job
{
    QString sandboxId;
    QString keyId;
    QString type;
    QString streamId;
    QString runId; // in the RunStore
    SandboxRecord record;
    SecretRedactor redactor;
    QPointer<QObject> context;
    bool cancelled = false;
    QString cancelReason;
    // The exec running now, if any.
    QPointer<SupervisorChannel> channel;
    quint32 execId = 0;
    bool gatewayRun = false; // the gateway holds this run's endpoint and keys
    int turn = 0;

    void cancel(const QString &why)
    {
        if (cancelled)
            return;
        cancelled = true;
        cancelReason = why;
        if (channel && execId)
            channel->cancel(execId);
    }
};

AgentService::AgentService(SandboxManager *sandboxes, StreamHub *streams, Methods *methods,
                           QStringList agentsDirs, QObject *parent)
    : QObject(parent)
    , m_sandboxes(sandboxes)
    , m_streams(streams)
    , m_methods(methods)
    , m_agentsDirs(std::move(agentsDirs))
{
    {
        const EngineConfig &config = m_sandboxes->config();
        AgentCliInstaller::Config c;
        c.installDir = AgentClis::installDir(config.dataDir);
        // As root npm runs as a uid of its own, just below the sandboxes' (docs/protocol.md 4.7.3).
        c.dropPrivileges = config.dropPrivileges;
        c.uid = config.dropPrivileges ? config.uidBase - 1 : ::getuid();
        c.gid = config.dropPrivileges ? gid_t(c.uid) : ::getgid();
        m_installer = new AgentCliInstaller(c, this);
    }
    if (auto store = RunStore::open(m_sandboxes->config().dataDir + QStringLiteral("/runs.db")))
        m_runs = std::move(store).value();
    else
        qCWarning(lcAgents).noquote() << "agent runs will not be kept:" << store.error().message;
    installHooks();
    // The agents.* methods of docs/protocol.md 4.7 that this service answers, each by a member.
    using Handler = void (AgentService::*)(const QJsonObject &, const CallContext &,
                                           const Methods::Reply &);
    const std::pair<const char *, Handler> handlers[] = {
        {"agents.installCli", &AgentService::installCli},
        {"agents.clis", &AgentService::listClis},
        {"agents.runs", &AgentService::listRuns},
        {"agents.runEvents", &AgentService::runEvents},
        {"agents.runChanges", &AgentService::runChanges},
        {"agents.revertFile", &AgentService::revertFile},
        {"agents.run", &AgentService::run},
        {"agents.runConversation", &AgentService::runConversation},
        {"agents.runOnRepo", &AgentService::runOnRepo},
        {"agents.stop", &AgentService::stop},
    };
    for (const auto &method : handlers)
        m_methods->add(QString::fromLatin1(method.first),
                       [this, handler = method.second](const QJsonObject &p, const CallContext &c,
                                                       const Methods::Reply &r) {
                           (this->*handler)(p, c, r);
                       });
}

AgentService::~AgentService()
{
    for (const auto &job : std::as_const(m_jobs)) {
        job->cancel(QStringLiteral("the engine is shutting down"));
        if (m_runs && !job->runId.isEmpty())
            m_runs->finish(job->runId, QStringLiteral("interrupted"), {},
                           Error{ErrorCode::Cancelled, job->cancelReason, {}}.toJson());
    }
}

QString AgentService::cliDir(const QString &type) const
{
    const auto pin = AgentClis::pin(type);
    return pin ? AgentClis::find(m_agentsDirs, *pin) : QString();
}

void AgentService::installHooks()
{
    for (const QString &type : AgentAdapter::types()) {
        SandboxTypeHooks hooks;
        hooks.prepare = [this, type](SandboxSpec &spec, const SandboxRecord &record) {
            const QString dir = cliDir(type);
            if (!dir.isEmpty())
                spec.extraMounts.append({dir, QLatin1String(AgentAdapter::CliDir), false});
            // A sandbox started before its CLI was installed has none until it starts again.
            if (!dir.isEmpty())
                m_startedWithoutCli.remove(record.id);
            else if (!record.id.isEmpty())
                m_startedWithoutCli.insert(record.id);
            if (dir.isEmpty())
                qCInfo(lcAgents) << "the" << type << "CLI is not installed yet in any of"
                                 << m_agentsDirs << "(agents.installCli installs it)";
            // The agent's home (sessions, its own config) persists with the sandbox, outside
            // /workspace so that it does not clutter the user's files, on the sandbox's disk
            // (WorkspaceVolume makes it).
            spec.extraMounts.append(
                {WorkspaceVolume::treePath(spec.volumeDir, WorkspaceVolume::Tree::Home),
                 QLatin1String(AgentAdapter::HomeDir), true});
        };
        // The CLI's mount and the home directory are the same for every sandbox of the type.
        hooks.poolable = true;
        hooks.removed = [this](const SandboxRecord &record) {
            if (const auto job = m_jobs.value(record.id))
                job->cancel(QStringLiteral("the sandbox was deleted"));
            m_startedWithoutCli.remove(record.id);
            if (m_runs)
                m_runs->removeSandbox(record.id);
        };
        m_sandboxes->setTypeHooks(type, hooks);
    }
}

Result<std::shared_ptr<AgentService::Job>> AgentService::beginJob(const QString &id,
                                                                  const CallContext &ctx,
                                                                  const QString &method,
                                                                  const QStringList &prompts,
                                                                  const QJsonObject &options)
{
    auto record = m_sandboxes->record(ctx.keyId, id, kAgent);
    if (!record)
        return record.error();
    if (m_jobs.contains(id))
        return Error{ErrorCode::AlreadyExists,
                     QStringLiteral(
                         "sandbox %1 is already running a prompt; wait for it or stop it first")
                         .arg(id),
                     QJsonObject{{QStringLiteral("id"), id}}};
    if (cliDir(record->type).isEmpty()) {
        const auto pin = AgentClis::pin(record->type);
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("%1 is not installed on this engine yet: install it with "
                                    "agents.installCli (sandboxctl agents install-cli %2)")
                         .arg(pin ? pin->name : record->type, record->type),
                     QJsonObject{{QStringLiteral("reason"), QStringLiteral("cliMissing")},
                                 {QStringLiteral("type"), record->type}}};
    }
    if (m_startedWithoutCli.contains(id)
        && fromWire<SandboxStatus>(record->status) == SandboxStatus::Running) {
        const auto pin = AgentClis::pin(record->type);
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("sandbox %1 started before %2 was installed: restart it "
                                    "(agents.stop, then agents.start) to give it the CLI")
                         .arg(id, pin ? pin->name : record->type),
                     QJsonObject{{QStringLiteral("reason"), QStringLiteral("restartForCli")},
                                 {QStringLiteral("type"), record->type}}};
    }
    auto job = std::make_shared<Job>();
    job->sandboxId = id;
    job->keyId = ctx.keyId;
    job->type = record->type;
    job->record = record.value();
    job->context = ctx.guard ? ctx.guard.data() : static_cast<QObject *>(this);
    job->redactor.addFromEnvironment(record->env);
    // The run's record keeps what was asked, never the run's own env (API keys).
    QMap<QString, QString> runEnv;
    const QJsonObject envObject = options.value(QStringLiteral("env")).toObject();
    for (auto it = envObject.begin(); it != envObject.end(); ++it)
        runEnv.insert(it.key(), it.value().toString());
    job->redactor.addFromEnvironment(runEnv);
    QJsonObject kept = options;
    kept.remove(QStringLiteral("env"));
    kept.remove(QStringLiteral("baseUrl"));
    kept = job->redactor.apply(kept).toObject();
    QStringList keptPrompts;
    for (const QString &p : prompts)
        keptPrompts.append(job->redactor.apply(p));
    if (ctx.notify) {
        std::weak_ptr<Job> weak = job;
        job->streamId = m_streams->open(ctx.keyId, ctx.requestId, ctx.notify, [weak] {
            if (auto j = weak.lock())
                j->cancel(QStringLiteral("the run was cancelled"));
        });
        m_streams->setSinkOwner(job->streamId, ctx.connection);
    }
    {
        std::weak_ptr<Job> weak = job;
        *ctx.onCancel = [weak] {
            if (auto j = weak.lock())
                j->cancel(QStringLiteral("the run was cancelled"));
        };
    }
    if (m_runs)
        job->runId = m_runs->begin({id, method, keptPrompts, kept, job->streamId});
    m_jobs.insert(id, job);
    return job;
}

void AgentService::endJob(const std::shared_ptr<Job> &job, Result<QJsonObject> result,
                          const Methods::Reply &reply)
{
    if (m_jobs.value(job->sandboxId) == job)
        m_jobs.remove(job->sandboxId);
    if (job->cancelled && (!result || !result->value(QStringLiteral("success")).toBool())) {
        result = Error{ErrorCode::Cancelled, job->cancelReason, {}};
    }
    if (m_runs && !job->runId.isEmpty()) {
        if (!result)
            m_runs->finish(job->runId,
                           result.error().code == ErrorCode::Cancelled ? QStringLiteral("cancelled")
                                                                       : QStringLiteral("failed"),
                           {}, job->redactor.apply(result.error().toJson()).toObject());
        else
            m_runs->finish(job->runId,
                           result->value(QStringLiteral("success")).toBool()
                               ? QStringLiteral("succeeded")
                               : QStringLiteral("failed"),
                           job->redactor.apply(result.value()).toObject());
    }
    if (!result) {
        if (!job->streamId.isEmpty())
            m_streams->end(job->streamId, {{QStringLiteral("error"),
                                            job->redactor.apply(result.error().toJson())}});
        return reply(result.error());
    }
    QJsonObject answer = job->redactor.apply(result.value()).toObject();
    answer.insert(QStringLiteral("streamId"),
                  job->streamId.isEmpty() ? QJsonValue() : QJsonValue(job->streamId));
    if (!job->streamId.isEmpty())
        m_streams->end(job->streamId, {{QStringLiteral("result"), answer}});
    reply(QJsonValue(answer));
}

Result<bool> AgentService::prepareHome(const SandboxRecord &record, const AgentAdapter &adapter,
                                       const AgentInvocation &inv) const
{
    // The home is the sandbox user's: everything below it is opened relative to it, one
    // component at a time, never through a link the sandbox put there, and with the sandbox's
    // own file permissions (so that even a mistake here could not reach a file of the host).
    const EngineConfig &config = m_sandboxes->config();
    const uid_t uid = config.dropPrivileges ? config.uidBase + uid_t(record.slot) : ::getuid();
    const gid_t gid = config.dropPrivileges ? gid_t(uid) : ::getgid();
    const auto fail = [](const QString &path, int err) {
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot prepare the agent's home: %1%2: %3")
                         .arg(QLatin1String(AgentAdapter::HomeDir), path,
                              err == -ELOOP ? QStringLiteral("a symbolic link is in the way")
                                            : HostFs::errorText(err)),
                     {}};
    };
    FsUidGuard guard(uid);
    HostFs::Fd volume(HostFs::openOwnDir(m_sandboxes->volumeDirOf(record.id)));
    if (!volume.isValid())
        return fail({}, volume.get());
    HostFs::Fd home(HostFs::openBeneath(volume.get(), "home", O_RDONLY | O_DIRECTORY));
    if (!home.isValid())
        return fail({}, home.get());
    for (const QString &dir : adapter.homeDirectories()) {
        HostFs::Fd fd(HostFs::ensureDirs(home.get(), QFile::encodeName(dir), 0700, uid, gid));
        if (!fd.isValid())
            return fail(u'/' + dir, fd.get());
    }
    for (auto it = inv.homeFiles.cbegin(); it != inv.homeFiles.cend(); ++it) {
        const QString dir = it.key().section(u'/', 0, -2);
        HostFs::Fd parent(HostFs::ensureDirs(home.get(), QFile::encodeName(dir), 0700, uid, gid));
        if (!parent.isValid())
            return fail(u'/' + dir, parent.get());
        // Replaced, never written through: a link planted at the name goes, its target stays.
        const int r = HostFs::writeFileAt(parent.get(),
                                          QFile::encodeName(it.key().section(u'/', -1)), it.value(),
                                          0600, uid, gid);
        if (r < 0)
            return fail(u'/' + it.key(), r);
    }
    return true;
}

void AgentService::rememberSession(const QString &sandboxId, const QString &sessionId,
                                   const QString &cwd) const
{
    if (sessionId.isEmpty())
        return;
    const QString path = m_sandboxes->stateDirOf(sandboxId)
                         + QStringLiteral("/agent-sessions.json");
    QFile in(path);
    QJsonObject all;
    if (in.open(QIODevice::ReadOnly))
        all = QJsonDocument::fromJson(in.readAll()).object();
    in.close();
    QJsonObject cwds = all.value(QStringLiteral("cwd")).toObject();
    cwds.insert(sessionId, cwd);
    while (cwds.size() > 1000)
        cwds.remove(cwds.begin().key());
    all.insert(QStringLiteral("cwd"), cwds);
    all.insert(QStringLiteral("last"),
               QJsonObject{{QStringLiteral("sessionId"), sessionId}, {QStringLiteral("cwd"), cwd}});
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(QJsonDocument(all).toJson()) < 0
        || !out.commit())
        qCWarning(lcAgents) << "cannot write" << path;
}

QJsonObject AgentService::lastSession(const QString &sandboxId) const
{
    QFile in(m_sandboxes->stateDirOf(sandboxId) + QStringLiteral("/agent-sessions.json"));
    if (!in.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(in.readAll()).object();
}

// What a turn's CLI wrote that its answer keeps: the head of stdout, the tail of stderr.
struct AgentService::TurnOutput
{
    QByteArray out;
    QByteArray err;
    bool outTruncated = false;
    bool aborted = false;
    QElapsedTimer clock;
};

QMap<QString, QString> AgentService::runEnvironment(const std::shared_ptr<Job> &job,
                                                    AgentRunOptions &options)
{
    // The run sees the sandbox's environment; its own `env` goes on top (and is never stored).
    QMap<QString, QString> runEnv = options.env;
    QMap<QString, QString> env = job->record.env;
    for (auto it = runEnv.cbegin(); it != runEnv.cend(); ++it)
        env.insert(it.key(), it.value());
    options.env = env;
    job->redactor.addFromEnvironment(runEnv);
    if (m_network && m_network->hasGateway(job->record)) {
        // The model gateway takes the run's keys and endpoint; the CLI gets the gateway.
        const SandboxNetwork::RunEndpoint endpoint = m_network->beginRun(job->record, runEnv,
                                                                         options.baseUrl,
                                                                         options.provider);
        runEnv = endpoint.env;
        options.baseUrl = endpoint.baseUrl;
        job->gatewayRun = true;
    }
    return runEnv;
}

void AgentService::runTurn(const std::shared_ptr<Job> &job, AgentRunOptions options, int turn,
                           Done done)
{
    if (job->cancelled)
        return done(Error{ErrorCode::Cancelled, job->cancelReason, {}});
    job->turn = turn;
    const QMap<QString, QString> runEnv = runEnvironment(job, options);

    std::shared_ptr<AgentAdapter> adapter = AgentAdapter::create(job->type);
    const AgentInvocation inv = adapter->invocation(options);

    QJsonObject execEnv;
    for (auto it = runEnv.cbegin(); it != runEnv.cend(); ++it)
        execEnv.insert(it.key(), it.value());
    for (auto it = inv.env.cbegin(); it != inv.env.cend(); ++it)
        execEnv.insert(it.key(), it.value());
    QJsonObject request{{QStringLiteral("op"), QStringLiteral("exec")},
                        {QStringLiteral("argv"), QJsonArray::fromStringList(inv.argv)},
                        {QStringLiteral("cwd"), options.cwd},
                        {QStringLiteral("env"), execEnv},
                        {QStringLiteral("maxOutputBytes"), double(kMaxCliOutput)},
                        {QStringLiteral("stdin"), false}};
    request.insert(QStringLiteral("timeoutMs"), double(options.timeoutMs));
    qCInfo(lcAgents).noquote() << "run" << job->type << "in" << job->sandboxId << "turn" << turn
                               << (options.sessionId.isEmpty()
                                       ? QStringLiteral("(new session)")
                                       : QStringLiteral("session ") + options.sessionId);

    const QString id = job->sandboxId;
    const QString cwd = options.cwd;
    m_sandboxes->withSupervisor(job->keyId, id, kAgent,
                                job->context.data() ? job->context.data() : this,
                                [this, job, adapter, inv, request, turn, cwd,
                                 done](Result<SupervisorChannel *> r) {
                                    startTurn(job, adapter, inv, request, turn, cwd, done,
                                              std::move(r));
                                });
}

void AgentService::startTurn(const std::shared_ptr<Job> &job,
                             const std::shared_ptr<AgentAdapter> &adapter,
                             const AgentInvocation &inv, const QJsonObject &request, int turn,
                             const QString &cwd, const Done &done, Result<SupervisorChannel *> r)
{
    const QString &id = job->sandboxId;
    if (!r) {
        if (job->gatewayRun && m_network)
            m_network->endRun(job->record);
        return done(r.error());
    }
    if (job->cancelled) {
        m_sandboxes->endActivity(id);
        if (job->gatewayRun && m_network)
            m_network->endRun(job->record);
        return done(Error{ErrorCode::Cancelled, job->cancelReason, {}});
    }
    // Now that the sandbox runs: its home lives on its disk image, mounted only then.
    if (const auto prepared = prepareHome(job->record, *adapter, inv); !prepared) {
        m_sandboxes->endActivity(id);
        if (job->gatewayRun && m_network)
            m_network->endRun(job->record);
        return done(prepared.error());
    }
    auto output = std::make_shared<TurnOutput>();
    output->clock.start();
    job->channel = r.value();
    const auto flush = [this, guard = QPointer<AgentService>(this), job, adapter, turn] {
        if (guard)
            publishEvents(job, *adapter, turn);
    };
    const auto onOutput = [job, adapter, output, flush](int channel, QByteArrayView bytes) {
        keepOutput(*output, *adapter, channel, bytes);
        flush();
        if (!adapter->abortReason().isEmpty() && !output->aborted && job->channel && job->execId) {
            output->aborted = true;
            qCInfo(lcAgents).noquote()
                << "stopping the run in" << job->sandboxId << ":" << adapter->abortReason();
            job->channel->cancel(job->execId);
        }
    };
    // The channel may answer while the engine shuts down, after this service is gone.
    QPointer<AgentService> self(this);
    // The workspace as the turn left it, recorded before the sandbox may sleep.
    const auto onReply = [this, self, job, adapter, output, flush, cwd, request,
                          done](Result<SupervisorChannel::Reply> r) {
        if (!self)
            return;
        recordWorkspace(job, TurnSnapshots::Phase::After, cwd,
                        [this, self, job, adapter, output, flush, cwd, request, done,
                         r = std::move(r)]() mutable {
                            if (self)
                                finishTurn(job, adapter, *output, flush, cwd, request, done,
                                           std::move(r));
                        });
    };
    const auto start = [job, request, onReply, onOutput] {
        if (job->cancelled)
            return onReply(Error{ErrorCode::Cancelled, job->cancelReason, {}});
        if (!job->channel)
            return onReply(Error{ErrorCode::SandboxNotRunning,
                                 QStringLiteral("the sandbox stopped before the run began"),
                                 {}});
        job->execId = job->channel->request(request, {}, onReply, onOutput);
    };
    if (turn == 0)
        recordWorkspace(job, TurnSnapshots::Phase::Before, cwd, start);
    else
        start();
}

void AgentService::publishEvents(const std::shared_ptr<Job> &job, AgentAdapter &adapter, int turn)
{
    for (QJsonObject e : adapter.takeEvents()) {
        e.insert(QStringLiteral("turn"), turn);
        const QJsonObject clean = job->redactor.apply(e).toObject();
        if (m_runs && !job->runId.isEmpty())
            m_runs->event(job->runId, clean);
        if (!job->streamId.isEmpty())
            m_streams->event(job->streamId, clean);
    }
}

void AgentService::keepOutput(TurnOutput &output, AgentAdapter &adapter, int channel,
                              QByteArrayView bytes)
{
    if (channel == 2) {
        adapter.feedStderr(bytes);
        output.err.append(bytes);
        if (output.err.size() > 2 * kKeptStderr)
            output.err = output.err.right(kKeptStderr);
    } else {
        adapter.feedStdout(bytes);
        if (output.out.size() < kKeptStdout)
            output.out.append(bytes.first(qMin(bytes.size(), kKeptStdout - output.out.size())));
        else
            output.outTruncated = true;
    }
}

void AgentService::finishTurn(const std::shared_ptr<Job> &job,
                              const std::shared_ptr<AgentAdapter> &adapter,
                              const TurnOutput &output, const std::function<void()> &flush,
                              const QString &cwd, const QJsonObject &request, const Done &done,
                              Result<SupervisorChannel::Reply> r)
{
    const QString &id = job->sandboxId;
    m_sandboxes->endActivity(id);
    if (job->gatewayRun && m_network)
        m_network->endRun(job->record);
    job->channel = nullptr;
    job->execId = 0;
    if (!r) {
        flush();
        return done(r.error());
    }
    const QJsonObject &j = r->json;
    AgentAdapter::Exit exit;
    exit.exitCode = j.value(QStringLiteral("exitCode")).toInt();
    exit.timedOut = j.value(QStringLiteral("timedOut")).toBool();
    exit.timeoutMs = qint64(request.value(QStringLiteral("timeoutMs")).toDouble());
    exit.durationMs = output.clock.elapsed();
    exit.stderrTail = QString::fromUtf8(output.err.right(kKeptStderr));
    QJsonObject result = adapter->finish(exit);
    flush();
    result.insert(QStringLiteral("stdout"), QString::fromUtf8(output.out));
    if (output.outTruncated)
        result.insert(QStringLiteral("stdoutTruncated"), true);
    rememberSession(id, adapter->sessionId(), cwd);
    if (job->cancelled)
        return done(Error{ErrorCode::Cancelled, job->cancelReason, {}});
    done(result);
}

void AgentService::resumeSession(const QString &id, AgentRunOptions &options, bool newSession,
                                 bool cwdGiven) const
{
    // Without a sessionId a run continues the sandbox's last conversation (unless newSession);
    // either way it runs where that conversation ran, unless the caller names a cwd.
    if (options.sessionId.isEmpty() && !newSession) {
        const QJsonObject last = lastSession(id).value(QStringLiteral("last")).toObject();
        options.sessionId = last.value(QStringLiteral("sessionId")).toString();
        if (!cwdGiven && !options.sessionId.isEmpty())
            options.cwd = last.value(QStringLiteral("cwd")).toString(options.cwd);
    } else if (!options.sessionId.isEmpty() && !cwdGiven) {
        options.cwd = lastSession(id)
                          .value(QStringLiteral("cwd"))
                          .toObject()
                          .value(options.sessionId)
                          .toString(options.cwd);
    }
}

void AgentService::run(const QJsonObject &params, const CallContext &ctx,
                       const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    AgentRunOptions options;
    options.prompt = p.requiredString(QStringLiteral("prompt"));
    if (options.prompt.size() > kMaxPromptChars)
        p.fail(QStringLiteral("prompt"),
               QStringLiteral("must be at most %1 characters").arg(kMaxPromptChars));
    qint64 timeoutMs = 0;
    bool newSession = false, cwdGiven = false;
    if (!readRunOptions(p, p.optionalObject(QStringLiteral("options")), options, timeoutMs,
                        newSession, cwdGiven))
        return reply(p.error());
    auto job = beginJob(id, ctx, QStringLiteral("agents.run"), {options.prompt},
                        p.optionalObject(QStringLiteral("options")));
    if (!job)
        return reply(job.error());
    resumeSession(id, options, newSession, cwdGiven);
    options.timeoutMs = timeoutMs;
    std::shared_ptr<Job> j = job.value();
    runTurn(j, options, 0,
            [this, j, reply](Result<QJsonObject> r) { endJob(j, std::move(r), reply); });
}

void AgentService::runConversation(const QJsonObject &params, const CallContext &ctx,
                                   const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QJsonValue promptsValue = p.raw(QStringLiteral("prompts"));
    const QJsonArray prompts = promptsValue.toArray();
    const bool promptsOk = promptsValue.isArray() && !prompts.isEmpty()
                           && prompts.size() <= kMaxConversationTurns
                           && std::all_of(prompts.begin(), prompts.end(), [](const QJsonValue &v) {
                                  return v.isString() && !v.toString().isEmpty()
                                         && v.toString().size() <= kMaxPromptChars;
                              });
    if (!p.failed() && !promptsOk)
        p.fail(QStringLiteral("prompts"),
               QStringLiteral("must be an array of 1 to %1 non-empty strings")
                   .arg(kMaxConversationTurns));
    AgentRunOptions options;
    qint64 timeoutMs = 0;
    bool newSession = false, cwdGiven = false;
    if (!readRunOptions(p, p.optionalObject(QStringLiteral("options")), options, timeoutMs,
                        newSession, cwdGiven))
        return reply(p.error());
    QStringList promptList;
    for (const QJsonValue &v : prompts)
        promptList.append(v.toString());
    auto job = beginJob(id, ctx, QStringLiteral("agents.runConversation"), promptList,
                        p.optionalObject(QStringLiteral("options")));
    if (!job)
        return reply(job.error());
    resumeSession(id, options, newSession, cwdGiven);
    options.timeoutMs = timeoutMs;

    struct State
    {
        QJsonArray turns;
        QElapsedTimer clock;
        double cost = -1;
        QJsonObject usage;
    };
    auto state = std::make_shared<State>();
    state->clock.start();
    std::shared_ptr<Job> j = job.value();
    auto next = std::make_shared<std::function<void(int, AgentRunOptions)>>();
    *next = [this, j, prompts, state, next, reply](int turn, AgentRunOptions o) {
        o.prompt = prompts.at(turn).toString();
        runTurn(j, o, turn,
                [this, j, prompts, state, next, reply, turn, o](Result<QJsonObject> r) mutable {
                    if (!r) {
                        *next = nullptr;
                        return endJob(j, r.error(), reply);
                    }
                    const QJsonObject t = r.value();
                    state->turns.append(t);
                    const QJsonObject u = t.value(QStringLiteral("usage")).toObject();
                    for (auto it = u.begin(); it != u.end(); ++it) {
                        // The context is the last turn's (its size now, not a sum).
                        if (it.key().startsWith(QLatin1String("context")))
                            state->usage.insert(it.key(), it.value());
                        else
                            state->usage.insert(it.key(), state->usage.value(it.key()).toDouble()
                                                              + it.value().toDouble());
                    }
                    if (t.value(QStringLiteral("costUsd")).isDouble())
                        state->cost = qMax(0.0, state->cost)
                                      + t.value(QStringLiteral("costUsd")).toDouble();
                    const bool ok = t.value(QStringLiteral("success")).toBool();
                    if (ok && turn + 1 < prompts.size()) {
                        o.sessionId = t.value(QStringLiteral("sessionId")).toString(o.sessionId);
                        return (*next)(turn + 1, o);
                    }
                    QJsonObject answer = t;
                    answer.insert(QStringLiteral("turns"), state->turns);
                    answer.insert(QStringLiteral("usage"), state->usage);
                    answer.insert(QStringLiteral("costUsd"),
                                  state->cost < 0 ? QJsonValue() : QJsonValue(state->cost));
                    answer.insert(QStringLiteral("durationMs"), double(state->clock.elapsed()));
                    if (!ok && prompts.size() > 1)
                        answer.insert(QStringLiteral("error"),
                                      QStringLiteral("turn %1 of %2 failed: %3")
                                          .arg(turn + 1)
                                          .arg(prompts.size())
                                          .arg(t.value(QStringLiteral("error")).toString()));
                    *next = nullptr;
                    endJob(j, answer, reply);
                });
    };
    (*next)(0, options);
}

void AgentService::runOnRepo(const QJsonObject &params, const CallContext &ctx,
                             const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString url = p.requiredString(QStringLiteral("url"));
    const QString prompt = p.requiredString(QStringLiteral("prompt"));
    FieldReader o(p.optionalObject(QStringLiteral("options")), QStringLiteral("options"));
    const QString branch = o.optionalString(QStringLiteral("branch"));
    const bool shallow = o.optionalBool(QStringLiteral("shallow"), true);
    QString path = o.optionalPath(QStringLiteral("path"));
    p.merge(o);
    if (p.failed())
        return reply(p.error());
    if (path.isEmpty()) {
        QString name = url.section(u'/', -1);
        if (name.endsWith(QLatin1String(".git")))
            name.chop(4);
        static const QRegularExpression safe(QStringLiteral("^[A-Za-z0-9_.-]+$"));
        path = QStringLiteral("/workspace/")
               + (safe.match(name).hasMatch() && !name.startsWith(u'.') ? name
                                                                        : QStringLiteral("repo"));
    }
    if (!path.startsWith(QLatin1String("/workspace/")))
        path = QStringLiteral("/workspace/") + path;
    // The run's own options: as agents.run, in the clone (a new session unless one is given).
    QJsonObject runOptions = p.optionalObject(QStringLiteral("options"));
    for (const char *k : {"branch", "shallow", "path"})
        runOptions.remove(QLatin1String(k));
    runOptions.insert(QStringLiteral("cwd"), path);
    if (!runOptions.contains(QStringLiteral("sessionId")))
        runOptions.insert(QStringLiteral("newSession"), true);

    QJsonObject cloneOptions{{QStringLiteral("shallow"), shallow}, {QStringLiteral("path"), path}};
    if (!branch.isEmpty())
        cloneOptions.insert(QStringLiteral("branch"), branch);
    CallContext quiet = ctx; // the clone does not stream
    quiet.notify = nullptr;
    quiet.onCancel = ctx.onCancel;
    QPointer<AgentService> self(this);
    m_methods->call(QStringLiteral("agents.cloneRepo"),
                    {{QStringLiteral("id"), id},
                     {QStringLiteral("url"), url},
                     {QStringLiteral("options"), cloneOptions}},
                    quiet, [self, id, prompt, runOptions, ctx, reply, path](Result<QJsonValue> r) {
                        if (!self)
                            return;
                        if (!r)
                            return reply(r.error());
                        const QJsonObject clone = r->toObject();
                        if (clone.value(QStringLiteral("exitCode")).toInt() != 0) {
                            QJsonObject failure = failureResult(
                                QStringLiteral("git clone failed (exit %1): %2")
                                    .arg(clone.value(QStringLiteral("exitCode")).toInt())
                                    .arg(clone.value(QStringLiteral("stderr"))
                                             .toString()
                                             .trimmed()
                                             .right(2000)));
                            failure.insert(QStringLiteral("clone"), clone);
                            return reply(QJsonValue(failure));
                        }
                        self->run({{QStringLiteral("id"), id},
                                   {QStringLiteral("prompt"), prompt},
                                   {QStringLiteral("options"), runOptions}},
                                  ctx, [reply, path](Result<QJsonValue> r) {
                                      if (!r)
                                          return reply(r);
                                      QJsonObject answer = r->toObject();
                                      answer.insert(QStringLiteral("path"), path);
                                      reply(QJsonValue(answer));
                                  });
                    });
}

void AgentService::listRuns(const QJsonObject &params, const CallContext &ctx,
                            const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const int limit = int(p.optionalInteger(QStringLiteral("limit"), kDefaultRunsListed, 1,
                                            RunStore::Limits{}.runsPerSandbox));
    if (p.failed())
        return reply(p.error());
    if (const auto record = m_sandboxes->record(ctx.keyId, id, kAgent); !record)
        return reply(record.error());
    if (!m_runs)
        return reply(Error{ErrorCode::SandboxError,
                           QStringLiteral("this engine could not open its store of runs"),
                           {}});
    reply(QJsonValue(QJsonObject{{QStringLiteral("id"), id},
                                 {QStringLiteral("runs"), m_runs->runs(id, limit)}}));
}

void AgentService::runEvents(const QJsonObject &params, const CallContext &ctx,
                             const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString runId = p.requiredString(QStringLiteral("runId"));
    const qint64 after = p.optionalInteger(QStringLiteral("after"), 0, 0,
                                           std::numeric_limits<qint64>::max() / 2);
    const int limit = int(
        p.optionalInteger(QStringLiteral("limit"), kDefaultEventsListed, 1, kMaxEventsListed));
    if (p.failed())
        return reply(p.error());
    if (const auto record = m_sandboxes->record(ctx.keyId, id, kAgent); !record)
        return reply(record.error());
    if (!m_runs)
        return reply(Error{ErrorCode::SandboxError,
                           QStringLiteral("this engine could not open its store of runs"),
                           {}});
    const auto events = m_runs->events(id, runId, after, limit);
    if (!events)
        return reply(events.error());
    reply(QJsonValue(events.value()));
}

TurnSnapshots AgentService::snapshotsOf(const SandboxRecord &record) const
{
    const EngineConfig &config = m_sandboxes->config();
    const uid_t uid = config.dropPrivileges ? config.uidBase + uid_t(record.slot) : ::getuid();
    const gid_t gid = config.dropPrivileges ? gid_t(uid) : ::getgid();
    return TurnSnapshots(m_sandboxes->stateDirOf(record.id) + QStringLiteral("/turns"), uid, gid);
}

namespace {

// The sandbox's /workspace on the host, opened without following a link (the volume is the
// engine's, the tree below it the sandbox's); -errno when it is not there (not mounted).
int openWorkspace(const QString &volumeDir)
{
    HostFs::Fd volume(HostFs::openOwnDir(volumeDir));
    if (!volume.isValid())
        return volume.get();
    return HostFs::openBeneath(volume.get(), "workspace", O_RDONLY | O_DIRECTORY);
}

// Answers a method with an object result, or with its error.
void answer(const Methods::Reply &reply, Result<QJsonObject> r)
{
    if (!r)
        return reply(r.error());
    reply(QJsonValue(r.value()));
}

} // namespace

void AgentService::recordWorkspace(const std::shared_ptr<Job> &job, TurnSnapshots::Phase phase,
                                   const QString &cwd, std::function<void()> then)
{
    if (job->runId.isEmpty())
        return then();
    const TurnSnapshots snapshots = snapshotsOf(job->record);
    const QString volumeDir = m_sandboxes->volumeDirOf(job->sandboxId);
    const QString runId = job->runId;
    runOffLoop<QString>(
        this,
        [snapshots, volumeDir, runId, phase, cwd]() -> QString {
            HostFs::Fd workspace(openWorkspace(volumeDir));
            if (!workspace.isValid())
                return HostFs::errorText(workspace.get());
            const auto taken = snapshots.take(workspace.get(), runId, phase, cwd);
            return taken ? QString() : taken.error().message;
        },
        [runId, then](const QString &error) {
            if (!error.isEmpty())
                qCWarning(lcAgents).noquote()
                    << "the workspace around run" << runId << "was not recorded:" << error;
            then();
        });
}

void AgentService::runChanges(const QJsonObject &params, const CallContext &ctx,
                              const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString runId = p.requiredString(QStringLiteral("runId"));
    if (p.failed())
        return reply(p.error());
    const auto record = m_sandboxes->record(ctx.keyId, id, kAgent);
    if (!record)
        return reply(record.error());
    const TurnSnapshots snapshots = snapshotsOf(record.value());
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    runOffLoop<Result<QJsonObject>>(
        context, [snapshots, runId] { return snapshots.changes(runId); },
        [reply](Result<QJsonObject> r) { answer(reply, std::move(r)); });
}

void AgentService::revertFile(const QJsonObject &params, const CallContext &ctx,
                              const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString runId = p.requiredString(QStringLiteral("runId"));
    const QString path = p.requiredPath(QStringLiteral("path"));
    if (p.failed())
        return reply(p.error());
    const auto record = m_sandboxes->record(ctx.keyId, id, kAgent);
    if (!record)
        return reply(record.error());
    if (m_jobs.contains(id))
        return reply(
            Error{ErrorCode::AlreadyExists,
                  QStringLiteral("sandbox %1 is running a prompt; revert after it ends").arg(id),
                  QJsonObject{{QStringLiteral("id"), id}}});
    const TurnSnapshots snapshots = snapshotsOf(record.value());
    const QString volumeDir = m_sandboxes->volumeDirOf(id);
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    QPointer<AgentService> self(this);
    // The workspace is there while the sandbox runs (its disk image is mounted then).
    m_sandboxes
        ->withSupervisor(ctx.keyId, id, kAgent, context,
                         [self, snapshots, volumeDir, runId, path, id,
                          reply](Result<SupervisorChannel *> r) {
                             if (!r)
                                 return reply(r.error());
                             if (!self)
                                 return;
                             // Not the caller's context: the activity must end even if the caller went away.
                             runOffLoop<Result<QJsonObject>>(
                                 self.data(),
                                 [snapshots, volumeDir, runId, path]() -> Result<QJsonObject> {
                                     HostFs::Fd workspace(openWorkspace(volumeDir));
                                     if (!workspace.isValid())
                                         return Error{ErrorCode::SandboxNotRunning,
                                                      QStringLiteral(
                                                          "the workspace is not there: %1")
                                                          .arg(HostFs::errorText(workspace.get())),
                                                      {}};
                                     return snapshots.revert(workspace.get(), runId, path);
                                 },
                                 [self, id, reply](Result<QJsonObject> r) {
                                     if (self)
                                         self->m_sandboxes->endActivity(id);
                                     answer(reply, std::move(r));
                                 });
                         });
}

void AgentService::stop(const QJsonObject &params, const CallContext &ctx,
                        const Methods::Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    if (p.failed())
        return reply(p.error());
    if (const auto record = m_sandboxes->record(ctx.keyId, id, kAgent); !record)
        return reply(record.error());
    if (const auto job = m_jobs.value(id))
        job->cancel(QStringLiteral("the sandbox was stopped"));
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    m_sandboxes->stop(ctx.keyId, id, kAgent, context,
                      [reply](Result<QJsonObject> r) { answer(reply, std::move(r)); });
}

void AgentService::setNetwork(SandboxNetwork *network)
{
    m_network = network;
    // A run's events show what the network refused while it ran (docs/protocol.md 4.7, 4.9),
    // streamed and kept like the CLI's own (4.7.1).
    connect(network, &SandboxNetwork::denied, this,
            [this](const QString &sandboxId, const QJsonObject &denial) {
                const auto job = m_jobs.value(sandboxId);
                if (!job)
                    return;
                QJsonObject e = denial;
                e.insert(QStringLiteral("type"), QStringLiteral("network.denied"));
                e.insert(QStringLiteral("turn"), job->turn);
                const QJsonObject clean = job->redactor.apply(e).toObject();
                if (m_runs && !job->runId.isEmpty())
                    m_runs->event(job->runId, clean);
                if (!job->streamId.isEmpty())
                    m_streams->event(job->streamId, clean);
            });
}

} // namespace Sandbox::Engine

namespace Sandbox::Engine {

void AgentService::listClis(const QJsonObject &, const CallContext &, const Methods::Reply &reply)
{
    QJsonArray clis;
    for (const AgentCliPin &pin : AgentClis::pins()) {
        const QString dir = AgentClis::find(m_agentsDirs, pin);
        clis.append(QJsonObject{{QStringLiteral("type"), pin.type},
                                {QStringLiteral("name"), pin.name},
                                {QStringLiteral("package"), pin.package},
                                {QStringLiteral("version"), pin.version},
                                {QStringLiteral("downloadBytes"), double(pin.downloadMb) * 1e6},
                                {QStringLiteral("installed"), !dir.isEmpty()},
                                {QStringLiteral("installing"), m_installer->isInstalling(pin.type)},
                                {QStringLiteral("dir"), dir.isEmpty() ? QJsonValue() : dir},
                                {QStringLiteral("canInstall"), true}});
    }
    reply(QJsonValue(QJsonObject{{QStringLiteral("clis"), clis}}));
}

void AgentService::installCli(const QJsonObject &params, const CallContext &ctx,
                              const Methods::Reply &reply)
{
    constexpr qint64 kDefaultInstallTimeoutMs = 900000;
    FieldReader p(params);
    QStringList types;
    for (const AgentCliPin &pin : AgentClis::pins())
        types.append(pin.type);
    const QString type = p.requiredString(QStringLiteral("type"));
    if (!p.failed() && !types.contains(type))
        p.fail(QStringLiteral("type"),
               QStringLiteral("must be one of %1").arg(types.join(QStringLiteral(", "))));
    FieldReader o(p.optionalObject(QStringLiteral("options")), QStringLiteral("options"));
    const qint64 timeoutMs = o.optionalInteger(QStringLiteral("timeout"), kDefaultInstallTimeoutMs,
                                               1000, kMaxTimeoutMs);
    p.merge(o);
    if (p.failed())
        return reply(p.error());
    if (!m_methods->isAdmin(ctx.keyId))
        return reply(Error{ErrorCode::Unauthorized,
                           QStringLiteral("only an admin key can install agent CLIs on the engine"),
                           {}});
    const AgentCliPin pin = *AgentClis::pin(type);
    if (const QString dir = cliDir(type); !dir.isEmpty())
        return reply(QJsonValue(QJsonObject{{QStringLiteral("type"), pin.type},
                                            {QStringLiteral("name"), pin.name},
                                            {QStringLiteral("package"), pin.package},
                                            {QStringLiteral("version"), pin.version},
                                            {QStringLiteral("dir"), dir},
                                            {QStringLiteral("alreadyInstalled"), true},
                                            {QStringLiteral("streamId"), QJsonValue()}}));
    // Progress goes out as stream events over /rpc (docs/protocol.md 2.3); REST waits.
    QString streamId;
    auto handle = std::make_shared<quint64>(0);
    QPointer<AgentService> self(this);
    if (ctx.notify) {
        streamId = m_streams->open(ctx.keyId, ctx.requestId, ctx.notify, [self, handle] {
            if (self && *handle)
                self->m_installer->cancel(*handle);
        });
        m_streams->setSinkOwner(streamId, ctx.connection);
    }
    *ctx.onCancel = [self, handle] {
        if (self && *handle)
            self->m_installer->cancel(*handle);
    };
    *handle = m_installer->install(
        pin, timeoutMs,
        [self, streamId](const QJsonObject &event) {
            if (self && !streamId.isEmpty())
                self->m_streams->event(streamId, event);
        },
        [self, streamId, reply](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r) {
                if (!streamId.isEmpty())
                    self->m_streams->end(streamId, {{QStringLiteral("error"), r.error().toJson()}});
                return reply(r.error());
            }
            // Spares of the type started without it: replaced by ones with it.
            self->m_sandboxes->refreshSpares();
            QJsonObject answer = r.value();
            answer.insert(QStringLiteral("streamId"),
                          streamId.isEmpty() ? QJsonValue() : QJsonValue(streamId));
            if (!streamId.isEmpty())
                self->m_streams->end(streamId, {{QStringLiteral("result"), answer}});
            reply(QJsonValue(answer));
        });
}

} // namespace Sandbox::Engine
