#include "databaseadapter.h"

#include "databasebackend.h"
#include "databasemethods.h"
#include "dbhostbackend.h"
#include "egress/networkpolicy.h"
#include "postgresbackend.h"
#include "postgrestemplate.h"
#include "protocol/fieldreader.h"
#include "protocol/sandboxenums.h"
#include "runtime/offloop.h"
#include "runtime/sandboxprocess.h"
#include "runtime/supervisorchannel.h"
#include "runtime/workspacevolume.h"
#include "scramsecret.h"
#include "service/sandboxmanager.h"
#include "settingsstore.h"

#include <QElapsedTimer>
#include <QFile>
#include <QLoggingCategory>
#include <QPointer>

#include <cmath>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcDatabases, "sandboxd.databases")

namespace Sandbox::Engine {

namespace {

const QString kDatabase = QStringLiteral("database");
// The size of the warm spares: the create's default.
const QString kWarmSize = QStringLiteral("standard-1");
constexpr qint64 kMaxSleepAfterMs = 7LL * 24 * 3600 * 1000;

QStringList databaseTypes()
{
    return {QStringLiteral("postgres"), QStringLiteral("sqlite"), QStringLiteral("duckdb")};
}

// The dialect of a database type, before its server runs.
const SqlDialect &dialectOfType(const QString &type)
{
    return fromWire<SandboxType>(type) == SandboxType::Postgres ? PostgresBackend::sqlDialect()
                                                                : DbHostBackend::dialectOf(type);
}

} // namespace

DatabaseAdapter::DatabaseAdapter(Methods *methods, SandboxManager *sandboxes, QString dbhostDir,
                                 QObject *parent)
    : QObject(parent)
    , m_methods(methods)
    , m_sandboxes(sandboxes)
    , m_dbhostDir(std::move(dbhostDir))
    , m_template(new PostgresTemplate(sandboxes->config().dataDir
                                          + QStringLiteral("/databases/postgres-15-template"),
                                      sandboxes->config().uidBase,
                                      sandboxes->config().dropPrivileges, this))
    , m_calls(new DatabaseMethods(this, this))
    , m_settings(
          new SettingsStore([sandboxes](const QString &id) { return sandboxes->stateDirOf(id); },
                            this))
{
    for (const QString &type : databaseTypes()) {
        SandboxTypeHooks hooks;
        hooks.prepare = [this](SandboxSpec &spec, const SandboxRecord &record) {
            prepare(spec, record);
        };
        hooks.afterStart = [this](const SandboxRecord &record, SupervisorChannel *channel,
                                  std::function<void(Result<bool>)> done) {
            afterStart(record, channel, std::move(done));
        };
        hooks.beforeStop = [this](const SandboxRecord &record, SupervisorChannel *,
                                  std::function<void()> done) {
            beforeStop(record, std::move(done));
        };
        hooks.removed = [this](const SandboxRecord &record) { removed(record); };
        // A spare database sandbox is started up to HELLO (its mounts are the type's); its server
        // starts once a create took it and wrote its settings.
        hooks.poolable = true;
        hooks.warmUp = [this](const SandboxRecord &record, SupervisorChannel *channel,
                              std::function<void(Result<bool>)> done) {
            warmUp(record, channel, std::move(done));
        };
        m_sandboxes->setTypeHooks(type, hooks);
    }
    registerMethods();
}

void DatabaseAdapter::keepServersReady()
{
    m_keepReady = true;
    if (m_template->isReady()
        && QFile::exists(PostgresBackend::binDir() + QStringLiteral("/postgres")))
        keepWarm(QStringLiteral("postgres"));
}

void DatabaseAdapter::keepWarm(const QString &type)
{
    const int count = m_sandboxes->config().databasePool.value(type);
    if (count > 0)
        m_sandboxes->keepWarm({kDatabase, type, kWarmSize}, count);
}

DatabaseAdapter::~DatabaseAdapter()
{
    delete m_calls; // its cursors and transactions end their activities while the rest is here
}

QString DatabaseAdapter::findDbHost(const QString &applicationDir)
{
    const QStringList candidates{applicationDir + QStringLiteral("/../libexec/sandbox-dbhost"),
                                 applicationDir
                                     + QStringLiteral("/../libexec/sandbox-desktop/dbhost")};
    for (const QString &c : candidates)
        if (QFile::exists(c + QStringLiteral("/sandbox-dbhost")))
            return QDir::cleanPath(c);
    return QDir::cleanPath(candidates.first());
}

void DatabaseAdapter::prepareTemplates(QObject *context, std::function<void(Result<bool>)> done)
{
    m_template->ensure(context, std::move(done));
}

DatabaseSettings DatabaseAdapter::settingsOf(const QString &id) const
{
    return m_settings->get(id);
}

QJsonObject DatabaseAdapter::decorate(QJsonObject sandbox) const
{
    const QString id = sandbox.value(QStringLiteral("id")).toString();
    const DatabaseSettings s = settingsOf(id);
    QJsonObject db{{QStringLiteral("type"), s.type}, {QStringLiteral("database"), s.database}};
    if (fromWire<SandboxType>(s.type) == SandboxType::Postgres)
        db.insert(QStringLiteral("username"), s.username);
    sandbox.insert(QStringLiteral("database"), db);
    if (m_startupMs.contains(id))
        sandbox.insert(QStringLiteral("startupTimeMs"), double(m_startupMs.value(id)));
    return sandbox;
}

// --- lifecycle hooks ---------------------------------------------------------------------------

void DatabaseAdapter::prepare(SandboxSpec &spec, const SandboxRecord &record)
{
    // The type's mounts only (a spare has no settings yet). The socket directory: the sandbox's
    // /run/db, owned by its uid, on its disk (WorkspaceVolume makes it).
    spec.extraMounts.append({WorkspaceVolume::treePath(spec.volumeDir, WorkspaceVolume::Tree::Run),
                             QStringLiteral("/run/db"), true});
    if (fromWire<SandboxType>(record.type) == SandboxType::Postgres)
        spec.extraMounts.append(
            {m_template->path(), QStringLiteral("/run/sandbox/pg-template"), false});
    else
        spec.extraMounts.append({m_dbhostDir, QStringLiteral("/run/sandbox/dbhost"), false});
}

DatabaseBackend *DatabaseAdapter::makeBackend(const QString &id, const DatabaseSettings &s,
                                              uid_t uid, const ResourceLimits &limits, bool standby)
{
    DatabaseBackend *backend = nullptr;
    if (fromWire<SandboxType>(s.type) == SandboxType::Postgres) {
        PostgresBackend *pg = makePostgres(id, uid);
        pg->setOwner(s.database, s.username, s.password, !s.initialized);
        pg->setStandby(standby);
        backend = pg;
    } else {
        DbHostBackend::Settings ds;
        ds.engine = s.type;
        ds.socket = {m_sandboxes->volumeDirOf(id), uid};
        ds.databaseFile = QStringLiteral("/workspace/") + s.database;
        ds.memoryLimitMb = qMax<qint64>(64, limits.memoryMb / 2);
        // As many threads as the sandbox has CPUs (more only wait for the quota, and each one
        // costs start-up time).
        ds.threads = qMax(1, int(std::ceil(limits.cpus)));
        ds.spare = standby;
        backend = new DbHostBackend(ds, this);
        connect(backend, &DatabaseBackend::serverExited, this, [this, id](const QString &why) {
            qCWarning(lcDatabases) << "database" << id << "server exited:" << why;
            m_calls->serverGone(id);
        });
    }
    return backend;
}

PostgresBackend *DatabaseAdapter::makePostgres(const QString &id, uid_t uid)
{
    PostgresBackend::Settings ps;
    ps.socketDir = m_socketDir.path() + u'/' + id;
    ps.server = {m_sandboxes->volumeDirOf(id), uid};
    auto *pg = new PostgresBackend(ps, this);
    pg->onInitialized = [this, id] {
        DatabaseSettings done = settingsOf(id);
        done.initialized = true;
        done.password.clear();
        m_settings->put(id, done);
    };
    connect(pg, &DatabaseBackend::serverExited, this, [this, id](const QString &why) {
        qCWarning(lcDatabases) << "database" << id << "server exited:" << why;
        m_calls->serverGone(id);
    });
    return pg;
}

uid_t DatabaseAdapter::uidOf(const SandboxRecord &record) const
{
    const EngineConfig &config = m_sandboxes->config();
    return config.dropPrivileges ? config.uidBase + uid_t(record.slot) : ::getuid();
}

void DatabaseAdapter::startBackend(const QString &id, DatabaseBackend *backend,
                                   SupervisorChannel *channel,
                                   std::function<void(Result<bool>)> done)
{
    QElapsedTimer clock;
    clock.start();
    QPointer<DatabaseBackend> guard(backend);
    backend->start(channel, [this, id, guard, clock, done](Result<bool> r) {
        if (r && guard)
            m_startupMs.insert(id, clock.elapsed());
        done(r);
    });
}

void DatabaseAdapter::afterStart(const SandboxRecord &record, SupervisorChannel *channel,
                                 std::function<void(Result<bool>)> done)
{
    if (DatabaseBackend *old = m_backends.take(record.id))
        old->deleteLater();
    if (DatabaseBackend *warm = m_standby.take(record.id))
        return handOut(record, warm, std::move(done));
    const DatabaseSettings s = settingsOf(record.id);
    if (!databaseTypes().contains(s.type))
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("the database's settings are missing"),
                          {}});
    DatabaseBackend *backend = makeBackend(record.id, s, uidOf(record),
                                           SandboxManager::limitsFor(record.size));
    m_backends.insert(record.id, backend);
    const QString id = record.id;
    QPointer<DatabaseBackend> guard(backend);
    startBackend(id, backend, channel, [this, id, guard, done](Result<bool> r) {
        if (!r && guard && m_backends.value(id) == guard) {
            m_backends.remove(id);
            guard->deleteLater();
        }
        done(r);
    });
}

