#include "duckdbbackend.h"
#include "duckdbvalues.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace DbHost {

namespace {

constexpr size_t kMaxIdle = 4;
// Prepared statements kept per connection, and the longest SQL text kept.
constexpr size_t kCachedStatements = 16;
constexpr size_t kMaxCachedSql = 4096;

std::string commandOf(duckdb_statement_type t, const std::string &sql)
{
    switch (t) {
    case DUCKDB_STATEMENT_TYPE_SELECT:
        return "SELECT";
    case DUCKDB_STATEMENT_TYPE_INSERT:
        return "INSERT";
    case DUCKDB_STATEMENT_TYPE_UPDATE:
        return "UPDATE";
    case DUCKDB_STATEMENT_TYPE_DELETE:
        return "DELETE";
    case DUCKDB_STATEMENT_TYPE_EXPLAIN:
        return "EXPLAIN";
    default:
        return statementCommand(sql);
    }
}

bool isDml(duckdb_statement_type t)
{
    return t == DUCKDB_STATEMENT_TYPE_INSERT || t == DUCKDB_STATEMENT_TYPE_UPDATE
           || t == DUCKDB_STATEMENT_TYPE_DELETE;
}

bool isWide(uint32_t cp)
{
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF)
           || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF)
           || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60)
           || (cp >= 0xFFE0 && cp <= 0xFFE6) || cp >= 0x1F000;
}

// DuckDB 1.4 draws its caret at (display width - extra UTF-8 bytes) of the text before the error
// (measured: exact for ASCII, off by one per extra byte otherwise). Inverted here: the 1-based
// character column whose prefix gives that caret; 0 when none does.
int caretToColumn(const std::string &line, long long caret)
{
    long long f = 0;
    int column = 1;
    size_t i = 0;
    while (true) {
        if (f == caret)
            return column;
        if (i >= line.size() || f > caret)
            return 0;
        const uint8_t c = uint8_t(line[i]);
        const int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
        uint32_t cp = len == 1 ? c : c & (0xff >> (len + 1));
        for (int k = 1; k < len && i + k < line.size(); ++k)
            cp = (cp << 6) | (uint8_t(line[i + k]) & 0x3f);
        f += (isWide(cp) ? 2 : 1) - (len - 1);
        i += size_t(len);
        ++column;
    }
}

// DuckDB reports a syntax error's place as "LINE n: <text>" and a caret line below it.
DbError errorFromMessage(const std::string &message, bool interrupted)
{
    DbError e;
    e.message = message;
    if (interrupted || message.find("INTERRUPT") != std::string::npos
        || message.find("Interrupted") != std::string::npos) {
        e.code = "cancelled";
        e.message = "the query was cancelled";
        return e;
    }
    const size_t at = message.find("\nLINE ");
    if (at != std::string::npos) {
        const size_t colon = message.find(':', at);
        const size_t eol = message.find('\n', at + 1);
        if (colon != std::string::npos && eol != std::string::npos) {
            e.line = std::atoi(message.c_str() + at + 6);
            const size_t caretLineStart = eol + 1;
            const size_t caret = message.find('^', caretLineStart);
            std::string shown = message.substr(colon + 2, eol - colon - 2);
            if (caret != std::string::npos && e.line > 0 && !shown.starts_with("...")) {
                // (A long line is shown as "...text"; then the column is unknown.)
                const long long caretCol = (long long)(caret - caretLineStart)
                                           - (long long)(colon + 2 - (at + 1));
                const int col = caretToColumn(shown, caretCol);
                e.column = col > 0 ? col : 0;
            }
        }
    }
    return e;
}

// The error of a result whose query failed.
DbError errorOf(duckdb_result *result)
{
    return errorFromMessage(duckdb_result_error(result),
                            duckdb_result_error_type(result) == DUCKDB_ERROR_INTERRUPT);
}

struct Prepared
{
    duckdb_prepared_statement p = nullptr;
    ~Prepared() { duckdb_destroy_prepare(&p); }
};

struct ResultGuard
{
    duckdb_result r{};
    bool valid = false;
    ~ResultGuard()
    {
        if (valid)
            duckdb_destroy_result(&r);
    }
};

