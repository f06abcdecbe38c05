#pragma once

#include "sandboxmethods.h"

namespace Sandbox {

// `sandbox.*` (docs/protocol.md 4.5): exec, files, stop/start/delete for a sandbox of any kind.
class SandboxService final : public SandboxMethods
{
public:
    explicit SandboxService(ApiCaller *caller);

    RpcCall status(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    // The network of any sandbox (3.5, 4.9): a new policy, or the recent denials.
    RpcCall setNetwork(const QString &id, const NetworkPolicy &policy, QObject *context,
                       Callback<SandboxInfo> callback);
    RpcCall networkLog(const QString &id, QObject *context, Callback<NetworkLog> callback);
    // The changes below directory `path` as they happen (sandbox.watch, docs/protocol.md 4.5.1):
    // each comes as the stream's event() {type: create|modify|delete|rename|rescan, path, isDir,
    // from?}; ended() when the watch ends (cancelled, the directory deleted), failed() when the
    // sandbox stopped. Owned by `parent`; nullptr when the caller cannot stream (REST).
    ExecStream *watch(const QString &id, const QString &path, bool recursive, QObject *parent);
};

} // namespace Sandbox