void DatabaseAdapter::warmUp(const SandboxRecord &record, SupervisorChannel *channel,
                             std::function<void(Result<bool>)> done)
{
    if (DatabaseBackend *old = m_standby.take(record.id))
        old->deleteLater();
    // The type's defaults until a create takes it (PostgreSQL's: the template's own names):
    // nobody's yet.
    DatabaseSettings s = DatabaseSettings::defaults(record.type);
    if (fromWire<SandboxType>(s.type) == SandboxType::Postgres) {
        s.database = QLatin1String(PostgresBackend::kTemplateDatabase);
        s.username = QLatin1String(PostgresBackend::kTemplateRole);
    }
    DatabaseBackend *server = makeBackend(record.id, s, uidOf(record),
                                          SandboxManager::limitsFor(record.size), true);
    m_standby.insert(record.id, server);
    const QString id = record.id;
    QPointer<DatabaseBackend> guard(server);
    server->start(channel, [this, id, guard, done](Result<bool> r) {
        if (!r && guard && m_standby.value(id) == guard) {
            m_standby.remove(id);
            guard->deleteLater();
        }
        done(r);
    });
}

void DatabaseAdapter::handOut(const SandboxRecord &record, DatabaseBackend *server,
                              std::function<void(Result<bool>)> done)
{
    const QString id = record.id;
    const DatabaseSettings s = settingsOf(id);
    if (s.type != record.type) {
        server->deleteLater();
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("the database's settings are missing"),
                          {}});
    }
    m_backends.insert(id, server);
    QElapsedTimer clock;
    clock.start();
    QPointer<DatabaseBackend> guard(server);
    server->handOut(s.database, s.username, s.password,
                    [this, id, guard, clock, done](Result<bool> r) {
                        if (r && guard)
                            m_startupMs.insert(id, clock.elapsed());
                        if (!r && guard && m_backends.value(id) == guard) {
                            m_backends.remove(id);
                            guard->deleteLater();
                        }
                        done(r);
                    });
}

