#include "egressproxy.h"

#include "fdpoller.h"
#include "modelgateway.h"
#include "proxyconnection.h"

#include <QLoggingCategory>
#include <QTimer>

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcEgress, "sandboxd.egress")

namespace Sandbox::Engine {

namespace {
constexpr int kSweepMs = 1000;
constexpr int kDenialsPerSecond = 20; // per sandbox; more are counted, then reported as one
constexpr qint64 kFoldMs = 1000;      // identical attempts within this time are folded
constexpr int kAcceptPauseMs = 100;   // after an accept failed for want of descriptors

bool sameAttempt(const DenyRecord &a, const DenyRecord &b)
{
    return a.host == b.host && a.port == b.port && a.reason == b.reason && a.via == b.via
           && a.pid == b.pid && a.address == b.address;
}
} // namespace

EgressProxy::EgressProxy(std::shared_ptr<EgressPolicyStore> store, DnsResolver::Config dns,
                         Limits limits, QObject *parent)
    : QObject(parent)
    , m_store(std::move(store))
    , m_limits(limits)
    , m_poller(new FdPoller(this))
    , m_resolver(new DnsResolver(std::move(dns), this))
    , m_gateway(new ModelGateway(this))
{
    auto *timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, &EgressProxy::sweep);
    timer->start(kSweepMs);
}

EgressProxy::~EgressProxy()
{
    // Before the poller and the resolver go (they are children, deleted after this body).
    for (auto &sandbox : m_listeners) {
        for (ListenSocket &socket : sandbox)
            closeListener(socket);
    }
    m_listeners.clear();
    const auto all = std::exchange(m_connections, {});
    for (ProxyConnection *c : all)
        delete c;
    delete m_gateway;
    m_gateway = nullptr;
}

void EgressProxy::listen(const QString &sandboxId, int fd, EgressListener listener, quint16 port)
{
    auto &mine = m_listeners[sandboxId];
    if (auto it = mine.find(port); it != mine.end()) {
        closeListener(*it);
        mine.erase(it);
    }
    if (mine.size() >= MaxListenersPerSandbox) {
        qCWarning(lcEgress).noquote()
            << sandboxId << "has" << mine.size() << "listeners already: not listening on" << port;
        ::close(fd);
        return;
    }
    // Level-triggered: whatever one wakeup leaves in the backlog wakes the next.
    const bool watched = m_poller->add(fd, EPOLLIN, [this, sandboxId, port](uint32_t) {
        acceptOn(sandboxId, port);
    });
    if (!watched) {
        ::close(fd);
        return;
    }
    mine.insert(port, ListenSocket{fd, listener});
}

void EgressProxy::unlisten(const QString &sandboxId, quint16 port)
{
    const auto sandbox = m_listeners.find(sandboxId);
    if (sandbox == m_listeners.end())
        return;
    if (auto it = sandbox->find(port); it != sandbox->end()) {
        closeListener(*it);
        sandbox->erase(it);
    }
    if (sandbox->isEmpty())
        m_listeners.erase(sandbox);
}

void EgressProxy::closeListener(ListenSocket &socket)
{
    m_poller->remove(socket.fd);
    ::close(socket.fd);
    socket.fd = -1;
}

void EgressProxy::acceptOn(const QString &sandboxId, quint16 port)
{
    for (int i = 0; i < AcceptsPerWakeup; ++i) {
        const auto sandbox = m_listeners.constFind(sandboxId);
        if (sandbox == m_listeners.constEnd() || !sandbox->contains(port))
            return; // closed by the handling of an earlier connection
        const ListenSocket socket = sandbox->value(port);
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        const int fd = ::accept4(socket.fd, reinterpret_cast<sockaddr *>(&peer), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                return;
            // Out of descriptors (or worse): stop watching for a moment rather than spin.
            qCWarning(lcEgress).noquote()
                << sandboxId << "cannot accept on port" << port << ":" << strerror(errno);
            m_poller->modify(socket.fd, 0);
            QTimer::singleShot(kAcceptPauseMs, this, [this, sandboxId, port] {
                const auto s = m_listeners.constFind(sandboxId);
                if (s != m_listeners.constEnd() && s->contains(port))
                    m_poller->modify(s->value(port).fd, EPOLLIN);
            });
            return;
        }
        EgressClient client;
        client.sandboxId = sandboxId;
        client.listenPort = port;
        if (peer.ss_family == AF_INET6)
            client.peerPort = ntohs(reinterpret_cast<const sockaddr_in6 *>(&peer)->sin6_port);
        else if (peer.ss_family == AF_INET)
            client.peerPort = ntohs(reinterpret_cast<const sockaddr_in *>(&peer)->sin_port);
        accept(fd, client, socket.listener, port);
    }
}

void EgressProxy::identify(const EgressClient &client, Identified done)
{
    if (client.pid >= 0 || client.peerPort == 0 || client.listenPort == 0
        || m_identifyingPerSandbox.value(client.sandboxId) >= MaxIdentifyingPerSandbox)
        return done(client.pid, client.process);
    const quint64 token = ++m_nextToken;
    m_identifying.insert(token, Identifying{client.sandboxId, std::move(done)});
    ++m_identifyingPerSandbox[client.sandboxId];
    QTimer::singleShot(IdentifyTimeoutMs, this, [this, token] { identified(token, -1, {}); });
    Q_EMIT identifyRequested(token, client.sandboxId, client.peerPort, client.listenPort);
}

