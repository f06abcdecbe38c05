#pragma once

#include "protocol/result.h"
#include "state/registry.h"

#include <QDateTime>
#include <QList>
#include <QString>

#include <functional>

namespace Sandbox::Engine {

struct NewKey
{
    QString id;
    QString name;
    QString key; // shown once, at creation
    QDateTime createdAt;
    bool admin = false;
    QDateTime lastUsedAt; // to the minute; invalid when never used
};

// API keys (docs/protocol.md, 1.1-1.2): stored as SHA-256 hashes, checked in constant time.
class KeyStore final
{
public:
    // `now` is the clock of the times it keeps: a key's creation and last use (tests move it).
    explicit KeyStore(Registry *registry, // not owned
                      std::function<QDateTime()> now = &QDateTime::currentDateTimeUtc);

    Result<NewKey> create(const QString &name, bool admin = false);
    // Registers a key chosen elsewhere (SANDBOXD_API_KEY in a container); no-op if known.
    Result<bool> import(const QString &name, QByteArrayView key, bool admin);
    bool isAdmin(const QString &id) const;
    // The key's id, or Unauthorized. Compares against every stored hash without an early exit.
    // Notes when the key was used (kept once a minute at most: this runs on every request).
    Result<QString> verify(QByteArrayView presentedKey);
    // Notes that key `id` was used now, as verify() does: every message on a WebSocket the key
    // opened comes here (RpcSession), so a key in use for hours on one connection is not shown
    // unused.
    void noteUse(const QString &id);
    Result<bool> revoke(const QString &id);
    QList<NewKey> list() const; // keys without the secret
    bool isEmpty() const;

    // Reads "Bearer KEY" from an Authorization header value.
    static QByteArray bearerToken(QByteArrayView authorizationHeader);

private:
    void noteUse(KeyRecord &key);

    Registry *m_registry;
    std::function<QDateTime()> m_now;
    QList<KeyRecord> m_keys; // cache of the registry's keys: verify() runs on every request
};

} // namespace Sandbox::Engine