void DatabaseAdapter::beforeStop(const SandboxRecord &record, std::function<void()> done)
{
    DatabaseBackend *backend = m_backends.take(record.id);
    m_calls->serverGone(record.id); // the server's stop rolls its transactions back
    if (!backend)
        return done();
    backend->stop([backend, done] {
        backend->deleteLater();
        done();
    });
}

void DatabaseAdapter::removed(const SandboxRecord &record)
{
    m_calls->removed(record.id);
    if (DatabaseBackend *backend = m_backends.take(record.id))
        backend->deleteLater();
    if (DatabaseBackend *warm = m_standby.take(record.id))
        warm->deleteLater();
    m_startupMs.remove(record.id);
    m_settings->forget(record.id);
}

// --- the DatabaseHost of the methods on a server ----------------------------------------------

ActivityToken DatabaseAdapter::activity(const QString &id)
{
    return ActivityToken([sandboxes = QPointer<SandboxManager>(m_sandboxes), id] {
        if (sandboxes)
            sandboxes->endActivity(id);
    });
}

Result<const SqlDialect *> DatabaseAdapter::dialectOf(const QString &keyId, const QString &id) const
{
    const auto info = m_sandboxes->info(keyId, id, kDatabase);
    if (!info)
        return info.error();
    return &dialectOfType(info->value(QStringLiteral("type")).toString());
}

