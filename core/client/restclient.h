#pragma once

#include "apicaller.h"

#include <QByteArray>
#include <QJsonValue>
#include <QObject>
#include <QUrl>
#include <QUrlQuery>

class QNetworkAccessManager;
class QNetworkReply;

namespace Sandbox {

// The REST half of the protocol (docs/protocol.md 5) over QNetworkAccessManager.
// Every request carries `Authorization: Bearer KEY` (but /health). An error answer
// {"error":{code,message,data}} becomes that Error; an error status without such a body the
// code for its status; no answer at all (refused, reset, DNS, TLS) ConnectionError; no answer
// in time Timeout. Handles and contexts cancel like RpcClient's: the callback never runs and the
// HTTP request is aborted.
//
// call() offers the JSON-RPC method names over REST, so that the typed services work over it
// too: each method maps to its route in core/protocol's table (file content is sent and read raw).
// A method without a route fails with NotImplemented; streams are not available.
class RestClient final : public QObject, public ApiCaller
{
    Q_OBJECT

public:
    static constexpr qint64 MaxResponseBytes = 64 * 1024 * 1024;
    static constexpr int DefaultTimeoutMs = 120000;

    // `baseUrl`: http(s)://HOST:PORT (a path prefix is kept).
    explicit RestClient(const QUrl &baseUrl, const QString &apiKey = {}, QObject *parent = nullptr);
    ~RestClient() override;

    QUrl baseUrl() const { return m_baseUrl; }
    void setBaseUrl(const QUrl &url) { m_baseUrl = url; }
    void setApiKey(const QString &apiKey) { m_apiKey = apiKey; }
    void setDefaultTimeout(int ms) { m_defaultTimeoutMs = ms; }

    // A JSON request: `body` Undefined sends none. The answer is the parsed JSON body (Null for
    // an empty one).
    RpcCall request(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                    const QJsonValue &body, QObject *context, JsonCallback callback,
                    CallOptions options = {});
    // A request whose answer is raw bytes (e.g. GET .../files/content); `body` is sent as is.
    RpcCall requestRaw(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                       const QByteArray &body, const QByteArray &contentType, QObject *context,
                       Callback<QByteArray> callback, CallOptions options = {});
    // GET /health, without the key.
    RpcCall health(QObject *context, JsonCallback callback, CallOptions options = {});

    RpcCall call(const QString &method, const QJsonObject &params, QObject *context,
                 JsonCallback callback, CallOptions options = {}) override;

private:
    using RawHandler = std::function<void(Result<QByteArray>)>;
    RpcCall send(const QByteArray &verb, const QString &path, const QUrlQuery &query,
                 const QByteArray &body, const QByteArray &contentType, bool withKey,
                 QObject *context, RawHandler handler, CallOptions options);

    QNetworkAccessManager *m_network; // owned (child)
    QUrl m_baseUrl;
    QString m_apiKey;
    int m_defaultTimeoutMs = DefaultTimeoutMs;
};

} // namespace Sandbox
