#pragma once

#include "egresstypes.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QSet>
#include <QSslCertificate>

namespace Sandbox::Engine {

class EgressProxy;
class GatewayRequest;

// The model gateway (docs/protocol.md, 4.7): an agent's CLI talks plain HTTP to
// http://127.0.0.1:3129 inside its sandbox; the engine takes each request, checks that it is a
// model API call (POST /v1/messages, /v1/responses, /v1/chat/completions, GET /v1/models),
// replaces whatever credentials it carries with the sandbox's real key, and makes the request
// itself — TLS to the provider, certificate checked — streaming the answer back. The key never
// enters the sandbox. One request per connection; lives on the egress thread.
class ModelGateway final : public QObject
{
    Q_OBJECT

public:
    struct Limits
    {
        int maxRequestsPerSandbox = 16;
        int maxHeadBytes = 64 * 1024;
        qint64 maxBodyBytes = 64LL * 1024 * 1024;
        int headTimeoutMs = 30000;
        int connectTimeoutMs = 15000;
        int idleTimeoutMs = 10 * 60 * 1000;
        qint64 bufferBytes = 1024 * 1024; // per direction, before reading stops
    };

    explicit ModelGateway(EgressProxy *proxy);
    ~ModelGateway() override;

    // More CA certificates the gateway trusts (besides the system's), e.g. a company's TLS proxy
    // or a test's own CA (`sandboxd --egress-ca FILE`).
    void setExtraCaCertificates(const QList<QSslCertificate> &certificates);
    const QList<QSslCertificate> &extraCaCertificates() const { return m_extraCa; }
    const Limits &limits() const { return m_limits; }
    EgressProxy *proxy() const { return m_proxy; }

    void accept(int fd, EgressClient client);
    void closeSandbox(const QString &sandboxId);
    void sweep();
    void release(GatewayRequest *request);

    // Whether the gateway forwards `method path` (path relative to the sandbox's base path).
    static bool isModelCall(const QString &provider, const QByteArray &method,
                            const QByteArray &path);

private:
    EgressProxy *m_proxy; // not owned (parent)
    Limits m_limits;
    QList<QSslCertificate> m_extraCa;
    QSet<GatewayRequest *> m_requests; // owned (children)
    QHash<QString, int> m_perSandbox;
};

} // namespace Sandbox::Engine
