#pragma once

#include "api/methods.h"
#include "databasehost.h"
#include "databasesettings.h"
#include "protocol/result.h"
#include "runtime/cgroup.h"

#include <QDir>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTemporaryDir>

#include <functional>

namespace Sandbox::Engine {

class DatabaseBackend;
class DatabaseMethods;
class PostgresBackend;
class PostgresTemplate;
class SandboxManager;
class SettingsStore;
class SupervisorChannel;
struct CreateSandbox;
struct SandboxRecord;
struct SandboxSpec;

// The database adapter: owns every database server boundary of the engine. Registers the
// per-type hooks of postgres, sqlite, duckdb with the SandboxManager and keeps one
// DatabaseBackend per running database (the lifecycle); registers the databases.* methods
// (docs/protocol.md 4.3): the lifecycle ones here, the ones on a server from DatabaseMethods,
// which get their server through this adapter (DatabaseHost).
class DatabaseAdapter final : public QObject, public DatabaseHost
{
    Q_OBJECT

public:
    // `dbhostDir`: the directory holding sandbox-dbhost (and libduckdb.so).
    DatabaseAdapter(Methods *methods, SandboxManager *sandboxes, QString dbhostDir,
                    QObject *parent = nullptr);
    ~DatabaseAdapter() override;

    // Finds sandbox-dbhost next to sandboxd (build tree or installed layout).
    static QString findDbHost(const QString &applicationDir);
    // Builds what new databases start from (the PostgreSQL template cluster) now rather than at
    // the first create: `sandboxd --prepare postgres` in an image.
    void prepareTemplates(QObject *context, std::function<void(Result<bool>)> done);
    // Keeps database servers started ahead of demand (EngineConfig::databasePool, warm spares):
    // PostgreSQL's once the data dir has the template (at once if it has, else after the first
    // PostgreSQL create built it), SQLite's and DuckDB's after the engine's first create of the
    // type. An engine that never had a database of a type spends nothing on it.
    void keepServersReady();

    // DatabaseHost
    Result<const SqlDialect *> dialectOf(const QString &keyId, const QString &id) const override;
    void withBackend(const CallContext &ctx, const QString &id, WithBackend then) override;
    DatabaseBackend *backendOf(const QString &id) const override { return m_backends.value(id); }
    void call(const QString &method, const QJsonObject &params, const CallContext &ctx,
              Methods::Reply reply) override;

private:
    using Reply = Methods::Reply;

    void registerMethods();
    void create(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // The rest of a create, once its settings are final; `clock` runs since its request.
    void launch(CreateSandbox c, const DatabaseSettings &s, const QPointer<QObject> &guard,
                QElapsedTimer clock, const Reply &reply);
    void lifecycle(const QString &verb, const QJsonObject &params, const CallContext &ctx,
                   const Reply &reply);
    void prepare(SandboxSpec &spec, const SandboxRecord &record);
    void afterStart(const SandboxRecord &record, SupervisorChannel *channel,
                    std::function<void(Result<bool>)> done);
    void beforeStop(const SandboxRecord &record, std::function<void()> done);
    void removed(const SandboxRecord &record);
    // A warm spare's server, started with the type's defaults (PostgreSQL's from the template with
    // its names), kept idle for the next create (docs/protocol.md 6.4).
    void warmUp(const SandboxRecord &record, SupervisorChannel *channel,
                std::function<void(Result<bool>)> done);
    // The create that took a warm spare gets its server, with the create's settings.
    void handOut(const SandboxRecord &record, DatabaseBackend *server,
                 std::function<void(Result<bool>)> done);
    // Keeps EngineConfig::databasePool's count of warm spares of `type`.
    void keepWarm(const QString &type);

    void startBackend(const QString &id, DatabaseBackend *backend, SupervisorChannel *channel,
                      std::function<void(Result<bool>)> done);
    // `standby`: a warm spare's server, started before it has an owner.
    DatabaseBackend *makeBackend(const QString &id, const DatabaseSettings &settings, uid_t uid,
                                 const ResourceLimits &limits, bool standby = false);
    PostgresBackend *makePostgres(const QString &id, uid_t uid);
    uid_t uidOf(const SandboxRecord &record) const;
    // Keeps database `id` awake until the token ends.
    ActivityToken activity(const QString &id);

    QJsonObject decorate(QJsonObject sandbox) const;
    DatabaseSettings settingsOf(const QString &id) const;

    Methods *m_methods;          // not owned
    SandboxManager *m_sandboxes; // not owned
    QString m_dbhostDir;
    // The engine's private directory (0700, short path) of the socket links libpq connects to
    // (PgSocketLink).
    QTemporaryDir m_socketDir{QDir::tempPath() + QStringLiteral("/sandboxd-XXXXXX")};
    PostgresTemplate *m_template;                 // owned (child)
    QHash<QString, DatabaseBackend *> m_backends; // owned (children), by sandbox id
    QHash<QString, DatabaseBackend *> m_standby;  // owned (children): warm spares' servers, by id
    bool m_keepReady = false;                     // keepServersReady() was called
    QHash<QString, qint64> m_startupMs;           // by sandbox id: the last start's time to ready
    DatabaseMethods *m_calls;                     // owned (child)
    SettingsStore *m_settings;                    // owned (child)
};

} // namespace Sandbox::Engine
