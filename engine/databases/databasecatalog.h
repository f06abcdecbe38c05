#pragma once

#include "api/methods.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

#include <functional>

class QObject;

namespace Sandbox::Engine {

class DatabaseHost;

// The catalog methods, in the dialect the database's backend answers for (SqlDialect):
// databases.version, ping, listTables, listDatabases, describeTable, createDatabase.
void catalogCall(DatabaseHost *host, QObject *owner, const QString &method,
                 const QJsonObject &params, const CallContext &ctx, const Methods::Reply &reply);

// Runs one internal statement (the default timeout) and answers all of its rows, as arrays.
void internalQuery(DatabaseHost *host, QObject *owner, const CallContext &ctx, const QString &id,
                   const QString &sql, const QJsonArray &params,
                   std::function<void(Result<QJsonObject>)> done);

} // namespace Sandbox::Engine
