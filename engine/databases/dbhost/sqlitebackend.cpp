#include "sqlitebackend.h"

#include <algorithm>
#include <cctype>

#include <sqlite3.h>

#include <cstring>
#include <utility>

namespace DbHost {

namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr size_t kMaxIdle = 4;
// Statements kept per connection, and the longest SQL text kept.
constexpr size_t kKeptStatements = 16;
constexpr size_t kMaxKeptSql = 4096;

// ATTACH only of files inside /workspace (relative paths are relative to /workspace, the
// working directory), of a temporary or in-memory database; never through a URI.
bool attachAllowed(const char *file)
{
    if (!file || !*file || std::strcmp(file, ":memory:") == 0)
        return true;
    const std::string_view f(file);
    if (f.starts_with("file:") || f.find("..") != std::string_view::npos)
        return false;
    return !f.starts_with('/') || f.starts_with("/workspace/");
}

int authorizer(void *, int action, const char *a, const char *, const char *, const char *)
{
    if (action == SQLITE_ATTACH && !attachAllowed(a))
        return SQLITE_DENY;
    return SQLITE_OK;
}

DbError errorOf(sqlite3 *db, int rc, long long offsetBase = 0)
{
    DbError e;
    e.code = rc == SQLITE_INTERRUPT ? "cancelled" : "sql";
    e.message = rc == SQLITE_INTERRUPT ? std::string("the query was cancelled")
                                       : std::string(sqlite3_errmsg(db));
    if (rc == SQLITE_AUTH)
        e.message += " (ATTACH works only for database files inside /workspace)";
    const int offset = sqlite3_error_offset(db);
    if (offset >= 0)
        e.offset = offsetBase + offset;
    return e;
}

std::string storageClassName(int type)
{
    switch (type) {
    case SQLITE_INTEGER:
        return "INTEGER";
    case SQLITE_FLOAT:
        return "REAL";
    case SQLITE_TEXT:
        return "TEXT";
    case SQLITE_BLOB:
        return "BLOB";
    default:
        return "";
    }
}

json columnValue(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return integerValue(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return floatValue(sqlite3_column_double(st, i));
    case SQLITE_TEXT: {
        const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(st, i));
        return textValue(std::string_view(p, size_t(sqlite3_column_bytes(st, i))));
    }
    case SQLITE_BLOB: {
        const auto *p = static_cast<const char *>(sqlite3_column_blob(st, i));
        return bytesValue(std::string_view(p ? p : "", size_t(sqlite3_column_bytes(st, i))));
    }
    default:
        return nullptr;
    }
}

