#pragma once
// DuckDB values as the wire carries them (PROTOCOL.md): every type of libduckdb's C API to JSON,
// with the type names the engine shows.

#include "wire.h"

#include <duckdb.h>

#include <string>

namespace DbHost {

// Destroys a logical type that the C API handed over.
struct TypeGuard
{
    duckdb_logical_type t = nullptr;
    ~TypeGuard()
    {
        if (t)
            duckdb_destroy_logical_type(&t);
    }
};

// The SQL name of a type (its alias when it has one), e.g. DECIMAL(18,3), INTEGER[], STRUCT(...).
std::string typeName(duckdb_logical_type type);
// The value of `row` in a vector of `type` as the wire encodes it (wire.h: integers past 2^53 as
// {"$int"}, blobs as {"$bytes"}, dates and times as text), nested for LIST, ARRAY, STRUCT, MAP.
json vectorValue(duckdb_vector vec, duckdb_logical_type type, idx_t row);
// A column of a data chunk as writeValue() reads it: what the C API answers about the column,
// asked once per chunk (2,048 rows) instead of once per value.
struct ChunkColumn
{
    duckdb_vector vector = nullptr;
    duckdb_logical_type type = nullptr; // the result's (not owned)
    duckdb_type id = DUCKDB_TYPE_INVALID;
    const void *data = nullptr;
    const uint64_t *validity = nullptr; // null: no NULL in the chunk
};
ChunkColumn chunkColumn(duckdb_data_chunk chunk, idx_t column, duckdb_logical_type type);
// The value of `row` written to a page's text (the common types without a json value in between).
void writeValue(RowWriter &rows, const ChunkColumn &column, idx_t row);

} // namespace DbHost
