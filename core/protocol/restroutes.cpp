#include "restroutes.h"

#include "json.h"

#include <QJsonDocument>
#include <QUrl>

namespace Sandbox::Rest {

namespace {

using Body = Route::Body;
using Query = Route::Query;

QList<Route> buildRoutes()
{
    QList<Route> t;
    auto add = [&t](const char *verb, const QString &path, const QString &method,
                    Body body = Body::None, QList<Route::QueryItem> query = {}) -> Route & {
        t.append(Route{QByteArray(verb), path, method, body, std::move(query)});
        return t.last();
    };
    const QList<Route::QueryItem> pathQuery{{QStringLiteral("path"), Query::Text}};
    const QList<Route::QueryItem> pathRecursive{{QStringLiteral("path"), Query::Text},
                                                {QStringLiteral("recursive"), Query::Flag}};

    add("GET", QStringLiteral("/api/sessions/current"), QStringLiteral("sessions.current"));
    add("GET", QStringLiteral("/api/sessions/quota"), QStringLiteral("sessions.quota"));
    add("GET", QStringLiteral("/api/keys"), QStringLiteral("keys.list"));
    Route &createKey = add("POST", QStringLiteral("/api/keys"), QStringLiteral("keys.create"),
                           Body::Json);
    createKey.successStatus = 201;
    add("DELETE", QStringLiteral("/api/keys/{id}"), QStringLiteral("keys.revoke"));

    // docs/protocol.md 4.1-4.5: the same lifecycle for both kinds of sandbox.
    for (const QString &kind : {QStringLiteral("agents"), QStringLiteral("databases")}) {
        const QString base = QStringLiteral("/api/") + kind;
        const QString one = base + QStringLiteral("/{id}");
        const QString ns = kind + u'.';
        add("GET", base, ns + QStringLiteral("list"));
        Route &create = add("POST", base, ns + QStringLiteral("create"), Body::Json);
        create.successStatus = 201;
        add("GET", one, ns + QStringLiteral("get"));
        add("DELETE", one, ns + QStringLiteral("delete"));
        add("POST", one + QStringLiteral("/stop"), ns + QStringLiteral("stop"), Body::Json);
        add("POST", one + QStringLiteral("/start"), ns + QStringLiteral("start"), Body::Json);
        add("PUT", one + QStringLiteral("/name"), ns + QStringLiteral("setName"), Body::Json);
        // 3.5 and 4.9: the policy and the recent denials, or a new policy.
        add("GET", one + QStringLiteral("/network"), QStringLiteral("sandbox.networkLog"));
        add("PUT", one + QStringLiteral("/network"), QStringLiteral("sandbox.setNetwork"),
            Body::Json);
    }

    // Agents (4.2, 4.6, 4.7).
    const QString agent = QStringLiteral("/api/agents/{id}");
    add("POST", agent + QStringLiteral("/run"), QStringLiteral("agents.run"), Body::Json);
    Route &exec = add("POST", agent + QStringLiteral("/exec"), QStringLiteral("agents.exec"),
                      Body::Json);
    exec.once = true;
    add("POST", agent + QStringLiteral("/cloneRepo"), QStringLiteral("agents.cloneRepo"),
        Body::Json);
    // Run history (4.7.1) and a run's changes to /workspace (4.7.2).
    add("GET", agent + QStringLiteral("/runs"), QStringLiteral("agents.runs"), Body::None,
        {{QStringLiteral("limit"), Query::Integer}});
    add("GET", agent + QStringLiteral("/runs/{runId}/events"), QStringLiteral("agents.runEvents"),
        Body::None,
        {{QStringLiteral("after"), Query::Integer}, {QStringLiteral("limit"), Query::Integer}});
    add("GET", agent + QStringLiteral("/runs/{runId}/changes"), QStringLiteral("agents.runChanges"));
    add("POST", agent + QStringLiteral("/runs/{runId}/revert"), QStringLiteral("agents.revertFile"),
        Body::Json);
    // Files (4.8).
    add("GET", agent + QStringLiteral("/files"), QStringLiteral("agents.listFiles"), Body::None,
        pathRecursive);
    add("DELETE", agent + QStringLiteral("/files"), QStringLiteral("agents.deleteFile"), Body::None,
        pathRecursive);
    Route &readFile = add("GET", agent + QStringLiteral("/files/content"),
                          QStringLiteral("agents.readFile"), Body::None, pathQuery);
    readFile.answer = Route::Answer::Raw;
    // Missing parent directories are created unless `?parents=0` (as over /rpc).
    add("PUT", agent + QStringLiteral("/files/content"), QStringLiteral("agents.writeFile"),
        Body::Raw,
        {{QStringLiteral("path"), Query::Text}, {QStringLiteral("parents"), Query::Flag}});
    add("GET", agent + QStringLiteral("/files/stat"), QStringLiteral("agents.stat"), Body::None,
        pathQuery);
    add("POST", agent + QStringLiteral("/files/mkdir"), QStringLiteral("agents.mkdir"), Body::Json);
    add("POST", agent + QStringLiteral("/files/rename"), QStringLiteral("agents.rename"),
        Body::Json);

    // Databases (4.3): POST /api/databases/{id}/METHOD, the body is the method's params.
    for (const char *action : {"query", "execute", "queryWithMetadata", "fetch", "closeCursor",
                               "transaction", "version", "ping", "listTables", "describeTable",
                               "listDatabases", "createDatabase", "exportData", "restart"}) {
        const QString name = QLatin1StringView(action);
        add("POST", QStringLiteral("/api/databases/{id}/") + name,
            QStringLiteral("databases.") + name, Body::Json);
    }
    return t;
}

bool isParam(QStringView segment)
{
    return segment.size() > 2 && segment.startsWith(u'{') && segment.endsWith(u'}');
}

QStringView paramName(QStringView segment)
{
    return segment.mid(1, segment.size() - 2);
}

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

bool flagValue(const QString &v)
{
    return v == QLatin1String("1") || v == QLatin1String("true");
}

QString encoded(const QString &s)
{
    return QString::fromLatin1(QUrl::toPercentEncoding(s));
}

const char *bodyName(Body b)
{
    switch (b) {
    case Body::None:
        return "none";
    case Body::Json:
        return "json";
    case Body::Raw:
        return "raw";
    }
    return "none";
}

const char *queryName(Query q)
{
    switch (q) {
    case Query::Text:
        return "text";
    case Query::Integer:
        return "integer";
    case Query::Flag:
        return "flag";
    }
    return "text";
}

} // namespace

QStringList Route::pathParams() const
{
    QStringList out;
    for (const QStringView segment : QStringView(path).split(u'/', Qt::SkipEmptyParts)) {
        if (isParam(segment))
            out.append(paramName(segment).toString());
    }
    return out;
}

const QList<Route> &routes()
{
    static const QList<Route> table = buildRoutes();
    return table;
}

const Route *routeForMethod(QStringView method)
{
    for (const Route &r : routes()) {
        if (r.method == method)
            return &r;
    }
    return nullptr;
}

QJsonArray routesToJson()
{
    QJsonArray out;
    for (const Route &r : routes()) {
        QJsonArray query;
        for (const Route::QueryItem &q : r.query)
            query.append(QJsonObject{{QStringLiteral("name"), q.name},
                                     {QStringLiteral("kind"), QLatin1String(queryName(q.kind))}});
        out.append(QJsonObject{
            {QStringLiteral("verb"), QString::fromLatin1(r.verb)},
            {QStringLiteral("path"), r.path},
            {QStringLiteral("method"), r.method},
            {QStringLiteral("body"), QLatin1String(bodyName(r.body))},
            {QStringLiteral("query"), query},
            {QStringLiteral("status"), r.successStatus},
            {QStringLiteral("answer"),
             r.answer == Route::Answer::Raw ? QStringLiteral("raw") : QStringLiteral("json")},
        });
    }
    return out;
}

Result<Call> callForRequest(QByteArrayView verb, const QString &path, const QUrlQuery &query,
                            const QByteArray &body)
{
    const QList<QStringView> parts = QStringView(path).split(u'/', Qt::SkipEmptyParts);
    for (const Route &r : routes()) {
        if (r.verb != verb)
            continue;
        const QList<QStringView> pattern = QStringView(r.path).split(u'/', Qt::SkipEmptyParts);
        if (pattern.size() != parts.size())
            continue;
        QJsonObject fromPath;
        bool matches = true;
        for (qsizetype i = 0; i < pattern.size() && matches; ++i) {
            if (isParam(pattern[i]))
                fromPath.insert(paramName(pattern[i]).toString(), parts[i].toString());
            else
                matches = pattern[i] == parts[i];
        }
        if (!matches)
            continue;

        Call call;
        call.route = &r;
        call.method = r.method;
        if (r.body == Body::Json) {
            auto b = jsonBody(body);
            if (!b)
                return b.error();
            call.params = b.value();
        }
        for (auto it = fromPath.begin(); it != fromPath.end(); ++it)
            call.params.insert(it.key(), it.value());
        for (const Route::QueryItem &q : r.query) {
            if (!query.hasQueryItem(q.name))
                continue;
            const QString v = query.queryItemValue(q.name, QUrl::FullyDecoded);
            switch (q.kind) {
            case Query::Text:
                if (!v.isEmpty())
                    call.params.insert(q.name, v);
                break;
            case Query::Integer: {
                bool ok = false;
                const qint64 n = v.toLongLong(&ok);
                call.params.insert(q.name, ok ? QJsonValue(double(n)) : QJsonValue(v));
                break;
            }
            case Query::Flag:
                call.params.insert(q.name, flagValue(v));
                break;
            }
        }
        if (r.body == Body::Raw) {
            call.params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
            call.params.insert(QStringLiteral("content"), QString::fromLatin1(body.toBase64()));
        }
        if (r.answer == Route::Answer::Raw)
            call.params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
        if (r.once && call.params.value(QStringLiteral("options")).isObject()) {
            QJsonObject opts = call.params.value(QStringLiteral("options")).toObject();
            opts.remove(QStringLiteral("stream"));
            call.params.insert(QStringLiteral("options"), opts);
        }
        return call;
    }
    return Error{ErrorCode::MethodNotFound,
                 QStringLiteral("no route for %1 %2").arg(QString::fromLatin1(verb), path),
                 {}};
}

std::optional<Request> requestForCall(const QString &method, const QJsonObject &params)
{
    const Route *r = routeForMethod(method);
    if (!r)
        return std::nullopt;
    Request req;
    req.route = r;
    req.verb = r->verb;
    QJsonObject rest = params;
    for (const QStringView segment : QStringView(r->path).split(u'/', Qt::SkipEmptyParts)) {
        req.path += u'/';
        if (isParam(segment)) {
            const QString name = paramName(segment).toString();
            req.path += encoded(params.value(name).toString());
            rest.remove(name);
        } else {
            req.path += segment;
        }
    }
    for (const Route::QueryItem &q : r->query) {
        const QJsonValue v = params.value(q.name);
        rest.remove(q.name);
        if (v.isUndefined() || v.isNull())
            continue;
        switch (q.kind) {
        case Query::Text:
            // Encoded here: QUrlQuery leaves '&', '=' and '+' in a value as they are.
            req.query.addQueryItem(q.name, encoded(v.toString()));
            break;
        case Query::Integer:
            req.query.addQueryItem(q.name, QString::number(v.toInteger()));
            break;
        case Query::Flag:
            req.query.addQueryItem(q.name, v.toBool() ? QStringLiteral("1") : QStringLiteral("0"));
            break;
        }
    }
    switch (r->body) {
    case Body::None:
        break;
    case Body::Json:
        req.body = QJsonDocument(rest).toJson(QJsonDocument::Compact);
        req.contentType = "application/json";
        break;
    case Body::Raw: {
        const QString content = params.value(QStringLiteral("content")).toString();
        req.body = params.value(QStringLiteral("encoding")).toString() == QLatin1String("base64")
                       ? QByteArray::fromBase64(content.toLatin1())
                       : content.toUtf8();
        req.contentType = "application/octet-stream";
        break;
    }
    }
    return req;
}

} // namespace Sandbox::Rest
