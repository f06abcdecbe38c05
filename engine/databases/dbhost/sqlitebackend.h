#pragma once

#include "backend.h"

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace DbHost {

// SQLite through libsqlite3: WAL, synchronous=FULL, no extension loading, ATTACH confined to
// /workspace. One connection per concurrent request or open cursor (WAL lets them coexist).
class SqliteBackend final : public Backend
{
public:
    explicit SqliteBackend(std::string path);
    ~SqliteBackend() override;

    // Opens (creating if needed) the database; false and `error` when it cannot.
    bool open(std::string *error);

    std::string engineName() const override { return "sqlite"; }
    std::string version() override;
    json query(uint64_t requestId, const std::string &sql, const json &params, bool execute,
               PageLimits limits, const std::string &transaction) override;
    json begin(const std::string &name) override;
    json finish(const std::string &name, bool commit) override;
    json fetch(uint64_t requestId, const std::string &cursor, PageLimits limits) override;
    bool closeCursor(const std::string &cursor) override;
    json transaction(uint64_t requestId, const json &statements, size_t maxRows,
                     size_t maxBytes) override;
    bool cancel(uint64_t requestId) override;

private:
    // Finalizes its statement when it goes (a cursor that never made it into the table too), so
    // that no connection returns to the pool with a statement still open on it.
    struct Cursor
    {
        ~Cursor();
        std::mutex lock;
        sqlite3 *conn = nullptr;
        sqlite3_stmt *stmt = nullptr;
        std::string command;
    };

    sqlite3 *openConnection(std::string *error);
    sqlite3 *acquire();
    void release(sqlite3 *db);
    // Closes a connection, its kept statements first (m_mutex held).
    void closeConnection(sqlite3 *db);
    void finishCursor(const std::shared_ptr<Cursor> &cursor);
    // The statement of `sql` this connection ran before, taken from its statements (the call
    // keeps it, or gives it back); null when none is kept.
    sqlite3_stmt *takeStatement(sqlite3 *db, const std::string &sql);
    // Keeps `st`, reset, for the next call of the same SQL text on this connection (the least
    // recently used beyond the cap is finalized).
    void keepStatement(sqlite3 *db, const std::string &sql, sqlite3_stmt *st);

    std::string m_path;
    std::mutex m_mutex;
    std::vector<sqlite3 *> m_idle;
    // Each connection's statements by their SQL text, most recently used first: a repeated query
    // (a point select) skips SQLite's parse and code generation. A statement prepared with
    // sqlite3_prepare_v3 prepares itself again when the schema changed, whoever changed it.
    using Statements = std::list<std::pair<std::string, sqlite3_stmt *>>;
    std::map<sqlite3 *, Statements> m_statements; // guarded by m_mutex
    using Cursors = CursorTable<sqlite3 *, Cursor>;
    Cursors m_cursors;
    TransactionTable<sqlite3 *> m_transactions;
};

} // namespace DbHost
