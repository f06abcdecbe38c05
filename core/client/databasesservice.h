#pragma once

#include "apicaller.h"
#include "types.h"

#include <QJsonArray>

namespace Sandbox {

// `databases.*` (docs/protocol.md 4.3). Rows come back as raw JSON for now.
class DatabasesService final
{
public:
    explicit DatabasesService(ApiCaller *caller);

    RpcCall create(const DatabaseCreateOptions &options, QObject *context,
                   Callback<SandboxInfo> callback);
    RpcCall get(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall list(QObject *context, Callback<QList<SandboxInfo>> callback);
    RpcCall query(const QString &id, const QString &sql, const QJsonArray &params,
                  QObject *context, Callback<QueryResult> callback);
    // Answers rowsAffected.
    RpcCall execute(const QString &id, const QString &sql, const QJsonArray &params,
                    QObject *context, Callback<qint64> callback);
    RpcCall stop(const QString &id, QObject *context, Callback<SandboxInfo> callback);

private:
    ApiCaller *m_caller; // not owned
};

} // namespace Sandbox
