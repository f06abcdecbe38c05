#pragma once
// One database engine behind sandbox-dbhost (see PROTOCOL.md). Every call may run on any
// connection thread; implementations are thread-safe. Failures are thrown as DbError and turned
// into error answers by the server loop — exceptions never leave this program.

#include "wire.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace DbHost {

struct PageLimits
{
    size_t rows = 1000;
    size_t bytes = 4u << 20;
};

class Backend
{
public:
    virtual ~Backend() = default;

    virtual std::string engineName() const = 0;
    virtual std::string version() = 0;

    // execute == false: exactly one statement; answers {fields, rows, command, rowsAffected,
    // cursor} with the first page; `cursor` is null when no rows follow.
    // execute == true: every statement of `sql` runs to completion (params only with one);
    // answers {command, rowsAffected}.
    virtual json query(uint64_t requestId, const std::string &sql, const json &params, bool execute,
                       PageLimits limits)
        = 0;
    // The next page of a cursor: {rows, done}. A finished cursor is closed.
    virtual json fetch(uint64_t requestId, const std::string &cursor, PageLimits limits) = 0;
    virtual bool closeCursor(const std::string &cursor) = 0;
    // Statements [{sql, params}] in one transaction: all commit, or none (rolled back on the
    // first error, whose statementIndex says which). Each result keeps at most maxRows rows.
    virtual json transaction(uint64_t requestId, const json &statements, size_t maxRows) = 0;
    // Interrupts the request with that id if it is running; true if it was.
    virtual bool cancel(uint64_t requestId) = 0;
    // Writes the result of `sql` to `path` in `format` (DuckDB: parquet).
    virtual json exportFile(uint64_t requestId, const std::string &sql, const std::string &format,
                            const std::string &path)
    {
        (void)requestId, (void)sql, (void)path;
        throw DbError{"bad_request", "export to " + format + " is not supported by " + engineName()};
    }
};

} // namespace DbHost
