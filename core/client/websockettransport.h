#pragma once

#include "transport.h"

#include <QPointer>
#include <QUrl>

class QWebSocket;

namespace Sandbox {

// A Transport over QWebSocket to `ws(s)://HOST:PORT/rpc` (docs/protocol.md 1.1).
// The API key goes in `Authorization: Bearer KEY` on the upgrade request, never in the URL.
// Incoming messages are limited to 16 MiB (a bigger one closes the connection with 1009).
// An upgrade refused with HTTP 401 is reported as closed(CloseUnauthorized, ...), the same as
// the local engine's close code 4401.
class WebSocketTransport final : public Transport
{
    Q_OBJECT

public:
    explicit WebSocketTransport(const QUrl &url, const QString &apiKey = {},
                                QObject *parent = nullptr);
    ~WebSocketTransport() override;

    QUrl url() const { return m_url; }
    void setUrl(const QUrl &url) { m_url = url; }
    // Used from the next open() on.
    void setApiKey(const QString &apiKey) { m_apiKey = apiKey; }

    void open() override;
    void close() override;
    bool sendText(const QByteArray &message) override;
    bool isOpen() const override;

private:
    void finish(int closeCode, const QString &reason);
    // The socket, no longer this transport's (no signal of it reaches this any more); null if none.
    QWebSocket *takeSocket();

    QUrl m_url;
    QString m_apiKey;
    QWebSocket *m_socket = nullptr; // owned; replaced on every open()
    bool m_opened = false;
};

} // namespace Sandbox
