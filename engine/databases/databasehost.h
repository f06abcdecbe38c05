#pragma once

#include "activitytoken.h"
#include "api/methods.h"
#include "protocol/result.h"

#include <QString>

#include <functional>

namespace Sandbox::Engine {

class DatabaseBackend;
struct SqlDialect;

// What the databases.* methods on a server need from the engine: the DatabaseAdapter (the
// sandboxes and their servers); a fake in tests/databases/tst_databasemethods.
class DatabaseHost
{
public:
    // The server, and the activity that keeps its database awake until the call drops it.
    using WithBackend = std::function<void(Result<DatabaseBackend *>, ActivityToken)>;

    virtual ~DatabaseHost() = default;

    // The dialect of the caller's database `id`; NotFound when it is not the caller's.
    virtual Result<const SqlDialect *> dialectOf(const QString &keyId, const QString &id) const = 0;
    // Finds the running server of `id`: wakes the database if it sleeps, restarts a server that
    // died. On success the token keeps the database awake until it ends.
    virtual void withBackend(const CallContext &ctx, const QString &id, WithBackend then) = 0;
    // The server of `id` as it is now (nothing woken): null when there is none.
    virtual DatabaseBackend *backendOf(const QString &id) const = 0;
    // Another engine method (exportData reads a file back with sandbox.readFile).
    virtual void call(const QString &method, const QJsonObject &params, const CallContext &ctx,
                      Methods::Reply reply)
        = 0;
};

} // namespace Sandbox::Engine
