#include "agentsservice.h"

#include "protocol/fieldreader.h"
#include "rpcclient.h"

namespace Sandbox {

AgentsService::AgentsService(ApiCaller *caller)
    : SandboxMethods(caller, QStringLiteral("agents"))
{}

RpcCall AgentsService::create(const AgentCreateOptions &options, QObject *context,
                              Callback<SandboxInfo> callback)
{
    return callFor("create", options.toJson(), context,
                   Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                        &SandboxInfo::fromJson));
}

RpcCall AgentsService::get(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return callFor("get", {{QStringLiteral("id"), id}}, context,
                   Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                        &SandboxInfo::fromJson));
}

RpcCall AgentsService::list(QObject *context, Callback<QList<SandboxInfo>> callback)
{
    return callFor(
        "list", {}, context,
        Internal::typedCallback<QList<SandboxInfo>>(std::move(callback), [](const QJsonValue &v) {
            return listFromJson<SandboxInfo>(v, QStringLiteral("agents"));
        }));
}

RpcCall AgentsService::cloneRepo(const QString &id, const QString &url, const CloneOptions &options,
                                 QObject *context, Callback<ExecResult> callback)
{
    QJsonObject o;
    if (!options.branch.isEmpty())
        o.insert(QStringLiteral("branch"), options.branch);
    if (options.shallow)
        o.insert(QStringLiteral("shallow"), true);
    if (!options.path.isEmpty())
        o.insert(QStringLiteral("path"), options.path);
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("url"), url}};
    if (!o.isEmpty())
        params.insert(QStringLiteral("options"), o);
    CallOptions callOptions;
    callOptions.timeoutMs = int(300000 + ExecGraceMs);
    return callFor("cloneRepo", params, context,
                   Internal::typedCallback<ExecResult>(std::move(callback), &ExecResult::fromJson),
                   callOptions);
}

RpcCall AgentsService::run(const QString &id, const QString &prompt, const QJsonObject &options,
                           QObject *context, Callback<QJsonObject> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("prompt"), prompt}};
    if (!options.isEmpty())
        params.insert(QStringLiteral("options"), options);
    CallOptions callOptions;
    const qint64 timeout = qint64(options.value(QStringLiteral("timeout")).toDouble(300000));
    callOptions.timeoutMs = int(std::min<qint64>(timeout, 3600000) + ExecGraceMs);
    return callFor("run", params, context,
                   Internal::typedCallback<QJsonObject>(
                       std::move(callback),
                       [](const QJsonValue &v) -> Result<QJsonObject> {
                           if (!v.isObject())
                               return Error{ErrorCode::InternalError,
                                            QStringLiteral("malformed agents.run answer from "
                                                           "server: expected an object"),
                                            {}};
                           return v.toObject();
                       }),
                   callOptions);
}

AgentRun *AgentsService::runStreaming(const QString &id, const QString &prompt,
                                      const AgentRunOptions &options, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("prompt"), prompt}};
    const QJsonObject o = options.toJson();
    if (!o.isEmpty())
        params.insert(QStringLiteral("options"), o);
    return new AgentRun(rpc, method("run"), params, parent);
}

AgentRun *AgentsService::watchRun(const QString &streamId, qint64 after, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    return new AgentRun(rpc, streamId, after, parent);
}

RpcCall AgentsService::runs(const QString &id, int limit, QObject *context,
                            Callback<QList<AgentRunRecord>> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}};
    if (limit > 0)
        params.insert(QStringLiteral("limit"), limit);
    return callFor("runs", params, context,
                   Internal::typedCallback<QList<AgentRunRecord>>(
                       std::move(callback), [](const QJsonValue &v) {
                           return listFromJson<AgentRunRecord>(v, QStringLiteral("runs"));
                       }));
}

RpcCall AgentsService::runEvents(const QString &id, const QString &runId, qint64 after, int limit,
                                 QObject *context, Callback<AgentRunEvents> callback)
{
    QJsonObject params{{QStringLiteral("id"), id},
                       {QStringLiteral("runId"), runId},
                       {QStringLiteral("after"), double(after)}};
    if (limit > 0)
        params.insert(QStringLiteral("limit"), limit);
    return callFor("runEvents", params, context,
                   Internal::typedCallback<AgentRunEvents>(std::move(callback),
                                                           &AgentRunEvents::fromJson));
}

RpcCall AgentsService::runChanges(const QString &id, const QString &runId, QObject *context,
                                  Callback<AgentRunChanges> callback)
{
    return callFor("runChanges", {{QStringLiteral("id"), id}, {QStringLiteral("runId"), runId}},
                   context,
                   Internal::typedCallback<AgentRunChanges>(std::move(callback),
                                                            &AgentRunChanges::fromJson));
}

RpcCall AgentsService::revertFile(const QString &id, const QString &runId, const QString &path,
                                  QObject *context, Callback<QString> callback)
{
    return callFor("revertFile",
                   {{QStringLiteral("id"), id},
                    {QStringLiteral("runId"), runId},
                    {QStringLiteral("path"), path}},
                   context,
                   Internal::typedCallback<QString>(std::move(callback),
                                                    [](const QJsonValue &v) -> Result<QString> {
                                                        FieldReader r
                                                            = FieldReader::answer(v, QStringLiteral(
                                                                                         "revert"));
                                                        const QString reverted = r.string(
                                                            QStringLiteral("reverted"));
                                                        if (!r.ok())
                                                            return r.error();
                                                        return reverted;
                                                    }));
}

AgentRun *AgentsService::runConversation(const QString &id, const QStringList &prompts,
                                         const AgentRunOptions &options, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    QJsonObject params{{QStringLiteral("id"), id},
                       {QStringLiteral("prompts"), QJsonArray::fromStringList(prompts)}};
    const QJsonObject o = options.toJson();
    if (!o.isEmpty())
        params.insert(QStringLiteral("options"), o);
    return new AgentRun(rpc, method("runConversation"), params, parent);
}

RpcCall AgentsService::clis(QObject *context, Callback<QList<AgentCliInfo>> callback)
{
    return callFor(
        "clis", {}, context,
        Internal::typedCallback<QList<AgentCliInfo>>(std::move(callback), [](const QJsonValue &v) {
            return listFromJson<AgentCliInfo>(v, QStringLiteral("clis"));
        }));
}

ExecStream *AgentsService::installCli(const QString &type, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    return rpc->startStream(method("installCli"), {{QStringLiteral("type"), type}}, parent,
                            ExecStream::ResultKind::Raw);
}

} // namespace Sandbox
