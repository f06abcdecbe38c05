#pragma once

#include "protocol/result.h"
#include "state/registry.h"

#include <QDateTime>
#include <QList>
#include <QString>

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
    explicit KeyStore(Registry *registry); // not owned

    Result<NewKey> create(const QString &name, bool admin = false);
    // Registers a key chosen elsewhere (SANDBOXD_API_KEY in a container); no-op if known.
    Result<bool> import(const QString &name, QByteArrayView key, bool admin);
    bool isAdmin(const QString &id) const;
    // The key's id, or Unauthorized. Compares against every stored hash without an early exit.
    // Notes when the key was used (kept once a minute at most: this runs on every request).
    Result<QString> verify(QByteArrayView presentedKey);
    Result<bool> revoke(const QString &id);
    QList<NewKey> list() const; // keys without the secret
    bool isEmpty() const;

    // Reads "Bearer KEY" from an Authorization header value.
    static QByteArray bearerToken(QByteArrayView authorizationHeader);

private:
    Registry *m_registry;
    QList<KeyRecord> m_keys; // cache of the registry's keys: verify() runs on every request
};

} // namespace Sandbox::Engine
