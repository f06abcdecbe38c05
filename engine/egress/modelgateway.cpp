#include "modelgateway.h"

#include "egressproxy.h"
#include "gatewayrequest.h"

#include <unistd.h>

namespace Sandbox::Engine {

ModelGateway::ModelGateway(EgressProxy *proxy)
    : QObject(proxy)
    , m_proxy(proxy)
{}

ModelGateway::~ModelGateway()
{
    const auto all = std::exchange(m_requests, {});
    for (GatewayRequest *r : all)
        delete r;
}

void ModelGateway::setExtraCaCertificates(const QList<QSslCertificate> &certificates)
{
    m_extraCa = certificates;
}

bool ModelGateway::isModelCall(const QString &provider, const QByteArray &method,
                               const QByteArray &target)
{
    QByteArray path = target.left(target.indexOf('?') < 0 ? target.size() : target.indexOf('?'));
    if (path.contains("..") || path.contains("//") || path.contains('%'))
        return false;
    const auto is = [&](const char *p) { return path == p; };
    if (provider == QLatin1String("anthropic")) {
        if (method == "HEAD" || (method == "GET" && is("/")))
            return is("/"); // Claude Code's connectivity check
        if (method == "POST")
            return is("/v1/messages") || is("/v1/messages/count_tokens");
        return method == "GET" && (is("/v1/models") || path.startsWith("/v1/models/"));
    }
    // OpenAI: relative to the base path (".../v1").
    if (method == "POST")
        return is("/responses") || is("/chat/completions") || is("/completions");
    return method == "GET" && (is("/models") || path.startsWith("/models/"));
}

void ModelGateway::accept(int fd, EgressClient client)
{
    const QString id = client.sandboxId;
    if (m_perSandbox.value(id) >= m_limits.maxRequestsPerSandbox) {
        DenyRecord r;
        r.time = QDateTime::currentDateTimeUtc();
        r.reason = QStringLiteral("too many model calls at once (limit %1 per sandbox)")
                       .arg(m_limits.maxRequestsPerSandbox);
        r.pid = client.pid;
        r.process = client.process;
        r.via = QStringLiteral("gateway");
        m_proxy->report(id, r);
        ::close(fd);
        return;
    }
    auto *request = new GatewayRequest(this, fd, std::move(client));
    if (!request->isValid()) {
        delete request;
        return;
    }
    m_requests.insert(request);
    ++m_perSandbox[id];
    request->start();
}

void ModelGateway::closeSandbox(const QString &sandboxId)
{
    const auto all = m_requests;
    for (GatewayRequest *r : all) {
        if (r->sandboxId() == sandboxId)
            r->close();
    }
}

void ModelGateway::sweep()
{
    const auto all = m_requests;
    for (GatewayRequest *r : all) {
        if (m_requests.contains(r))
            r->checkDeadline();
    }
}

void ModelGateway::release(GatewayRequest *request)
{
    if (!m_requests.remove(request))
        return;
    const QString id = request->sandboxId();
    if (--m_perSandbox[id] <= 0)
        m_perSandbox.remove(id);
    request->deleteLater();
}

} // namespace Sandbox::Engine
