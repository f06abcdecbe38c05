#include "sandboxservice.h"

#include "execstream.h"
#include "rpcclient.h"

namespace Sandbox {

SandboxService::SandboxService(ApiCaller *caller)
    : SandboxMethods(caller, QStringLiteral("sandbox"))
{}

RpcCall SandboxService::status(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return callFor("status", {{QStringLiteral("id"), id}}, context,
                   Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                        &SandboxInfo::fromJson));
}

RpcCall SandboxService::setNetwork(const QString &id, const NetworkPolicy &policy, QObject *context,
                                   Callback<SandboxInfo> callback)
{
    return callFor("setNetwork",
                   {{QStringLiteral("id"), id}, {QStringLiteral("network"), policy.toJson()}},
                   context,
                   Internal::typedCallback<SandboxInfo>(std::move(callback),
                                                        &SandboxInfo::fromJson));
}

RpcCall SandboxService::networkLog(const QString &id, QObject *context,
                                   Callback<NetworkLog> callback)
{
    return callFor("networkLog", {{QStringLiteral("id"), id}}, context,
                   Internal::typedCallback<NetworkLog>(std::move(callback), &NetworkLog::fromJson));
}

ExecStream *SandboxService::watch(const QString &id, const QString &path, bool recursive,
                                  QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    return rpc->startStream(method("watch"),
                            {{QStringLiteral("id"), id},
                             {QStringLiteral("path"), path},
                             {QStringLiteral("recursive"), recursive}},
                            parent, ExecStream::ResultKind::Raw);
}

} // namespace Sandbox