void DatabaseAdapter::withBackend(const CallContext &ctx, const QString &id, WithBackend then)
{
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    m_sandboxes->withSupervisor(
        ctx.keyId, id, kDatabase, context, [this, id, then](Result<SupervisorChannel *> r) {
            if (!r)
                return then(r.error(), ActivityToken());
            // withSupervisor counted the database as busy: the token ends that.
            ActivityToken token = activity(id);
            DatabaseBackend *backend = m_backends.value(id);
            if (!backend) {
                token.end();
                return then(Error{ErrorCode::SandboxError,
                                  QStringLiteral("the database %1 has no server").arg(id),
                                  {}},
                            ActivityToken());
            }
            if (backend->isAlive())
                return then(backend, std::move(token));
            // The server died (a crash, kill -9): start it again, with crash recovery, and go on.
            qCInfo(lcDatabases) << "restarting the server of" << id;
            QPointer<DatabaseBackend> guard(backend);
            startBackend(id, backend, r.value(),
                         [guard, then, activity = share(std::move(token))](Result<bool> started) {
                             if (!started || !guard) {
                                 activity->end();
                                 return then(started
                                                 ? Error{ErrorCode::SandboxError,
                                                         QStringLiteral("the database went away"),
                                                         {}}
                                                 : started.error(),
                                             ActivityToken());
                             }
                             then(guard.data(), std::move(*activity));
                         });
        });
}

void DatabaseAdapter::call(const QString &method, const QJsonObject &params, const CallContext &ctx,
                           Methods::Reply reply)
{
    m_methods->call(method, params, ctx, std::move(reply));
}

// --- methods -----------------------------------------------------------------------------------

void DatabaseAdapter::registerMethods()
{
    m_methods->add(QStringLiteral("databases.create"),
                   [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
                       create(p, ctx, reply);
                   });
    m_methods->add(QStringLiteral("databases.list"),
                   [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
                       QJsonArray out;
                       for (const QJsonValue &v : m_sandboxes->list(ctx.keyId, kDatabase))
                           out.append(decorate(v.toObject()));
                       reply(QJsonValue(QJsonObject{{QStringLiteral("databases"), out}}));
                   });
    m_methods->add(QStringLiteral("databases.setName"),
                   [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
                       FieldReader p(params);
                       const QString id = p.requiredString(QStringLiteral("id"));
                       if (p.failed())
                           return reply(p.error());
                       if (!p.raw(QStringLiteral("name")).isString())
                           return reply(
                               Error::invalidParams(QStringLiteral("name"),
                                                    QStringLiteral("name must be a string")));
                       const QString name = p.optionalName(QStringLiteral("name")).trimmed();
                       if (p.failed())
                           return reply(p.error());
                       const auto info = m_sandboxes->setName(ctx.keyId, id, kDatabase, name);
                       if (!info)
                           return reply(info.error());
                       reply(QJsonValue(decorate(*info)));
                   });
    for (const QString &verb :
         {QStringLiteral("get"), QStringLiteral("stop"), QStringLiteral("start"),
          QStringLiteral("delete"), QStringLiteral("restart")})
        m_methods->add(QStringLiteral("databases.") + verb,
                       [this, verb](const QJsonObject &p, const CallContext &ctx,
                                    const Reply &reply) { lifecycle(verb, p, ctx, reply); });
    for (auto &[name, handler] : m_calls->handlers())
        m_methods->add(name, std::move(handler));
}

void DatabaseAdapter::lifecycle(const QString &verb, const QJsonObject &params,
                                const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    if (p.failed())
        return reply(p.error());
    if (verb == QLatin1String("get")) {
        const auto info = m_sandboxes->info(ctx.keyId, id, kDatabase);
        if (!info)
            return reply(info.error());
        return reply(QJsonValue(decorate(*info)));
    }
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    const QString keyId = ctx.keyId;
    auto answer = [this, reply](Result<QJsonObject> r) {
        if (!r)
            return reply(r.error());
        reply(QJsonValue(r->contains(QStringLiteral("deleted")) ? *r : decorate(*r)));
    };
    if (verb == QLatin1String("stop"))
        m_sandboxes->stop(keyId, id, kDatabase, context, answer);
    else if (verb == QLatin1String("start"))
        m_sandboxes->start(keyId, id, kDatabase, context, answer);
    else if (verb == QLatin1String("delete"))
        m_sandboxes->remove(keyId, id, kDatabase, context, answer);
    else
        m_sandboxes->stop(keyId, id, kDatabase, context,
                          [this, keyId, id, context, answer](Result<QJsonObject> r) {
                              if (!r)
                                  return answer(r);
                              m_sandboxes->start(keyId, id, kDatabase, context, answer);
                          });
}

