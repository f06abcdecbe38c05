#pragma once

#include "protocol/result.h"

#include <QString>

#include <initializer_list>

struct sqlite3;

namespace Sandbox::Engine::StateDb {

// The engine's own SQLite files (the registry, the kept runs), opened the same way: read-write,
// created if missing, WAL with synchronous=NORMAL (a kill -9 of sandboxd loses no committed
// change, and no commit waits for an fsync on the event loop; a power loss may roll back the last
// ones, never corrupt the file) and a 2 s busy timeout. Then `schema` runs, in order. `what`
// names the file in errors ("registry: ...").
Result<sqlite3 *> open(const QString &path, const QString &what,
                       std::initializer_list<const char *> schema);

// Runs one statement without results.
Result<bool> exec(sqlite3 *db, const char *sql, const QString &what);

} // namespace Sandbox::Engine::StateDb
