#include "gatewayrequest.h"

#include "dnsresolver.h"
#include "egressproxy.h"
#include "modelgateway.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTcpSocket>

#include <unistd.h>

Q_LOGGING_CATEGORY(lcGateway, "sandboxd.egress.gateway")

namespace Sandbox::Engine {

namespace {
constexpr qint64 kSocketBuffer = 256 * 1024;

} // namespace

GatewayRequest::GatewayRequest(ModelGateway *gateway, int fd, EgressClient client)
    : QObject(gateway)
    , m_gateway(gateway)
    , m_info(std::move(client))
{
    auto *socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(fd)) {
        ::close(fd);
        delete socket;
        return;
    }
    m_client = socket;
    m_client->setReadBufferSize(kSocketBuffer);
}

GatewayRequest::~GatewayRequest()
{
    close();
}

void GatewayRequest::start()
{
    m_deadline = QDeadlineTimer(m_gateway->limits().headTimeoutMs);
    m_idle.start();
    connect(m_client, &QTcpSocket::readyRead, this, &GatewayRequest::onClientData);
    connect(m_client, &QTcpSocket::bytesWritten, this, &GatewayRequest::pumpDown);
    connect(m_client, &QTcpSocket::disconnected, this, &GatewayRequest::close);
    connect(m_client, &QTcpSocket::errorOccurred, this, [this] {
        if (m_client->error() != QAbstractSocket::RemoteHostClosedError)
            close();
    });
    onClientData();
}

void GatewayRequest::onClientData()
{
    if (m_state == State::Streaming)
        return pumpUp();
    if (m_state != State::Head)
        return; // held in the socket's bounded buffer until the upstream is there
    const int max = m_gateway->limits().maxHeadBytes;
    m_in += m_client->read(max + 1 - m_in.size());
    const qsizetype length = HttpHead::headLength(m_in);
    if (length > 0) {
        const QByteArray head = m_in.left(length);
        m_outHead.clear();
        const QByteArray rest = m_in.mid(length);
        m_in = rest; // body bytes that came with the head
        return handleHead(head);
    }
    if (m_in.size() > max)
        answer(400, QStringLiteral("the request head is too large"));
}

void GatewayRequest::handleHead(const QByteArray &head)
{
    QByteArray why;
    auto request = HttpHead::parseRequest(head, &why);
    if (!request)
        return answer(400, QStringLiteral("malformed request: ") + QString::fromLatin1(why));
    const auto route = m_gateway->proxy()->store()->gateway(m_info.sandboxId);
    if (!route || !route->rules)
        return answer(503, QStringLiteral("this sandbox has no model gateway"));
    m_route = *route;
    const QByteArray target = request->second;
    const QByteArray base = m_route.sandboxBasePath.toLatin1();
    if (!target.startsWith('/') || (!base.isEmpty() && !target.startsWith(QByteArray(base + '/'))))
        return answer(404, QStringLiteral("not a model API path"));
    const QByteArray relative = target.mid(base.size());
    m_host = m_route.upstream.host();
    m_tls = m_route.upstream.scheme() == QLatin1String("https");
    m_port = quint16(m_route.upstream.port(m_tls ? 443 : 80));
    if (!ModelGateway::isModelCall(m_route.provider, request->first, relative)) {
        deny(QStringLiteral("the model gateway forwards model API calls only, not %1 %2")
                 .arg(QString::fromLatin1(request->first), QString::fromLatin1(relative.left(200))));
        return answer(403, QStringLiteral("the model gateway forwards model API calls only"));
    }
    if (request->has("transfer-encoding") && request->has("content-length"))
        return answer(400, QStringLiteral("both Transfer-Encoding and Content-Length"));

    QByteArray upstreamPath = m_route.upstream.path(QUrl::FullyEncoded).toLatin1();
    if (upstreamPath.endsWith('/'))
        upstreamPath.chop(1);
    request->second = upstreamPath + relative;
    request->third = "HTTP/1.1";
    request->dropHopByHop();
    for (const char *credential : {"authorization", "x-api-key", "api-key", "cookie"})
        request->remove(credential);
    const bool defaultPort = m_route.upstream.port() < 0;
    request->set("Host", m_host.toLatin1()
                             + (defaultPort ? QByteArray() : ':' + QByteArray::number(m_port)));
    if (!m_route.authValue.isEmpty())
        request->set(m_route.authHeader, m_route.authValue);
    m_outHead = request->serializeRequest();

    m_state = State::Resolving;
    m_deadline = QDeadlineTimer(m_gateway->limits().connectTimeoutMs);
    // The upstream is the engine's own configuration: an address is checked as an address.
    if (const auto literal = parseIpLiteral(m_host))
        return resolved({*literal});
    const EgressRules::NameStep step = m_route.rules->checkName(m_host, m_port);
    if (!step.decision.allowed) {
        deny(step.decision.reason, {}, step.decision.remedy);
        return answer(403, QStringLiteral("the model API %1 is denied: %2")
                               .arg(m_host, step.decision.reason));
    }
    EgressProxy *proxy = m_gateway->proxy();
    if (!proxy->lookupSlot(m_info.sandboxId, true))
        return answer(503, QStringLiteral("too many name lookups in flight"));
    m_holdsLookup = true;
    m_lookupId = proxy->resolver()->lookup(m_host, this, [this](Result<QList<QHostAddress>> r) {
        m_lookupId = 0;
        if (m_holdsLookup)
            m_gateway->proxy()->lookupSlot(m_info.sandboxId, false);
        m_holdsLookup = false;
        if (!r)
            return answer(502, r.error().message);
        resolved(r.value());
    });
}

