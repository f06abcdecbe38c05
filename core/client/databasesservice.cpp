#include "databasesservice.h"

#include "protocol/fieldreader.h"

#include <QJsonObject>

namespace Sandbox {

namespace {

QJsonObject sqlParams(const QString &id, const QString &sql, const QJsonArray &params)
{
    QJsonObject o{{QStringLiteral("id"), id}, {QStringLiteral("sql"), sql}};
    if (!params.isEmpty())
        o.insert(QStringLiteral("params"), params);
    return o;
}

QJsonObject idOnly(const QString &id)
{
    return {{QStringLiteral("id"), id}};
}

// The client waits a little longer than the server's statement timeout, so that the server's
// -32004 (with its message) arrives rather than a client-side timeout.
CallOptions waitFor(int statementTimeoutMs)
{
    CallOptions o;
    o.timeoutMs = statementTimeoutMs + 15000;
    return o;
}

// A call that answers a page of rows: its rows come as their text (CallOptions::rowsText), which
// QueryPage decodes (SqlRows). The client waits as waitFor() says.
RpcCall pageCall(ApiCaller *caller, const QString &method, const QJsonObject &params,
                 int statementTimeoutMs, QObject *context, Callback<QueryPage> callback)
{
    CallOptions o = waitFor(statementTimeoutMs);
    o.rowsText = std::make_shared<QByteArray>();
    JsonCallback parsed
        = Internal::typedCallback<QueryPage>(std::move(callback), [rowsText = o.rowsText](
                                                                      const QJsonValue &v) {
              return QueryPage::fromJson(v, std::exchange(*rowsText, {}));
          });
    return caller->call(method, params, context, std::move(parsed), std::move(o));
}

template<typename T, typename Parse>
JsonCallback typed(Callback<T> callback, Parse parse)
{
    return Internal::typedCallback<T>(std::move(callback), std::move(parse));
}

} // namespace

DatabasesService::DatabasesService(ApiCaller *caller)
    : m_caller(caller)
{}

RpcCall DatabasesService::create(const DatabaseCreateOptions &options, QObject *context,
                                 Callback<SandboxInfo> callback)
{
    CallOptions o;
    o.timeoutMs = 120000; // the first PostgreSQL database also prepares the template cluster
    return m_caller->call(QStringLiteral("databases.create"), options.toJson(), context,
                          typed<SandboxInfo>(std::move(callback), &SandboxInfo::fromJson), o);
}

RpcCall DatabasesService::createInfo(const DatabaseCreateOptions &options, QObject *context,
                                     Callback<DatabaseInfo> callback)
{
    CallOptions o;
    o.timeoutMs = 120000;
    return m_caller->call(QStringLiteral("databases.create"), options.toJson(), context,
                          typed<DatabaseInfo>(std::move(callback), &DatabaseInfo::fromJson), o);
}

RpcCall DatabasesService::get(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.get"), idOnly(id), context,
                          typed<SandboxInfo>(std::move(callback), &SandboxInfo::fromJson));
}

RpcCall DatabasesService::info(const QString &id, QObject *context, Callback<DatabaseInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.get"), idOnly(id), context,
                          typed<DatabaseInfo>(std::move(callback), &DatabaseInfo::fromJson));
}

RpcCall DatabasesService::list(QObject *context, Callback<QList<SandboxInfo>> callback)
{
    return m_caller->call(QStringLiteral("databases.list"), {}, context,
                          typed<QList<SandboxInfo>>(std::move(callback), [](const QJsonValue &v) {
                              return listFromJson<SandboxInfo>(v, QStringLiteral("databases"));
                          }));
}

RpcCall DatabasesService::stop(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.stop"), idOnly(id), context,
                          typed<SandboxInfo>(std::move(callback), &SandboxInfo::fromJson));
}

RpcCall DatabasesService::start(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.start"), idOnly(id), context,
                          typed<SandboxInfo>(std::move(callback), &SandboxInfo::fromJson));
}

RpcCall DatabasesService::restart(const QString &id, QObject *context,
                                  Callback<DatabaseInfo> callback)
{
    return m_caller->call(QStringLiteral("databases.restart"), idOnly(id), context,
                          typed<DatabaseInfo>(std::move(callback), &DatabaseInfo::fromJson));
}

RpcCall DatabasesService::remove(const QString &id, QObject *context, Callback<bool> callback)
{
    return m_caller->call(QStringLiteral("databases.delete"), idOnly(id), context,
                          typed<bool>(std::move(callback), [](const QJsonValue &v) -> Result<bool> {
                              return v.toObject().value(QStringLiteral("deleted")).toBool();
                          }));
}

