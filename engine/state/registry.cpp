#include "registry.h"

#include "sqlitestatement.h"
#include "statedb.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>

#include <sqlite3.h>

Q_LOGGING_CATEGORY(lcRegistry, "sandboxd.registry")

namespace Sandbox::Engine {

namespace {

Error dbError(sqlite3 *db, const char *what)
{
    return Error{ErrorCode::InternalError,
                 QStringLiteral("registry: %1: %2")
                     .arg(QLatin1String(what), QString::fromUtf8(sqlite3_errmsg(db))),
                 {}};
}

QByteArray envToJson(const QMap<QString, QString> &env)
{
    QJsonObject o;
    for (auto it = env.cbegin(); it != env.cend(); ++it)
        o.insert(it.key(), it.value());
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QMap<QString, QString> envFromJson(const QByteArray &json)
{
    QMap<QString, QString> env;
    const QJsonObject o = QJsonDocument::fromJson(json).object();
    for (auto it = o.begin(); it != o.end(); ++it)
        env.insert(it.key(), it.value().toString());
    return env;
}

} // namespace

Result<std::unique_ptr<Registry>> Registry::open(const QString &path)
{
    Result<sqlite3 *> db = StateDb::open(
        path, QStringLiteral("registry"),
        {
            "CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, name TEXT NOT NULL,"
            " hash BLOB NOT NULL UNIQUE, created_at INTEGER NOT NULL, last_used_at INTEGER,"
            " admin INTEGER NOT NULL DEFAULT 0)",
            "CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
            " kind TEXT NOT NULL, type TEXT NOT NULL, size TEXT NOT NULL,"
            " name TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',"
            " created_at INTEGER NOT NULL, last_active_at INTEGER, sleep_after_ms INTEGER NOT NULL,"
            " network INTEGER NOT NULL, env TEXT NOT NULL, slot INTEGER NOT NULL UNIQUE)",
        });
    if (!db)
        return db.error();
    std::unique_ptr<Registry> r(new Registry(*db));
    // Columns added since the first schema (a registry from an older engine gets them).
    static const char *const added[][2] = {
        {"network_policy", "ALTER TABLE sandboxes ADD COLUMN network_policy TEXT"},
        {"gateway", "ALTER TABLE sandboxes ADD COLUMN gateway INTEGER NOT NULL DEFAULT 0"},
    };
    for (const auto &[column, sql] : added) {
        SqliteStatement info(*db, "SELECT 1 FROM pragma_table_info('sandboxes') WHERE name = ?");
        info.bind(1, QString::fromLatin1(column));
        if (info.ok() && info.step() == SQLITE_ROW)
            continue;
        if (auto ok = r->exec(sql); !ok)
            return ok.error();
    }
    return r;
}

Registry::Registry(sqlite3 *db)
    : m_db(db)
{}

Registry::~Registry()
{
    sqlite3_close(m_db);
}

Result<bool> Registry::exec(const char *sql)
{
    return StateDb::exec(m_db, sql, QStringLiteral("registry"));
}

Result<bool> Registry::insertKey(const KeyRecord &key)
{
    SqliteStatement s(
        m_db,
        "INSERT INTO keys (id, name, hash, created_at, last_used_at, admin) VALUES (?,?,?,?,?,?)");
    s.bind(1, key.id);
    s.bind(2, key.name);
    s.bind(3, key.hash);
    s.bind(4, key.createdAt);
    s.bind(5, key.lastUsedAt);
    s.bind(6, qint64(key.admin ? 1 : 0));
    if (!s.ok() || s.step() != SQLITE_DONE)
        return dbError(m_db, "insert key");
    return true;
}

Result<bool> Registry::removeKey(const QString &id)
{
    SqliteStatement s(m_db, "DELETE FROM keys WHERE id = ?");
    s.bind(1, id);
    if (!s.ok() || s.step() != SQLITE_DONE)
        return dbError(m_db, "remove key");
    return sqlite3_changes(m_db) > 0;
}

QList<KeyRecord> Registry::keys() const
{
    QList<KeyRecord> out;
    SqliteStatement
        s(m_db,
          "SELECT id, name, hash, created_at, last_used_at, admin FROM keys ORDER BY created_at");
    while (s.ok() && s.step() == SQLITE_ROW)
        out.append(
            KeyRecord{s.text(0), s.text(1), s.blob(2), s.time(3), s.time(4), s.integer(5) != 0});
    return out;
}

void Registry::touchKey(const QString &id, const QDateTime &when)
{
    SqliteStatement s(m_db, "UPDATE keys SET last_used_at = ? WHERE id = ?");
    s.bind(1, when);
    s.bind(2, id);
    if (!s.ok() || s.step() != SQLITE_DONE)
        qCWarning(lcRegistry) << "touch key:" << sqlite3_errmsg(m_db);
}

Result<bool> Registry::upsertSandbox(const SandboxRecord &r)
{
    SqliteStatement
        s(m_db,
          "INSERT INTO sandboxes (id, key_id, kind, type, size, name, status, error, created_at,"
          " last_active_at, sleep_after_ms, network, env, slot, network_policy, gateway)"
          " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
          " ON CONFLICT(id) DO UPDATE SET status=excluded.status, error=excluded.error,"
          " last_active_at=excluded.last_active_at, name=excluded.name, network=excluded.network,"
          " network_policy=excluded.network_policy");
    s.bind(1, r.id);
    s.bind(2, r.keyId);
    s.bind(3, r.kind);
    s.bind(4, r.type);
    s.bind(5, r.size);
    s.bind(6, r.name);
    s.bind(7, r.status);
    s.bind(8, r.error);
    s.bind(9, r.createdAt);
    s.bind(10, r.lastActiveAt);
    s.bind(11, r.sleepAfterMs);
    // `network` keeps meaning "has a way out" for an older engine reading this registry.
    s.bind(12, qint64(r.network == QJsonValue(false) ? 0 : 1));
    s.bind(13, QString::fromUtf8(envToJson(r.env)));
    s.bind(14, qint64(r.slot));
    s.bind(15,
           QString::fromUtf8(QJsonDocument(QJsonArray{r.network}).toJson(QJsonDocument::Compact)));
    s.bind(16, qint64(r.gateway ? 1 : 0));
    if (!s.ok() || s.step() != SQLITE_DONE)
        return dbError(m_db, "save sandbox");
    return true;
}

Result<bool> Registry::removeSandbox(const QString &id)
{
    SqliteStatement s(m_db, "DELETE FROM sandboxes WHERE id = ?");
    s.bind(1, id);
    if (!s.ok() || s.step() != SQLITE_DONE)
        return dbError(m_db, "remove sandbox");
    return true;
}

QList<SandboxRecord> Registry::sandboxes() const
{
    QList<SandboxRecord> out;
    SqliteStatement
        s(m_db,
          "SELECT id, key_id, kind, type, size, name, status, error, created_at, last_active_at,"
          " sleep_after_ms, network, env, slot, network_policy, gateway FROM sandboxes"
          " ORDER BY created_at");
    while (s.ok() && s.step() == SQLITE_ROW) {
        SandboxRecord r;
        r.id = s.text(0);
        r.keyId = s.text(1);
        r.kind = s.text(2);
        r.type = s.text(3);
        r.size = s.text(4);
        r.name = s.text(5);
        r.status = s.text(6);
        r.error = s.text(7);
        r.createdAt = s.time(8);
        r.lastActiveAt = s.time(9);
        r.sleepAfterMs = s.integer(10);
        // Written as a one-element array; a row from before policies has only the flag.
        const QJsonArray policy = QJsonDocument::fromJson(s.text(14).toUtf8()).array();
        r.network = policy.size() == 1 ? policy.first() : QJsonValue(s.integer(11) != 0);
        r.env = envFromJson(s.text(12).toUtf8());
        r.slot = int(s.integer(13));
        r.gateway = s.integer(15) != 0;
        out.append(r);
    }
    return out;
}

int Registry::nextSlot() const
{
    SqliteStatement s(m_db, "SELECT COALESCE(MAX(slot), 0) + 1 FROM sandboxes");
    if (s.ok() && s.step() == SQLITE_ROW)
        return int(s.integer(0));
    return 1;
}

} // namespace Sandbox::Engine