void GatewayRequest::resolved(const QList<QHostAddress> &addresses)
{
    QString refusal, refusedAddress, remedy;
    for (const QHostAddress &a : addresses) {
        const EgressDecision d = m_route.rules->checkAddress(a, m_port, true);
        if (d.allowed)
            m_candidates.append(classifyAddress(a).effective);
        else if (refusal.isEmpty()) {
            refusal = d.reason;
            refusedAddress = classifyAddress(a).effective.toString();
            remedy = d.remedy;
        }
    }
    if (m_candidates.isEmpty()) {
        deny(refusal, refusedAddress, remedy);
        return answer(403, QStringLiteral("the model API %1 is denied: %2").arg(m_host, refusal));
    }
    m_state = State::Connecting;
    connectNext();
}

void GatewayRequest::connectNext()
{
    if (m_upstream) {
        m_upstream->disconnect(this);
        m_upstream->abort();
        m_upstream->deleteLater();
        m_upstream = nullptr;
    }
    if (m_next >= m_candidates.size())
        return answer(502, QStringLiteral("cannot connect to the model API %1:%2")
                               .arg(m_host)
                               .arg(m_port));
    const QHostAddress address = m_candidates.at(m_next++);
    m_upstream = new QSslSocket(this);
    m_upstream->setReadBufferSize(kSocketBuffer);
    if (m_tls) {
        QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
        if (!m_gateway->extraCaCertificates().isEmpty())
            tls.addCaCertificates(m_gateway->extraCaCertificates());
        tls.setPeerVerifyMode(QSslSocket::VerifyPeer);
        tls.setProtocol(QSsl::TlsV1_2OrLater);
        m_upstream->setSslConfiguration(tls);
        connect(m_upstream, &QSslSocket::encrypted, this, &GatewayRequest::onUpstreamReady);
    } else {
        connect(m_upstream, &QSslSocket::connected, this, &GatewayRequest::onUpstreamReady);
    }
    connect(m_upstream, &QSslSocket::readyRead, this, &GatewayRequest::pumpDown);
    connect(m_upstream, &QSslSocket::encryptedBytesWritten, this, &GatewayRequest::pumpUp);
    connect(m_upstream, &QSslSocket::bytesWritten, this, &GatewayRequest::pumpUp);
    // Everything read is passed on; then the CLI's connection ends too (pumpDown()).
    connect(m_upstream, &QSslSocket::disconnected, this, &GatewayRequest::pumpDown);
    connect(m_upstream, &QSslSocket::errorOccurred, this,
            [this](QAbstractSocket::SocketError error) {
                if (m_state == State::Connecting) {
                    qCInfo(lcGateway).noquote()
                        << m_info.sandboxId << "model API" << m_host << m_upstream->errorString();
                    return connectNext();
                }
                if (error != QAbstractSocket::RemoteHostClosedError)
                    close();
            });
    if (m_tls)
        m_upstream->connectToHostEncrypted(address.toString(), m_port, m_host);
    else
        m_upstream->connectToHost(address, m_port);
}

void GatewayRequest::onUpstreamReady()
{
    m_state = State::Streaming;
    m_deadline = QDeadlineTimer(QDeadlineTimer::Forever);
    m_idle.restart();
    m_upstream->write(m_outHead);
    m_outHead.clear();
    if (!m_in.isEmpty()) {
        m_bodyBytes += m_in.size();
        m_upstream->write(std::exchange(m_in, {}));
    }
    pumpUp();
    pumpDown();
}

void GatewayRequest::pumpUp()
{
    if (m_state != State::Streaming || !m_client || !m_upstream)
        return;
    const ModelGateway::Limits &l = m_gateway->limits();
    while (m_client->bytesAvailable() > 0 && m_upstream->bytesToWrite() < l.bufferBytes) {
        const QByteArray chunk = m_client->read(64 * 1024);
        m_bodyBytes += chunk.size();
        if (m_bodyBytes > l.maxBodyBytes) {
            qCInfo(lcGateway) << m_info.sandboxId << "request body over" << l.maxBodyBytes;
            return close();
        }
        m_upstream->write(chunk);
        m_idle.restart();
    }
}

