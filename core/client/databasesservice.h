#pragma once

#include "apicaller.h"
#include "databasetypes.h"
#include "types.h"

#include <QJsonArray>

namespace Sandbox {

// `databases.*` (docs/protocol.md 4.3) as typed calls. Every call answers once through its
// callback (unless cancelled through its handle or context); rows come as arrays of the values
// of 4.3.5 (see SqlValue). For results a view pages through, see RowFeed.
class DatabasesService final
{
public:
    explicit DatabasesService(ApiCaller *caller);

    // Lifecycle (4.3.1).
    RpcCall create(const DatabaseCreateOptions &options, QObject *context,
                   Callback<SandboxInfo> callback);
    // As create(), with the database's settings and its startup time (getStartupTime()).
    RpcCall createInfo(const DatabaseCreateOptions &options, QObject *context,
                       Callback<DatabaseInfo> callback);
    RpcCall get(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall info(const QString &id, QObject *context, Callback<DatabaseInfo> callback);
    RpcCall list(QObject *context, Callback<QList<SandboxInfo>> callback);
    RpcCall stop(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall start(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall restart(const QString &id, QObject *context, Callback<DatabaseInfo> callback);
    RpcCall remove(const QString &id, QObject *context, Callback<bool> callback);

    // SQL (4.3.2). The original API's shapes: rows as the server sent them (objects).
    RpcCall query(const QString &id, const QString &sql, const QJsonArray &params, QObject *context,
                  Callback<QueryResult> callback);
    // Answers rowsAffected.
    RpcCall execute(const QString &id, const QString &sql, const QJsonArray &params,
                    QObject *context, Callback<qint64> callback);

    // The first page of one statement's result, rows as arrays; page on with fetch().
    RpcCall queryPage(const QString &id, const QString &sql, const QJsonArray &params,
                      const QueryOptions &options, QObject *context, Callback<QueryPage> callback);
    RpcCall fetch(const QString &id, const QString &cursor, int pageSize, int timeoutMs,
                  QObject *context, Callback<QueryPage> callback);
    RpcCall closeCursor(const QString &id, const QString &cursor, QObject *context,
                        Callback<bool> callback);
    // A script or one statement without rows; params only with a single statement.
    RpcCall executeScript(const QString &id, const QString &sql, const QJsonArray &params,
                          int timeoutMs, QObject *context, Callback<ExecuteResult> callback);
    // All statements commit together, or none (4.3.2).
    RpcCall transaction(const QString &id, const QList<SqlStatement> &statements, int timeoutMs,
                        QObject *context, Callback<QList<QueryPage>> callback);

    // Administration (4.3.7).
    RpcCall version(const QString &id, QObject *context, Callback<QString> callback);
    // Answers the round-trip time in ms, or the error that made the ping fail.
    RpcCall ping(const QString &id, QObject *context, Callback<double> callback);
    RpcCall listTables(const QString &id, QObject *context, Callback<QList<TableInfo>> callback);
    RpcCall describeTable(const QString &id, const QString &table, const QString &schema,
                          QObject *context, Callback<TableDescription> callback);
    RpcCall listDatabases(const QString &id, QObject *context,
                          Callback<QList<DatabaseEntry>> callback);
    RpcCall createDatabase(const QString &id, const QString &name, QObject *context,
                           Callback<bool> callback);
    // format: csv | json | parquet (DuckDB).
    RpcCall exportData(const QString &id, const QString &table, const QString &format,
                       QObject *context, Callback<ExportResult> callback);

    ApiCaller *caller() const { return m_caller; }

private:
    ApiCaller *m_caller; // not owned
};

} // namespace Sandbox
