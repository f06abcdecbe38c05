// The DuckDB baseline of bench_databases: libduckdb driven directly, as sqlite3 and psql are the
// baselines of the other two engines. Reads one SQL statement per line on stdin and writes each
// result row as one line of '|'-separated values (as `sqlite3 -batch` and `psql -A -t` do), or
// with `-c SQL` runs that one statement and exits. `--init SQL` runs first (the bench's data).
// An in-memory database: the engine's database file is locked by its own DuckDB.
#include <duckdb.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace {

void appendValue(std::string &out, duckdb_vector vec, duckdb_type type, idx_t row)
{
    uint64_t *validity = duckdb_vector_get_validity(vec);
    if (validity && !duckdb_validity_row_is_valid(validity, row))
        return;
    void *data = duckdb_vector_get_data(vec);
    char buf[32];
    switch (type) {
    case DUCKDB_TYPE_INTEGER: {
        const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int32_t *>(data)[row]);
        out.append(buf, r.ptr);
        return;
    }
    case DUCKDB_TYPE_BIGINT: {
        const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t *>(data)[row]);
        out.append(buf, r.ptr);
        return;
    }
    case DUCKDB_TYPE_VARCHAR: {
        auto *s = static_cast<duckdb_string_t *>(data) + row;
        out.append(duckdb_string_t_data(s), duckdb_string_t_length(*s));
        return;
    }
    default:
        out += '?'; // the bench reads integers and text only
    }
}

// Runs `sql` and writes its rows to stdout (unless `quiet`); false (and a message on stderr) when
// it fails.
bool run(duckdb_connection con, const std::string &sql, bool quiet = false)
{
    duckdb_result result;
    if (duckdb_query(con, sql.c_str(), &result) != DuckDBSuccess) {
        std::fprintf(stderr, "duckdb: %s\n", duckdb_result_error(&result));
        duckdb_destroy_result(&result);
        return false;
    }
    const idx_t columns = duckdb_column_count(&result);
    if (quiet) {
        duckdb_destroy_result(&result);
        return true;
    }
    std::string out;
    while (duckdb_data_chunk chunk = duckdb_fetch_chunk(result)) {
        const idx_t rows = duckdb_data_chunk_get_size(chunk);
        for (idx_t r = 0; r < rows; ++r) {
            for (idx_t c = 0; c < columns; ++c) {
                if (c)
                    out += '|';
                appendValue(out, duckdb_data_chunk_get_vector(chunk, c),
                            duckdb_column_type(&result, c), r);
            }
            out += '\n';
        }
        duckdb_destroy_data_chunk(&chunk);
        if (out.size() > (1 << 16)) {
            std::fwrite(out.data(), 1, out.size(), stdout);
            out.clear();
        }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    duckdb_destroy_result(&result);
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    std::string init, command;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--init") == 0)
            init = argv[i + 1];
        else if (std::strcmp(argv[i], "-c") == 0)
            command = argv[i + 1];
    }
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(nullptr, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess) {
        std::fprintf(stderr, "duckdb: cannot open an in-memory database\n");
        return 1;
    }
    int status = 0;
    if (!init.empty() && !run(con, init, true))
        status = 1;
    else if (!command.empty())
        status = run(con, command) ? 0 : 1;
    else
        for (std::string line; status == 0 && std::getline(std::cin, line);)
            if (!run(con, line))
                status = 1;
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return status;
}
