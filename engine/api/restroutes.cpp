#include "restroutes.h"

#include "protocol/json.h"

namespace Sandbox::Engine {

namespace {

Result<QJsonObject> jsonBody(const QByteArray &body)
{
    if (body.trimmed().isEmpty())
        return QJsonObject{};
    const Json::Parsed parsed = Json::parse(body);
    if (parsed.error)
        return Error{ErrorCode::ParseError,
                     QStringLiteral("Parse error: %1 at offset %2")
                         .arg(parsed.error->message)
                         .arg(parsed.error->offset),
                     {}};
    if (!parsed.value.isObject())
        return Error{ErrorCode::InvalidRequest,
                     QStringLiteral("the body must be a JSON object"),
                     {}};
    return parsed.value.toObject();
}

bool queryBool(const QUrlQuery &q, const QString &name)
{
    const QString v = q.queryItemValue(name);
    return v == QLatin1String("1") || v == QLatin1String("true");
}

// A numeric query item as a JSON number (a non-number stays text, for -32602 to name it).
void insertQueryInteger(QJsonObject &params, const QUrlQuery &q, const QString &name)
{
    if (!q.hasQueryItem(name))
        return;
    const QString v = q.queryItemValue(name);
    bool ok = false;
    const qint64 n = v.toLongLong(&ok);
    params.insert(name, ok ? QJsonValue(double(n)) : QJsonValue(v));
}

Error noRoute(QByteArrayView method, const QString &path)
{
    return Error{ErrorCode::MethodNotFound,
                 QStringLiteral("no route for %1 %2").arg(QString::fromLatin1(method), path),
                 {}};
}

} // namespace

Result<RestCall> routeRestRequest(QByteArrayView m, const QString &path, const QUrlQuery &query,
                                  const QByteArray &body)
{
    const QStringList parts = path.split(u'/', Qt::SkipEmptyParts);
    // parts[0] == "api"
    if (parts.size() < 2 || parts[0] != QLatin1String("api"))
        return noRoute(m, path);
    const QString &collection = parts[1];
    const bool get = m == "GET", post = m == "POST", del = m == "DELETE", put = m == "PUT";
    RestCall call;

    auto withBody = [&](const QString &method, QJsonObject extra = {}) -> Result<RestCall> {
        auto b = jsonBody(body);
        if (!b)
            return b.error();
        QJsonObject params = b.value();
        for (auto it = extra.begin(); it != extra.end(); ++it)
            params.insert(it.key(), it.value());
        call.method = method;
        call.params = params;
        return call;
    };
    auto plain = [&](const QString &method, QJsonObject params = {}) -> Result<RestCall> {
        call.method = method;
        call.params = std::move(params);
        return call;
    };

    if (collection == QLatin1String("sessions") && parts.size() == 3 && get) {
        if (parts[2] == QLatin1String("current"))
            return plain(QStringLiteral("sessions.current"));
        if (parts[2] == QLatin1String("quota"))
            return plain(QStringLiteral("sessions.quota"));
    }
    if (collection == QLatin1String("keys")) {
        if (parts.size() == 2 && get)
            return plain(QStringLiteral("keys.list"));
        if (parts.size() == 2 && post) {
            call.successStatus = 201;
            return withBody(QStringLiteral("keys.create"));
        }
        if (parts.size() == 3 && del)
            return plain(QStringLiteral("keys.revoke"), {{QStringLiteral("id"), parts[2]}});
    }
    if (collection != QLatin1String("agents") && collection != QLatin1String("databases"))
        return noRoute(m, path);

    const QString ns = collection + u'.';
    if (parts.size() == 2) {
        if (get)
            return plain(ns + QStringLiteral("list"));
        if (post) {
            call.successStatus = 201;
            return withBody(ns + QStringLiteral("create"));
        }
        return noRoute(m, path);
    }
    const QJsonObject idParam{{QStringLiteral("id"), parts[2]}};
    if (parts.size() == 3) {
        if (get)
            return plain(ns + QStringLiteral("get"), idParam);
        if (del)
            return plain(ns + QStringLiteral("delete"), idParam);
        return noRoute(m, path);
    }
    const QString &action = parts[3];
    if (parts.size() == 4 && post) {
        static const QStringList common{QStringLiteral("stop"), QStringLiteral("start")};
        static const QStringList agents{QStringLiteral("run"), QStringLiteral("exec"),
                                        QStringLiteral("cloneRepo")};
        static const QStringList databases{QStringLiteral("query"), QStringLiteral("execute"),
                                           // the database adapter's (docs/protocol.md 4.3)
                                           QStringLiteral("queryWithMetadata"),
                                           QStringLiteral("fetch"), QStringLiteral("closeCursor"),
                                           QStringLiteral("transaction"), QStringLiteral("version"),
                                           QStringLiteral("ping"), QStringLiteral("listTables"),
                                           QStringLiteral("describeTable"),
                                           QStringLiteral("listDatabases"),
                                           QStringLiteral("createDatabase"),
                                           QStringLiteral("exportData"), QStringLiteral("restart")};
        const bool known
            = common.contains(action)
              || (collection == QLatin1String("agents") ? agents : databases).contains(action);
        if (known) {
            auto r = withBody(ns + action, idParam);
            if (r && action == QLatin1String("exec")) {
                // REST answers once, with the whole result: no streaming.
                QJsonObject opts = r->params.value(QStringLiteral("options")).toObject();
                opts.remove(QStringLiteral("stream"));
                if (r->params.value(QStringLiteral("options")).isObject())
                    r.value().params.insert(QStringLiteral("options"), opts);
            }
            return r;
        }
    }
    // Run history (docs/protocol.md 4.7.1): /runs and /runs/{runId}/events.
    if (action == QLatin1String("runs") && collection == QLatin1String("agents") && get) {
        QJsonObject params = idParam;
        if (parts.size() == 4) {
            insertQueryInteger(params, query, QStringLiteral("limit"));
            return plain(ns + QStringLiteral("runs"), params);
        }
        if (parts.size() == 6 && parts[5] == QLatin1String("events")) {
            params.insert(QStringLiteral("runId"), parts[4]);
            insertQueryInteger(params, query, QStringLiteral("after"));
            insertQueryInteger(params, query, QStringLiteral("limit"));
            return plain(ns + QStringLiteral("runEvents"), params);
        }
    }
    // A run's changes to /workspace (docs/protocol.md 4.7.2): /runs/{runId}/changes and
    // /runs/{runId}/revert {path}.
    if (action == QLatin1String("runs") && collection == QLatin1String("agents")
        && parts.size() == 6) {
        QJsonObject params = idParam;
        params.insert(QStringLiteral("runId"), parts[4]);
        if (get && parts[5] == QLatin1String("changes"))
            return plain(ns + QStringLiteral("runChanges"), params);
        if (post && parts[5] == QLatin1String("revert"))
            return withBody(ns + QStringLiteral("revertFile"), params);
    }
    if (action == QLatin1String("name") && parts.size() == 4 && put) {
        // docs/protocol.md 4.5: a new name, {name}.
        return withBody(ns + QStringLiteral("setName"), idParam);
    }
    if (action == QLatin1String("network") && parts.size() == 4) {
        // docs/protocol.md 3.5 and 4.9: the policy and the recent denials, or a new policy.
        if (get)
            return plain(QStringLiteral("sandbox.networkLog"), idParam);
        if (put)
            return withBody(QStringLiteral("sandbox.setNetwork"), idParam);
    }
    if (action == QLatin1String("files") && collection == QLatin1String("agents")) {
        QJsonObject params = idParam;
        const QString p = query.queryItemValue(QStringLiteral("path"), QUrl::FullyDecoded);
        if (!p.isEmpty())
            params.insert(QStringLiteral("path"), p);
        const QString sub = parts.size() == 5 ? parts[4] : QString();
        if (parts.size() == 4 && get) {
            params.insert(QStringLiteral("recursive"),
                          queryBool(query, QStringLiteral("recursive")));
            return plain(ns + QStringLiteral("listFiles"), params);
        }
        if (parts.size() == 4 && del) {
            params.insert(QStringLiteral("recursive"),
                          queryBool(query, QStringLiteral("recursive")));
            return plain(ns + QStringLiteral("deleteFile"), params);
        }
        if (sub == QLatin1String("content") && get) {
            params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
            call.response = RestCall::Body::RawFileContent;
            return plain(ns + QStringLiteral("readFile"), params);
        }
        if (sub == QLatin1String("content") && put) {
            params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
            params.insert(QStringLiteral("content"), QString::fromLatin1(body.toBase64()));
            // Missing parent directories are created unless `?parents=0` (as over /rpc).
            if (query.hasQueryItem(QStringLiteral("parents")))
                params.insert(QStringLiteral("parents"),
                              queryBool(query, QStringLiteral("parents")));
            return plain(ns + QStringLiteral("writeFile"), params);
        }
        if (sub == QLatin1String("stat") && get)
            return plain(ns + QStringLiteral("stat"), params);
        if (sub == QLatin1String("mkdir") && post)
            return withBody(ns + QStringLiteral("mkdir"), idParam);
        if (sub == QLatin1String("rename") && post)
            return withBody(ns + QStringLiteral("rename"), idParam);
    }
    return noRoute(m, path);
}

} // namespace Sandbox::Engine