void bindParams(duckdb_prepared_statement ps, const json &params)
{
    const idx_t expected = duckdb_nparams(ps);
    const idx_t given = params.is_array() ? params.size() : 0;
    if (expected != given)
        throw DbError{"bad_request", "the statement has " + std::to_string(expected)
                                         + " parameter(s), " + std::to_string(given) + " given"};
    for (idx_t i = 0; i < given; ++i) {
        const json &v = params[i];
        const idx_t n = i + 1;
        duckdb_state rc = DuckDBSuccess;
        std::string tag, payload;
        if (v.is_null()) {
            rc = duckdb_bind_null(ps, n);
        } else if (v.is_boolean()) {
            rc = duckdb_bind_boolean(ps, n, v.get<bool>());
        } else if (v.is_number_integer()) {
            rc = duckdb_bind_int64(ps, n, v.get<long long>());
        } else if (v.is_number()) {
            rc = duckdb_bind_double(ps, n, v.get<double>());
        } else if (v.is_string()) {
            const auto &s = v.get_ref<const std::string &>();
            rc = duckdb_bind_varchar_length(ps, n, s.data(), s.size());
        } else if (taggedParam(v, &tag, &payload)) {
            if (tag == "bytes") {
                std::string bytes;
                if (!base64Decode(payload, &bytes))
                    throw DbError{"bad_request", "parameter " + std::to_string(n)
                                                     + ": $bytes is not valid base64"};
                rc = duckdb_bind_blob(ps, n, bytes.data(), bytes.size());
            } else {
                // $int beyond 64 bits and $float NaN/Infinity: DuckDB casts the text.
                rc = duckdb_bind_varchar_length(ps, n, payload.data(), payload.size());
            }
        } else {
            const std::string s = v.dump(); // lists, structs and JSON cast from their text
            rc = duckdb_bind_varchar_length(ps, n, s.data(), s.size());
        }
        if (rc != DuckDBSuccess)
            throw DbError{"bad_request", "parameter " + std::to_string(n) + " cannot be bound"};
    }
}

json fieldsOf(duckdb_result *r)
{
    json fields = json::array();
    const idx_t n = duckdb_column_count(r);
    for (idx_t i = 0; i < n; ++i) {
        TypeGuard t{duckdb_column_logical_type(r, i)};
        fields.push_back({{"name", duckdb_column_name(r, i)}, {"type", typeName(t.t)}});
    }
    return fields;
}

} // namespace

struct DuckdbBackend::Cursor
{
    std::mutex lock;
    duckdb_connection conn = nullptr;
    duckdb_prepared_statement prepared = nullptr;
    bool ownsPrepared = true; // false: the connection's statement cache keeps it
    duckdb_result result{};
    bool hasResult = false;
    std::vector<duckdb_logical_type> types;
    duckdb_data_chunk chunk = nullptr;
    std::vector<ChunkColumn> columns; // the chunk's
    idx_t chunkSize = 0;
    idx_t row = 0;
    bool finished = false;

    ~Cursor() { clear(); }
    void clear()
    {
        if (chunk)
            duckdb_destroy_data_chunk(&chunk);
        columns.clear();
        for (auto &t : types)
            duckdb_destroy_logical_type(&t);
        types.clear();
        if (hasResult)
            duckdb_destroy_result(&result);
        hasResult = false;
        if (prepared && ownsPrepared)
            duckdb_destroy_prepare(&prepared);
        prepared = nullptr;
    }

    // Reads rows up to the limits. Returns true when the result is exhausted.
    bool readPage(PageLimits limits, RowWriter &rows)
    {
        while (true) {
            if (!chunk || row >= chunkSize) {
                if (chunk)
                    duckdb_destroy_data_chunk(&chunk);
                columns.clear();
                chunk = duckdb_fetch_chunk(result);
                row = 0;
                if (!chunk) {
                    const char *err = duckdb_result_error(&result);
                    if (err && *err)
                        throw errorOf(&result);
                    finished = true;
                    return true;
                }
                chunkSize = duckdb_data_chunk_get_size(chunk);
                if (chunkSize == 0)
                    continue;
                for (idx_t c = 0; c < types.size(); ++c)
                    columns.push_back(chunkColumn(chunk, c, types[c]));
            }
            for (; row < chunkSize; ++row) {
                rows.beginRow();
                for (const ChunkColumn &column : columns)
                    writeValue(rows, column, row);
                rows.endRow();
                if (rows.rows() >= limits.rows || rows.size() >= limits.bytes) {
                    ++row;
                    return false;
                }
            }
        }
    }
};

