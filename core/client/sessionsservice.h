#pragma once

#include "apicaller.h"
#include "types.h"

namespace Sandbox {

// `sessions.*` (docs/protocol.md 4.4): who the key is, and its quota.
class SessionsService final
{
public:
    explicit SessionsService(ApiCaller *caller);

    RpcCall current(QObject *context, Callback<SessionInfo> callback);
    RpcCall quota(QObject *context, Callback<Quota> callback);

private:
    ApiCaller *m_caller; // not owned
};

} // namespace Sandbox
