#pragma once

#include <QHostAddress>
#include <QList>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QUrl>

// A loopback TCP proxy in front of a real server, whose connections a test can cut (as a flaky
// network would) while it keeps accepting new ones.
class TcpProxy final : public QObject
{
    Q_OBJECT

public:
    explicit TcpProxy(const QUrl &target, QObject *parent = nullptr);
    ~TcpProxy() override;

    bool listen();
    QUrl url() const; // http://127.0.0.1:PORT
    // Aborts every open connection (both sides).
    void dropAll();
    // While false, new connections are closed at once.
    void setAccepting(bool accepting) { m_accepting = accepting; }
    // New connections go to `target` from now on (a server that came back on another port).
    void setTarget(const QUrl &target) { m_target = target; }
    int connectionsAccepted() const { return m_accepted; }
    int openConnections() const;

private:
    void onNewConnection();

    QUrl m_target;
    QTcpServer m_server;
    QList<QPair<QPointer<QTcpSocket>, QPointer<QTcpSocket>>> m_pairs;
    bool m_accepting = true;
    int m_accepted = 0;
};
