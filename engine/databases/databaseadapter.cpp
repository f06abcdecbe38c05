#include "databaseadapter.h"

#include "api/params.h"
#include "databasebackend.h"
#include "dbhostbackend.h"
#include "postgresbackend.h"
#include "postgrestemplate.h"
#include "runtime/sandboxprocess.h"
#include "runtime/supervisorchannel.h"
#include "runtime/workspacevolume.h"
#include "service/sandboxmanager.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSaveFile>
#include <QTimer>

#include <cmath>
#include <sys/stat.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcDatabases, "sandboxd.databases")

namespace Sandbox::Engine {

namespace {

const QString kDatabase = QStringLiteral("database");
constexpr int kDefaultPageSize = 1000;
constexpr int kMaxPageSize = 100000;
constexpr qint64 kPageBytes = 8 * 1024 * 1024;
constexpr qint64 kDefaultTimeoutMs = 60000;
constexpr qint64 kMaxTimeoutMs = 3600000;
constexpr qint64 kCursorIdleMs = 5 * 60 * 1000;
constexpr int kMaxCursorsPerDatabase = 16;
constexpr int kMaxTransactionsPerDatabase = 4;
constexpr qint64 kDefaultTransactionIdleMs = 60000;
constexpr qint64 kMaxTransactionIdleMs = 600000;
constexpr qint64 kMaxExportBytes = 12 * 1024 * 1024;
constexpr int kMaxStatements = 1000;
constexpr qint64 kMaxSleepAfterMs = 7LL * 24 * 3600 * 1000;

QStringList databaseTypes()
{
    return {QStringLiteral("postgres"), QStringLiteral("sqlite"), QStringLiteral("duckdb")};
}

QString newCursorId()
{
    quint32 r[3];
    QRandomGenerator::system()->fillRange(r, 3);
    return QStringLiteral("cur_")
           + QString::fromLatin1(QByteArray(reinterpret_cast<const char *>(r), sizeof r).toHex());
}

QString newTransactionId()
{
    quint32 r[3];
    QRandomGenerator::system()->fillRange(r, 3);
    return QStringLiteral("tx_")
           + QString::fromLatin1(QByteArray(reinterpret_cast<const char *>(r), sizeof r).toHex());
}

QString quoteIdent(const QString &name)
{
    QString q = name;
    q.replace(u'"', QStringLiteral("\"\""));
    return u'"' + q + u'"';
}

// Positions in errors: 1-based, in characters (code points) of the SQL text, plus line and
// column (1-based). Engines report a byte offset (SQLite), a character position (PostgreSQL)
// or a line and column (DuckDB); all three come out the same.
void locate(const QString &sql, Error &error)
{
    QJsonObject data = error.data.toObject();
    const QList<uint> cps = sql.toUcs4();
    qint64 position = -1;
    if (data.contains(QStringLiteral("offset"))) {
        const QByteArray utf8 = sql.toUtf8();
        const qint64 offset = qBound<qint64>(0, data.take(QStringLiteral("offset")).toInteger(),
                                             utf8.size());
        position = QString::fromUtf8(utf8.left(offset)).toUcs4().size() + 1;
    } else if (data.contains(QStringLiteral("position"))) {
        position = data.value(QStringLiteral("position")).toInteger();
    } else if (data.contains(QStringLiteral("line"))) {
        const qint64 line = data.value(QStringLiteral("line")).toInteger();
        const qint64 column = data.value(QStringLiteral("column")).toInteger(1);
        qint64 l = 1, i = 0;
        for (; i < cps.size() && l < line; ++i)
            if (cps[i] == '\n')
                ++l;
        if (l == line)
            position = i + qMax<qint64>(column, 1);
    }
    if (position >= 1) {
        qint64 line = 1, column = 1;
        for (qint64 i = 0; i < position - 1 && i < cps.size(); ++i) {
            if (cps[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        data.insert(QStringLiteral("position"), position);
        data.insert(QStringLiteral("line"), line);
        data.insert(QStringLiteral("column"), column);
    }
    error.data = data;
}

QJsonArray toObjects(const QJsonArray &fields, const QJsonArray &rows)
{
    QStringList names;
    for (const QJsonValue &f : fields)
        names.append(f.toObject().value(QStringLiteral("name")).toString());
    QJsonArray out;
    for (const QJsonValue &row : rows) {
        const QJsonArray r = row.toArray();
        QJsonObject o;
        for (qsizetype i = 0; i < r.size() && i < names.size(); ++i)
            o.insert(names[i], r[i]);
        out.append(o);
    }
    return out;
}

QString csvCell(const QJsonValue &v)
{
    QString s;
    switch (v.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        return {};
    case QJsonValue::Bool:
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double: {
        const qint64 i = v.toInteger(std::numeric_limits<qint64>::min());
        return i != std::numeric_limits<qint64>::min() ? QString::number(i)
                                                       : QString::number(v.toDouble(), 'g', 17);
    }
    case QJsonValue::String:
        s = v.toString();
        break;
    case QJsonValue::Object: {
        const QJsonObject o = v.toObject();
        if (o.size() == 1
            && (o.contains(QStringLiteral("$int")) || o.contains(QStringLiteral("$float"))
                || o.contains(QStringLiteral("$bytes"))))
            s = o.begin().value().toString();
        else
            s = QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
        break;
    }
    case QJsonValue::Array:
        s = QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact));
        break;
    }
    if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n') || s.contains(u'\r'))
        s = u'"' + QString(s).replace(u'"', QStringLiteral("\"\"")) + u'"';
    return s;
}

bool validName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z_][A-Za-z0-9_$-]{0,62}$"));
    return re.match(name).hasMatch();
}

} // namespace

struct DatabaseAdapter::Cursor
{
    QString id;
    QString keyId;
    QString databaseId;
    QString backendCursor;
    QJsonArray fields;
    bool objectRows = true;
    qint64 lastUsed = 0;
    bool fetching = false;
};

struct DatabaseAdapter::OpenTransaction
{
    QString id;
    QString keyId;
    QString databaseId;
    qint64 idleMs = kDefaultTransactionIdleMs;
    qint64 lastUsed = 0;
    bool running = false; // a statement or the end is on its way
};

QJsonObject DatabaseSettings::toJson(bool withPassword) const
{
    QJsonObject o{{QStringLiteral("type"), type},
                  {QStringLiteral("database"), database},
                  {QStringLiteral("username"), username},
                  {QStringLiteral("initialized"), initialized}};
    if (withPassword && !password.isEmpty())
        o.insert(QStringLiteral("password"), password);
    return o;
}

DatabaseSettings DatabaseSettings::fromJson(const QJsonObject &o)
{
    DatabaseSettings s;
    s.type = o.value(QStringLiteral("type")).toString();
    s.database = o.value(QStringLiteral("database")).toString();
    s.username = o.value(QStringLiteral("username")).toString();
    s.password = o.value(QStringLiteral("password")).toString();
    s.initialized = o.value(QStringLiteral("initialized")).toBool();
    return s;
}

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
    , m_cursorSweep(new QTimer(this))
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
        m_sandboxes->setTypeHooks(type, hooks);
    }
    registerMethods();
    m_cursorSweep->setInterval(30000);
    connect(m_cursorSweep, &QTimer::timeout, this, [this] {
        expireCursors();
        expireTransactions();
    });
    m_cursorSweep->start();
}

