#pragma once

#include "api/methods.h"
#include "protocol/result.h"
#include "runtime/cgroup.h"

#include <QDateTime>
#include <QDir>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTemporaryDir>

#include <functional>
#include <optional>

class QTimer;

namespace Sandbox::Engine {

class DatabaseBackend;
class PostgresTemplate;
class SandboxManager;
class SupervisorChannel;
struct SandboxRecord;
struct SandboxSpec;

// What a database sandbox was created with; kept in its state dir as database.json (the engine's
// own file, 0600, never shown to the sandbox). The password is not kept: it is set on the role
// once, at the first start.
struct DatabaseSettings
{
    QString type;     // postgres | sqlite | duckdb
    QString database; // PostgreSQL: the database name; SQLite/DuckDB: the file in /workspace
    QString username; // PostgreSQL: the client role
    QString password; // only until the first start
    bool initialized = false;

    QJsonObject toJson(bool withPassword) const;
    static DatabaseSettings fromJson(const QJsonObject &o);
};

// The database adapter: owns every database server boundary of the engine. Registers the
// databases.* methods (docs/protocol.md 4.3) and the per-type hooks of postgres, sqlite, duckdb
// with the SandboxManager, and keeps one DatabaseBackend per running database.
class DatabaseAdapter final : public QObject
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

private:
    struct Cursor;
    struct OpenTransaction;
    using Reply = Methods::Reply;
    using WithBackend = std::function<void(Result<DatabaseBackend *>)>;

    void registerMethods();
    void create(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    void prepare(SandboxSpec &spec, const SandboxRecord &record);
    void afterStart(const SandboxRecord &record, SupervisorChannel *channel,
                    std::function<void(Result<bool>)> done);
    void beforeStop(const SandboxRecord &record, std::function<void()> done);
    void removed(const SandboxRecord &record);

    // Wakes the database if it sleeps, restarts a server that died; the caller ends the activity.
    void withBackend(const CallContext &ctx, const QString &id, WithBackend then);
    void startBackend(const QString &id, DatabaseBackend *backend, SupervisorChannel *channel,
                      std::function<void(Result<bool>)> done);
    DatabaseBackend *makeBackend(const QString &id, const DatabaseSettings &settings, uid_t uid,
                                 const ResourceLimits &limits);

    void sql(const QString &method, const QJsonObject &params, const CallContext &ctx,
             const Reply &reply);
    void fetch(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    void transaction(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Interactive transactions: databases.begin, then calls with `transaction`, then commit or
    // rollback (docs/protocol.md 4.3.2). Each holds one session of the server and keeps the
    // database awake; an idle one is rolled back.
    void begin(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    void finish(bool commit, const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Forgets an interactive transaction that ended (its backend session is gone or released).
    void forgetTransaction(const QString &txId);
    void expireTransactions();
    void admin(const QString &method, const QJsonObject &params, const CallContext &ctx,
               const Reply &reply);
    void exportData(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Runs one internal statement and answers all of its rows (as arrays), for the admin methods.
    void internalQuery(const CallContext &ctx, const QString &id, const QString &sql,
                       const QJsonArray &params, std::function<void(Result<QJsonObject>)> done);

    QJsonObject decorate(QJsonObject sandbox) const;
    DatabaseSettings settingsOf(const QString &id) const;
    bool saveSettings(const QString &id, const DatabaseSettings &settings) const;
    void closeCursor(const QString &cursorId);
    void expireCursors();

    Methods *m_methods;          // not owned
    SandboxManager *m_sandboxes; // not owned
    QString m_dbhostDir;
    // The engine's private directory (0700, short path) of the sockets libpq connects to (PgRelay).
    QTemporaryDir m_relayDir{QDir::tempPath() + QStringLiteral("/sandboxd-XXXXXX")};
    PostgresTemplate *m_template;                 // owned (child)
    QHash<QString, DatabaseBackend *> m_backends; // owned (children), by sandbox id
    QHash<QString, qint64> m_startupMs;           // by sandbox id: the last start's time to ready
    QHash<QString, Cursor *> m_cursors;           // owned, by cursor id
    QHash<QString, OpenTransaction *> m_transactions; // owned, by transaction id
    QTimer *m_cursorSweep;                            // owned (child)
    std::optional<DatabaseSettings> m_creating;       // handed from create() to the prepare hook
};

} // namespace Sandbox::Engine
