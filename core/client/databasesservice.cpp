#include "databasesservice.h"

#include "jsonreader.h"

namespace Sandbox {

namespace {
QJsonObject sqlParams(const QString &id, const QString &sql, const QJsonArray &params)
{
    QJsonObject o{{QStringLiteral("id"), id}, {QStringLiteral("sql"), sql}};
    if (!params.isEmpty())
        o.insert(QStringLiteral("params"), params);
    return o;
}
} // namespace

DatabasesService::DatabasesService(ApiCaller *caller) : m_caller(caller) {}

RpcCall DatabasesService::create(const DatabaseCreateOptions &options, QObject *context,
                                 Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.create"), options.toJson(), context,
                          Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                               &SandboxInfo::fromJson));
}

RpcCall DatabasesService::get(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.get"), {{QStringLiteral("id"), id}}, context,
                          Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                               &SandboxInfo::fromJson));
}

RpcCall DatabasesService::list(QObject *context, Callback<QList<SandboxInfo>> callback)
{
    return m_caller->call(QStringLiteral("databases.list"), {}, context,
                          Internal::typedCallback<QList<SandboxInfo>>(
                              std::move(callback), [](const QJsonValue &v) {
                                  return listFromJson<SandboxInfo>(v, QStringLiteral("databases"));
                              }));
}

RpcCall DatabasesService::query(const QString &id, const QString &sql, const QJsonArray &params,
                                QObject *context, Callback<QueryResult> callback)
{
    return m_caller->call(QStringLiteral("databases.query"), sqlParams(id, sql, params), context,
                          Internal::typedCallback<QueryResult>(std::move(callback),
                                                               &QueryResult::fromJson));
}

RpcCall DatabasesService::execute(const QString &id, const QString &sql, const QJsonArray &params,
                                  QObject *context, Callback<qint64> callback)
{
    return m_caller->call(QStringLiteral("databases.execute"), sqlParams(id, sql, params), context,
                          Internal::typedCallback<qint64>(
                              std::move(callback), [](const QJsonValue &v) -> Result<qint64> {
                                  Internal::JsonReader r(v, QStringLiteral("ExecuteResult"));
                                  const qint64 n = r.integer(QStringLiteral("rowsAffected"));
                                  if (!r.ok())
                                      return r.error();
                                  return n;
                              }));
}

RpcCall DatabasesService::stop(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.stop"), {{QStringLiteral("id"), id}}, context,
                          Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                               &SandboxInfo::fromJson));
}

} // namespace Sandbox