void DatabaseAdapter::create(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    CreateSandbox c;
    c.keyId = ctx.keyId;
    c.kind = kDatabase;
    c.type = p.optionalChoice(QStringLiteral("type"), databaseTypes(), QStringLiteral("postgres"));
    c.size = p.optionalChoice(QStringLiteral("size"), SandboxManager::sizes(),
                              QStringLiteral("standard-1"));
    c.sleepAfterMs = p.optionalInteger(QStringLiteral("sleepAfter"), -1, 0, kMaxSleepAfterMs);
    const NetworkPolicy network = NetworkPolicy::read(p, QStringLiteral("network"));
    DatabaseSettings s = DatabaseSettings::fromCreateParams(p, c.type);
    c.name = p.optionalName(QStringLiteral("name"), s.database);
    s.validate(p);
    if (p.failed())
        return reply(p.error());
    if (const auto admitted = m_methods->admitPolicy(network, ctx); !admitted)
        return reply(admitted.error());
    c.network = network.toJson();
    if (fromWire<SandboxType>(c.type) == SandboxType::DuckDb
        && !QFile::exists(m_dbhostDir + QStringLiteral("/sandbox-dbhost-duckdb")))
        return reply(Error{ErrorCode::NotImplemented,
                           QStringLiteral("DuckDB is not available in this build: run "
                                          "scripts/setup.sh, which fetches libduckdb"),
                           {}});
    if (fromWire<SandboxType>(c.type) != SandboxType::Postgres
        && !QFile::exists(m_dbhostDir + QStringLiteral("/sandbox-dbhost")))
        return reply(Error{ErrorCode::SandboxError,
                           QStringLiteral("sandbox-dbhost not found in %1").arg(m_dbhostDir),
                           {}});
    QElapsedTimer clock;
    clock.start();
    QPointer<QObject> guard(ctx.guard ? ctx.guard.data() : this);
    if (fromWire<SandboxType>(c.type) == SandboxType::Postgres && !s.password.isEmpty()) {
        // The server is given the password's SCRAM secret, computed here off the event loop,
        // rather than hashing the password in its sandbox's share of a CPU (an ASCII one: the
        // server normalises others first). The settings then hold the secret, not the password.
        const QString password = s.password;
        runOffLoop<QByteArray>(
            this, [password] { return scramSha256Secret(password); },
            [this, c, s, guard, clock, reply](const QByteArray &secret) mutable {
                if (!secret.isEmpty())
                    s.password = QString::fromLatin1(secret);
                launch(std::move(c), s, guard, clock, reply);
            });
        return;
    }
    launch(std::move(c), s, guard, clock, reply);
}

void DatabaseAdapter::launch(CreateSandbox c, const DatabaseSettings &s,
                             const QPointer<QObject> &guard, QElapsedTimer clock,
                             const Reply &reply)
{
    // The settings are written once the sandbox has its id, before its first start reads them.
    c.created = [this, s](const SandboxRecord &record) { m_settings->put(record.id, s); };
    auto start = [this, c, guard, clock, reply] {
        if (!guard)
            return;
        m_sandboxes->create(c, guard, [this, clock, reply](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            QJsonObject out = decorate(*r);
            // From now on the engine keeps a server of the type ready (PostgreSQL's: the
            // template is there now).
            if (m_keepReady) {
                const QString type = out.value(QStringLiteral("type")).toString();
                if (fromWire<SandboxType>(type) == SandboxType::Postgres)
                    keepServersReady();
                else
                    keepWarm(type);
            }
            // The original API's getStartupTime(): from the request to a server that answers.
            out.insert(QStringLiteral("startupTimeMs"), double(clock.elapsed()));
            reply(QJsonValue(out));
        });
    };
    if (fromWire<SandboxType>(c.type) != SandboxType::Postgres)
        return start();
    m_template->ensure(guard, [start, reply](Result<bool> ready) {
        if (!ready)
            return reply(ready.error());
        start();
    });
}

} // namespace Sandbox::Engine
