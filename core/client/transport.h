#pragma once

#include <QByteArray>
#include <QObject>
#include <QString>

namespace Sandbox {

// A message channel to a JSON-RPC server: one text message in, one text message out; binary
// messages from the server (docs/protocol.md 2.6) come as binaryReceived().
// Implementations: WebSocketTransport (the real one) and InMemoryTransport (tests, UI work).
// A transport can be opened again after it closed; RpcClient does that to reconnect.
class Transport : public QObject
{
    Q_OBJECT

public:
    // Close codes with a meaning for the client (besides the RFC 6455 ones).
    static constexpr int CloseUnauthorized = 4401; // also reported for an HTTP 401 on the upgrade
    static constexpr int CloseAbnormal = 1006;     // the connection broke or could not be made

    explicit Transport(QObject *parent = nullptr);
    ~Transport() override;

    // Starts connecting; emits opened() or closed() later, never from inside this call.
    virtual void open() = 0;
    // Closes the connection; emits closed() unless it was already closed.
    virtual void close() = 0;
    // Sends one text message; returns false when not open (nothing is sent).
    virtual bool sendText(const QByteArray &message) = 0;
    virtual bool isOpen() const = 0;

Q_SIGNALS:
    void opened();
    void textReceived(const QByteArray &message);
    void binaryReceived(const QByteArray &message);
    // Something arrived that the transport cannot pass on: reported, then ignored.
    void protocolViolation(const QString &why);
    void closed(int closeCode, const QString &reason);
};

} // namespace Sandbox