void bindParams(sqlite3 *db, sqlite3_stmt *st, const json &params)
{
    const int expected = sqlite3_bind_parameter_count(st);
    const int given = params.is_array() ? int(params.size()) : 0;
    if (expected != given)
        throw DbError{"bad_request", "the statement has " + std::to_string(expected)
                                         + " parameter(s), " + std::to_string(given) + " given"};
    for (int i = 0; i < given; ++i) {
        const json &v = params[size_t(i)];
        int rc = SQLITE_OK;
        std::string tag, payload;
        if (v.is_null()) {
            rc = sqlite3_bind_null(st, i + 1);
        } else if (v.is_boolean()) {
            rc = sqlite3_bind_int(st, i + 1, v.get<bool>() ? 1 : 0);
        } else if (v.is_number_integer()) {
            rc = sqlite3_bind_int64(st, i + 1, v.get<long long>());
        } else if (v.is_number()) {
            rc = sqlite3_bind_double(st, i + 1, v.get<double>());
        } else if (v.is_string()) {
            const auto &s = v.get_ref<const std::string &>();
            rc = sqlite3_bind_text64(st, i + 1, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        } else if (taggedParam(v, &tag, &payload)) {
            if (tag == "bytes") {
                std::string bytes;
                if (!base64Decode(payload, &bytes))
                    throw DbError{"bad_request", "parameter " + std::to_string(i + 1)
                                                     + ": $bytes is not valid base64"};
                rc = sqlite3_bind_blob64(st, i + 1, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
            } else if (tag == "int") {
                char *end = nullptr;
                errno = 0;
                const long long n = std::strtoll(payload.c_str(), &end, 10);
                if (errno || !end || *end || payload.empty())
                    throw DbError{"bad_request", "parameter " + std::to_string(i + 1)
                                                     + ": $int is not a 64-bit integer"};
                rc = sqlite3_bind_int64(st, i + 1, n);
            } else {
                rc = sqlite3_bind_double(st, i + 1, std::strtod(payload.c_str(), nullptr));
            }
        } else {
            // Arrays and objects go in as their JSON text (SQLite's JSON functions read it).
            const std::string s = v.dump();
            rc = sqlite3_bind_text64(st, i + 1, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        }
        if (rc != SQLITE_OK)
            throw errorOf(db, rc);
    }
}

json fieldsOf(sqlite3_stmt *st, bool haveRow)
{
    json fields = json::array();
    const int n = sqlite3_column_count(st);
    for (int i = 0; i < n; ++i) {
        const char *decl = sqlite3_column_decltype(st, i);
        std::string type = decl ? decl : "";
        if (type.empty() && haveRow)
            type = storageClassName(sqlite3_column_type(st, i));
        fields.push_back({{"name", sqlite3_column_name(st, i)}, {"type", type}});
    }
    return fields;
}

// Through the column's sqlite3_value: sqlite3_column_type(), _int64(), _text() and _bytes() each
// look the column up again and check the connection's mutex and malloc state, which cost a page
// as much as writing its text. The value is unprotected (no mutex held), which SQLite allows here:
// the connection is opened without a mutex (SQLITE_OPEN_NOMUTEX), one thread at a time uses it,
// and a value is read only as its own type, so that nothing converts it.
void writeColumn(RowWriter &rows, sqlite3_stmt *st, int i)
{
    sqlite3_value *v = sqlite3_column_value(st, i);
    switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER:
        return rows.integer(sqlite3_value_int64(v));
    case SQLITE_FLOAT:
        return rows.floating(sqlite3_value_double(v));
    case SQLITE_TEXT: {
        const auto *p = reinterpret_cast<const char *>(sqlite3_value_text(v));
        return rows.text(std::string_view(p, size_t(sqlite3_value_bytes(v))));
    }
    case SQLITE_BLOB: {
        const auto *p = static_cast<const char *>(sqlite3_value_blob(v));
        return rows.bytes(std::string_view(p ? p : "", size_t(sqlite3_value_bytes(v))));
    }
    default:
        return rows.null();
    }
}

// Steps up to the page limits; the row under the statement when called counts first when
// `pending` is set. Returns true when the statement is done.
bool readPage(sqlite3 *db, sqlite3_stmt *st, PageLimits limits, RowWriter &rows, bool pending)
{
    const int n = sqlite3_column_count(st);
    while (true) {
        if (!pending) {
            const int rc = sqlite3_step(st);
            if (rc == SQLITE_DONE)
                return true;
            if (rc != SQLITE_ROW)
                throw errorOf(db, rc);
        }
        pending = false;
        rows.beginRow();
        for (int i = 0; i < n; ++i)
            writeColumn(rows, st, i);
        rows.endRow();
        if (rows.rows() >= limits.rows || rows.size() >= limits.bytes)
            return false;
    }
}

bool isDml(const std::string &keyword)
{
    return Sandbox::SqlCommand::changesRows(keyword);
}

struct StmtGuard
{
    sqlite3_stmt *st = nullptr;
    ~StmtGuard() { sqlite3_finalize(st); }
    sqlite3_stmt *release() { return std::exchange(st, nullptr); }
};

// BEGIN, COMMIT, END or ROLLBACK (but not ROLLBACK TO a savepoint).
bool endsTransaction(const std::string &command, std::string text)
{
    if (command == "BEGIN" || command == "COMMIT" || command == "END")
        return true;
    if (command != "ROLLBACK")
        return false;
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    return text.find(" TO ") == std::string::npos && text.find("\tTO ") == std::string::npos;
}

} // namespace

SqliteBackend::SqliteBackend(std::string path)
    : m_path(std::move(path))
    , m_cursors(sqlite3_interrupt)
{
    // No count of SQLite's memory in use (nothing here asks for it): counting takes a mutex
    // around every allocation, and a page's rows allocate per value. Only possible before SQLite
    // initialises; a second backend (adopt) finds it done.
    static const int noMemoryStatus = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    (void)noMemoryStatus;
}

SqliteBackend::Cursor::~Cursor()
{
    sqlite3_finalize(stmt);
}

SqliteBackend::~SqliteBackend()
{
    std::lock_guard l(m_mutex);
    for (const auto &c : m_cursors.takeAll()) {
        sqlite3_finalize(std::exchange(c->stmt, nullptr));
        closeConnection(c->conn);
    }
    for (sqlite3 *db : m_idle)
        closeConnection(db);
}

void SqliteBackend::closeConnection(sqlite3 *db)
{
    if (const auto it = m_statements.find(db); it != m_statements.end()) {
        for (auto &[sql, st] : it->second)
            sqlite3_finalize(st);
        m_statements.erase(it);
    }
    sqlite3_close_v2(db);
}

sqlite3_stmt *SqliteBackend::takeStatement(sqlite3 *db, const std::string &sql)
{
    std::lock_guard l(m_mutex);
    const auto it = m_statements.find(db);
    if (it == m_statements.end())
        return nullptr;
    Statements &kept = it->second;
    for (auto s = kept.begin(); s != kept.end(); ++s) {
        if (s->first == sql) {
            sqlite3_stmt *st = s->second;
            kept.erase(s);
            return st;
        }
    }
    return nullptr;
}

void SqliteBackend::keepStatement(sqlite3 *db, const std::string &sql, sqlite3_stmt *st)
{
    // Reset, it holds no read transaction open (the connection would see no newer data); its
    // parameters' copies go.
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    std::lock_guard l(m_mutex);
    Statements &kept = m_statements[db];
    kept.emplace_front(sql, st);
    while (kept.size() > kKeptStatements) {
        sqlite3_finalize(kept.back().second);
        kept.pop_back();
    }
}

sqlite3 *SqliteBackend::openConnection(std::string *error)
{
    sqlite3 *db = nullptr;
    const int rc = sqlite3_open_v2(m_path.c_str(), &db,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    if (rc != SQLITE_OK) {
        *error = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        return nullptr;
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 4);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 256 * 1024 * 1024);
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    char *err = nullptr;
    if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                     nullptr, nullptr, &err)
        != SQLITE_OK) {
        *error = err ? err : "cannot set the journal mode";
        sqlite3_free(err);
        sqlite3_close_v2(db);
        return nullptr;
    }
    sqlite3_set_authorizer(db, authorizer, nullptr);
    return db;
}

