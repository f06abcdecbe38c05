#include "inmemorytransport.h"

#include <QMetaObject>

namespace Sandbox {

InMemoryTransport::Pair InMemoryTransport::createPair(QObject *parent)
{
    auto *client = new InMemoryTransport(parent);
    auto *server = new InMemoryTransport(parent);
    client->m_peer = server;
    server->m_peer = client;
    return {client, server};
}

InMemoryTransport::InMemoryTransport(QObject *parent)
    : Transport(parent)
{}

InMemoryTransport::~InMemoryTransport()
{
    if (m_peer && m_peer->m_open)
        m_peer->markClosed(CloseAbnormal, QStringLiteral("peer destroyed"));
}

void InMemoryTransport::open()
{
    if (m_open || m_connecting)
        return;
    m_connecting = true;
    const quint64 generation = m_generation;
    QMetaObject::invokeMethod(
        this,
        [this, generation] {
            if (generation != m_generation || !m_connecting)
                return;
            m_connecting = false;
            if (!m_peer || !m_peer->m_accepting) {
                ++m_generation;
                Q_EMIT closed(CloseAbnormal, QStringLiteral("connection refused"));
                return;
            }
            m_open = true;
            m_peer->m_open = true;
            m_peer->m_connecting = false;
            Q_EMIT m_peer->opened();
            if (m_open)
                Q_EMIT opened();
        },
        Qt::QueuedConnection);
}

void InMemoryTransport::close()
{
    closeWithCode(1000, QStringLiteral("closed"));
}

void InMemoryTransport::closeWithCode(int closeCode, const QString &reason)
{
    if (m_connecting) {
        m_connecting = false;
        markClosed(closeCode, reason);
        return;
    }
    if (!m_open)
        return;
    if (m_peer && m_peer->m_open)
        m_peer->markClosed(closeCode, reason);
    markClosed(closeCode, reason);
}

void InMemoryTransport::markClosed(int closeCode, const QString &reason)
{
    m_open = false;
    m_connecting = false;
    ++m_generation;
    Q_EMIT closed(closeCode, reason);
}

bool InMemoryTransport::sendText(const QByteArray &message)
{
    if (!m_open || !m_peer)
        return false;
    InMemoryTransport *peer = m_peer;
    const quint64 generation = peer->m_generation;
    QMetaObject::invokeMethod(
        peer, [peer, generation, message] { peer->deliver(generation, message); },
        Qt::QueuedConnection);
    return true;
}

void InMemoryTransport::deliver(quint64 generation, const QByteArray &message)
{
    if (generation == m_generation && m_open)
        Q_EMIT textReceived(message);
}

} // namespace Sandbox