RpcCall DatabasesService::query(const QString &id, const QString &sql, const QJsonArray &params,
                                QObject *context, Callback<QueryResult> callback)
{
    return m_caller->call(QStringLiteral("databases.query"), sqlParams(id, sql, params), context,
                          typed<QueryResult>(std::move(callback), &QueryResult::fromJson),
                          waitFor(60000));
}

RpcCall DatabasesService::execute(const QString &id, const QString &sql, const QJsonArray &params,
                                  QObject *context, Callback<qint64> callback)
{
    return m_caller->call(QStringLiteral("databases.execute"), sqlParams(id, sql, params), context,
                          typed<qint64>(std::move(callback),
                                        [](const QJsonValue &v) -> Result<qint64> {
                                            const Result<ExecuteResult> e = ExecuteResult::fromJson(
                                                v);
                                            if (!e)
                                                return e.error();
                                            return e->rowsAffected;
                                        }),
                          waitFor(60000));
}

RpcCall DatabasesService::queryPage(const QString &id, const QString &sql, const QJsonArray &params,
                                    const QueryOptions &options, QObject *context,
                                    Callback<QueryPage> callback)
{
    QJsonObject p = sqlParams(id, sql, params);
    p.insert(QStringLiteral("rowMode"), QStringLiteral("array"));
    p.insert(QStringLiteral("pageSize"), options.pageSize);
    p.insert(QStringLiteral("timeout"), options.timeoutMs);
    return pageCall(m_caller, QStringLiteral("databases.queryWithMetadata"), p, options.timeoutMs,
                    context, std::move(callback));
}

RpcCall DatabasesService::fetch(const QString &id, const QString &cursor, int pageSize,
                                int timeoutMs, QObject *context, Callback<QueryPage> callback)
{
    const QJsonObject p{{QStringLiteral("id"), id},
                        {QStringLiteral("cursor"), cursor},
                        {QStringLiteral("pageSize"), pageSize},
                        {QStringLiteral("timeout"), timeoutMs}};
    return pageCall(m_caller, QStringLiteral("databases.fetch"), p, timeoutMs, context,
                    std::move(callback));
}

RpcCall DatabasesService::closeCursor(const QString &id, const QString &cursor, QObject *context,
                                      Callback<bool> callback)
{
    return m_caller->call(QStringLiteral("databases.closeCursor"),
                          {{QStringLiteral("id"), id}, {QStringLiteral("cursor"), cursor}}, context,
                          typed<bool>(std::move(callback), [](const QJsonValue &v) -> Result<bool> {
                              return v.toObject().value(QStringLiteral("closed")).toBool();
                          }));
}

RpcCall DatabasesService::executeScript(const QString &id, const QString &sql,
                                        const QJsonArray &params, int timeoutMs, QObject *context,
                                        Callback<ExecuteResult> callback)
{
    QJsonObject p = sqlParams(id, sql, params);
    p.insert(QStringLiteral("timeout"), timeoutMs);
    return m_caller->call(QStringLiteral("databases.execute"), p, context,
                          typed<ExecuteResult>(std::move(callback), &ExecuteResult::fromJson),
                          waitFor(timeoutMs));
}

RpcCall DatabasesService::transaction(const QString &id, const QList<SqlStatement> &statements,
                                      int timeoutMs, QObject *context,
                                      Callback<QList<QueryPage>> callback)
{
    QJsonArray list;
    for (const SqlStatement &s : statements)
        list.append(
            QJsonObject{{QStringLiteral("sql"), s.sql}, {QStringLiteral("params"), s.params}});
    const QJsonObject p{{QStringLiteral("id"), id},
                        {QStringLiteral("statements"), list},
                        {QStringLiteral("timeout"), timeoutMs},
                        {QStringLiteral("rowMode"), QStringLiteral("array")}};
    return m_caller->call(
        QStringLiteral("databases.transaction"), p, context,
        typed<QList<QueryPage>>(std::move(callback),
                                [](const QJsonValue &v) -> Result<QList<QueryPage>> {
                                    QList<QueryPage> out;
                                    for (const QJsonValue &r :
                                         v.toObject().value(QStringLiteral("results")).toArray()) {
                                        auto page = QueryPage::fromJson(r);
                                        if (!page)
                                            return page.error();
                                        out.append(*page);
                                    }
                                    return out;
                                }),
        waitFor(timeoutMs));
}

RpcCall DatabasesService::version(const QString &id, QObject *context, Callback<QString> callback)
{
    return m_caller->call(QStringLiteral("databases.version"), idOnly(id), context,
                          typed<QString>(std::move(callback),
                                         [](const QJsonValue &v) -> Result<QString> {
                                             const QString what = QStringLiteral("Version");
                                             FieldReader r = FieldReader::answer(v, what);
                                             const QString s = r.string(QStringLiteral("version"));
                                             if (!r.ok())
                                                 return r.error();
                                             return s;
                                         }));
}