DatabaseAdapter::~DatabaseAdapter()
{
    qDeleteAll(m_cursors);
    qDeleteAll(m_transactions);
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
    QFile f(m_sandboxes->stateDirOf(id) + QStringLiteral("/database.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return DatabaseSettings::fromJson(QJsonDocument::fromJson(f.readAll()).object());
}

bool DatabaseAdapter::saveSettings(const QString &id, const DatabaseSettings &settings) const
{
    const QString dir = m_sandboxes->stateDirOf(id);
    QDir().mkpath(dir);
    QSaveFile f(dir + QStringLiteral("/database.json"));
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    f.write(QJsonDocument(settings.toJson(true)).toJson());
    return f.commit();
}

QJsonObject DatabaseAdapter::decorate(QJsonObject sandbox) const
{
    const QString id = sandbox.value(QStringLiteral("id")).toString();
    const DatabaseSettings s = settingsOf(id);
    QJsonObject db{{QStringLiteral("type"), s.type}, {QStringLiteral("database"), s.database}};
    if (s.type == QLatin1String("postgres"))
        db.insert(QStringLiteral("username"), s.username);
    sandbox.insert(QStringLiteral("database"), db);
    if (m_startupMs.contains(id))
        sandbox.insert(QStringLiteral("startupTimeMs"), double(m_startupMs.value(id)));
    return sandbox;
}

// --- lifecycle hooks ---------------------------------------------------------------------------

void DatabaseAdapter::prepare(SandboxSpec &spec, const SandboxRecord &record)
{
    if (m_creating) {
        saveSettings(record.id, *m_creating);
        m_creating.reset();
    }
    const DatabaseSettings s = settingsOf(record.id);
    // The socket directory: the sandbox's /run/db, owned by its uid, on its disk (WorkspaceVolume
    // makes it).
    spec.extraMounts.append({WorkspaceVolume::treePath(spec.volumeDir, WorkspaceVolume::Tree::Run),
                             QStringLiteral("/run/db"), true});
    if (s.type == QLatin1String("postgres"))
        spec.extraMounts.append(
            {m_template->path(), QStringLiteral("/run/sandbox/pg-template"), false});
    else
        spec.extraMounts.append({m_dbhostDir, QStringLiteral("/run/sandbox/dbhost"), false});
}

DatabaseBackend *DatabaseAdapter::makeBackend(const QString &id, const DatabaseSettings &s,
                                              uid_t uid, const ResourceLimits &limits)
{
    DatabaseBackend *backend = nullptr;
    if (s.type == QLatin1String("postgres")) {
        PostgresBackend::Settings ps;
        ps.relayDir = m_relayDir.path() + u'/' + id;
        ps.server = {m_sandboxes->volumeDirOf(id), uid};
        ps.database = s.database;
        ps.username = s.username;
        ps.password = s.password;
        ps.initialize = !s.initialized;
        auto *pg = new PostgresBackend(ps, this);
        pg->onInitialized = [this, id] {
            DatabaseSettings done = settingsOf(id);
            done.initialized = true;
            done.password.clear();
            saveSettings(id, done);
        };
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
        backend = new DbHostBackend(ds, this);
    }
    connect(backend, &DatabaseBackend::serverExited, this, [this, id](const QString &why) {
        qCWarning(lcDatabases) << "database" << id << "server exited:" << why;
        for (Cursor *c : std::as_const(m_cursors))
            if (c->databaseId == id)
                QTimer::singleShot(0, this, [this, cid = c->id] { closeCursor(cid); });
        for (const OpenTransaction *t : m_transactions.values())
            if (t->databaseId == id)
                forgetTransaction(t->id); // its session died with the server
    });
    return backend;
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
    const DatabaseSettings s = settingsOf(record.id);
    if (!databaseTypes().contains(s.type))
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("the database's settings are missing"),
                          {}});
    const EngineConfig &config = m_sandboxes->config();
    const uid_t uid = config.dropPrivileges ? config.uidBase + uid_t(record.slot) : ::getuid();
    DatabaseBackend *backend = makeBackend(record.id, s, uid,
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

void DatabaseAdapter::beforeStop(const SandboxRecord &record, std::function<void()> done)
{
    for (const OpenTransaction *t : m_transactions.values())
        if (t->databaseId == record.id)
            forgetTransaction(t->id); // the server's stop rolls it back
    for (Cursor *c : std::as_const(m_cursors))
        if (c->databaseId == record.id)
            QTimer::singleShot(0, this, [this, cid = c->id] { closeCursor(cid); });
    DatabaseBackend *backend = m_backends.take(record.id);
    if (!backend)
        return done();
    backend->stop([backend, done] {
        backend->deleteLater();
        done();
    });
}

void DatabaseAdapter::removed(const SandboxRecord &record)
{
    for (const OpenTransaction *t : m_transactions.values())
        if (t->databaseId == record.id)
            forgetTransaction(t->id);
    const auto cursors = m_cursors;
    for (Cursor *c : cursors)
        if (c->databaseId == record.id) {
            m_cursors.remove(c->id);
            delete c;
        }
    if (DatabaseBackend *backend = m_backends.take(record.id))
        backend->deleteLater();
    m_startupMs.remove(record.id);
}

void DatabaseAdapter::withBackend(const CallContext &ctx, const QString &id, WithBackend then)
{
    QObject *context = ctx.guard ? ctx.guard.data() : this;
    m_sandboxes->withSupervisor(
        ctx.keyId, id, kDatabase, context, [this, id, then](Result<SupervisorChannel *> r) {
            if (!r)
                return then(r.error());
            DatabaseBackend *backend = m_backends.value(id);
            if (!backend) {
                m_sandboxes->endActivity(id);
                return then(Error{ErrorCode::SandboxError,
                                  QStringLiteral("the database %1 has no server").arg(id),
                                  {}});
            }
            if (backend->isAlive())
                return then(backend);
            // The server died (a crash, kill -9): start it again, with crash recovery, and go on.
            qCInfo(lcDatabases) << "restarting the server of" << id;
            QPointer<DatabaseBackend> guard(backend);
            startBackend(id, backend, r.value(), [this, id, guard, then](Result<bool> started) {
                if (!started || !guard) {
                    m_sandboxes->endActivity(id);
                    return then(started ? Error{ErrorCode::SandboxError,
                                                QStringLiteral("the database went away"),
                                                {}}
                                        : started.error());
                }
                then(guard.data());
            });
        });
}

// --- methods -----------------------------------------------------------------------------------

void DatabaseAdapter::registerMethods()
{
    auto add = [this](const QString &name, Methods::Handler h) {
        m_methods->add(name, std::move(h));
    };
    add(QStringLiteral("databases.create"), [this](const QJsonObject &p, const CallContext &ctx,
                                                   const Reply &reply) { create(p, ctx, reply); });
    add(QStringLiteral("databases.list"),
        [this](const QJsonObject &, const CallContext &ctx, const Reply &reply) {
            QJsonArray out;
            for (const QJsonValue &v : m_sandboxes->list(ctx.keyId, kDatabase))
                out.append(decorate(v.toObject()));
            reply(QJsonValue(QJsonObject{{QStringLiteral("databases"), out}}));
        });
    add(QStringLiteral("databases.get"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            Params p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            if (p.failed())
                return reply(p.error());
            const auto info = m_sandboxes->info(ctx.keyId, id, kDatabase);
            if (!info)
                return reply(info.error());
            reply(QJsonValue(decorate(*info)));
        });
    add(QStringLiteral("databases.setName"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            Params p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            if (p.failed())
                return reply(p.error());
            if (!p.raw(QStringLiteral("name")).isString())
                return reply(Error::invalidParams(QStringLiteral("name"),
                                                  QStringLiteral("name must be a string")));
            const QString name = p.optionalName(QStringLiteral("name")).trimmed();
            if (p.failed())
                return reply(p.error());
            const auto info = m_sandboxes->setName(ctx.keyId, id, kDatabase, name);
            if (!info)
                return reply(info.error());
            reply(QJsonValue(decorate(*info)));
        });
    for (const QString &verb : {QStringLiteral("stop"), QStringLiteral("start"),
                                QStringLiteral("delete"), QStringLiteral("restart")}) {
        add(QStringLiteral("databases.") + verb,
            [this, verb](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
                Params p(params);
                const QString id = p.requiredString(QStringLiteral("id"));
                if (p.failed())
                    return reply(p.error());
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
            });
    }
    for (const QString &m :
         {QStringLiteral("databases.query"), QStringLiteral("databases.queryWithMetadata"),
          QStringLiteral("databases.execute")}) {
        add(m, [this, m](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            sql(m, p, ctx, reply);
        });
    }
    add(QStringLiteral("databases.fetch"), [this](const QJsonObject &p, const CallContext &ctx,
                                                  const Reply &reply) { fetch(p, ctx, reply); });
    add(QStringLiteral("databases.closeCursor"),
        [this](const QJsonObject &params, const CallContext &ctx, const Reply &reply) {
            Params p(params);
            const QString id = p.requiredString(QStringLiteral("id"));
            const QString cursor = p.requiredString(QStringLiteral("cursor"));
            if (p.failed())
                return reply(p.error());
            Cursor *c = m_cursors.value(cursor);
            const bool mine = c && c->keyId == ctx.keyId && c->databaseId == id;
            if (mine)
                closeCursor(cursor);
            reply(QJsonValue(
                QJsonObject{{QStringLiteral("cursor"), cursor}, {QStringLiteral("closed"), mine}}));
        });
    add(QStringLiteral("databases.transaction"),
        [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            transaction(p, ctx, reply);
        });
    add(QStringLiteral("databases.begin"), [this](const QJsonObject &p, const CallContext &ctx,
                                                  const Reply &reply) { begin(p, ctx, reply); });
    add(QStringLiteral("databases.commit"),
        [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            finish(true, p, ctx, reply);
        });
    add(QStringLiteral("databases.rollback"),
        [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            finish(false, p, ctx, reply);
        });
    for (const QString &m : {QStringLiteral("version"), QStringLiteral("ping"),
                             QStringLiteral("listTables"), QStringLiteral("describeTable"),
                             QStringLiteral("listDatabases"), QStringLiteral("createDatabase")}) {
        add(QStringLiteral("databases.") + m,
            [this, m](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
                admin(m, p, ctx, reply);
            });
    }
    add(QStringLiteral("databases.exportData"),
        [this](const QJsonObject &p, const CallContext &ctx, const Reply &reply) {
            exportData(p, ctx, reply);
        });
}

void DatabaseAdapter::create(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    Params p(params);
    CreateSandbox c;
    c.keyId = ctx.keyId;
    c.kind = kDatabase;
    c.type = p.optionalChoice(QStringLiteral("type"), databaseTypes(), QStringLiteral("postgres"));
    c.size = p.optionalChoice(QStringLiteral("size"), SandboxManager::sizes(),
                              QStringLiteral("standard-1"));
    c.sleepAfterMs = p.optionalInteger(QStringLiteral("sleepAfter"), -1, 0, kMaxSleepAfterMs);
    DatabaseSettings s;
    s.type = c.type;
    const bool pg = c.type == QLatin1String("postgres");
    s.database = p.optionalString(QStringLiteral("database"), pg ? QStringLiteral("postgres")
                                                              : c.type == QLatin1String("sqlite")
                                                                  ? QStringLiteral("main.db")
                                                                  : QStringLiteral("main.duckdb"));
    s.username = p.optionalString(QStringLiteral("username"),
                                  pg ? QStringLiteral("sandbox") : QString());
    s.password = p.optionalString(QStringLiteral("password"));
    c.name = p.optionalName(QStringLiteral("name"), s.database);
    if (!p.failed() && pg) {
        if (!validName(s.database) || s.database.startsWith(QLatin1String("template")))
            p.fail(QStringLiteral("database"),
                   QStringLiteral(
                       "must be a name of letters, digits, _ $ - (at most 63), not template0/1"));
        else if (!validName(s.username) || s.username == QLatin1String(PostgresBackend::kAdminRole)
                 || s.username.startsWith(QLatin1String("pg_")))
            p.fail(
                QStringLiteral("username"),
                QStringLiteral(
                    "must be a name of letters, digits, _ $ - (at most 63), not a reserved role"));
        else if (s.password.size() > 1000 || s.password.contains(QChar(0)))
            p.fail(QStringLiteral("password"), QStringLiteral("must be at most 1000 characters"));
    } else if (!p.failed()) {
        // A file inside /workspace: "app.db", "data/app.db" or "/workspace/data/app.db". Any
        // other absolute path, as the original design's "/data/app.db", names the same path below
        // /workspace ("/workspace/data/app.db"): a database's files live in its workspace.
        QString file = s.database;
        if (file.startsWith(QLatin1String("/workspace/")))
            file = file.mid(11);
        else if (file.startsWith(u'/'))
            file = file.mid(1);
        const QString clean = QDir::cleanPath(file);
        if (file.isEmpty() || file.startsWith(u'/') || clean.startsWith(QLatin1String(".."))
            || clean != file || file.contains(QChar(0)) || file.size() > 200)
            p.fail(QStringLiteral("database"),
                   QStringLiteral("must be a file name inside /workspace, e.g. \"app.db\" or "
                                  "\"/data/app.db\" (/workspace/data/app.db)"));
        s.database = file;
        s.username.clear();
    }
    if (p.failed())
        return reply(p.error());
    if (c.type == QLatin1String("duckdb")
        && !QFile::exists(m_dbhostDir + QStringLiteral("/sandbox-dbhost-duckdb")))
        return reply(Error{ErrorCode::NotImplemented,
                           QStringLiteral("DuckDB is not available in this build: run "
                                          "scripts/setup.sh, which fetches libduckdb"),
                           {}});
    if (c.type != QLatin1String("postgres")
        && !QFile::exists(m_dbhostDir + QStringLiteral("/sandbox-dbhost")))
        return reply(Error{ErrorCode::SandboxError,
                           QStringLiteral("sandbox-dbhost not found in %1").arg(m_dbhostDir),
                           {}});

    QElapsedTimer clock;
    clock.start();
    QPointer<QObject> guard(ctx.guard ? ctx.guard.data() : this);
    auto launch = [this, c, s, guard, clock, reply] {
        if (!guard)
            return;
        m_creating = s;
        m_sandboxes->create(c, guard, [this, clock, reply](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            QJsonObject out = decorate(*r);
            // The original API's getStartupTime(): from the request to a server that answers.
            out.insert(QStringLiteral("startupTimeMs"), double(clock.elapsed()));
            reply(QJsonValue(out));
        });
        m_creating.reset();
    };
    if (c.type != QLatin1String("postgres"))
        return launch();
    m_template->ensure(guard, [launch, reply](Result<bool> ready) {
        if (!ready)
            return reply(ready.error());
        launch();
    });
}

namespace {

// Runs one backend call with the statement timeout and rpc.cancel wired in.
struct Timed
{
    bool answered = false;
    bool timedOut = false;
    CancelFn cancel;
    QPointer<QTimer> timer;
};

} // namespace

static void runTimed(QObject *owner, qint64 timeoutMs, const CallContext &ctx,
                     const std::function<CancelFn(PageDone)> &start, PageDone done)
{
    auto st = std::make_shared<Timed>();
    auto finish = [st, done, timeoutMs](Result<QJsonObject> r) {
        if (st->answered)
            return;
        st->answered = true;
        if (st->timer)
            st->timer->deleteLater();
        if (st->timedOut)
            r = Error{ErrorCode::Timeout,
                      QStringLiteral(
                          "the statement ran past its timeout of %1 ms and was cancelled")
                          .arg(timeoutMs),
                      QJsonObject{{QStringLiteral("timeoutMs"), double(timeoutMs)}}};
        done(std::move(r));
    };
    st->cancel = start(finish);
    auto *timer = new QTimer(owner);
    st->timer = timer;
    timer->setSingleShot(true);
    QObject::connect(timer, &QTimer::timeout, owner, [st, finish, timer] {
        if (st->answered)
            return;
        if (!st->timedOut) {
            st->timedOut = true;
            if (st->cancel)
                st->cancel();
            timer->start(5000); // the server gets 5 s to give up; then the call answers anyway
            return;
        }
        finish(Error{ErrorCode::Timeout, {}, {}});
    });
    timer->start(int(timeoutMs));
    *ctx.onCancel = [st] {
        if (!st->answered && st->cancel)
            st->cancel();
    };
}

void DatabaseAdapter::sql(const QString &method, const QJsonObject &params, const CallContext &ctx,
                          const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    SqlRequest req;
    req.sql = p.requiredString(QStringLiteral("sql"));
    const QJsonValue rawParams = p.raw(QStringLiteral("params"));
    if (rawParams.isArray())
        req.params = rawParams.toArray();
    else if (!rawParams.isUndefined() && !rawParams.isNull() && !p.failed())
        p.fail(QStringLiteral("params"), QStringLiteral("must be an array"));
    req.execute = method == QLatin1String("databases.execute");
    req.pageSize = int(
        p.optionalInteger(QStringLiteral("pageSize"), kDefaultPageSize, 1, kMaxPageSize));
    req.pageBytes = kPageBytes;
    const qint64 timeoutMs = p.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1,
                                               kMaxTimeoutMs);
    const bool objectRows = p.optionalChoice(QStringLiteral("rowMode"),
                                             {QStringLiteral("object"), QStringLiteral("array")},
                                             QStringLiteral("object"))
                            == QLatin1String("object");
    if (!p.failed() && req.sql.trimmed().isEmpty())
        p.fail(QStringLiteral("sql"), QStringLiteral("must not be empty"));
    req.transaction = p.optionalString(QStringLiteral("transaction"));
    OpenTransaction *tx = nullptr;
    if (!p.failed() && !req.transaction.isEmpty()) {
        tx = m_transactions.value(req.transaction);
        if (!tx || tx->keyId != ctx.keyId || tx->databaseId != id)
            return reply(Error::notFound(
                QStringLiteral("transaction %1 (it ended, or is not this database's)")
                    .arg(req.transaction)));
        if (tx->running)
            p.fail(QStringLiteral("transaction"),
                   QStringLiteral("is running a statement: wait for its answer"));
    }
    if (p.failed())
        return reply(p.error());
    if (tx) {
        tx->running = true;
        tx->lastUsed = QDateTime::currentMSecsSinceEpoch();
    }
    const CallContext c = ctx;
    withBackend(ctx, id, [this, id, req, timeoutMs, objectRows, c, reply](Result<DatabaseBackend *> b) {
        if (!req.transaction.isEmpty()) {
            if (OpenTransaction *t = m_transactions.value(req.transaction))
                t->running = false;
        }
        if (!b)
            return reply(b.error());
        QPointer<DatabaseBackend> backend = *b;
        runTimed(
            this, timeoutMs, c,
            [backend, req](PageDone done) { return backend->query(req, std::move(done)); },
            [this, id, req, objectRows, c, backend, reply](Result<QJsonObject> r) {
                if (!r) {
                    m_sandboxes->endActivity(id);
                    Error e = r.error();
                    if (e.code == ErrorCode::QueryError || e.code == ErrorCode::InvalidParams)
                        locate(req.sql, e);
                    // A failed statement ends its transaction (the backend rolled it back).
                    if (!req.transaction.isEmpty()) {
                        forgetTransaction(req.transaction);
                        if (!e.message.contains(QLatin1String("rolled back")))
                            e.message += QStringLiteral(" (the transaction was rolled back)");
                    }
                    return reply(e);
                }
                QJsonObject page = *r;
                if (OpenTransaction *t = m_transactions.value(req.transaction))
                    t->lastUsed = QDateTime::currentMSecsSinceEpoch();
                if (req.execute) {
                    m_sandboxes->endActivity(id);
                    return reply(
                        QJsonValue(QJsonObject{{QStringLiteral("rowsAffected"),
                                                page.value(QStringLiteral("rowsAffected"))},
                                               {QStringLiteral("command"),
                                                page.value(QStringLiteral("command"))}}));
                }
                const QJsonArray fields = page.value(QStringLiteral("fields")).toArray();
                const QJsonArray rows = page.value(QStringLiteral("rows")).toArray();
                const QString backendCursor = page.value(QStringLiteral("cursor")).toString();
                QJsonValue cursor;
                if (!backendCursor.isEmpty() && backend) {
                    // Keep at most kMaxCursorsPerDatabase: the least recently used goes first.
                    QList<Cursor *> mine;
                    for (Cursor *x : std::as_const(m_cursors))
                        if (x->databaseId == id)
                            mine.append(x);
                    std::sort(mine.begin(), mine.end(),
                              [](Cursor *a, Cursor *b) { return a->lastUsed < b->lastUsed; });
                    for (qsizetype i = 0; i + kMaxCursorsPerDatabase <= mine.size(); ++i)
                        closeCursor(mine[i]->id);
                    auto *cur = new Cursor;
                    cur->id = newCursorId();
                    cur->keyId = c.keyId;
                    cur->databaseId = id;
                    cur->backendCursor = backendCursor;
                    cur->fields = fields;
                    cur->objectRows = objectRows;
                    cur->lastUsed = QDateTime::currentMSecsSinceEpoch();
                    m_cursors.insert(cur->id, cur);
                    cursor = cur->id; // the sandbox stays busy (awake) until the cursor closes
                } else {
                    m_sandboxes->endActivity(id);
                }
                // A paged result's command tag is only known at its end: name it by its first word.
                QString command = page.value(QStringLiteral("command")).toString();
                if (command.isEmpty()) {
                    static const QRegularExpression
                        word(QStringLiteral("^(?:\\s|--[^\\n]*\\n|/\\*.*?\\*/)*([A-Za-z]+)"),
                             QRegularExpression::DotMatchesEverythingOption);
                    command = word.match(req.sql).captured(1).toUpper();
                }
                QJsonObject answer{
                    {QStringLiteral("rows"), objectRows ? toObjects(fields, rows) : rows},
                    {QStringLiteral("rowCount"), rows.size()},
                    {QStringLiteral("fields"), fields},
                    {QStringLiteral("command"), command},
                    {QStringLiteral("rowsAffected"), page.value(QStringLiteral("rowsAffected"))},
                    {QStringLiteral("cursor"), cursor},
                    {QStringLiteral("hasMore"), !cursor.isNull()},
                };
                if (!req.transaction.isEmpty())
                    answer.insert(QStringLiteral("truncated"),
                                  page.value(QStringLiteral("truncated")).toBool());
                reply(QJsonValue(answer));
            });
    });
}

void DatabaseAdapter::fetch(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString cursorId = p.requiredString(QStringLiteral("cursor"));
    const int pageSize = int(
        p.optionalInteger(QStringLiteral("pageSize"), kDefaultPageSize, 1, kMaxPageSize));
    const qint64 timeoutMs = p.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1,
                                               kMaxTimeoutMs);
    if (p.failed())
        return reply(p.error());
    Cursor *c = m_cursors.value(cursorId);
    if (!c || c->keyId != ctx.keyId || c->databaseId != id)
        return reply(Error::notFound(
            QStringLiteral("cursor %1 (it was closed, read to the end or expired)").arg(cursorId)));
    if (c->fetching)
        return reply(
            Error::invalidParams(QStringLiteral("cursor"),
                                 QStringLiteral("a fetch on this cursor is already running")));
    DatabaseBackend *backend = m_backends.value(id);
    if (!backend || !backend->isAlive()) {
        closeCursor(cursorId);
        return reply(Error{ErrorCode::SandboxNotRunning,
                           QStringLiteral("the database server stopped; the cursor is gone"),
                           {}});
    }
    c->fetching = true;
    c->lastUsed = QDateTime::currentMSecsSinceEpoch();
    QPointer<DatabaseBackend> guard(backend);
    const QString backendCursor = c->backendCursor;
    runTimed(
        this, timeoutMs, ctx,
        [guard, backendCursor, pageSize](PageDone done) {
            if (!guard) {
                done(Error{ErrorCode::SandboxNotRunning,
                           QStringLiteral("the database server stopped"),
                           {}});
                return CancelFn([] {});
            }
            return guard->fetch(backendCursor, pageSize, kPageBytes, std::move(done));
        },
        [this, cursorId, reply](Result<QJsonObject> r) {
            Cursor *c = m_cursors.value(cursorId);
            if (!c)
                return reply(
                    r ? Error{ErrorCode::Cancelled, QStringLiteral("the cursor was closed"), {}}
                      : r.error());
            c->fetching = false;
            c->lastUsed = QDateTime::currentMSecsSinceEpoch();
            if (!r) {
                closeCursor(cursorId);
                return reply(r.error());
            }
            const QJsonArray rows = r->value(QStringLiteral("rows")).toArray();
            const bool done = r->value(QStringLiteral("done")).toBool();
            const QJsonArray fields = c->fields;
            const bool objects = c->objectRows;
            if (done)
                closeCursor(cursorId);
            reply(QJsonValue(
                QJsonObject{{QStringLiteral("rows"), objects ? toObjects(fields, rows) : rows},
                            {QStringLiteral("rowCount"), rows.size()},
                            {QStringLiteral("done"), done},
                            {QStringLiteral("cursor"),
                             done ? QJsonValue() : QJsonValue(cursorId)}}));
        });
}