DuckdbBackend::DuckdbBackend(std::string path, long long memoryLimitMb, int threads,
                             std::vector<std::string> remote)
    : m_path(std::move(path))
    , m_memoryLimitMb(memoryLimitMb)
    , m_threads(threads)
    , m_remote(std::move(remote))
    , m_cursors(duckdb_interrupt)
{}

void DuckdbBackend::explain(DbError &error) const
{
    // A URL in DuckDB's refusal ("Cannot access file "https://host/x.parquet"", or a file that
    // needs the httpfs extension) is a remote file: say which of the two it lacks.
    const std::string &m = error.message;
    if (m.find("Cannot access file") == std::string::npos && m.find("httpfs") == std::string::npos)
        return;
    size_t begin = std::string::npos;
    for (const char *scheme :
         {"https://", "http://", "s3://", "gcs://", "gs://", "r2://", "hf://"}) {
        const size_t at = m.find(scheme);
        if (at < begin)
            begin = at;
    }
    if (begin == std::string::npos)
        return;
    const size_t end = m.find_first_of("\"' \n", begin);
    const std::string url = m.substr(begin, end == std::string::npos ? end : end - begin);
    const size_t hostStart = url.find("://") + 3;
    const std::string host = url.substr(hostStart, url.find('/', hostStart) - hostStart);
    bool allowed = false;
    for (const std::string &prefix : m_remote)
        allowed = allowed || url.rfind(prefix, 0) == 0;
    std::string why;
    if (!m_httpfs)
        why = std::string("DuckDB's httpfs extension is not available in this database (libduckdb ")
              + duckdb_library_version()
              + " has it neither built in nor installed, and a sandbox downloads no extensions)";
    if (!allowed)
        why += (why.empty() ? "" : ", and ")
               + std::string("the database's network policy does "
                             "not allow ")
               + host;
    if (!why.empty())
        error.message = "cannot read " + url + ": " + why;
}

DuckdbBackend::~DuckdbBackend()
{
    m_cursors.takeAll();
    std::lock_guard l(m_mutex);
    for (auto &c : m_idle)
        disconnect(c);
    for (auto &[c, statements] : m_statements)
        for (auto &[sql, prepared] : statements)
            duckdb_destroy_prepare(&prepared);
    if (m_db)
        duckdb_close(&m_db);
}

bool DuckdbBackend::open(std::string *error)
{
    duckdb_config config = nullptr;
    if (duckdb_create_config(&config) != DuckDBSuccess) {
        *error = "cannot create a DuckDB configuration";
        return false;
    }
    const std::string memory = std::to_string(m_memoryLimitMb) + "MB";
    const std::string threads = std::to_string(m_threads);
    const std::pair<const char *, std::string> settings[] = {
        {"autoinstall_known_extensions", "false"},
        {"autoload_known_extensions", "false"},
        {"allow_community_extensions", "false"},
        {"temp_directory", "/workspace/.duckdb-tmp"},
        {"memory_limit", memory},
        {"threads", threads},
    };
    for (const auto &[name, value] : settings) {
        if (duckdb_set_config(config, name, value.c_str()) != DuckDBSuccess) {
            *error = std::string("cannot set DuckDB option ") + name;
            duckdb_destroy_config(&config);
            return false;
        }
    }
    char *err = nullptr;
    const duckdb_state rc = duckdb_open_ext(m_path.c_str(), &m_db, config, &err);
    duckdb_destroy_config(&config);
    if (rc != DuckDBSuccess) {
        *error = err ? err : "cannot open the database";
        duckdb_free(err);
        return false;
    }
    duckdb_connection c = nullptr;
    if (duckdb_connect(m_db, &c) != DuckDBSuccess) {
        *error = "cannot connect to the database";
        return false;
    }
    // allowed_directories is a list, which the C API's config cannot take: set it, then shut
    // external access and lock the configuration, before any user statement runs.
    {
        duckdb_result r;
        if (duckdb_query(c,
                         "SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'httpfs' "
                         "AND loaded",
                         &r)
            == DuckDBSuccess)
            m_httpfs = duckdb_value_int64(&r, 0, 0) > 0;
        duckdb_destroy_result(&r);
    }
    std::string allowed = "SET allowed_directories = ['/workspace/'";
    for (const std::string &prefix : m_remote) {
        std::string quoted;
        for (char ch : prefix)
            quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
        allowed += ", '" + quoted + "'";
    }
    allowed += "]";
    for (const char *sql :
         {allowed.c_str(), "SET enable_external_access = false", "SET lock_configuration = true"}) {
        duckdb_result r;
        const duckdb_state st = duckdb_query(c, sql, &r);
        if (st != DuckDBSuccess)
            *error = std::string(sql) + ": " + duckdb_result_error(&r);
        duckdb_destroy_result(&r);
        if (st != DuckDBSuccess) {
            duckdb_disconnect(&c);
            return false;
        }
    }
    m_idle.push_back(c);
    return true;
}

