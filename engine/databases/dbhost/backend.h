#pragma once
// One database engine behind sandbox-dbhost (see PROTOCOL.md). Every call may run on any
// connection thread; implementations are thread-safe. Failures are thrown as DbError and turned
// into error answers by the server loop — exceptions never leave this program.

#include "wire.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>

namespace DbHost {

struct PageLimits
{
    size_t rows = 1000;
    size_t bytes = 4u << 20;
};

// Interactive transactions (`begin`, then calls naming the transaction, then `commit` or
// `rollback`): the connections held under their names, each used by one call at a time.
template<typename Conn>
class TransactionTable
{
public:
    static constexpr size_t kMax = 8;

    void add(const std::string &name, Conn conn)
    {
        std::lock_guard l(m_mutex);
        if (name.empty() || m_slots.count(name))
            throw DbError{"bad_request", "transaction '" + name + "' exists already"};
        if (m_slots.size() >= kMax)
            throw DbError{"too_large", "too many open transactions on this database"};
        m_slots[name] = Slot{conn, false};
    }
    // The connection of `name` for one call; done() or take() ends the use.
    Conn use(const std::string &name)
    {
        std::lock_guard l(m_mutex);
        const auto it = m_slots.find(name);
        if (it == m_slots.end())
            throw DbError{"not_found", "no transaction '" + name + "' (it ended)"};
        if (it->second.busy)
            throw DbError{"bad_request", "transaction '" + name + "' is running a statement"};
        it->second.busy = true;
        return it->second.conn;
    }
    void done(const std::string &name)
    {
        std::lock_guard l(m_mutex);
        if (const auto it = m_slots.find(name); it != m_slots.end())
            it->second.busy = false;
    }
    // Ends `name`: its connection goes back to the caller (which commits or rolls back).
    // `busyOk`: the caller holds it through use().
    Conn take(const std::string &name, bool busyOk)
    {
        std::lock_guard l(m_mutex);
        const auto it = m_slots.find(name);
        if (it == m_slots.end())
            throw DbError{"not_found", "no transaction '" + name + "' (it ended)"};
        if (it->second.busy && !busyOk)
            throw DbError{"bad_request", "transaction '" + name + "' is running a statement"};
        const Conn c = it->second.conn;
        m_slots.erase(it);
        return c;
    }
    template<typename F>
    void forEach(F f)
    {
        std::lock_guard l(m_mutex);
        for (auto &[name, slot] : m_slots)
            f(slot.conn);
    }

private:
    struct Slot
    {
        Conn conn;
        bool busy;
    };
    std::mutex m_mutex;
    std::map<std::string, Slot> m_slots;
};

// One call's use of a connection: the pool's, or an interactive transaction's. A call that
// fails inside a transaction ends it, rolled back (`end` gets the connection).
template<typename Conn, typename End>
class TransactionUse
{
public:
    TransactionUse(TransactionTable<Conn> &table, const std::string &name, End end)
        : m_table(table)
        , m_name(name)
        , m_end(std::move(end))
        , m_exceptions(std::uncaught_exceptions())
    {}
    ~TransactionUse()
    {
        if (m_name.empty())
            return;
        try {
            if (std::uncaught_exceptions() > m_exceptions || m_ended)
                m_end(m_table.take(m_name, true));
            else
                m_table.done(m_name);
        } catch (const DbError &) {
            // Already ended.
        }
    }
    // The call's own statements ended the transaction (COMMIT in a script): it ends here too.
    void ended() { m_ended = true; }

private:
    TransactionTable<Conn> &m_table;
    std::string m_name;
    End m_end;
    int m_exceptions;
    bool m_ended = false;
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
    // `transaction`: run in that interactive transaction (see begin()); then no cursor is kept:
    // the first page is the answer, with `truncated: true` when rows were left out.
    virtual json query(uint64_t requestId, const std::string &sql, const json &params, bool execute,
                       PageLimits limits, const std::string &transaction)
        = 0;
    // Opens a connection with a transaction under `name`, for the calls that name it, until
    // finish(). A call in it that fails rolls it back and ends it.
    virtual json begin(const std::string &name) = 0;
    // commit (or roll back) and end `name`.
    virtual json finish(const std::string &name, bool commit) = 0;
    // The next page of a cursor: {rows, done}. A finished cursor is closed.
    virtual json fetch(uint64_t requestId, const std::string &cursor, PageLimits limits) = 0;
    virtual bool closeCursor(const std::string &cursor) = 0;
    // Statements [{sql, params}] in one transaction: all commit, or none (rolled back on the
    // first error, whose statementIndex says which). Each result keeps at most maxRows rows.
    virtual json transaction(uint64_t requestId, const json &statements, size_t maxRows) = 0;
    // Interrupts the request with that id if it is running; true if it was.
    virtual bool cancel(uint64_t requestId) = 0;
    // Makes a failure's message say what the user can do about it (DuckDB: a remote file that
    // needs httpfs or the network). Called on every error answer.
    virtual void explain(DbError &error) const { (void)error; }
    // Writes the result of `sql` to `path` in `format` (DuckDB: parquet).
    virtual json exportFile(uint64_t requestId, const std::string &sql, const std::string &format,
                            const std::string &path)
    {
        (void)requestId, (void)sql, (void)path;
        throw DbError{"bad_request", "export to " + format + " is not supported by " + engineName()};
    }
};

} // namespace DbHost
