#include "dnsresolver.h"

#include "dnsmessage.h"
#include "networkpolicy.h"

#include <QFile>
#include <QLoggingCategory>
#include <QNetworkDatagram>
#include <QRandomGenerator>
#include <QTimer>
#include <QUdpSocket>

Q_LOGGING_CATEGORY(lcDns, "sandboxd.egress.dns")

namespace Sandbox::Engine {

namespace {

constexpr int kMaxServers = 3;
constexpr int kMaxTimeoutMs = 5000;
constexpr int kMaxAttempts = 3;
constexpr int kSecondAnswerGraceMs = 300; // after one of A/AAAA answered with addresses
constexpr int kMaxDatagramsPerWakeup = 16;
constexpr qint64 kMaxHostsFileBytes = 4 * 1024 * 1024;
constexpr int kMaxHostsEntries = 100000;

Error lookupError(const QString &message)
{
    return Error{ErrorCode::SandboxError, message, {}};
}

} // namespace

struct DnsResolver::Query
{
    QString name;
    QList<Waiter> waiters;
    QUdpSocket *socket = nullptr; // owned (child of the resolver)
    QTimer *timer = nullptr;      // owned (child of the resolver)
    int server = 0;
    int attempt = 0;
    quint16 idA = 0, idAaaa = 0;
    bool doneA = false, doneAaaa = false;
    QList<QHostAddress> a, aaaa;
    quint32 ttl = std::numeric_limits<quint32>::max();
    QString lastError;
};

void DnsResolver::readHostsFile(const QString &path, QHash<QString, QList<QHostAddress>> &hosts)
{
    QFile f(path);
    if (path.isEmpty() || !f.open(QIODevice::ReadOnly) || f.size() > kMaxHostsFileBytes)
        return;
    const QList<QByteArray> lines = f.readAll().split('\n');
    for (QByteArray line : lines) {
        if (const qsizetype hash = line.indexOf('#'); hash >= 0)
            line.truncate(hash);
        const QList<QByteArray> fields = line.simplified().split(' ');
        if (fields.size() < 2)
            continue;
        const QHostAddress address(QString::fromLatin1(fields.first()));
        if (address.isNull() || !address.scopeId().isEmpty())
            continue;
        for (qsizetype i = 1; i < fields.size(); ++i) {
            const QString name = normaliseHostName(QString::fromLatin1(fields.at(i)));
            if (name.isEmpty() || hosts.size() >= kMaxHostsEntries)
                continue;
            QList<QHostAddress> &list = hosts[name];
            if (!list.contains(address) && list.size() < DnsMessage::MaxAddresses)
                list.append(address);
        }
    }
}

DnsResolver::Config DnsResolver::systemConfig(const QString &extraHostsFile)
{
    Config c;
    QFile resolv(QStringLiteral("/etc/resolv.conf"));
    if (resolv.open(QIODevice::ReadOnly)) {
        for (const QByteArray &raw : resolv.read(kMaxHostsFileBytes).split('\n')) {
            const QList<QByteArray> f = raw.simplified().split(' ');
            if (f.size() >= 2 && f.first() == "nameserver" && c.servers.size() < kMaxServers) {
                const QHostAddress a(QString::fromLatin1(f.at(1)));
                if (!a.isNull())
                    c.servers.append({a, 53});
            } else if (f.size() >= 2 && f.first() == "options") {
                for (const QByteArray &o : f.mid(1)) {
                    if (o.startsWith("timeout:"))
                        c.timeoutMs = qBound(200, o.mid(8).toInt() * 1000, kMaxTimeoutMs);
                    else if (o.startsWith("attempts:"))
                        c.attempts = qBound(1, o.mid(9).toInt(), kMaxAttempts);
                }
            }
        }
    }
    if (c.servers.isEmpty()) // resolv.conf's documented default
        c.servers.append({QHostAddress(QHostAddress::LocalHost), 53});
    readHostsFile(QStringLiteral("/etc/hosts"), c.hosts);
    readHostsFile(extraHostsFile, c.hosts);
    return c;
}

DnsResolver::DnsResolver(Config config, QObject *parent)
    : QObject(parent)
    , m_config(std::move(config))
{}

DnsResolver::~DnsResolver()
{
    qDeleteAll(m_queries);
}

quint64 DnsResolver::lookup(const QString &name, QObject *context, Callback callback)
{
    const quint64 id = m_nextId++;
    Waiter w{id, context, std::move(callback)};
    auto later = [this, w](Result<QList<QHostAddress>> r) {
        QMetaObject::invokeMethod(
            this,
            [w, r] {
                if (w.context)
                    w.callback(r);
            },
            Qt::QueuedConnection);
    };
    if (const auto it = m_config.hosts.constFind(name); it != m_config.hosts.constEnd()) {
        later(*it);
        return id;
    }
    if (const auto it = m_cache.constFind(name); it != m_cache.constEnd()) {
        if (!it->expires.hasExpired()) {
            if (it->error.isEmpty())
                later(it->addresses);
            else
                later(lookupError(it->error));
            return id;
        }
        m_cache.erase(it);
    }
    if (Query *q = m_queries.value(name)) {
        q->waiters.append(std::move(w));
        return id;
    }
    if (m_queries.size() >= m_config.maxInFlight) {
        later(lookupError(QStringLiteral("the engine's resolver is busy (%1 lookups in flight)")
                              .arg(m_queries.size())));
        return id;
    }
    if (m_config.servers.isEmpty()) {
        later(lookupError(QStringLiteral("no DNS server is configured")));
        return id;
    }
    auto *q = new Query;
    q->name = name;
    q->waiters.append(std::move(w));
    m_queries.insert(name, q);
    start(q);
    return id;
}

void DnsResolver::cancel(quint64 id)
{
    for (auto it = m_queries.begin(); it != m_queries.end(); ++it) {
        Query *q = *it;
        const auto w = std::find_if(q->waiters.begin(), q->waiters.end(),
                                    [id](const Waiter &w) { return w.id == id; });
        if (w == q->waiters.end())
            continue;
        q->waiters.erase(w);
        if (q->waiters.isEmpty()) {
            m_queries.erase(it);
            delete q->socket;
            delete q->timer;
            delete q;
        }
        return;
    }
}

void DnsResolver::start(Query *q)
{
    q->timer = new QTimer(this);
    q->timer->setSingleShot(true);
    connect(q->timer, &QTimer::timeout, this, [this, q] {
        // Some answer came: do not wait longer for the other type.
        if (!q->a.isEmpty() || !q->aaaa.isEmpty())
            return finish(q, QList<QHostAddress>(q->a + q->aaaa), int(q->ttl));
        if (++q->attempt >= m_config.attempts) {
            q->attempt = 0;
            ++q->server;
        }
        if (q->server >= m_config.servers.size())
            return finish(q,
                          lookupError(QStringLiteral("cannot resolve %1: %2")
                                          .arg(q->name, q->lastError.isEmpty()
                                                            ? QStringLiteral("no answer in time")
                                                            : q->lastError)),
                          m_config.negativeTtlSeconds);
        sendAttempt(q);
    });
    sendAttempt(q);
}

void DnsResolver::sendAttempt(Query *q)
{
    const auto &[server, port] = m_config.servers.at(q->server);
    // A fresh socket per attempt: a new random source port, and late answers to the previous
    // attempt are not mistaken for this one's.
    delete q->socket;
    q->socket = new QUdpSocket(this);
    const bool v6 = server.protocol() == QAbstractSocket::IPv6Protocol;
    if (!q->socket->bind(v6 ? QHostAddress::AnyIPv6 : QHostAddress::AnyIPv4, 0)) {
        q->lastError = q->socket->errorString();
        q->timer->start(0);
        return;
    }
    connect(q->socket, &QUdpSocket::readyRead, this, [this, q] { onDatagrams(q); });
    auto *rng = QRandomGenerator::system();
    if (!q->doneA) {
        q->idA = quint16(rng->generate());
        q->socket->writeDatagram(DnsMessage::query(q->idA, q->name, DnsMessage::TypeA), server,
                                 port);
    }
    if (!q->doneAaaa) {
        do
            q->idAaaa = quint16(rng->generate());
        while (q->idAaaa == q->idA);
        q->socket->writeDatagram(DnsMessage::query(q->idAaaa, q->name, DnsMessage::TypeAaaa),
                                 server, port);
    }
    q->timer->start(m_config.timeoutMs);
}

void DnsResolver::onDatagrams(Query *q)
{
    const auto &[server, port] = m_config.servers.at(q->server);
    for (int i = 0; i < kMaxDatagramsPerWakeup && q->socket && q->socket->hasPendingDatagrams();
         ++i) {
        const QNetworkDatagram d = q->socket->receiveDatagram(DnsMessage::UdpPayload + 512);
        if (d.senderPort() != port || !(d.senderAddress().isEqual(server)))
            continue; // not from the server we asked: ignored
        for (const quint16 type : {DnsMessage::TypeA, DnsMessage::TypeAaaa}) {
            const bool isA = type == DnsMessage::TypeA;
            if (isA ? q->doneA : q->doneAaaa)
                continue;
            QString why;
            const auto answer = DnsMessage::parse(d.data(), isA ? q->idA : q->idAaaa, q->name, type,
                                                  &why);
            if (!answer)
                continue;
            if (answer->rcode != 0 && answer->rcode != 3) {
                q->lastError = QStringLiteral("the DNS server answered error %1").arg(answer->rcode);
                q->timer->start(0); // next attempt or server now
                return;
            }
            (isA ? q->doneA : q->doneAaaa) = true;
            (isA ? q->a : q->aaaa) = answer->addresses;
            if (!answer->addresses.isEmpty())
                q->ttl = qMin(q->ttl, answer->ttl);
            if (answer->rcode == 3)
                q->lastError = QStringLiteral("no such name");
        }
        if (q->doneA && q->doneAaaa) {
            const QList<QHostAddress> all = q->a + q->aaaa;
            if (all.isEmpty())
                return finish(q,
                              lookupError(QStringLiteral("cannot resolve %1: %2")
                                              .arg(q->name, q->lastError.isEmpty()
                                                                ? QStringLiteral("no address")
                                                                : q->lastError)),
                              m_config.negativeTtlSeconds);
            return finish(q, all, int(qMin<quint32>(q->ttl, quint32(m_config.maxTtlSeconds))));
        }
        if ((q->doneA && !q->a.isEmpty()) || (q->doneAaaa && !q->aaaa.isEmpty()))
            q->timer->start(qMin(q->timer->remainingTime(), kSecondAnswerGraceMs));
    }
}

void DnsResolver::finish(Query *q, Result<QList<QHostAddress>> result, int ttlSeconds)
{
    m_queries.remove(q->name);
    // Deleted later (this may run inside their signals), and cut off from `q` now.
    q->timer->disconnect(this);
    q->timer->stop();
    q->timer->deleteLater();
    if (q->socket) {
        q->socket->disconnect(this);
        q->socket->deleteLater();
    }
    remember(q->name, result, ttlSeconds);
    const QList<Waiter> waiters = std::move(q->waiters);
    delete q;
    for (const Waiter &w : waiters) {
        if (w.context)
            w.callback(result);
    }
}

void DnsResolver::remember(const QString &name, const Result<QList<QHostAddress>> &result,
                           int ttlSeconds)
{
    if (ttlSeconds <= 0)
        return;
    if (m_cache.size() >= m_config.cacheEntries) {
        for (auto it = m_cache.begin(); it != m_cache.end();)
            it = it->expires.hasExpired() ? m_cache.erase(it) : std::next(it);
        if (m_cache.size() >= m_config.cacheEntries)
            m_cache.erase(m_cache.begin());
    }
    CacheEntry e;
    if (result)
        e.addresses = result.value();
    else
        e.error = result.error().message;
    e.expires = QDeadlineTimer(qint64(qMin(ttlSeconds, m_config.maxTtlSeconds)) * 1000);
    m_cache.insert(name, e);
}

} // namespace Sandbox::Engine
