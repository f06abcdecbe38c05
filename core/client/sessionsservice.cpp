#include "sessionsservice.h"

namespace Sandbox {

SessionsService::SessionsService(ApiCaller *caller)
    : m_caller(caller)
{}

RpcCall SessionsService::current(QObject *context, Callback<SessionInfo> callback)
{
    return m_caller->call(QStringLiteral("sessions.current"), {}, context,
                          Internal::typedCallback<SessionInfo>(std::move(callback),
                                                               &SessionInfo::fromJson));
}

RpcCall SessionsService::quota(QObject *context, Callback<Quota> callback)
{
    return m_caller->call(QStringLiteral("sessions.quota"), {}, context,
                          Internal::typedCallback<Quota>(std::move(callback), &Quota::fromJson));
}

} // namespace Sandbox