void DatabaseAdapter::closeCursor(const QString &cursorId)
{
    Cursor *c = m_cursors.take(cursorId);
    if (!c)
        return;
    if (DatabaseBackend *backend = m_backends.value(c->databaseId))
        backend->closeCursor(c->backendCursor);
    m_sandboxes->endActivity(c->databaseId);
    delete c;
}

void DatabaseAdapter::expireCursors()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    QStringList old;
    for (const Cursor *c : std::as_const(m_cursors))
        if (!c->fetching && now - c->lastUsed > kCursorIdleMs)
            old.append(c->id);
    for (const QString &id : old)
        closeCursor(id);
}

void DatabaseAdapter::transaction(const QJsonObject &params, const CallContext &ctx,
                                  const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 timeoutMs = p.optionalInteger(QStringLiteral("timeout"), kDefaultTimeoutMs, 1,
                                               kMaxTimeoutMs);
    const bool objectRows = p.optionalChoice(QStringLiteral("rowMode"),
                                             {QStringLiteral("object"), QStringLiteral("array")},
                                             QStringLiteral("object"))
                            == QLatin1String("object");
    QJsonArray statements;
    const QJsonArray given = p.raw(QStringLiteral("statements")).toArray();
    for (qsizetype i = 0; i < given.size() && !p.failed(); ++i) {
        const QJsonValue s = given[i];
        QJsonObject st = s.isString() ? QJsonObject{{QStringLiteral("sql"), s.toString()}}
                                      : s.toObject();
        if (st.value(QStringLiteral("sql")).toString().trimmed().isEmpty())
            p.fail(QStringLiteral("statements[%1].sql").arg(i),
                   QStringLiteral("must be a non-empty string"));
        else if (st.contains(QStringLiteral("params"))
                 && !st.value(QStringLiteral("params")).isArray())
            p.fail(QStringLiteral("statements[%1].params").arg(i),
                   QStringLiteral("must be an array"));
        statements.append(st);
    }
    if (!p.failed() && (statements.isEmpty() || statements.size() > kMaxStatements))
        p.fail(QStringLiteral("statements"),
               QStringLiteral("must be 1 to %1 statements").arg(kMaxStatements));
    if (p.failed())
        return reply(p.error());
    const CallContext c = ctx;
    withBackend(
        ctx, id,
        [this, id, statements, timeoutMs, objectRows, c, reply](Result<DatabaseBackend *> b) {
            if (!b)
                return reply(b.error());
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                this, timeoutMs, c,
                [backend, statements](PageDone done) {
                    return backend->transaction(statements, std::move(done));
                },
                [this, id, statements, objectRows, reply](Result<QJsonObject> r) {
                    m_sandboxes->endActivity(id);
                    if (!r) {
                        Error e = r.error();
                        const int index
                            = e.data.toObject().value(QStringLiteral("statementIndex")).toInt(-1);
                        if (index >= 0 && index < statements.size()
                            && e.code == ErrorCode::QueryError)
                            locate(statements[index]
                                       .toObject()
                                       .value(QStringLiteral("sql"))
                                       .toString(),
                                   e);
                        e.message = (index >= 0 ? QStringLiteral("statement %1: ").arg(index)
                                                : QString())
                                    + e.message
                                    + QStringLiteral(" (the transaction was rolled back)");
                        return reply(e);
                    }
                    QJsonArray results;
                    for (const QJsonValue &v : r->value(QStringLiteral("results")).toArray()) {
                        QJsonObject o = v.toObject();
                        const QJsonArray rows = o.value(QStringLiteral("rows")).toArray();
                        if (objectRows)
                            o.insert(QStringLiteral("rows"),
                                     toObjects(o.value(QStringLiteral("fields")).toArray(), rows));
                        o.insert(QStringLiteral("rowCount"), rows.size());
                        results.append(o);
                    }
                    reply(QJsonValue(QJsonObject{{QStringLiteral("results"), results},
                                                 {QStringLiteral("committed"), true}}));
                });
        });
}

