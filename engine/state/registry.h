#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QDateTime>
#include <QJsonValue>
#include <QList>
#include <QMap>
#include <QString>

#include <memory>
#include <optional>

struct sqlite3;

namespace Sandbox::Engine {

struct KeyRecord
{
    QString id;
    QString name;
    QByteArray hash; // SHA-256 of the key; the key itself is never stored
    QDateTime createdAt;
    QDateTime lastUsedAt;
    bool admin = false; // may create, list and revoke other keys
};

struct SandboxRecord
{
    QString id;
    QString keyId;
    QString kind; // agent | database
    QString type;
    QString size;
    QString name;
    QString status; // creating | running | sleeping | stopped | error
    QString error;
    QDateTime createdAt;
    QDateTime lastActiveAt;
    qint64 sleepAfterMs = 600000;
    // The network policy as the protocol shows it (docs/protocol.md 3.5): false, true or
    // {allow, deny}, already validated and in canonical form.
    QJsonValue network = false;
    bool gateway = false;       // an agent sandbox whose model calls go through the engine
    QMap<QString, QString> env; // values stay in the engine; only names are ever returned
    int slot = 0;               // unique per sandbox: picks its uid
};

// The engine's persistent state: API keys and sandboxes, in SQLite (WAL, synchronous=NORMAL) so
// that a kill -9 of sandboxd loses no committed change, without an fsync on the event loop for
// each one (with FULL, a sandbox's start or stop waited ~50-90 ms per change on a busy disk); a
// power loss may roll back the last changes, never corrupt the file. Single-threaded.
class Registry final
{
public:
    static Result<std::unique_ptr<Registry>> open(const QString &path);
    ~Registry();

    Result<bool> insertKey(const KeyRecord &key);
    Result<bool> removeKey(const QString &id);
    QList<KeyRecord> keys() const;
    // When the key was last used (KeyStore::noteUse, at most once a minute); a failed write
    // is logged, not an error: it costs only the last use's precision.
    void touchKey(const QString &id, const QDateTime &when);

    Result<bool> upsertSandbox(const SandboxRecord &sandbox);
    Result<bool> removeSandbox(const QString &id);
    QList<SandboxRecord> sandboxes() const;
    int nextSlot() const;

private:
    explicit Registry(sqlite3 *db);
    Result<bool> exec(const char *sql);

    sqlite3 *m_db = nullptr; // owned
};

} // namespace Sandbox::Engine
