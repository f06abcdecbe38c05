#pragma once

#include "databasebackend.h"
#include "runtime/sandboxsocket.h"

#include <QHash>
#include <QList>
#include <QPointer>
#include <QSet>

#include <atomic>
#include <memory>
#include <sys/types.h>

namespace Sandbox::Engine {

class PgConnection;
class PgSocketLink;
class ServerProcess;

// A PostgreSQL server in a database sandbox: Debian's `postgres`, started from a copy of the
// engine's template cluster, listening only on a unix socket in the sandbox's /run/db; the engine
// talks to it with libpq (a small pool of async connections) through a PgSocketLink.
class PostgresBackend final : public DatabaseBackend
{
    Q_OBJECT

public:
    struct Settings
    {
        QString socketDir;            // the engine's private directory libpq connects in
        SandboxSocket::Target server; // the sandbox whose /run/db/.s.PGSQL.5432 it reaches
        QString database;             // the client role's database
        QString username;             // the client role (not a superuser)
        QString password;             // set on the role once, at initialisation
        bool initialize = false;      // first start: rename the template's database and role
        // Started ahead of its owner (a warm spare): start() ends with the server up and the
        // engine's admin connection kept; handOut() does the first start's renaming.
        bool standby = false;
        int maxConnections = 8;
    };

    static QString binDir();
    static constexpr const char *kAdminRole = "sandbox_admin";
    static constexpr const char *kTemplateRole = "sandbox";
    static constexpr const char *kTemplateDatabase = "postgres";

    explicit PostgresBackend(Settings settings, QObject *parent = nullptr);
    ~PostgresBackend() override;

    // Runs once the first start renamed the database and role (the adapter persists it).
    std::function<void()> onInitialized;

    // Whose database it is (before start()): its names, its password, and whether the template's
    // are still to be renamed to them (a first start).
    void setOwner(const QString &database, const QString &username, const QString &password,
                  bool initialize);
    void setStandby(bool standby) { m_settings.standby = standby; }
    // A standby server becomes its owner's: the template's database and role get the owner's
    // names and password, then the owner's first connection opens.
    void handOut(const QString &database, const QString &username, const QString &password,
                 std::function<void(Result<bool>)> done) override;

    void start(SupervisorChannel *channel, std::function<void(Result<bool>)> done) override;
    void stop(std::function<void()> done) override;
    bool isAlive() const override { return m_alive; }
    const SqlDialect &dialect() const override { return sqlDialect(); }
    static const SqlDialect &sqlDialect();

    CancelFn query(const SqlRequest &request, PageDone done) override;
    CancelFn fetch(const QString &cursor, int pageSize, qint64 pageBytes, PageDone done) override;
    void closeCursor(const QString &cursor) override;
    CancelFn transaction(const QJsonArray &statements, PageDone done) override;
    void begin(const QString &name, PageDone done) override;
    void finish(const QString &name, bool commit, PageDone done) override;

private:
    struct Query;
    using ConnDone = std::function<void(Result<PgConnection *>)>;

    void waitUntilReady(qint64 deadline, std::function<void(Result<bool>)> done);
    void initialize(PgConnection *admin, std::function<void(Result<bool>)> done);
    // Counts the connection in m_open while it opens and lives; one that fails to open is counted
    // out again.
    void openConnection(bool admin, const QString &database, ConnDone done);
    // Opens a connection of the client role to its database: the pool keeps it (`keep`) or it
    // closes again (it only proved the role and built the catalog cache).
    void openClient(bool keep, std::function<void(Result<bool>)> done);
    void acquire(ConnDone then);
    void release(PgConnection *conn);
    void drop(PgConnection *conn);
    // Closes every cursor, the standby's admin connection and the idle connections: the server
    // stops or is gone.
    void closeIdle();
    void runQuery(const std::shared_ptr<Query> &q, PgConnection *conn, const QByteArray &sql,
                  const QList<QByteArray> &values, const QList<bool> &nulls,
                  const QList<bool> &binary, bool simple);
    void deliver(const std::shared_ptr<Query> &q, bool done);
    void serverGone(const QString &why);

    Settings m_settings;
    QPointer<SupervisorChannel> m_channel;
    std::unique_ptr<PgSocketLink> m_link;
    // Cancels on their way to the server, of all its connections (PgConnection::cancel()).
    std::shared_ptr<std::atomic_int> m_cancelling = std::make_shared<std::atomic_int>(0);
    bool m_alive = false;
    bool m_stopping = false;
    ServerProcess *m_server; // owned (child): the server's exec and its log
    std::function<void()> m_onStopped;
    QList<PgConnection *> m_idle;          // owned (children)
    QPointer<PgConnection> m_standbyAdmin; // a standby server's admin connection, kept open
    int m_open = 0;                        // connections open or opening
    QList<ConnDone> m_waiters;
    QHash<QString, std::shared_ptr<Query>> m_cursors;
    QHash<QString, PgConnection *> m_transactions; // interactive ones, by name (connections owned)
    QSet<QString> m_transactionsBusy;              // running a statement now
    quint64 m_nextCursor = 1;
    quint64 m_uses = 0; // cursors opened and fetched from so far (Query::lastUse)
};

} // namespace Sandbox::Engine