void DatabaseAdapter::begin(const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 idleMs = p.optionalInteger(QStringLiteral("timeout"), kDefaultTransactionIdleMs,
                                            1000, kMaxTransactionIdleMs);
    if (p.failed())
        return reply(p.error());
    int open = 0;
    for (const OpenTransaction *t : std::as_const(m_transactions))
        open += t->databaseId == id ? 1 : 0;
    if (open >= kMaxTransactionsPerDatabase)
        return reply(Error{ErrorCode::QuotaExceeded,
                           QStringLiteral("at most %1 open transactions per database: commit or "
                                          "roll one back first")
                               .arg(kMaxTransactionsPerDatabase),
                           QJsonObject{{QStringLiteral("limit"), QStringLiteral("transactions")}}});
    const QString keyId = ctx.keyId;
    withBackend(ctx, id, [this, id, keyId, idleMs, reply](Result<DatabaseBackend *> b) {
        if (!b)
            return reply(b.error());
        const QString txId = newTransactionId();
        (*b)->begin(txId, [this, id, keyId, idleMs, txId, reply](Result<QJsonObject> r) {
            if (!r) {
                m_sandboxes->endActivity(id);
                return reply(r.error());
            }
            // The database stays awake (busy) until the transaction ends.
            auto *t = new OpenTransaction;
            t->id = txId;
            t->keyId = keyId;
            t->databaseId = id;
            t->idleMs = idleMs;
            t->lastUsed = QDateTime::currentMSecsSinceEpoch();
            m_transactions.insert(txId, t);
            reply(QJsonValue(QJsonObject{{QStringLiteral("transaction"), txId},
                                         {QStringLiteral("timeout"), double(idleMs)}}));
        });
    });
}

