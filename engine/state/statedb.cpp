#include "statedb.h"

#include <sqlite3.h>

namespace Sandbox::Engine::StateDb {

Result<sqlite3 *> open(const QString &path, const QString &what,
                       std::initializer_list<const char *> schema)
{
    sqlite3 *db = nullptr;
    const int rc = sqlite3_open_v2(path.toUtf8().constData(), &db,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    if (rc != SQLITE_OK) {
        const Error e{ErrorCode::InternalError,
                      QStringLiteral("%1: cannot open %2: %3")
                          .arg(what, path, QString::fromUtf8(sqlite3_errmsg(db))),
                      {}};
        sqlite3_close(db);
        return e;
    }
    for (const char *sql :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=2000"}) {
        if (auto ok = exec(db, sql, what); !ok) {
            sqlite3_close(db);
            return ok.error();
        }
    }
    for (const char *sql : schema) {
        if (auto ok = exec(db, sql, what); !ok) {
            sqlite3_close(db);
            return ok.error();
        }
    }
    return db;
}

Result<bool> exec(sqlite3 *db, const char *sql, const QString &what)
{
    char *err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        const Error e{ErrorCode::InternalError,
                      QStringLiteral("%1: %2").arg(what, QString::fromUtf8(err)),
                      {}};
        sqlite3_free(err);
        return e;
    }
    return true;
}

} // namespace Sandbox::Engine::StateDb
