#pragma once

#include "result.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QUrlQuery>

#include <optional>

// The REST routes of docs/protocol.md section 5, written once: the engine routes requests with
// this table, the core client builds them from it, and the conformance cases walk it against
// the engine and the Worker (exported as JSON at build time).
namespace Sandbox::Rest {

struct Route
{
    // What the request body carries.
    enum class Body : quint8 {
        None, // nothing (the params come from the path and query)
        Json, // a JSON object: the method's params, beside those of the path
        Raw,  // the bytes of a file: params.content in base64 (writeFile)
    };
    // What the answer carries.
    enum class Answer : quint8 {
        Json, // the method's result as JSON
        Raw,  // the bytes of result.content (readFile, asked for in base64)
    };
    // How a query item becomes a param.
    enum class Query : quint8 {
        Text,    // a string, percent-decoded; an empty one is left out
        Integer, // a JSON number (a non-number stays text, for -32602 to name it)
        Flag,    // "1" or "true" is true, anything else false
    };
    struct QueryItem
    {
        QString name;
        Query kind = Query::Text;
    };

    QByteArray verb; // GET, POST, PUT, DELETE
    QString path;    // "/api/agents/{id}/runs/{runId}/events": {name} is a param from the path
    QString method;  // the JSON-RPC method it calls
    Body body = Body::None;
    QList<QueryItem> query;
    int successStatus = 200;
    Answer answer = Answer::Json;
    bool once = false; // REST answers once, with the whole result: options.stream is dropped

    QStringList pathParams() const;
};

// Every route, in matching order.
const QList<Route> &routes();
// The first route that calls `method`, or null when it has none (it is WebSocket only).
const Route *routeForMethod(QStringView method);
// The table as JSON, for the Worker's tests: [{verb, path, method, body, query, status, answer}].
QJsonArray routesToJson();

// Server side: what a request calls.
struct Call
{
    const Route *route = nullptr;
    QString method;
    QJsonObject params;
};
// MethodNotFound when nothing matches; ParseError / InvalidRequest for a body that is not a
// JSON object where one is expected.
Result<Call> callForRequest(QByteArrayView verb, const QString &path, const QUrlQuery &query,
                            const QByteArray &body);

// Client side: the request for a method and its params.
struct Request
{
    const Route *route = nullptr;
    QByteArray verb;
    QString path; // percent-encoded segment by segment
    QUrlQuery query;
    QByteArray body; // null: none
    QByteArray contentType;
};
std::optional<Request> requestForCall(const QString &method, const QJsonObject &params);

} // namespace Sandbox::Rest