void DatabaseAdapter::finish(bool commit, const QJsonObject &params, const CallContext &ctx,
                             const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString txId = p.requiredString(QStringLiteral("transaction"));
    if (p.failed())
        return reply(p.error());
    OpenTransaction *t = m_transactions.value(txId);
    if (!t || t->keyId != ctx.keyId || t->databaseId != id)
        return reply(Error::notFound(
            QStringLiteral("transaction %1 (it ended, or is not this database's)").arg(txId)));
    if (t->running)
        return reply(Error::invalidParams(QStringLiteral("transaction"),
                                          QStringLiteral("is running a statement: wait for its "
                                                         "answer")));
    DatabaseBackend *backend = m_backends.value(id);
    if (!backend) {
        forgetTransaction(txId);
        return reply(Error::notFound(QStringLiteral("transaction %1 (it ended)").arg(txId)));
    }
    t->running = true;
    QPointer<QObject> guard(ctx.guard ? ctx.guard.data() : this);
    backend->finish(txId, commit, [this, txId, guard, reply](Result<QJsonObject> r) {
        forgetTransaction(txId);
        if (!guard)
            return;
        if (!r)
            return reply(r.error());
        reply(QJsonValue(*r));
    });
}

void DatabaseAdapter::forgetTransaction(const QString &txId)
{
    OpenTransaction *t = m_transactions.take(txId);
    if (!t)
        return;
    m_sandboxes->endActivity(t->databaseId);
    delete t;
}