void EgressProxy::identified(quint64 token, qint64 pid, const QString &process)
{
    const auto it = m_identifying.find(token);
    if (it == m_identifying.end())
        return; // answered already (or timed out)
    const Identifying pending = it.value();
    m_identifying.erase(it);
    if (--m_identifyingPerSandbox[pending.sandboxId] <= 0)
        m_identifyingPerSandbox.remove(pending.sandboxId);
    pending.done(pid, process);
}

void EgressProxy::accept(int fd, EgressClient client, EgressListener listener, quint16 listenPort)
{
    if (client.listenPort == 0)
        client.listenPort = listenPort;
    if (listener == EgressListener::Gateway)
        return m_gateway->accept(fd, std::move(client));
    const int mine = m_perSandbox.value(client.sandboxId);
    if (int(m_connections.size()) >= m_limits.maxConnections
        || mine >= m_limits.maxConnectionsPerSandbox) {
        DenyRecord r;
        r.time = QDateTime::currentDateTimeUtc();
        r.reason = mine >= m_limits.maxConnectionsPerSandbox
                       ? QStringLiteral("too many connections open (limit %1 per sandbox)")
                             .arg(m_limits.maxConnectionsPerSandbox)
                       : QStringLiteral("the engine's egress is at its connection limit (%1)")
                             .arg(m_limits.maxConnections);
        r.pid = client.pid;
        r.process = client.process;
        r.via = listener == EgressListener::Forward ? QStringLiteral("forward")
                                                    : QStringLiteral("proxy");
        report(client.sandboxId, r);
        ::close(fd);
        return;
    }
    auto *c = new ProxyConnection(this, fd, client, listener, listenPort);
    m_connections.insert(c);
    ++m_perSandbox[client.sandboxId];
    c->start();
}

void EgressProxy::closeSandbox(const QString &sandboxId)
{
    // The listeners first: they keep the sandbox's network namespace alive.
    for (ListenSocket &socket : m_listeners.take(sandboxId))
        closeListener(socket);
    const auto all = m_connections;
    for (ProxyConnection *c : all) {
        if (c->sandboxId() == sandboxId)
            c->close();
    }
    m_gateway->closeSandbox(sandboxId);
    m_limiters.remove(sandboxId);
}

void EgressProxy::release(ProxyConnection *connection)
{
    if (!m_connections.remove(connection))
        return;
    const QString id = connection->sandboxId();
    if (--m_perSandbox[id] <= 0)
        m_perSandbox.remove(id);
    connection->deleteLater();
}

bool EgressProxy::lookupSlot(const QString &sandboxId, bool take)
{
    int &n = m_lookups[sandboxId];
    if (!take) {
        if (--n <= 0)
            m_lookups.remove(sandboxId);
        return true;
    }
    if (n >= m_limits.maxLookupsPerSandbox) {
        if (n == 0)
            m_lookups.remove(sandboxId);
        return false;
    }
    ++n;
    return true;
}

void EgressProxy::reportIdentified(const EgressClient &client, DenyRecord record,
                                   std::function<void()> then)
{
    identify(client, [this, id = client.sandboxId, record = std::move(record),
                      then = std::move(then)](qint64 pid, const QString &process) mutable {
        record.pid = pid;
        record.process = process;
        report(id, record);
        if (then)
            then();
    });
}

void EgressProxy::report(const QString &sandboxId, const DenyRecord &record)
{
    DenyLimiter &l = m_limiters[sandboxId];
    if (l.hasLast && sameAttempt(l.last, record) && l.last.time.msecsTo(record.time) < kFoldMs) {
        ++l.folded;
        return;
    }
    flushFolded(sandboxId, l);
    if (l.emitted >= kDenialsPerSecond) {
        ++l.suppressed;
        return;
    }
    ++l.emitted;
    l.last = record;
    l.hasLast = true;
    Q_EMIT denied(sandboxId, record);
}

void EgressProxy::flushFolded(const QString &sandboxId, DenyLimiter &l)
{
    if (l.folded == 0)
        return;
    DenyRecord r = l.last;
    r.count = std::exchange(l.folded, 0);
    r.time = QDateTime::currentDateTimeUtc();
    Q_EMIT denied(sandboxId, r);
}

void EgressProxy::sweep()
{
    const auto all = m_connections;
    for (ProxyConnection *c : all) {
        if (m_connections.contains(c))
            c->checkDeadline();
    }
    for (auto it = m_limiters.begin(); it != m_limiters.end();) {
        DenyLimiter &l = it.value();
        flushFolded(it.key(), l);
        if (l.suppressed > 0) {
            DenyRecord r;
            r.time = QDateTime::currentDateTimeUtc();
            r.reason = QStringLiteral("more attempts were denied than are reported one by one "
                                      "(%1 per second)")
                           .arg(kDenialsPerSecond);
            r.count = std::exchange(l.suppressed, 0);
            r.via = QStringLiteral("proxy");
            Q_EMIT denied(it.key(), r);
        }
        l.emitted = 0;
        // Forget quiet sandboxes (the limiter is recreated on the next denial).
        if (l.hasLast && l.last.time.msecsTo(QDateTime::currentDateTimeUtc()) > 10 * kFoldMs)
            it = m_limiters.erase(it);
        else
            ++it;
    }
    m_gateway->sweep();
}

} // namespace Sandbox::Engine