bool SqliteBackend::open(std::string *error)
{
    sqlite3 *db = openConnection(error);
    if (!db)
        return false;
    m_idle.push_back(db);
    return true;
}

std::string SqliteBackend::version()
{
    return sqlite3_libversion();
}

sqlite3 *SqliteBackend::acquire()
{
    {
        std::lock_guard l(m_mutex);
        if (!m_idle.empty()) {
            sqlite3 *db = m_idle.back();
            m_idle.pop_back();
            return db;
        }
    }
    std::string error;
    sqlite3 *db = openConnection(&error);
    if (!db)
        throw DbError{"internal", "cannot open the database: " + error};
    return db;
}

void SqliteBackend::release(sqlite3 *db)
{
    // A transaction left open by a statement (BEGIN without COMMIT) does not outlive its call.
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    std::lock_guard l(m_mutex);
    if (m_idle.size() < kMaxIdle)
        m_idle.push_back(db);
    else
        closeConnection(db);
}

json SqliteBackend::begin(const std::string &name)
{
    sqlite3 *db = acquire();
    // IMMEDIATE: the write lock now, so that two transactions cannot deadlock on an upgrade.
    char *err = nullptr;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string why = err ? err : "cannot begin a transaction";
        sqlite3_free(err);
        release(db);
        throw DbError{"sql", why};
    }
    try {
        m_transactions.add(name, db);
    } catch (...) {
        release(db); // rolls the transaction back
        throw;
    }
    return json{{"transaction", name}};
}

json SqliteBackend::finish(const std::string &name, bool commit)
{
    sqlite3 *db = m_transactions.take(name, false);
    char *err = nullptr;
    const bool ok = sqlite3_get_autocommit(db)
                    || sqlite3_exec(db, commit ? "COMMIT" : "ROLLBACK", nullptr, nullptr, &err)
                           == SQLITE_OK;
    const std::string why = err ? err : "";
    sqlite3_free(err);
    release(db); // rolls back what a failed COMMIT left open
    if (!ok)
        throw DbError{"sql", why + " (the transaction was rolled back)"};
    return commit ? json{{"committed", true}} : json{{"rolledBack", true}};
}