void DatabaseAdapter::expireTransactions()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    for (OpenTransaction *t : m_transactions.values()) {
        if (t->running || now - t->lastUsed <= t->idleMs)
            continue;
        qCInfo(lcDatabases) << "rolling back idle transaction" << t->id << "of" << t->databaseId;
        const QString txId = t->id;
        if (DatabaseBackend *backend = m_backends.value(t->databaseId)) {
            t->running = true;
            backend->finish(txId, false,
                            [this, txId](Result<QJsonObject>) { forgetTransaction(txId); });
        } else {
            forgetTransaction(txId);
        }
    }
}

void DatabaseAdapter::internalQuery(const CallContext &ctx, const QString &id,
                                    const QString &sqlText, const QJsonArray &params,
                                    std::function<void(Result<QJsonObject>)> done)
{
    const CallContext c = ctx;
    withBackend(ctx, id, [this, id, sqlText, params, c, done](Result<DatabaseBackend *> b) {
        if (!b)
            return done(b.error());
        SqlRequest req;
        req.sql = sqlText;
        req.params = params;
        req.pageSize = kMaxPageSize;
        QPointer<DatabaseBackend> backend = *b;
        runTimed(
            this, kDefaultTimeoutMs, c,
            [backend, req](PageDone d) { return backend->query(req, std::move(d)); },
            [this, id, backend, done](Result<QJsonObject> r) {
                m_sandboxes->endActivity(id);
                if (r && !r->value(QStringLiteral("cursor")).toString().isEmpty() && backend)
                    backend->closeCursor(
                        r->value(QStringLiteral("cursor")).toString()); // more than enough rows
                done(r);
            });
    });
}

