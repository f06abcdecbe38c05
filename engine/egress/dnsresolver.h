#pragma once

#include "protocol/result.h"

#include <QDeadlineTimer>
#include <QHash>
#include <QHostAddress>
#include <QList>
#include <QObject>
#include <QPair>
#include <QPointer>
#include <QString>

#include <functional>
#include <memory>

namespace Sandbox::Engine {

// The egress proxy's own resolver: names are resolved by the engine, never by the sandbox, and
// the proxy then checks the addresses it got (docs/protocol.md, 3.5). Asynchronous on the
// thread it lives in (no blocking call, no thread pool): a hosts table the engine controls,
// then A and AAAA queries over UDP to the configured servers, with timeouts, retries, a bounded
// cache and a cap on lookups in flight. Not thread-safe.
class DnsResolver final : public QObject
{
    Q_OBJECT

public:
    struct Config
    {
        QList<QPair<QHostAddress, quint16>> servers; // tried in order
        // name -> addresses, consulted before DNS (/etc/hosts, then `--egress-hosts FILE`).
        QHash<QString, QList<QHostAddress>> hosts;
        int timeoutMs = 2000; // per attempt
        int attempts = 2;     // per server
        int maxInFlight = 512;
        int cacheEntries = 2048;
        int maxTtlSeconds = 300;
        int negativeTtlSeconds = 5;
    };

    // The system's: servers from /etc/resolv.conf (its timeout and attempts, capped), the hosts
    // table from /etc/hosts and then `extraHostsFile` (the same format; later lines win).
    static Config systemConfig(const QString &extraHostsFile = {});
    // Parses "ADDRESS NAME..." lines into `hosts` (names normalised; bad lines skipped).
    static void readHostsFile(const QString &path, QHash<QString, QList<QHostAddress>> &hosts);

    explicit DnsResolver(Config config, QObject *parent = nullptr);
    ~DnsResolver() override;

    using Callback = std::function<void(Result<QList<QHostAddress>>)>;
    // Resolves a normalised host name. The callback runs later (never inside this call), on
    // this thread, unless `context` is gone or the lookup was cancelled. Returns an id.
    quint64 lookup(const QString &name, QObject *context, Callback callback);
    void cancel(quint64 id);

    int inFlight() const { return int(m_queries.size()); }
    const Config &config() const { return m_config; }

private:
    struct Query;
    struct Waiter
    {
        quint64 id;
        QPointer<QObject> context;
        Callback callback;
    };
    struct CacheEntry
    {
        QList<QHostAddress> addresses;
        QString error; // a negative entry
        QDeadlineTimer expires;
    };
    void start(Query *q);
    void sendAttempt(Query *q);
    void onDatagrams(Query *q);
    void finish(Query *q, Result<QList<QHostAddress>> result, int ttlSeconds);
    void remember(const QString &name, const Result<QList<QHostAddress>> &result, int ttlSeconds);

    Config m_config;
    QHash<QString, Query *> m_queries; // by name; owned
    QHash<QString, CacheEntry> m_cache;
    quint64 m_nextId = 1;
};

} // namespace Sandbox::Engine
