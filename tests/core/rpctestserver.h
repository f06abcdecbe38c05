#pragma once

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <QWebSocket>
#include <QWebSocketServer>

#include <functional>

// A real JSON-RPC server on 127.0.0.1 for the client tests: a QWebSocketServer whose behaviour
// each test sets through `handler`. Records what it received.
class RpcTestServer final : public QObject
{
    Q_OBJECT

public:
    using Handler = std::function<void(QWebSocket *socket, const QJsonObject &message)>;

    explicit RpcTestServer(QObject *parent = nullptr);
    ~RpcTestServer() override;

    bool listen(quint16 port = 0);
    void stopListening();
    quint16 port() const { return m_port; }
    QUrl url() const;

    // Default: answers `test.echo` with its params, ignores anything else.
    Handler handler;
    // Upgrade then close at once with this code (e.g. 4401), when non-zero.
    int closeOnConnectCode = 0;
    // Upgrade then drop (abort) at once, this many times.
    int dropOnConnect = 0;

    static void send(QWebSocket *socket, const QJsonObject &message);
    static void sendRaw(QWebSocket *socket, const QByteArray &text);
    static void reply(QWebSocket *socket, const QJsonObject &request, const QJsonValue &result);

    QWebSocket *current() const { return m_current; }
    void dropAll();

    int connectionCount = 0;
    QList<QJsonObject> received;
    QByteArray lastAuthorization;

Q_SIGNALS:
    void messageReceived(const QJsonObject &message);
    void clientConnected();

private:
    void onNewConnection();

    QWebSocketServer m_server;
    quint16 m_port = 0;
    QPointer<QWebSocket> m_current;
    QList<QPointer<QWebSocket>> m_sockets;
};