void DatabaseAdapter::admin(const QString &method, const QJsonObject &params,
                            const CallContext &ctx, const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    if (p.failed())
        return reply(p.error());
    const auto info = m_sandboxes->info(ctx.keyId, id, kDatabase);
    if (!info)
        return reply(info.error());
    const QString type = info->value(QStringLiteral("type")).toString();
    const bool pg = type == QLatin1String("postgres"), lite = type == QLatin1String("sqlite");
    auto rows = [](const Result<QJsonObject> &r) {
        return r->value(QStringLiteral("rows")).toArray();
    };

    if (method == QLatin1String("version")) {
        const QString q = pg     ? QStringLiteral("SELECT version()")
                          : lite ? QStringLiteral("SELECT 'SQLite ' || sqlite_version()")
                                 : QStringLiteral("SELECT 'DuckDB ' || version()");
        return internalQuery(ctx, id, q, {}, [reply, rows, type](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            reply(QJsonValue(QJsonObject{{QStringLiteral("type"), type},
                                         {QStringLiteral("version"),
                                          rows(r).at(0).toArray().at(0).toString()}}));
        });
    }
    if (method == QLatin1String("ping")) {
        QElapsedTimer clock;
        clock.start();
        return internalQuery(ctx, id, QStringLiteral("SELECT 1"), {},
                             [reply, clock](Result<QJsonObject> r) {
                                 reply(QJsonValue(QJsonObject{{QStringLiteral("ok"), bool(r)},
                                                              {QStringLiteral("latencyMs"),
                                                               double(clock.nsecsElapsed()) / 1e6},
                                                              {QStringLiteral("error"),
                                                               r ? QJsonValue()
                                                                 : QJsonValue(r.error().message)}}));
                             });
    }
    if (method == QLatin1String("listTables")) {
        const QString q
            = lite ? QStringLiteral(
                  "SELECT 'main', name, type FROM sqlite_schema WHERE type IN ('table','view') "
                  "AND name NOT LIKE 'sqlite_%' ORDER BY name")
                   : QStringLiteral("SELECT table_schema, table_name, CASE WHEN table_type = "
                                    "'VIEW' THEN 'view' ELSE 'table' END "
                                    "FROM information_schema.tables WHERE table_schema NOT IN "
                                    "('pg_catalog', 'information_schema') "
                                    "%1 ORDER BY 1, 2")
                         .arg(pg ? QString()
                                 : QStringLiteral("AND table_catalog = current_database()"));
        return internalQuery(ctx, id, q, {}, [reply, rows](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            QJsonArray tables;
            for (const QJsonValue &row : rows(r)) {
                const QJsonArray a = row.toArray();
                tables.append(QJsonObject{{QStringLiteral("schema"), a[0]},
                                          {QStringLiteral("name"), a[1]},
                                          {QStringLiteral("type"), a[2]}});
            }
            reply(QJsonValue(QJsonObject{{QStringLiteral("tables"), tables}}));
        });
    }
    if (method == QLatin1String("listDatabases")) {
        const QString q
            = pg ? QStringLiteral(
                  "SELECT datname, pg_get_userbyid(datdba), pg_database_size(oid) FROM pg_database "
                  "WHERE NOT datistemplate ORDER BY 1")
              : lite
                  ? QStringLiteral("SELECT name, file, NULL FROM pragma_database_list ORDER BY seq")
                  : QStringLiteral("SELECT database_name, path, NULL FROM duckdb_databases() WHERE "
                                   "NOT internal ORDER BY 1");
        return internalQuery(ctx, id, q, {}, [reply, rows, pg](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            QJsonArray out;
            for (const QJsonValue &row : rows(r)) {
                const QJsonArray a = row.toArray();
                QJsonObject o{{QStringLiteral("name"), a[0]}};
                o.insert(pg ? QStringLiteral("owner") : QStringLiteral("file"), a[1]);
                if (pg)
                    o.insert(QStringLiteral("sizeBytes"), a[2]);
                out.append(o);
            }
            reply(QJsonValue(QJsonObject{{QStringLiteral("databases"), out}}));
        });
    }
    if (method == QLatin1String("createDatabase")) {
        const QString name = p.requiredString(QStringLiteral("name"));
        if (!p.failed() && !validName(name))
            p.fail(QStringLiteral("name"),
                   QStringLiteral("must be a name of letters, digits, _ $ - (at most 63)"));
        if (p.failed())
            return reply(p.error());
        if (!pg)
            return reply(Error{ErrorCode::NotImplemented,
                               QStringLiteral("createDatabase is for PostgreSQL; a %1 database is "
                                              "one file (ATTACH another file instead)")
                                   .arg(type),
                               {}});
        const CallContext c = ctx;
        return withBackend(ctx, id, [this, id, name, c, reply](Result<DatabaseBackend *> b) {
            if (!b)
                return reply(b.error());
            SqlRequest req;
            req.sql = QStringLiteral("CREATE DATABASE %1").arg(quoteIdent(name));
            req.execute = true;
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                this, kDefaultTimeoutMs, c,
                [backend, req](PageDone d) { return backend->query(req, std::move(d)); },
                [this, id, name, reply](Result<QJsonObject> r) {
                    m_sandboxes->endActivity(id);
                    if (!r) {
                        Error e = r.error();
                        if (e.data.toObject().value(QStringLiteral("sqlstate")).toString()
                            == QLatin1String("42P04"))
                            e.code = ErrorCode::AlreadyExists;
                        return reply(e);
                    }
                    reply(QJsonValue(QJsonObject{{QStringLiteral("name"), name},
                                                 {QStringLiteral("created"), true}}));
                });
        });
    }
    // describeTable
    const QString table = p.requiredString(QStringLiteral("table"));
    const QString schema = p.optionalString(QStringLiteral("schema"), pg ? QStringLiteral("public")
                                                                      : lite
                                                                          ? QStringLiteral("main")
                                                                          : QStringLiteral("main"));
    if (p.failed())
        return reply(p.error());
    QString columnsSql, indexesSql;
    QJsonArray args{schema, table};
    if (pg) {
        columnsSql = QStringLiteral(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid), "
            "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND "
            "a.attnum = ANY(i.indkey)) "
            "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON "
            "n.oid = c.relnamespace "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER "
            "BY a.attnum");
        indexesSql = QStringLiteral(
            "SELECT i.relname, ix.indisunique, ix.indisprimary, pg_get_indexdef(ix.indexrelid), "
            "array(SELECT a.attname FROM unnest(ix.indkey) k JOIN pg_attribute a ON a.attrelid = "
            "ix.indrelid AND a.attnum = k) "
            "FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = "
            "ix.indexrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 AND t.relname = $2 "
            "ORDER BY 1");
    } else if (lite) {
        columnsSql = QStringLiteral("SELECT name, type, NOT \"notnull\", dflt_value, pk > 0 FROM "
                                    "pragma_table_info(?2, ?1) ORDER BY cid");
        indexesSql = QStringLiteral(
            "SELECT il.name, il.\"unique\", il.origin = 'pk', s.sql, "
            "(SELECT json_group_array(ii.name) FROM pragma_index_info(il.name, ?1) ii) "
            "FROM pragma_index_list(?2, ?1) il LEFT JOIN sqlite_schema s ON s.name = il.name ORDER "
            "BY 1");
    } else {
        columnsSql = QStringLiteral(
            "SELECT c.column_name, c.data_type, c.is_nullable = 'YES', c.column_default, "
            "coalesce((SELECT list_contains(k.constraint_column_names, c.column_name) FROM "
            "duckdb_constraints() k "
            "WHERE k.schema_name = $1 AND k.table_name = $2 AND k.constraint_type = 'PRIMARY KEY' "
            "LIMIT 1), false) "
            "FROM information_schema.columns c WHERE c.table_schema = $1 AND c.table_name = $2 "
            "AND c.table_catalog = current_database() ORDER BY c.ordinal_position");
        indexesSql = QStringLiteral(
            "SELECT index_name, is_unique, is_primary, sql, expressions FROM duckdb_indexes() "
            "WHERE schema_name = $1 AND table_name = $2 ORDER BY 1");
    }
    const CallContext c = ctx;
    internalQuery(
        ctx, id, columnsSql, args,
        [this, c, id, indexesSql, args, table, schema, reply, rows, lite](Result<QJsonObject> r) {
            if (!r)
                return reply(r.error());
            QJsonArray columns;
            for (const QJsonValue &row : rows(r)) {
                const QJsonArray a = row.toArray();
                columns.append(QJsonObject{{QStringLiteral("name"), a[0]},
                                           {QStringLiteral("type"), a[1]},
                                           {QStringLiteral("nullable"),
                                            a[2].isBool() ? a[2].toBool() : a[2].toInt() != 0},
                                           {QStringLiteral("default"), a[3]},
                                           {QStringLiteral("primaryKey"),
                                            a[4].isBool() ? a[4].toBool() : a[4].toInt() != 0}});
            }
            if (columns.isEmpty())
                return reply(Error::notFound(QStringLiteral("table %1.%2").arg(schema, table)));
            internalQuery(
                c, id, indexesSql, args,
                [reply, rows, columns, table, schema, lite](Result<QJsonObject> r) {
                    QJsonArray indexes;
                    if (r) {
                        for (const QJsonValue &row : rows(r)) {
                            const QJsonArray a = row.toArray();
                            QJsonValue cols = a[4];
                            if (cols.isString()) { // SQLite json_group_array, DuckDB expressions text
                                const QJsonDocument d = QJsonDocument::fromJson(
                                    cols.toString().toUtf8());
                                cols = d.isArray() ? QJsonValue(d.array())
                                                   : QJsonValue(QJsonArray{cols});
                            }
                            indexes.append(
                                QJsonObject{{QStringLiteral("name"), a[0]},
                                            {QStringLiteral("unique"),
                                             a[1].isBool() ? a[1].toBool() : a[1].toInt() != 0},
                                            {QStringLiteral("primary"),
                                             a[2].isBool() ? a[2].toBool() : a[2].toInt() != 0},
                                            {QStringLiteral("definition"), a[3]},
                                            {QStringLiteral("columns"), cols}});
                        }
                    }
                    Q_UNUSED(lite);
                    reply(QJsonValue(QJsonObject{{QStringLiteral("schema"), schema},
                                                 {QStringLiteral("table"), table},
                                                 {QStringLiteral("columns"), columns},
                                                 {QStringLiteral("indexes"), indexes}}));
                });
        });
}

