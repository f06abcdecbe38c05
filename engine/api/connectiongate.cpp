#include "connectiongate.h"

#include <QTcpSocket>
#include <QTimer>

namespace Sandbox::Engine {

namespace {
constexpr int kHeadTimeoutMs = 10000;
} // namespace

namespace HttpHead {

QByteArray header(const QByteArray &head, QByteArrayView name)
{
    const QList<QByteArray> lines = head.split('\n');
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray &line = lines[i];
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            continue;
        if (line.left(colon).trimmed().compare(name, Qt::CaseInsensitive) == 0)
            return line.mid(colon + 1).trimmed();
    }
    return {};
}

QByteArray target(const QByteArray &head)
{
    const qsizetype lineEnd = head.indexOf('\n');
    const QList<QByteArray> parts = head.left(lineEnd).trimmed().split(' ');
    return parts.size() >= 2 ? parts[1] : QByteArray();
}

bool isWebSocketUpgrade(const QByteArray &head)
{
    return header(head, "upgrade").compare("websocket", Qt::CaseInsensitive) == 0;
}

} // namespace HttpHead

ConnectionGate::ConnectionGate(UpgradeHandler onUpgrade, QObject *parent)
    : QTcpServer(parent)
    , m_onUpgrade(std::move(onUpgrade))
{}

void ConnectionGate::incomingConnection(qintptr handle)
{
    auto *socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(handle)) {
        delete socket;
        return;
    }
    auto *timer = new QTimer(socket);
    timer->setSingleShot(true);
    connect(timer, &QTimer::timeout, socket, [socket] {
        socket->abort();
        socket->deleteLater();
    });
    timer->start(kHeadTimeoutMs);
    connect(socket, &QTcpSocket::readyRead, this, [this, socket] { inspect(socket); });
    connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
}

void ConnectionGate::inspect(QTcpSocket *socket)
{
    const QByteArray peeked = socket->peek(MaxHeadBytes);
    const qsizetype end = peeked.indexOf("\r\n\r\n");
    if (end < 0) {
        if (peeked.size() >= MaxHeadBytes) {
            socket->write("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: "
                          "0\r\nConnection: close\r\n\r\n");
            socket->disconnectFromHost();
        }
        return; // wait for the rest of the head
    }
    // From here on the socket belongs to someone else.
    socket->disconnect(this);
    disconnect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    for (QTimer *t : socket->findChildren<QTimer *>(Qt::FindDirectChildrenOnly))
        delete t;
    const QByteArray head = peeked.left(end + 2);
    // A body over the limit is refused before anyone reads it (the HTTP server would buffer it).
    bool lengthOk = false;
    const qint64 length = HttpHead::header(head, "content-length").toLongLong(&lengthOk);
    if (lengthOk && length > MaxBodyBytes) {
        const QByteArray body
            = R"({"error":{"code":-32006,"message":"the body is over the limit of 16 MiB"}})";
        socket->write(
            "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: "
            + QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        socket->disconnectFromHost();
        return;
    }
    if (HttpHead::isWebSocketUpgrade(head)) {
        m_onUpgrade(socket, head);
        return;
    }
    addPendingConnection(socket);
    Q_EMIT newConnection();
    // The HTTP server connected to readyRead just now; the head is still unread in the socket.
    Q_EMIT socket->readyRead();
}

} // namespace Sandbox::Engine