void GatewayRequest::pumpDown()
{
    if (m_state != State::Streaming || !m_client || !m_upstream)
        return;
    const ModelGateway::Limits &l = m_gateway->limits();
    while (m_upstream->bytesAvailable() > 0 && m_client->bytesToWrite() < l.bufferBytes) {
        QByteArray chunk = m_upstream->read(64 * 1024);
        m_idle.restart();
        if (!m_responseHeadDone) {
            m_responseHead += chunk;
            const qsizetype length = HttpHead::headLength(m_responseHead);
            if (length < 0) {
                if (m_responseHead.size() > l.maxHeadBytes)
                    return close();
                continue;
            }
            auto response = HttpHead::parseResponse(QByteArrayView(m_responseHead).first(length));
            if (!response)
                return close();
            const int code = response->second.toInt();
            QByteArray out;
            if (code >= 100 && code < 200) {
                out = m_responseHead.left(length); // interim: as it is, the final one follows
                chunk = m_responseHead.mid(length);
                m_responseHead.clear();
                m_client->write(out);
                if (chunk.isEmpty())
                    continue;
                m_responseHead = chunk;
                continue;
            }
            response->dropHopByHop();
            out = response->serializeResponse() + m_responseHead.mid(length);
            m_responseHead.clear();
            m_responseHeadDone = true;
            m_client->write(out);
            continue;
        }
        m_client->write(chunk);
    }
    if (m_upstream->state() == QAbstractSocket::UnconnectedState
        && m_upstream->bytesAvailable() == 0) {
        if (m_client->bytesToWrite() == 0)
            return close();
        m_client->disconnectFromHost(); // after the rest is written; then disconnected: close()
    }
}

void GatewayRequest::answer(int status, const QString &message)
{
    if (!m_client || m_state == State::Streaming || m_state == State::Closed)
        return close();
    const QJsonObject error{{QStringLiteral("type"), QStringLiteral("sandbox_gateway_error")},
                            {QStringLiteral("message"),
                             QString(QStringLiteral("sandbox model gateway: ") + message)}};
    const QJsonObject envelope{{QStringLiteral("type"), QStringLiteral("error")},
                               {QStringLiteral("error"), error}};
    const QByteArray body = QJsonDocument(envelope).toJson(QJsonDocument::Compact);
    m_client->write("HTTP/1.1 " + QByteArray::number(status) + ' ' + Http::reasonPhrase(status)
                    + "\r\nContent-Type: application/json\r\nContent-Length: "
                    + QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    m_state = State::Closed;
    if (m_upstream) {
        m_upstream->disconnect(this);
        m_upstream->abort();
    }
    endLookup();
    // Sent, then closed (the socket finishes writing first).
    m_client->disconnect(this);
    connect(m_client, &QTcpSocket::disconnected, this, [this] { m_gateway->release(this); });
    m_client->disconnectFromHost();
    if (m_client->state() == QAbstractSocket::UnconnectedState)
        m_gateway->release(this);
    else
        m_deadline = QDeadlineTimer(2000);
}

void GatewayRequest::deny(const QString &reason, const QString &address, const QString &remedy)
{
    DenyRecord r;
    r.time = QDateTime::currentDateTimeUtc();
    r.host = m_host;
    r.port = m_port;
    r.address = address;
    r.reason = reason;
    r.via = QStringLiteral("gateway");
    r.allowWith = remedy;
    m_gateway->proxy()->reportIdentified(m_info, std::move(r));
}

void GatewayRequest::checkDeadline()
{
    if (m_state == State::Streaming) {
        if (m_idle.hasExpired(m_gateway->limits().idleTimeoutMs))
            close();
        return;
    }
    if (!m_deadline.hasExpired())
        return;
    if (m_state == State::Head)
        return answer(400, QStringLiteral("no complete request head in time"));
    if (m_state == State::Resolving || m_state == State::Connecting)
        return answer(504, QStringLiteral("timed out connecting to the model API %1").arg(m_host));
    close(); // an answer that could not be delivered in time
}

void GatewayRequest::endLookup()
{
    if (m_lookupId) {
        m_gateway->proxy()->resolver()->cancel(m_lookupId);
        m_lookupId = 0;
    }
    if (m_holdsLookup) {
        m_gateway->proxy()->lookupSlot(m_info.sandboxId, false);
        m_holdsLookup = false;
    }
}

void GatewayRequest::close()
{
    endLookup();
    m_state = State::Closed;
    if (m_upstream) {
        m_upstream->disconnect(this);
        m_upstream->abort();
    }
    if (m_client) {
        m_client->disconnect(this);
        m_client->abort();
    }
    m_gateway->release(this);
}

} // namespace Sandbox::Engine