RpcCall DatabasesService::ping(const QString &id, QObject *context, Callback<double> callback)
{
    return m_caller
        ->call(QStringLiteral("databases.ping"), idOnly(id), context,
               typed<double>(std::move(callback), [](const QJsonValue &v) -> Result<double> {
                   const QJsonObject o = v.toObject();
                   if (!o.value(QStringLiteral("ok")).toBool())
                       return Error{ErrorCode::SandboxError,
                                    o.value(QStringLiteral("error")).toString(),
                                    {}};
                   return o.value(QStringLiteral("latencyMs")).toDouble();
               }));
}

RpcCall DatabasesService::listTables(const QString &id, QObject *context,
                                     Callback<QList<TableInfo>> callback)
{
    return m_caller->call(
        QStringLiteral("databases.listTables"), idOnly(id), context,
        typed<QList<TableInfo>>(std::move(callback),
                                [](const QJsonValue &v) -> Result<QList<TableInfo>> {
                                    QList<TableInfo> out;
                                    for (const QJsonValue &t :
                                         v.toObject().value(QStringLiteral("tables")).toArray()) {
                                        const QJsonObject o = t.toObject();
                                        out.append({o.value(QStringLiteral("schema")).toString(),
                                                    o.value(QStringLiteral("name")).toString(),
                                                    o.value(QStringLiteral("type")).toString()});
                                    }
                                    return out;
                                }));
}

RpcCall DatabasesService::describeTable(const QString &id, const QString &table,
                                        const QString &schema, QObject *context,
                                        Callback<TableDescription> callback)
{
    QJsonObject p{{QStringLiteral("id"), id}, {QStringLiteral("table"), table}};
    if (!schema.isEmpty())
        p.insert(QStringLiteral("schema"), schema);
    return m_caller->call(QStringLiteral("databases.describeTable"), p, context,
                          typed<TableDescription>(std::move(callback), &TableDescription::fromJson));
}

RpcCall DatabasesService::listDatabases(const QString &id, QObject *context,
                                        Callback<QList<DatabaseEntry>> callback)
{
    return m_caller
        ->call(QStringLiteral("databases.listDatabases"), idOnly(id), context,
               typed<QList<DatabaseEntry>>(
                   std::move(callback), [](const QJsonValue &v) -> Result<QList<DatabaseEntry>> {
                       QList<DatabaseEntry> out;
                       for (const QJsonValue &d :
                            v.toObject().value(QStringLiteral("databases")).toArray()) {
                           const QJsonObject o = d.toObject();
                           out.append({o.value(QStringLiteral("name")).toString(),
                                       o.value(QStringLiteral("owner")).toString(),
                                       o.value(QStringLiteral("file")).toString(),
                                       qint64(o.value(QStringLiteral("sizeBytes")).toDouble(-1))});
                       }
                       return out;
                   }));
}

RpcCall DatabasesService::createDatabase(const QString &id, const QString &name, QObject *context,
                                         Callback<bool> callback)
{
    return m_caller->call(QStringLiteral("databases.createDatabase"),
                          {{QStringLiteral("id"), id}, {QStringLiteral("name"), name}}, context,
                          typed<bool>(std::move(callback), [](const QJsonValue &v) -> Result<bool> {
                              return v.toObject().value(QStringLiteral("created")).toBool();
                          }));
}

RpcCall DatabasesService::exportData(const QString &id, const QString &table, const QString &format,
                                     QObject *context, Callback<ExportResult> callback)
{
    const QJsonObject p{{QStringLiteral("id"), id},
                        {QStringLiteral("table"), table},
                        {QStringLiteral("format"), format}};
    return m_caller
        ->call(QStringLiteral("databases.exportData"), p, context,
               typed<ExportResult>(
                   std::move(callback),
                   [](const QJsonValue &v) -> Result<ExportResult> {
                       const QJsonObject o = v.toObject();
                       ExportResult e;
                       e.format = o.value(QStringLiteral("format")).toString();
                       e.rowCount = qint64(o.value(QStringLiteral("rowCount")).toDouble());
                       e.content
                           = o.contains(QStringLiteral("contentBase64"))
                                 ? QByteArray::fromBase64(
                                     o.value(QStringLiteral("contentBase64")).toString().toLatin1())
                                 : o.value(QStringLiteral("content")).toString().toUtf8();
                       return e;
                   }),
               waitFor(300000));
}

} // namespace Sandbox
