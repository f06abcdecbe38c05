#pragma once
// One database engine behind sandbox-dbhost (see PROTOCOL.md). Every call may run on any
// connection thread; implementations are thread-safe. Failures are thrown as DbError and turned
// into error answers by the server loop — exceptions never leave this program.

#include "wire.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// The open cursors and the running requests of a backend, the same for every engine: fetch()
// finds a cursor by id and reads it under its lock, closeCursor() takes it (interrupting a fetch
// that reads it), cancel() interrupts a request by id. Conn: a connection handle, `interrupt`
// stops what runs on it; Cursor: an open result with `std::mutex lock` and `Conn conn` (null
// once finished).
template<typename Conn, typename Cursor>
class CursorTable
{
public:
    static constexpr size_t kMax = 32;

    explicit CursorTable(void (*interrupt)(Conn))
        : m_interrupt(interrupt)
    {}

    // Marks `conn` as running request `id` for its lifetime, so that interrupt(id) reaches it.
    class Running
    {
    public:
        Running(CursorTable &table, uint64_t id, Conn conn)
            : m_table(table)
            , m_id(id)
        {
            std::lock_guard l(m_table.m_mutex);
            m_table.m_running[id] = conn;
        }
        ~Running()
        {
            std::lock_guard l(m_table.m_mutex);
            m_table.m_running.erase(m_id);
        }
        Running(const Running &) = delete;
        Running &operator=(const Running &) = delete;

    private:
        CursorTable &m_table;
        uint64_t m_id;
    };

    // Keeps `cursor` and answers its id; at most kMax per database.
    std::string add(std::shared_ptr<Cursor> cursor)
    {
        std::lock_guard l(m_mutex);
        if (m_cursors.size() >= kMax)
            throw DbError{"too_large", "too many open cursors on this database"};
        const std::string id = "c" + std::to_string(m_next++);
        m_cursors[id] = std::move(cursor);
        return id;
    }
    // The next page of cursor `id`: `read(cursor, RowWriter &rows)` reads it and answers true at
    // its end.
    // At the end, or on an error, the cursor closes through `close(id)`.
    template<typename Read, typename Close>
    json fetch(uint64_t requestId, const std::string &id, Read read, Close close)
    {
        std::shared_ptr<Cursor> cursor;
        {
            std::lock_guard l(m_mutex);
            const auto it = m_cursors.find(id);
            if (it == m_cursors.end())
                throw DbError{"not_found",
                              "no cursor " + id + " (it was closed, finished or expired)"};
            cursor = it->second;
        }
        std::unique_lock cl(cursor->lock, std::try_to_lock);
        if (!cl.owns_lock())
            throw DbError{"bad_request", "cursor " + id + " is already being fetched"};
        if (!cursor->conn)
            throw DbError{"not_found", "no cursor " + id};
        RowWriter rows;
        bool done = false;
        try {
            Running running(*this, requestId, cursor->conn);
            done = read(*cursor, rows);
        } catch (const DbError &) {
            cl.unlock();
            close(id);
            throw;
        }
        if (done) {
            cl.unlock();
            close(id);
        }
        return json{{"rows", rowsText(rows.finish())}, {"done", done}};
    }
    // Removes cursor `id` (null if there is none) and interrupts a fetch running on it, so that
    // the caller gets its lock soon.
    std::shared_ptr<Cursor> take(const std::string &id)
    {
        std::lock_guard l(m_mutex);
        const auto it = m_cursors.find(id);
        if (it == m_cursors.end())
            return nullptr;
        std::shared_ptr<Cursor> cursor = std::move(it->second);
        m_cursors.erase(it);
        for (const auto &[rid, conn] : m_running)
            if (conn == cursor->conn)
                m_interrupt(conn);
        return cursor;
    }
    std::vector<std::shared_ptr<Cursor>> takeAll()
    {
        std::lock_guard l(m_mutex);
        std::vector<std::shared_ptr<Cursor>> all;
        for (auto &[id, cursor] : m_cursors)
            all.push_back(std::move(cursor));
        m_cursors.clear();
        return all;
    }
    // Interrupts request `requestId` if it is running; true if it was.
    bool interrupt(uint64_t requestId)
    {
        std::lock_guard l(m_mutex);
        const auto it = m_running.find(requestId);
        if (it == m_running.end())
            return false;
        m_interrupt(it->second);
        return true;
    }

private:
    void (*m_interrupt)(Conn);
    std::mutex m_mutex;
    std::map<std::string, std::shared_ptr<Cursor>> m_cursors;
    std::map<uint64_t, Conn> m_running;
    uint64_t m_next = 1;
};

// About what a kept value takes as text: a string's bytes, those of an array's or an object's
// values, 8 for anything else.
inline size_t approximateBytes(const json &v)
{
    if (v.is_string())
        return v.get_ref<const std::string &>().size() + 2;
    if (!v.is_structured())
        return 8;
    size_t n = 2;
    for (const json &e : v)
        n += approximateBytes(e) + 1;
    return n;
}

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
    // first error, whose statementIndex says which). Each result keeps at most maxRows rows, and
    // all of them together about maxBytes (approximateBytes); the rest are left out, truncated.
    virtual json transaction(uint64_t requestId, const json &statements, size_t maxRows,
                             size_t maxBytes)
        = 0;
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