json SqliteBackend::query(uint64_t requestId, const std::string &sql, const json &params,
                          bool execute, PageLimits limits, const std::string &transaction)
{
    if (isBlankSql(sql))
        throw DbError{"bad_request", "the SQL text holds no statement"};
    const bool inTransaction = !transaction.empty();
    sqlite3 *db = inTransaction ? m_transactions.use(transaction) : acquire();
    auto endTransaction = [this](sqlite3 *c) { release(c); };
    TransactionUse<sqlite3 *, decltype(endTransaction)> use(m_transactions, transaction,
                                                            endTransaction);
    struct Releaser
    {
        SqliteBackend *b;
        sqlite3 *db;
        ~Releaser()
        {
            if (db)
                b->release(db);
        }
    } releaser{this, inTransaction ? nullptr : db};
    Cursors::Running running(m_cursors, requestId, db);

    const bool hasParams = params.is_array() && !params.empty();
    const char *start = sql.c_str();
    const char *const end = start + sql.size();
    // The rest of the text from `p`, its length known: a view made from the pointer alone would
    // measure the rest of the script again for every statement.
    const auto rest = [end](const char *p) { return std::string_view(p, size_t(end - p)); };
    const char *tail = start;
    long long rowsAffected = 0;
    std::string command;
    int statements = 0;
    bool script = false; // more than one statement (known from the first statement's end on)
    int current = 0;     // the index of the statement being run
    // A statement this connection ran before is run again as it was prepared (one statement).
    const bool keepable = sql.size() <= kMaxKeptSql;
    try {
        while (tail && tail < end && *tail && !isBlankSql(rest(tail))) {
            current = statements;
            StmtGuard st;
            const char *next = nullptr;
            st.st = keepable && tail == start ? takeStatement(db, sql) : nullptr;
            if (st.st) {
                next = start + sql.size();
            } else {
                const int rc = sqlite3_prepare_v3(db, tail, -1,
                                                  keepable ? SQLITE_PREPARE_PERSISTENT : 0, &st.st,
                                                  &next);
                if (rc != SQLITE_OK)
                    throw errorOf(db, rc, tail - start);
            }
            if (!st.st) { // only a comment
                tail = next;
                continue;
            }
            ++statements;
            const bool more = next && next < end && !isBlankSql(rest(next));
            script = script || more;
            // The whole text is this one statement: kept for the next call when it went well.
            const bool keep = keepable && statements == 1 && !more;
            if (!execute && more)
                throw DbError{"bad_request",
                              "a query takes one statement; use execute for a script",
                              next - start};
            if (hasParams && more)
                throw DbError{"bad_request", "parameters need a single statement", next - start};
            bindParams(db, st.st, statements == 1 ? params : json::array());
            command = statementCommand(sqlite3_sql(st.st));
            if (inTransaction && endsTransaction(command, sqlite3_sql(st.st)))
                throw DbError{"bad_request",
                              "this statement would end the transaction: use commit or rollback",
                              tail - start};

            if (execute) {
                int step;
                while ((step = sqlite3_step(st.st)) == SQLITE_ROW) {
                }
                if (step != SQLITE_DONE)
                    throw errorOf(db, step, tail - start);
                if (isDml(command))
                    rowsAffected += sqlite3_changes64(db);
                if (keep)
                    keepStatement(db, sql, st.release());
                tail = next;
                continue;
            }

            RowWriter rows;
            const int first = sqlite3_step(st.st);
            if (first != SQLITE_ROW && first != SQLITE_DONE)
                throw errorOf(db, first, tail - start);
            json fields = fieldsOf(st.st, first == SQLITE_ROW);
            bool done = first == SQLITE_DONE || readPage(db, st.st, limits, rows, true);
            json answer{{"fields", std::move(fields)}, {"command", command}, {"cursor", nullptr}};
            if (done) {
                answer["rowsAffected"] = isDml(command) ? sqlite3_changes64(db) : 0;
            } else if (inTransaction) {
                // No cursor outlives a call in a transaction: the first page is all there is.
                answer["rowsAffected"] = 0;
                answer["truncated"] = true;
            } else {
                auto cursor = std::make_shared<Cursor>();
                cursor->conn = db;
                cursor->stmt = st.release();
                cursor->command = command;
                // Over the cap this throws: the cursor finalizes its statement, then the releaser
                // returns the connection.
                const std::string id = m_cursors.add(cursor);
                releaser.db = nullptr; // the cursor keeps the connection
                answer["cursor"] = id;
                answer["rowsAffected"] = 0;
            }
            if (keep && st.st)
                keepStatement(db, sql, st.release());
            answer["rows"] = rowsText(rows.finish());
            return answer;
        }
    } catch (DbError &e) {
        // Which statement of a script failed: the ones before it stay, each its own transaction.
        if (execute && script && e.statementIndex < 0)
            e.statementIndex = current;
        throw;
    }
    if (statements == 0)
        throw DbError{"bad_request", "the SQL text holds no statement"};
    return json{{"command", command}, {"rowsAffected", rowsAffected}};
}