std::string DuckdbBackend::version()
{
    return duckdb_library_version();
}

duckdb_connection DuckdbBackend::acquire()
{
    {
        std::lock_guard l(m_mutex);
        if (!m_idle.empty()) {
            duckdb_connection c = m_idle.back();
            m_idle.pop_back();
            return c;
        }
    }
    duckdb_connection c = nullptr;
    if (duckdb_connect(m_db, &c) != DuckDBSuccess)
        throw DbError{"internal", "cannot open another connection to the database"};
    return c;
}

void DuckdbBackend::release(duckdb_connection c, bool rollback)
{
    if (rollback) {
        // A transaction left open by the call ends with it.
        duckdb_result r;
        duckdb_query(c, "ROLLBACK", &r);
        duckdb_destroy_result(&r);
    }
    std::lock_guard l(m_mutex);
    if (m_idle.size() < kMaxIdle)
        m_idle.push_back(c);
    else
        disconnect(c);
}

void DuckdbBackend::disconnect(duckdb_connection c)
{
    destroyStatements(c);
    duckdb_disconnect(&c);
}

void DuckdbBackend::destroyStatements(duckdb_connection c)
{
    if (const auto it = m_statements.find(c); it != m_statements.end()) {
        for (auto &[sql, prepared] : it->second)
            duckdb_destroy_prepare(&prepared);
        m_statements.erase(it);
    }
}

duckdb_prepared_statement DuckdbBackend::cachedStatement(duckdb_connection c, const std::string &sql)
{
    std::lock_guard l(m_mutex);
    const auto it = m_statements.find(c);
    if (it == m_statements.end())
        return nullptr;
    Statements &kept = it->second;
    for (auto s = kept.begin(); s != kept.end(); ++s) {
        if (s->first == sql) {
            kept.splice(kept.begin(), kept, s);
            return s->second;
        }
    }
    return nullptr;
}

void DuckdbBackend::cacheStatement(duckdb_connection c, const std::string &sql,
                                   duckdb_prepared_statement prepared)
{
    std::lock_guard l(m_mutex);
    Statements &kept = m_statements[c];
    kept.emplace_front(sql, prepared);
    while (kept.size() > kCachedStatements) {
        duckdb_destroy_prepare(&kept.back().second);
        kept.pop_back();
    }
}

void DuckdbBackend::forgetStatements(duckdb_connection c)
{
    std::lock_guard l(m_mutex);
    destroyStatements(c);
}

void DuckdbBackend::dropStatement(duckdb_connection c, const std::string &sql)
{
    std::lock_guard l(m_mutex);
    Statements &kept = m_statements[c];
    for (auto s = kept.begin(); s != kept.end(); ++s) {
        if (s->first == sql) {
            duckdb_destroy_prepare(&s->second);
            kept.erase(s);
            return;
        }
    }
}

json DuckdbBackend::begin(const std::string &name)
{
    duckdb_connection conn = acquire();
    duckdb_result r;
    const bool ok = duckdb_query(conn, "BEGIN TRANSACTION", &r) == DuckDBSuccess;
    const std::string why = ok ? std::string() : std::string(duckdb_result_error(&r));
    duckdb_destroy_result(&r);
    if (!ok) {
        release(conn, true);
        throw errorFromMessage(why, false);
    }
    try {
        m_transactions.add(name, conn);
    } catch (...) {
        release(conn, true);
        throw;
    }
    return json{{"transaction", name}};
}

json DuckdbBackend::finish(const std::string &name, bool commit)
{
    duckdb_connection conn = m_transactions.take(name, false);
    duckdb_result r;
    const bool ok = duckdb_query(conn, commit ? "COMMIT" : "ROLLBACK", &r) == DuckDBSuccess;
    const std::string why = ok ? std::string() : std::string(duckdb_result_error(&r));
    duckdb_destroy_result(&r);
    release(conn, !ok);
    if (!ok)
        throw DbError{"sql", why + " (the transaction was rolled back)"};
    return commit ? json{{"committed", true}} : json{{"rolledBack", true}};
}

