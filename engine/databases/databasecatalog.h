#pragma once

#include "api/methods.h"
#include "databasebackend.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

#include <functional>

namespace Sandbox::Engine {

class CallDeadlines;
class DatabaseHost;

// The catalog methods, in the dialect the database's backend answers for (SqlDialect):
// databases.version, ping, listTables, listDatabases, describeTable, createDatabase.
void catalogCall(DatabaseHost *host, CallDeadlines *deadlines, const QString &method,
                 const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);

// Runs one internal statement (the default timeout) and answers all of its rows, as arrays.
void internalQuery(DatabaseHost *host, CallDeadlines *deadlines, const CallContext &ctx,
                   const QString &id, const QString &sql, const QJsonArray &params, PageDone done);

} // namespace Sandbox::Engine