json SqliteBackend::fetch(uint64_t requestId, const std::string &id, PageLimits limits)
{
    return m_cursors.fetch(
        requestId, id,
        [limits](Cursor &c, RowWriter &rows) {
            return readPage(c.conn, c.stmt, limits, rows, false);
        },
        [this](const std::string &cursor) { closeCursor(cursor); });
}

void SqliteBackend::finishCursor(const std::shared_ptr<Cursor> &cursor)
{
    std::lock_guard cl(cursor->lock);
    if (!cursor->stmt)
        return;
    sqlite3_finalize(cursor->stmt);
    cursor->stmt = nullptr;
    release(cursor->conn);
    cursor->conn = nullptr;
}

bool SqliteBackend::closeCursor(const std::string &id)
{
    const std::shared_ptr<Cursor> cursor = m_cursors.take(id);
    if (!cursor)
        return false;
    finishCursor(cursor);
    return true;
}

json SqliteBackend::transaction(uint64_t requestId, const json &statements, size_t maxRows,
                                size_t maxBytes)
{
    size_t bytes = 0; // the kept rows', all statements
    sqlite3 *db = acquire();
    struct Releaser
    {
        SqliteBackend *b;
        sqlite3 *db;
        ~Releaser() { b->release(db); }
    } releaser{this, db};
    Cursors::Running running(m_cursors, requestId, db);
    auto exec = [&](const char *sql) {
        char *err = nullptr;
        const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
        std::string message = err ? err : "";
        sqlite3_free(err);
        if (rc != SQLITE_OK) {
            DbError e = errorOf(db, rc);
            if (!message.empty() && rc != SQLITE_INTERRUPT)
                e.message = message;
            e.offset = -1;
            throw e;
        }
    };
    exec("BEGIN IMMEDIATE");
    json results = json::array();
    int index = 0;
    try {
        for (const json &s : statements) {
            const std::string sql = s.value("sql", std::string());
            StmtGuard st;
            const char *next = nullptr;
            int rc = sqlite3_prepare_v3(db, sql.c_str(), -1, 0, &st.st, &next);
            if (rc != SQLITE_OK)
                throw errorOf(db, rc);
            if (!st.st)
                throw DbError{"bad_request", "statement " + std::to_string(index) + " is empty"};
            if (next && !isBlankSql(next))
                throw DbError{"bad_request",
                              "each statement of a transaction must be a single statement",
                              next - sql.c_str()};
            bindParams(db, st.st, s.contains("params") ? s["params"] : json::array());
            const std::string command = statementCommand(sqlite3_sql(st.st));
            json rows = json::array();
            bool truncated = false;
            bool first = true;
            json fields;
            while ((rc = sqlite3_step(st.st)) == SQLITE_ROW) {
                if (first)
                    fields = fieldsOf(st.st, true);
                first = false;
                if (rows.size() >= maxRows || bytes >= maxBytes) {
                    truncated = true;
                    continue;
                }
                json row = json::array();
                for (int i = 0; i < sqlite3_column_count(st.st); ++i)
                    row.push_back(columnValue(st.st, i));
                bytes += approximateBytes(row);
                rows.push_back(std::move(row));
            }
            if (rc != SQLITE_DONE)
                throw errorOf(db, rc);
            if (first)
                fields = fieldsOf(st.st, false);
            results.push_back({{"command", command},
                               {"fields", fields},
                               {"rows", std::move(rows)},
                               {"rowsAffected", isDml(command) ? sqlite3_changes64(db) : 0},
                               {"truncated", truncated}});
            ++index;
        }
        exec("COMMIT");
    } catch (DbError &e) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        e.statementIndex = index < int(statements.size()) ? index : -1;
        throw;
    }
    return json{{"results", std::move(results)}};
}

bool SqliteBackend::cancel(uint64_t requestId)
{
    return m_cursors.interrupt(requestId);
}

} // namespace DbHost
