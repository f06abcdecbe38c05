#include "sandboxservice.h"

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

} // namespace Sandbox
