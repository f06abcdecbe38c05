#pragma once

#include "databasebackend.h"
#include "runtime/sandboxsocket.h"

#include <QHash>
#include <QList>
#include <QPointer>

#include <sys/types.h>

class QLocalSocket;

namespace Sandbox::Engine {
class ServerProcess;
}

namespace Sandbox::Engine {

// A SQLite or DuckDB database in a sandbox, served by sandbox-dbhost running inside it
// (dbhost/PROTOCOL.md): the engine only speaks JSON lines to it over the unix socket it serves in
// the sandbox's /run/db (reached as SandboxSocket says), and never opens the database file itself.
class DbHostBackend final : public DatabaseBackend
{
    Q_OBJECT

public:
    struct Settings
    {
        QString engine;               // sqlite | duckdb
        SandboxSocket::Target socket; // the sandbox whose /run/db/dbhost.sock the engine reaches
        QString databaseFile;         // path inside the sandbox, e.g. /workspace/main.db
        qint64 memoryLimitMb = 1024;
        int threads = 1;
        int maxConnections = 6;
        // Started ahead of its owner (a warm spare, `--spare`) with the type's default file:
        // handOut() moves it to the owner's.
        bool spare = false;
    };

    explicit DbHostBackend(Settings settings, QObject *parent = nullptr);
    ~DbHostBackend() override;

    void start(SupervisorChannel *channel, std::function<void(Result<bool>)> done) override;
    void stop(std::function<void()> done) override;
    bool isAlive() const override { return m_alive; }
    // The spare's database becomes the file `database` in /workspace (dbhost `adopt`).
    void handOut(const QString &database, const QString &username, const QString &password,
                 std::function<void(Result<bool>)> done) override;
    const SqlDialect &dialect() const override { return dialectOf(m_settings.engine); }
    // The dialect of engine sqlite or duckdb.
    static const SqlDialect &dialectOf(const QString &engine);

    CancelFn query(const SqlRequest &request, PageDone done) override;
    CancelFn fetch(const QString &cursor, int pageSize, qint64 pageBytes, PageDone done) override;
    void closeCursor(const QString &cursor) override;
    CancelFn transaction(const QJsonArray &statements, PageDone done) override;
    void begin(const QString &name, PageDone done) override;
    void finish(const QString &name, bool commit, PageDone done) override;
    // DuckDB: COPY (sql) TO path (FORMAT parquet|csv|json), path inside /workspace.
    CancelFn exportFile(const QString &sql, const QString &format, const QString &path,
                        PageDone done) override;

private:
    class Connection;

    void connectOnce(qint64 deadline, std::function<void(Result<bool>)> done);
    CancelFn call(QJsonObject request, PageDone done);
    void acquire(std::function<void(Result<Connection *>)> then);
    void release(Connection *c);
    void control(const QJsonObject &request);
    void serverGone(const QString &why);
    Result<Page> answerOf(const Page &line) const;

    Settings m_settings;
    QPointer<SupervisorChannel> m_channel;
    bool m_alive = false;
    bool m_stopping = false;
    ServerProcess *m_server; // owned (child)
    std::function<void()> m_onStopped;
    Connection *m_control = nullptr; // owned (child)
    QList<Connection *> m_idle;      // owned (children)
    int m_open = 0;
    QList<std::function<void(Result<Connection *>)>> m_waiters;
    quint64 m_nextId = 1;
};

} // namespace Sandbox::Engine
