#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QUrlQuery>

namespace Sandbox::Engine {

// How a REST request maps onto a method of docs/protocol.md (section 5): REST is a thin
// adapter over the same methods that /rpc serves, so both always agree.
struct RestCall
{
    enum class Body { Json, RawFileContent };

    QString method;
    QJsonObject params;
    int successStatus = 200;
    Body response = Body::Json; // RawFileContent: answer readFile's bytes as they are
};

Result<RestCall> routeRestRequest(QByteArrayView httpMethod, const QString &path,
                                  const QUrlQuery &query, const QByteArray &body);

} // namespace Sandbox::Engine
