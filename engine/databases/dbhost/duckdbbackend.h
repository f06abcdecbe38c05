#pragma once

#include "backend.h"

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <duckdb.h>

namespace DbHost {

// DuckDB through libduckdb's C API: a file-backed database; external file access off except
// for /workspace (allowed_directories); no extension auto-install or auto-load.
class DuckdbBackend final : public Backend
{
public:
    // `remote`: URL prefixes (https://host/) its queries may read, as the sandbox's network policy
    // allows; none by default. Reading them also needs DuckDB's httpfs extension.
    DuckdbBackend(std::string path, long long memoryLimitMb, int threads,
                  std::vector<std::string> remote = {});
    ~DuckdbBackend() override;

    bool open(std::string *error);

    std::string engineName() const override { return "duckdb"; }
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
    json exportFile(uint64_t requestId, const std::string &sql, const std::string &format,
                    const std::string &path) override;
    void explain(DbError &error) const override;

private:
    struct Cursor;

    // Gives a connection back to the pool when the call that took it ends, with a ROLLBACK first
    // where `*rollback` says the call may have left a transaction open.
    class Lease
    {
    public:
        Lease(DuckdbBackend *backend, duckdb_connection conn, const bool *rollback)
            : m_backend(backend)
            , m_conn(conn)
            , m_rollback(rollback)
        {}
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        ~Lease()
        {
            if (m_conn)
                m_backend->release(m_conn, *m_rollback);
        }
        // The connection stays taken (a cursor holds it now).
        void keep() { m_conn = nullptr; }

    private:
        DuckdbBackend *m_backend;
        duckdb_connection m_conn;
        const bool *m_rollback;
    };

    duckdb_connection acquire();
    void release(duckdb_connection c, bool rollback);
    void finishCursor(const std::shared_ptr<Cursor> &cursor);
    // Closes a connection and its statements (m_mutex held).
    void disconnect(duckdb_connection c);
    // Destroys a connection's statements (m_mutex held).
    void destroyStatements(duckdb_connection c);
    // A query run before on this connection, prepared; null when none is kept. The statement
    // stays the connection's: the call holding the connection uses it, nothing else does.
    duckdb_prepared_statement cachedStatement(duckdb_connection c, const std::string &sql);
    // Keeps `prepared` for `sql` (the connection owns it from now on; the least recently used
    // beyond kCachedStatements goes).
    void cacheStatement(duckdb_connection c, const std::string &sql,
                        duckdb_prepared_statement prepared);
    void dropStatement(duckdb_connection c, const std::string &sql);
    // Destroys a connection's statements: what they bind to may have changed.
    void forgetStatements(duckdb_connection c);

    std::string m_path;
    long long m_memoryLimitMb;
    int m_threads;
    std::vector<std::string> m_remote;
    bool m_httpfs = false; // DuckDB's httpfs extension is loaded
    duckdb_database m_db = nullptr;
    std::mutex m_mutex;
    std::vector<duckdb_connection> m_idle;
    // Each connection's prepared SELECTs by their SQL text, most recently used first: a repeated
    // query (a point select) skips DuckDB's parse, bind and plan.
    using Statements = std::list<std::pair<std::string, duckdb_prepared_statement>>;
    std::map<duckdb_connection, Statements> m_statements; // guarded by m_mutex
    using Cursors = CursorTable<duckdb_connection, Cursor>;
    Cursors m_cursors;
    TransactionTable<duckdb_connection> m_transactions;
};

} // namespace DbHost
