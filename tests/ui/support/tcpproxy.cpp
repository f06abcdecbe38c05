#include "tcpproxy.h"

TcpProxy::TcpProxy(const QUrl &target, QObject *parent)
    : QObject(parent)
    , m_target(target)
{
    connect(&m_server, &QTcpServer::newConnection, this, &TcpProxy::onNewConnection);
}

TcpProxy::~TcpProxy()
{
    dropAll();
}

bool TcpProxy::listen()
{
    return m_server.listen(QHostAddress::LocalHost, 0);
}

QUrl TcpProxy::url() const
{
    return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort()));
}

int TcpProxy::openConnections() const
{
    int n = 0;
    for (const auto &p : m_pairs) {
        if (p.first && p.first->state() == QAbstractSocket::ConnectedState)
            ++n;
    }
    return n;
}

void TcpProxy::dropAll()
{
    for (auto &p : m_pairs) {
        if (p.first)
            p.first->abort();
        if (p.second)
            p.second->abort();
    }
    m_pairs.clear();
}

void TcpProxy::onNewConnection()
{
    while (QTcpSocket *client = m_server.nextPendingConnection()) {
        if (!m_accepting) {
            client->abort();
            client->deleteLater();
            continue;
        }
        ++m_accepted;
        auto *upstream = new QTcpSocket(client);
        connect(client, &QTcpSocket::readyRead, upstream,
                [client, upstream] { upstream->write(client->readAll()); });
        connect(upstream, &QTcpSocket::readyRead, client,
                [client, upstream] { client->write(upstream->readAll()); });
        connect(client, &QTcpSocket::disconnected, upstream, [upstream] { upstream->abort(); });
        connect(upstream, &QTcpSocket::disconnected, client, [client] { client->abort(); });
        // A server that is not there (refused) closes the client's connection, as it would without
        // the proxy; else the client would wait on a connection that goes nowhere.
        connect(upstream, &QTcpSocket::errorOccurred, client, [client, upstream] {
            if (upstream->state() != QAbstractSocket::ConnectedState)
                client->abort();
        });
        connect(client, &QTcpSocket::disconnected, client, &QObject::deleteLater);
        // Bytes that arrive before the upstream is connected are written once it is (QTcpSocket buffers).
        upstream->connectToHost(QHostAddress(m_target.host()), quint16(m_target.port()));
        m_pairs.append(qMakePair(QPointer<QTcpSocket>(client), QPointer<QTcpSocket>(upstream)));
    }
}
