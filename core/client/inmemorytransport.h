#pragma once

#include "transport.h"

#include <QPointer>

namespace Sandbox {

// One end of an in-process pair of transports: what one end sends, the other receives, in
// order, always asynchronously (never from inside sendText()). For tests, and for UI work
// without a server (an in-process fake server holds the other end).
//
// Either end may open(); both ends then emit opened(). The "server" end can refuse connections
// (setAcceptingConnections(false): open() ends in closed(CloseAbnormal)) and close with a code
// (closeWithCode(4401, ...)). Messages still in flight when the pair closes are dropped.
class InMemoryTransport final : public Transport
{
    Q_OBJECT

public:
    struct Pair
    {
        InMemoryTransport *client; // owned by the parent given to createPair()
        InMemoryTransport *server;
    };
    static Pair createPair(QObject *parent = nullptr);

    ~InMemoryTransport() override;

    void open() override;
    void close() override;
    bool sendText(const QByteArray &message) override;
    bool isOpen() const override { return m_open; }

    void closeWithCode(int closeCode, const QString &reason);
    // Whether an open() from the peer succeeds; default true.
    void setAcceptingConnections(bool accepting) { m_accepting = accepting; }
    InMemoryTransport *peer() const { return m_peer; }

private:
    explicit InMemoryTransport(QObject *parent);
    void deliver(quint64 generation, const QByteArray &message);
    void markClosed(int closeCode, const QString &reason);

    QPointer<InMemoryTransport> m_peer;
    bool m_open = false;
    bool m_connecting = false;
    bool m_accepting = true;
    quint64 m_generation = 0; // bumped on every close, so that stale deliveries are dropped
};

} // namespace Sandbox
