#include "restclient.h"

#include "protocol/json.h"
#include "protocol/restroutes.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QPointer>
#include <QTimer>

Q_LOGGING_CATEGORY(lcRest, "sandbox.core.rest", QtWarningMsg)

namespace Sandbox {

namespace {

struct RequestState
{
    QPointer<QObject> context;
    bool hasContext = false;
    bool cancelled = false;
    bool timedOut = false;
    bool tooLarge = false;
};

Result<QJsonValue> parseJsonBody(const QByteArray &body)
{
    if (body.trimmed().isEmpty())
        return QJsonValue(QJsonValue::Null);
    const Json::Parsed parsed = Json::parse(body);
    if (parsed.error)
        return Error{ErrorCode::InternalError,
                     QStringLiteral("malformed answer from server: not JSON (%1 at offset %2)")
                         .arg(parsed.error->message)
                         .arg(parsed.error->offset),
                     {}};
    return parsed.value;
}

Error errorFromBody(int status, const QByteArray &body)
{
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    const QJsonValue error = o.value(QStringLiteral("error"));
    if (error.isObject() && error.toObject().value(QStringLiteral("code")).isDouble())
        return Error::fromJson(error);
    return Error{errorCodeForHttpStatus(status), QStringLiteral("HTTP status %1").arg(status), {}};
}

// Hands the answer's body to `callback` as JSON.
std::function<void(Result<QByteArray>)> parsingJson(JsonCallback callback)
{
    return [callback = std::move(callback)](Result<QByteArray> r) {
        if (!r)
            callback(r.error());
        else
            callback(parseJsonBody(r.value()));
    };
}

} // namespace

RestClient::RestClient(const QUrl &baseUrl, const QString &apiKey, QObject *parent)
    : QObject(parent)
    , m_network(new QNetworkAccessManager(this))
    , m_baseUrl(baseUrl)
    , m_apiKey(apiKey)
{}

RestClient::~RestClient() = default;

RpcCall RestClient::send(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                         const QByteArray &body, const QByteArray &contentType, bool withKey,
                         QObject *context, RawHandler handler, CallOptions options)
{
    // `path` is already percent-encoded (ids are escaped segment by segment).
    QByteArray encoded = m_baseUrl
                             .adjusted(QUrl::RemoveQuery | QUrl::RemoveFragment
                                       | QUrl::StripTrailingSlash)
                             .toEncoded();
    encoded += path.toUtf8();
    QUrl url = QUrl::fromEncoded(encoded, QUrl::StrictMode);
    url.setQuery(query);

    QNetworkRequest request(url);
    if (withKey && !m_apiKey.isEmpty())
        request.setRawHeader("Authorization", "Bearer " + m_apiKey.toUtf8());
    if (!contentType.isEmpty())
        request.setHeader(QNetworkRequest::ContentTypeHeader, contentType);
    request.setRawHeader("Accept", "application/json");

    QNetworkReply *reply = body.isNull() && verb != "POST" && verb != "PUT"
                               ? m_network->sendCustomRequest(request, verb)
                               : m_network->sendCustomRequest(request, verb, body);
    auto state = std::make_shared<RequestState>();
    state->context = context;
    state->hasContext = context != nullptr;

    auto callState = std::make_shared<Internal::CallState>();
    callState->cancel = [state, guard = QPointer<QNetworkReply>(reply)] {
        state->cancelled = true;
        if (guard)
            guard->abort();
    };

    if (context) {
        connect(context, &QObject::destroyed, reply, [state, reply] {
            state->cancelled = true;
            reply->abort();
        });
    }
    const int timeoutMs = options.timeoutMs < 0 ? m_defaultTimeoutMs : options.timeoutMs;
    if (timeoutMs > 0) {
        QTimer::singleShot(timeoutMs, reply, [state, reply] {
            state->timedOut = true;
            reply->abort();
        });
    }
    connect(reply, &QNetworkReply::downloadProgress, reply, [state, reply](qint64 received, qint64) {
        if (received > MaxResponseBytes && !state->tooLarge) {
            state->tooLarge = true;
            reply->abort();
        }
    });
    connect(reply, &QNetworkReply::finished, this,
            [state, callState, reply, handler = std::move(handler), verb, url] {
                reply->deleteLater();
                callState->finished = true;
                callState->cancel = nullptr;
                if (state->cancelled || (state->hasContext && !state->context))
                    return;
                const int status
                    = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
                if (state->timedOut) {
                    handler(Error{ErrorCode::Timeout,
                                  QStringLiteral("no answer from the server in time"),
                                  {}});
                    return;
                }
                if (state->tooLarge) {
                    handler(
                        Error{ErrorCode::PayloadTooLarge,
                              QStringLiteral("the answer is over %1 bytes").arg(MaxResponseBytes),
                              {}});
                    return;
                }
                if (status == 0) {
                    qCInfo(lcRest)
                        << verb << url.toDisplayString() << "failed:" << reply->errorString();
                    handler(Error{ErrorCode::ConnectionError, reply->errorString(), {}});
                    return;
                }
                const QByteArray body = reply->readAll();
                if (status >= 400) {
                    handler(errorFromBody(status, body));
                    return;
                }
                handler(body);
            });
    return RpcCall(callState);
}

RpcCall RestClient::request(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                            const QJsonValue &body, QObject *context, JsonCallback callback,
                            CallOptions options)
{
    QByteArray payload;
    QByteArray contentType;
    if (!body.isUndefined()) {
        payload = QJsonDocument(QJsonArray{body}).toJson(QJsonDocument::Compact);
        payload = payload.mid(1, payload.size() - 2); // the value without the wrapping array
        contentType = "application/json";
    }
    return send(verb, path, query, payload, contentType, true, context,
                parsingJson(std::move(callback)), options);
}

RpcCall RestClient::requestRaw(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                               const QByteArray &body, const QByteArray &contentType,
                               QObject *context, Callback<QByteArray> callback, CallOptions options)
{
    return send(verb, path, query, body, contentType, true, context, std::move(callback), options);
}

RpcCall RestClient::health(QObject *context, JsonCallback callback, CallOptions options)
{
    return send("GET", QStringLiteral("/health"), {}, QByteArray(), QByteArray(), false, context,
                parsingJson(std::move(callback)), options);
}

RpcCall RestClient::call(const QString &method, const QJsonObject &params, QObject *context,
                         JsonCallback callback, CallOptions options)
{
    if (const std::optional<Rest::Request> r = Rest::requestForCall(method, params)) {
        if (r->route->answer == Rest::Route::Answer::Raw) {
            // The bytes as they are, answered as the method's result would be.
            const QString path = params.value(QStringLiteral("path")).toString();
            return send(
                r->verb, r->path, r->query, r->body, r->contentType, true, context,
                [callback = std::move(callback), path](Result<QByteArray> bytes) {
                    if (!bytes) {
                        callback(bytes.error());
                        return;
                    }
                    callback(QJsonValue(
                        QJsonObject{{QStringLiteral("path"), path},
                                    {QStringLiteral("content"),
                                     QString::fromLatin1(bytes->toBase64())},
                                    {QStringLiteral("encoding"), QStringLiteral("base64")},
                                    {QStringLiteral("size"), double(bytes->size())},
                                    {QStringLiteral("truncated"), false}}));
                },
                options);
        }
        return send(r->verb, r->path, r->query, r->body, r->contentType, true, context,
                    parsingJson(std::move(callback)), options);
    }

    // No route: fail like any other call, asynchronously.
    auto callState = std::make_shared<Internal::CallState>();
    callState->cancel = [] {};
    QTimer::singleShot(0, this,
                       [callState, context = QPointer<QObject>(context),
                        hasContext = context != nullptr, callback = std::move(callback), method] {
                           if (callState->finished || (hasContext && !context))
                               return;
                           callState->finished = true;
                           callback(Error{ErrorCode::NotImplemented,
                                          QStringLiteral("%1 has no REST route; use the WebSocket")
                                              .arg(method),
                                          {}});
                       });
    return RpcCall(callState);
}

} // namespace Sandbox
