#pragma once

#include "rpccall.h"

#include <QJsonObject>
#include <QString>

class QObject;

namespace Sandbox {

class RpcClient;

// What the typed services call: a JSON-RPC method with named params, answered with the JSON
// result. RpcClient does it over the WebSocket, RestClient maps the methods to REST routes.
class ApiCaller
{
public:
    virtual ~ApiCaller();

    // Calls `method`. `callback` runs once, later (never from inside call()), unless the call is
    // cancelled through the handle or `context` (if not null) is destroyed first — destroying
    // the context cancels the call.
    virtual RpcCall call(const QString &method, const QJsonObject &params, QObject *context,
                         JsonCallback callback, CallOptions options = {})
        = 0;

    // Streams (docs/protocol.md 2.3) need server notifications: RpcClient returns itself, a
    // caller without notifications (REST) returns nullptr.
    virtual RpcClient *streamClient() { return nullptr; }
};

} // namespace Sandbox