void DatabaseAdapter::exportData(const QJsonObject &params, const CallContext &ctx,
                                 const Reply &reply)
{
    Params p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const QString table = p.requiredString(QStringLiteral("table"));
    const QString format = p.optionalChoice(QStringLiteral("format"),
                                            {QStringLiteral("csv"), QStringLiteral("json"),
                                             QStringLiteral("parquet")},
                                            QStringLiteral("csv"));
    const QString schema = p.optionalString(QStringLiteral("schema"));
    const QString path = p.optionalPath(QStringLiteral("path"));
    if (p.failed())
        return reply(p.error());
    const auto info = m_sandboxes->info(ctx.keyId, id, kDatabase);
    if (!info)
        return reply(info.error());
    const QString type = info->value(QStringLiteral("type")).toString();
    const bool duck = type == QLatin1String("duckdb");
    if ((format == QLatin1String("parquet") || !path.isEmpty()) && !duck)
        return reply(Error{ErrorCode::NotImplemented,
                           format == QLatin1String("parquet")
                               ? QStringLiteral("parquet export is for DuckDB databases")
                               : QStringLiteral("export to a file (path) is for DuckDB databases"),
                           {}});
    const QString source = (schema.isEmpty() ? QString() : quoteIdent(schema) + u'.')
                           + quoteIdent(table);
    const QString select = QStringLiteral("SELECT * FROM ") + source;
    const CallContext c = ctx;

    if (duck && (format == QLatin1String("parquet") || !path.isEmpty())) {
        // DuckDB writes the file itself, inside the sandbox; without a path the bytes come back.
        QString target = path;
        if (!target.isEmpty() && !target.startsWith(QLatin1String("/workspace/")))
            target = QStringLiteral("/workspace/") + target;
        if (!target.isEmpty() && QDir::cleanPath(target) != target)
            return reply(Error{ErrorCode::PathNotAllowed,
                               QStringLiteral("the export path must stay inside /workspace"),
                               {}});
        const bool temporary = target.isEmpty();
        if (temporary)
            target = QStringLiteral("/workspace/.export-%1.%2")
                         .arg(QRandomGenerator::system()->generate(), 0, 16)
                         .arg(format);
        return withBackend(
            ctx, id,
            [this, id, select, format, target, temporary, c, reply](Result<DatabaseBackend *> b) {
                if (!b)
                    return reply(b.error());
                QPointer<DbHostBackend> backend = qobject_cast<DbHostBackend *>(*b);
                runTimed(
                    this, kMaxTimeoutMs / 12, c,
                    [backend, select, format, target](PageDone d) {
                        return backend->exportFile(select, format, target, std::move(d));
                    },
                    [this, id, format, target, temporary, c, reply](Result<QJsonObject> r) {
                        if (!r) {
                            m_sandboxes->endActivity(id);
                            return reply(r.error());
                        }
                        const double rowCount = r->value(QStringLiteral("rowCount")).toDouble();
                        if (!temporary) {
                            m_sandboxes->endActivity(id);
                            return reply(
                                QJsonValue(QJsonObject{{QStringLiteral("format"), format},
                                                       {QStringLiteral("path"), target},
                                                       {QStringLiteral("rowCount"), rowCount}}));
                        }
                        // Read the file back through the supervisor (16 MiB per call), then remove it.
                        m_sandboxes->endActivity(id);
                        m_methods->call(QStringLiteral("sandbox.readFile"),
                                        {{QStringLiteral("id"), id},
                                         {QStringLiteral("path"), target},
                                         {QStringLiteral("encoding"), QStringLiteral("base64")}},
                                        c,
                                        [this, id, format, target, rowCount, c,
                                         reply](Result<QJsonValue> file) {
                                            m_methods->call(QStringLiteral("sandbox.deleteFile"),
                                                            {{QStringLiteral("id"), id},
                                                             {QStringLiteral("path"), target}},
                                                            c, [](Result<QJsonValue>) {});
                                            if (!file)
                                                return reply(file.error());
                                            const QJsonObject f = file->toObject();
                                            if (f.value(QStringLiteral("truncated")).toBool())
                                                return reply(
                                                    Error{ErrorCode::PayloadTooLarge,
                                                          QStringLiteral(
                                                              "the export is over 16 MiB; give a "
                                                              "path to write it into /workspace"),
                                                          {}});
                                            QJsonObject out{{QStringLiteral("format"), format},
                                                            {QStringLiteral("rowCount"), rowCount}};
                                            if (format == QLatin1String("parquet"))
                                                out.insert(QStringLiteral("contentBase64"),
                                                           f.value(QStringLiteral("content")));
                                            else
                                                out.insert(QStringLiteral("content"),
                                                           QString::fromUtf8(QByteArray::fromBase64(
                                                               f.value(QStringLiteral("content"))
                                                                   .toString()
                                                                   .toLatin1())));
                                            reply(QJsonValue(out));
                                        });
                    });
            });
    }

    // CSV and JSON: the engine pages through the table and formats as it goes, within a bound.
    struct Export
    {
        QString content;
        QStringList names;
        qint64 rowCount = 0;
        bool firstRow = true;
    };
    auto ex = std::make_shared<Export>();
    const bool csv = format == QLatin1String("csv");
    withBackend(ctx, id, [this, id, select, csv, ex, format, c, reply](Result<DatabaseBackend *> b) {
        if (!b)
            return reply(b.error());
        QPointer<DatabaseBackend> backend = *b;
        auto addRows = [ex, csv](const QJsonArray &rows) {
            for (const QJsonValue &row : rows) {
                const QJsonArray a = row.toArray();
                if (csv) {
                    QStringList cells;
                    for (const QJsonValue &v : a)
                        cells.append(csvCell(v));
                    ex->content += cells.join(u',') + QStringLiteral("\r\n");
                } else {
                    QJsonObject o;
                    for (qsizetype i = 0; i < a.size() && i < ex->names.size(); ++i)
                        o.insert(ex->names[i], a[i]);
                    ex->content += (ex->firstRow ? QString() : QStringLiteral(",\n"))
                                   + QString::fromUtf8(
                                       QJsonDocument(o).toJson(QJsonDocument::Compact));
                }
                ex->firstRow = false;
                ++ex->rowCount;
            }
        };
        auto step = std::make_shared<std::function<void(const QString &)>>();
        auto finish = [this, id, ex, csv, format, reply, step](Result<bool> r) {
            // step -> step: broken once the call that finishes has returned.
            QTimer::singleShot(0, this, [step] { *step = nullptr; });
            m_sandboxes->endActivity(id);
            if (!r)
                return reply(r.error());
            if (!csv)
                ex->content = u'[' + ex->content
                              + (ex->firstRow ? QStringLiteral("]") : QStringLiteral("\n]"));
            reply(QJsonValue(QJsonObject{{QStringLiteral("format"), format},
                                         {QStringLiteral("content"), ex->content},
                                         {QStringLiteral("rowCount"), double(ex->rowCount)}}));
        };
        *step = [backend, ex, addRows, finish, step](const QString &cursor) {
            if (!backend)
                return finish(
                    Error{ErrorCode::SandboxNotRunning, QStringLiteral("the database stopped"), {}});
            backend->fetch(cursor, 5000, kPageBytes,
                           [backend, ex, addRows, finish, step, cursor](Result<QJsonObject> r) {
                               if (!r)
                                   return finish(r.error());
                               addRows(r->value(QStringLiteral("rows")).toArray());
                               if (ex->content.size() * 2 > kMaxExportBytes) {
                                   if (backend)
                                       backend->closeCursor(cursor);
                                   return finish(Error{ErrorCode::PayloadTooLarge,
                                                       QStringLiteral(
                                                           "the export is over %1 MiB; export to a "
                                                           "file (DuckDB) or page with query/fetch")
                                                           .arg(kMaxExportBytes / 1048576),
                                                       {}});
                               }
                               if (r->value(QStringLiteral("done")).toBool())
                                   return finish(true);
                               if (*step)
                                   (*step)(cursor);
                           });
        };
        SqlRequest req;
        req.sql = select;
        req.pageSize = 5000;
        req.pageBytes = kPageBytes;
        backend->query(req, [ex, csv, addRows, finish, step](Result<QJsonObject> r) {
            if (!r)
                return finish(r.error());
            for (const QJsonValue &f : r->value(QStringLiteral("fields")).toArray())
                ex->names.append(f.toObject().value(QStringLiteral("name")).toString());
            if (csv) {
                QStringList header;
                for (const QString &n : std::as_const(ex->names))
                    header.append(csvCell(n));
                ex->content = header.join(u',') + QStringLiteral("\r\n");
            }
            addRows(r->value(QStringLiteral("rows")).toArray());
            const QString cursor = r->value(QStringLiteral("cursor")).toString();
            if (cursor.isEmpty())
                return finish(true);
            (*step)(cursor);
        });
        Q_UNUSED(c);
    });
}

} // namespace Sandbox::Engine
