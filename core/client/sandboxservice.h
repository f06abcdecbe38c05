#pragma once

#include "sandboxmethods.h"

namespace Sandbox {

// `sandbox.*` (docs/protocol.md 4.5): exec, files, stop/start/delete for a sandbox of any kind.
class SandboxService final : public SandboxMethods
{
public:
    explicit SandboxService(ApiCaller *caller);

    RpcCall status(const QString &id, QObject *context, Callback<SandboxInfo> callback);
};

} // namespace Sandbox