json DuckdbBackend::query(uint64_t requestId, const std::string &sql, const json &params,
                          bool execute, PageLimits limits, const std::string &transaction)
{
    if (isBlankSql(sql))
        throw DbError{"bad_request", "the SQL text holds no statement"};
    const bool inTransaction = !transaction.empty();
    duckdb_connection conn = inTransaction ? m_transactions.use(transaction) : acquire();
    auto endTransaction = [this](duckdb_connection c) { release(c, true); };
    TransactionUse<duckdb_connection, decltype(endTransaction)> use(m_transactions, transaction,
                                                                    endTransaction);
    bool sawTransaction = false;
    Lease lease(this, inTransaction ? nullptr : conn, &sawTransaction);
    Cursors::Running running(m_cursors, requestId, conn);

    // The first page of a SELECT's streaming result; the rest stays with a cursor.
    auto streamed = [&](const std::shared_ptr<Cursor> &cursor, duckdb_pending_result pending,
                        const std::string &command) {
        const duckdb_state st = duckdb_execute_pending(pending, &cursor->result);
        duckdb_destroy_pending(&pending);
        cursor->hasResult = true;
        if (st != DuckDBSuccess)
            throw errorOf(&cursor->result);
        json fields = fieldsOf(&cursor->result);
        for (idx_t c = 0; c < duckdb_column_count(&cursor->result); ++c)
            cursor->types.push_back(duckdb_column_logical_type(&cursor->result, c));
        RowWriter rows;
        const bool done = cursor->readPage(limits, rows);
        json answer{{"fields", std::move(fields)},
                    {"command", command},
                    {"rowsAffected", 0},
                    {"cursor", nullptr}};
        if (!done && inTransaction) {
            // No cursor outlives a call in a transaction: the first page is all there is.
            answer["truncated"] = true;
        } else if (!done) {
            cursor->conn = conn;
            const std::string id = m_cursors.add(cursor);
            lease.keep(); // the cursor keeps the connection
            answer["cursor"] = id;
        }
        answer["rows"] = rowsText(rows.finish());
        return answer;
    };

    // A SELECT this connection ran before runs again as it was prepared then (DuckDB binds it
    // again by itself where the tables it reads changed since).
    const bool cacheable = !execute && sql.size() <= kMaxCachedSql;
    if (duckdb_prepared_statement cached = cacheable ? cachedStatement(conn, sql) : nullptr) {
        auto cursor = std::make_shared<Cursor>();
        cursor->prepared = cached;
        cursor->ownsPrepared = false;
        duckdb_clear_bindings(cached);
        bindParams(cached, params);
        duckdb_pending_result pending = nullptr;
        if (duckdb_pending_prepared_streaming(cached, &pending) == DuckDBSuccess)
            return streamed(cursor, pending, "SELECT");
        // It no longer binds as it was (nothing ran): prepared afresh below, with its error.
        duckdb_destroy_pending(&pending);
        cursor->prepared = nullptr;
        dropStatement(conn, sql);
    }

    duckdb_extracted_statements extracted = nullptr;
    const idx_t count = duckdb_extract_statements(conn, sql.c_str(), &extracted);
    struct ExtractedGuard
    {
        duckdb_extracted_statements *e;
        ~ExtractedGuard() { duckdb_destroy_extracted(e); }
    } extractedGuard{&extracted};
    if (count == 0) {
        const char *err = duckdb_extract_statements_error(extracted);
        throw errorFromMessage(err ? err : "cannot parse the statement", false);
    }
    const bool hasParams = params.is_array() && !params.empty();
    if (count > 1 && !execute)
        throw DbError{"bad_request", "a query takes one statement; use execute for a script"};
    if (count > 1 && hasParams)
        throw DbError{"bad_request", "parameters need a single statement"};

    long long rowsAffected = 0;
    std::string command;
    idx_t i = 0;
    try {
        for (; i < count; ++i) {
            auto cursor = std::make_shared<Cursor>();
            if (duckdb_prepare_extracted_statement(conn, extracted, i, &cursor->prepared)
                != DuckDBSuccess) {
                const char *err = duckdb_prepare_error(cursor->prepared);
                throw errorFromMessage(err ? err : "cannot prepare the statement", false);
            }
            bindParams(cursor->prepared, params);
            const duckdb_statement_type type = duckdb_prepared_statement_type(cursor->prepared);
            sawTransaction = sawTransaction || type == DUCKDB_STATEMENT_TYPE_TRANSACTION;
            if (inTransaction && type == DUCKDB_STATEMENT_TYPE_TRANSACTION)
                throw DbError{"bad_request",
                              "this statement would end the transaction: use commit or rollback"};
            // A script is named by its last statement, whose text is looked for only then (a search
            // reads the script from its start: for every statement, a long script took minutes).
            if (i + 1 == count)
                command = commandOf(type, count == 1 ? sql : std::string(statementAt(sql, i)));
            // Anything but a SELECT may change what the connection's SELECTs bind to without
            // changing the catalog (USE, SET search_path): they are prepared afresh after it.
            if (type != DUCKDB_STATEMENT_TYPE_SELECT && !isDml(type))
                forgetStatements(conn);
            if (execute || isDml(type)) {
                ResultGuard r;
                if (duckdb_execute_prepared(cursor->prepared, &r.r) != DuckDBSuccess) {
                    r.valid = true;
                    throw errorOf(&r.r);
                }
                r.valid = true;
                long long changed = isDml(type) ? (long long)duckdb_rows_changed(&r.r) : 0;
                if (execute) {
                    rowsAffected += changed;
                    continue;
                }
                // INSERT/UPDATE/DELETE in a query: RETURNING rows, or the bare count.
                json fields = fieldsOf(&r.r);
                RowWriter rows;
                const bool bareCount = fields.size() == 1 && fields[0]["name"] == "Count";
                if (!bareCount) {
                    cursor->result = r.r;
                    cursor->hasResult = true;
                    r.valid = false;
                    for (idx_t c = 0; c < duckdb_column_count(&cursor->result); ++c)
                        cursor->types.push_back(duckdb_column_logical_type(&cursor->result, c));
                    cursor->readPage(PageLimits{SIZE_MAX, SIZE_MAX}, rows);
                    // DuckDB counts no changed rows for a RETURNING result: each changed row is
                    // returned once, as PostgreSQL counts them.
                    changed = (long long)rows.rows();
                }
                return json{{"fields", bareCount ? json::array() : fields},
                            {"rows", rowsText(rows.finish())},
                            {"command", command},
                            {"rowsAffected", changed},
                            {"cursor", nullptr}};
            }
            duckdb_pending_result pending = nullptr;
            if (duckdb_pending_prepared_streaming(cursor->prepared, &pending) != DuckDBSuccess) {
                const std::string err = pending ? duckdb_pending_error(pending)
                                                : "cannot run the statement";
                duckdb_destroy_pending(&pending);
                throw errorFromMessage(err, false);
            }
            if (cacheable && count == 1 && type == DUCKDB_STATEMENT_TYPE_SELECT) {
                cacheStatement(conn, sql, cursor->prepared);
                cursor->ownsPrepared = false;
            }
            return streamed(cursor, pending, command);
        }
    } catch (DbError &e) {
        // Which statement of a script failed: the ones before it stay, each its own transaction.
        if (execute && count > 1 && e.statementIndex < 0)
            e.statementIndex = int(i);
        throw;
    }
    return json{{"command", command}, {"rowsAffected", rowsAffected}};
}

