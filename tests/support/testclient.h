#pragma once

#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QNetworkAccessManager>
#include <QUrl>
#include <QWebSocket>

#include <memory>

// Blocking helpers for tests only (they spin an event loop while waiting).
struct HttpAnswer
{
    int status = 0;
    QByteArray body;
    QJsonValue json() const;
};

HttpAnswer httpRequest(const QByteArray &method, const QUrl &url, const QString &bearer,
                       const QByteArray &body = {},
                       const QByteArray &contentType = "application/json");

class RpcTestClient final
{
public:
    RpcTestClient();
    ~RpcTestClient();

    // Opens a WebSocket; `bearer` goes in the Authorization header unless `subprotocols` is set.
    bool open(const QUrl &url, const QString &bearer, const QStringList &subprotocols = {},
              int timeoutMs = 5000);
    bool isOpen() const;
    int closeCode() const { return m_closeCode; }
    QWebSocket *socket() { return m_socket.get(); }

    void sendText(const QByteArray &text);
    // The next message that is not a notification (notifications are kept in notifications()).
    QJsonValue nextMessage(int timeoutMs = 30000);
    // Sends a request with a fresh id and waits for its answer: the whole response object.
    QJsonObject call(const QString &method, const QJsonObject &params, int timeoutMs = 60000);
    // Shortcut: the result object, or an empty object (and the error in lastError()).
    QJsonObject result(const QString &method, const QJsonObject &params, int timeoutMs = 60000);
    QJsonObject lastError() const { return m_lastError; }

    // Binary output frames (docs/protocol.md 2.6) are kept in binaryMessages and, decoded into
    // the stream.output notification they stand for, in notifications too.
    QList<QJsonObject> notifications;
    QList<QByteArray> binaryMessages;
    QList<QJsonValue> messages;

private:
    std::unique_ptr<QWebSocket> m_socket;
    int m_nextId = 1000;
    int m_closeCode = -1;
    QJsonObject m_lastError;
};
