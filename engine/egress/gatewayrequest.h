#pragma once

#include "egresstypes.h"
#include "httphead.h"

#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QObject>

class QSslSocket;
class QTcpSocket;

namespace Sandbox::Engine {

class ModelGateway;

// One model API call through the ModelGateway: reads the CLI's request head, checks it, sets
// the real credentials, connects to the provider (resolved and checked like any egress) and
// streams both ways with bounded buffers.
class GatewayRequest final : public QObject
{
    Q_OBJECT

public:
    GatewayRequest(ModelGateway *gateway, int fd, EgressClient client);
    ~GatewayRequest() override;

    bool isValid() const { return m_client != nullptr; }
    void start();
    void checkDeadline();
    void close();
    const QString &sandboxId() const { return m_info.sandboxId; }

private:
    enum class State { Head, Resolving, Connecting, Streaming, Closed };

    void onClientData();
    void handleHead(const QByteArray &head);
    void resolved(const QList<QHostAddress> &addresses);
    void connectNext();
    void onUpstreamReady();
    void pumpUp();
    void pumpDown();
    void answer(int status, const QString &message);
    // Cancels a DNS lookup still running and gives back the sandbox's lookup slot.
    void endLookup();
    void deny(const QString &reason, const QString &address = {}, const QString &remedy = {});

    ModelGateway *m_gateway; // not owned (parent)
    EgressClient m_info;
    QTcpSocket *m_client = nullptr;   // owned (child)
    QSslSocket *m_upstream = nullptr; // owned (child)
    State m_state = State::Head;
    GatewayRoute m_route;
    QByteArray m_in;
    QByteArray m_outHead; // the rewritten request head, then the body as it comes
    QString m_host;
    quint16 m_port = 0;
    bool m_tls = false;
    QList<QHostAddress> m_candidates;
    qsizetype m_next = 0;
    quint64 m_lookupId = 0;
    bool m_holdsLookup = false;
    bool m_responseHeadDone = false;
    QByteArray m_responseHead;
    qint64 m_bodyBytes = 0;
    QDeadlineTimer m_deadline;
    QElapsedTimer m_idle;
};

} // namespace Sandbox::Engine
