#include "testclient.h"

#include <protocol/streamframe.h>
#include <protocol/utf8.h>

#include <QDeadlineTimer>
#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkReply>
#include <QTimer>
#include <QWebSocketHandshakeOptions>

QJsonValue HttpAnswer::json() const
{
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (doc.isObject())
        return doc.object();
    if (doc.isArray())
        return doc.array();
    return QJsonValue::Undefined;
}

HttpAnswer httpRequest(const QByteArray &method, const QUrl &url, const QString &bearer,
                       const QByteArray &body, const QByteArray &contentType)
{
    QNetworkAccessManager nam;
    QNetworkRequest req(url);
    if (!bearer.isEmpty())
        req.setRawHeader("Authorization", "Bearer " + bearer.toLatin1());
    if (!body.isEmpty())
        req.setHeader(QNetworkRequest::ContentTypeHeader, contentType);
    QNetworkReply *reply = nam.sendCustomRequest(req, method, body);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(120000, &loop, &QEventLoop::quit);
    loop.exec();
    HttpAnswer a;
    a.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    a.body = reply->readAll();
    delete reply;
    return a;
}

RpcTestClient::RpcTestClient() = default;
RpcTestClient::~RpcTestClient() = default;

bool RpcTestClient::open(const QUrl &url, const QString &bearer, const QStringList &subprotocols,
                         int timeoutMs)
{
    m_socket = std::make_unique<QWebSocket>();
    m_socket->setMaxAllowedIncomingMessageSize(64 * 1024 * 1024);
    QObject::connect(m_socket.get(), &QWebSocket::textMessageReceived, m_socket.get(),
                     [this](const QString &text) {
                         const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8());
                         if (doc.isObject() && doc.object().contains(QStringLiteral("method"))
                             && !doc.object().contains(QStringLiteral("id"))) {
                             notifications.append(doc.object());
                             return;
                         }
                         messages.append(doc.isArray() ? QJsonValue(doc.array())
                                                       : QJsonValue(doc.object()));
                     });
    QObject::connect(m_socket.get(), &QWebSocket::binaryMessageReceived, m_socket.get(),
                     [this](const QByteArray &message) {
                         binaryMessages.append(message);
                         const auto frame = Sandbox::StreamFrame::decode(message, nullptr);
                         if (!frame)
                             return;
                         QJsonObject params{{QStringLiteral("streamId"), frame->streamId},
                                            {QStringLiteral("seq"), double(frame->seq)},
                                            {QStringLiteral("requestId"),
                                             QJsonDocument::fromJson("[" + frame->requestIdJson
                                                                     + "]")
                                                 .array()
                                                 .at(0)},
                                            {QStringLiteral("channel"),
                                             frame->channel == Sandbox::StreamFrame::Channel::Stderr
                                                 ? QStringLiteral("stderr")
                                                 : QStringLiteral("stdout")}};
                         if (Sandbox::Utf8::isValid(frame->data))
                             params.insert(QStringLiteral("data"), QString::fromUtf8(frame->data));
                         else
                             params.insert(QStringLiteral("dataBase64"),
                                           QString::fromLatin1(frame->data.toBase64()));
                         notifications.append(
                             QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                         {QStringLiteral("method"),
                                          QStringLiteral("stream.output")},
                                         {QStringLiteral("params"), params}});
                     });
    QObject::connect(m_socket.get(), &QWebSocket::disconnected, m_socket.get(),
                     [this] { m_closeCode = m_socket->closeCode(); });
    QNetworkRequest req(url);
    if (!bearer.isEmpty() && subprotocols.isEmpty())
        req.setRawHeader("Authorization", "Bearer " + bearer.toLatin1());
    QWebSocketHandshakeOptions options;
    options.setSubprotocols(subprotocols);
    m_socket->open(req, options);
    QEventLoop loop;
    QObject::connect(m_socket.get(), &QWebSocket::connected, &loop, &QEventLoop::quit);
    QObject::connect(m_socket.get(), &QWebSocket::disconnected, &loop, &QEventLoop::quit);
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    loop.exec();
    if (m_socket->state() != QAbstractSocket::ConnectedState)
        return false;
    // A server that accepts and closes at once (close code 4401) counts as refused.
    QEventLoop settle;
    QTimer::singleShot(100, &settle, &QEventLoop::quit);
    settle.exec();
    return isOpen();
}

bool RpcTestClient::isOpen() const
{
    return m_socket && m_socket->state() == QAbstractSocket::ConnectedState;
}

void RpcTestClient::sendText(const QByteArray &text)
{
    m_socket->sendTextMessage(QString::fromUtf8(text));
    // Written now, not on the event loop's next turn (the benchmarks time calls with this client,
    // and a real client does the same: core/client/websockettransport.cpp).
    m_socket->flush();
}

QJsonValue RpcTestClient::nextMessage(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (messages.isEmpty() && !deadline.hasExpired() && isOpen()) {
        QEventLoop loop;
        QObject::connect(m_socket.get(), &QWebSocket::textMessageReceived, &loop, &QEventLoop::quit);
        QObject::connect(m_socket.get(), &QWebSocket::disconnected, &loop, &QEventLoop::quit);
        QTimer::singleShot(qMax<qint64>(1, deadline.remainingTime()), &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (messages.isEmpty())
        return QJsonValue::Undefined;
    return messages.takeFirst();
}

QJsonObject RpcTestClient::call(const QString &method, const QJsonObject &params, int timeoutMs)
{
    const int id = m_nextId++;
    const QJsonObject request{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                              {QStringLiteral("id"), id},
                              {QStringLiteral("method"), method},
                              {QStringLiteral("params"), params}};
    sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
    QDeadlineTimer deadline(timeoutMs);
    while (!deadline.hasExpired()) {
        for (qsizetype i = 0; i < messages.size(); ++i) {
            const QJsonObject o = messages[i].toObject();
            if (o.value(QStringLiteral("id")) == QJsonValue(id)) {
                messages.removeAt(i);
                return o;
            }
        }
        if (!isOpen())
            break;
        QEventLoop loop;
        QObject::connect(m_socket.get(), &QWebSocket::textMessageReceived, &loop, &QEventLoop::quit);
        QObject::connect(m_socket.get(), &QWebSocket::disconnected, &loop, &QEventLoop::quit);
        QTimer::singleShot(qMax<qint64>(1, deadline.remainingTime()), &loop, &QEventLoop::quit);
        loop.exec();
    }
    return {};
}

QJsonObject RpcTestClient::result(const QString &method, const QJsonObject &params, int timeoutMs)
{
    const QJsonObject answer = call(method, params, timeoutMs);
    m_lastError = answer.value(QStringLiteral("error")).toObject();
    return answer.value(QStringLiteral("result")).toObject();
}