json DuckdbBackend::fetch(uint64_t requestId, const std::string &id, PageLimits limits)
{
    return m_cursors.fetch(
        requestId, id, [limits](Cursor &c, RowWriter &rows) { return c.readPage(limits, rows); },
        [this](const std::string &cursor) { closeCursor(cursor); });
}

void DuckdbBackend::finishCursor(const std::shared_ptr<Cursor> &cursor)
{
    std::lock_guard cl(cursor->lock);
    if (!cursor->conn)
        return;
    cursor->clear();
    release(cursor->conn, false);
    cursor->conn = nullptr;
}

bool DuckdbBackend::closeCursor(const std::string &id)
{
    const std::shared_ptr<Cursor> cursor = m_cursors.take(id);
    if (!cursor)
        return false;
    finishCursor(cursor);
    return true;
}

json DuckdbBackend::transaction(uint64_t requestId, const json &statements, size_t maxRows,
                                size_t maxBytes)
{
    size_t bytes = 0; // the kept rows', all statements
    duckdb_connection conn = acquire();
    forgetStatements(conn); // its statements may be anything (see query())
    bool rollback = false;
    Lease lease(this, conn, &rollback);
    Cursors::Running running(m_cursors, requestId, conn);
    auto run = [&](const char *sql) {
        ResultGuard r;
        const duckdb_state st = duckdb_query(conn, sql, &r.r);
        r.valid = true;
        if (st != DuckDBSuccess)
            throw errorOf(&r.r);
    };
    run("BEGIN TRANSACTION");
    json results = json::array();
    int index = 0;
    try {
        for (const json &s : statements) {
            const std::string sql = s.value("sql", std::string());
            Prepared ps;
            if (duckdb_prepare(conn, sql.c_str(), &ps.p) != DuckDBSuccess) {
                const char *err = duckdb_prepare_error(ps.p);
                throw errorFromMessage(err ? err : "cannot prepare the statement", false);
            }
            bindParams(ps.p, s.contains("params") ? s["params"] : json::array());
            const duckdb_statement_type type = duckdb_prepared_statement_type(ps.p);
            ResultGuard r;
            const duckdb_state st = duckdb_execute_prepared(ps.p, &r.r);
            r.valid = true;
            if (st != DuckDBSuccess)
                throw errorOf(&r.r);
            json fields = fieldsOf(&r.r);
            json rows = json::array();
            const bool bareCount = isDml(type) && fields.size() == 1
                                   && fields[0]["name"] == "Count";
            bool truncated = false;
            long long returned = 0;
            if (!bareCount) {
                std::vector<duckdb_logical_type> types;
                for (idx_t c = 0; c < duckdb_column_count(&r.r); ++c)
                    types.push_back(duckdb_column_logical_type(&r.r, c));
                duckdb_data_chunk chunk;
                while ((chunk = duckdb_fetch_chunk(r.r))) {
                    const idx_t size = duckdb_data_chunk_get_size(chunk);
                    returned += (long long)size;
                    for (idx_t row = 0; row < size; ++row) {
                        if (rows.size() >= maxRows || bytes >= maxBytes) {
                            truncated = true;
                            break;
                        }
                        json out = json::array();
                        for (idx_t c = 0; c < types.size(); ++c)
                            out.push_back(
                                vectorValue(duckdb_data_chunk_get_vector(chunk, c), types[c], row));
                        bytes += approximateBytes(out);
                        rows.push_back(std::move(out));
                    }
                    duckdb_destroy_data_chunk(&chunk);
                }
                for (auto &t : types)
                    duckdb_destroy_logical_type(&t);
            }
            results.push_back({{"command", commandOf(type, sql)},
                               {"fields", bareCount ? json::array() : fields},
                               {"rows", std::move(rows)},
                               // A RETURNING result's rows are its changed rows (see query()).
                               {"rowsAffected", !isDml(type) ? 0
                                                : bareCount  ? (long long)duckdb_rows_changed(&r.r)
                                                             : returned},
                               {"truncated", truncated}});
            ++index;
        }
        run("COMMIT");
    } catch (DbError &e) {
        rollback = true;
        e.statementIndex = index < int(statements.size()) ? index : -1;
        throw;
    }
    return json{{"results", std::move(results)}};
}

bool DuckdbBackend::cancel(uint64_t requestId)
{
    return m_cursors.interrupt(requestId);
}

json DuckdbBackend::exportFile(uint64_t requestId, const std::string &sql,
                               const std::string &format, const std::string &path)
{
    if (format != "parquet" && format != "csv" && format != "json")
        throw DbError{"bad_request", "unknown export format " + format};
    if (!path.starts_with("/workspace/") || path.find("..") != std::string::npos
        || path.find('\'') != std::string::npos)
        throw DbError{"bad_request", "the export path must be inside /workspace"};
    duckdb_connection conn = acquire();
    bool rollback = false;
    Lease lease(this, conn, &rollback);
    Cursors::Running running(m_cursors, requestId, conn);
    const std::string copy = "COPY (" + sql + ") TO '" + path + "' (FORMAT "
                             + (format == "json" ? "json, ARRAY true" : format) + ")";
    ResultGuard r;
    const duckdb_state st = duckdb_query(conn, copy.c_str(), &r.r);
    r.valid = true;
    if (st != DuckDBSuccess)
        throw errorOf(&r.r);
    return json{{"path", path}, {"rowCount", (long long)duckdb_rows_changed(&r.r)}};
}

} // namespace DbHost
