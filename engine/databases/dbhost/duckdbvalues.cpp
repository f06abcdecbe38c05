#include "duckdbvalues.h"

#include <cstdio>
#include <cstring>

namespace DbHost {

namespace {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

std::string u128Text(u128 v)
{
    if (v == 0)
        return "0";
    std::string s;
    while (v) {
        s.insert(s.begin(), char('0' + int(v % 10)));
        v /= 10;
    }
    return s;
}

std::string i128Text(i128 v)
{
    if (v < 0)
        return "-" + u128Text(u128(-(v + 1)) + 1);
    return u128Text(u128(v));
}

json i128Value(i128 v)
{
    constexpr i128 kMaxSafe = 9007199254740991LL;
    if (v <= kMaxSafe && v >= -kMaxSafe)
        return json(static_cast<long long>(v));
    return json{{"$int", i128Text(v)}};
}

std::string decimalText(i128 v, int scale)
{
    const bool negative = v < 0;
    std::string digits = negative ? i128Text(v).substr(1) : i128Text(v);
    if (scale > 0) {
        if (int(digits.size()) <= scale)
            digits.insert(0, size_t(scale - int(digits.size()) + 1), '0');
        digits.insert(digits.size() - size_t(scale), ".");
    }
    return negative ? "-" + digits : digits;
}

// Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
void civil(long long z, long long *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const long long era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = unsigned(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const long long yy = (long long)yoe + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

std::string dateText(long long days)
{
    long long y;
    unsigned m, d;
    civil(days, &y, &m, &d);
    char buf[48];
    if (y > 0)
        std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", y, m, d);
    else // ISO 8601 astronomical year (1 BC is 0000)
        std::snprintf(buf, sizeof buf, "%05lld-%02u-%02u", y, m, d);
    return buf;
}

std::string timeText(long long micros, int digits = 6)
{
    const long long h = micros / 3600000000LL;
    const long long mi = (micros / 60000000LL) % 60;
    const long long s = (micros / 1000000LL) % 60;
    const long long frac = micros % 1000000LL;
    char buf[64];
    if (frac == 0)
        std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", h, mi, s);
    else
        std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%0*lld", h, mi, s, digits, frac);
    std::string out = buf;
    if (frac != 0)
        while (out.back() == '0')
            out.pop_back();
    return out;
}

json timestampValue(long long micros, bool utc)
{
    if (micros == INT64_MAX)
        return "infinity";
    if (micros == -INT64_MAX)
        return "-infinity";
    long long days = micros / 86400000000LL;
    long long rest = micros % 86400000000LL;
    if (rest < 0) {
        rest += 86400000000LL;
        --days;
    }
    return dateText(days) + "T" + timeText(rest) + (utc ? "Z" : "");
}

std::string intervalText(const duckdb_interval &v)
{
    std::string s = "P";
    if (v.months / 12)
        s += std::to_string(v.months / 12) + "Y";
    if (v.months % 12)
        s += std::to_string(v.months % 12) + "M";
    if (v.days)
        s += std::to_string(v.days) + "D";
    if (v.micros) {
        s += "T";
        long long us = v.micros;
        const bool neg = us < 0;
        if (neg)
            us = -us;
        const long long h = us / 3600000000LL, m = (us / 60000000LL) % 60;
        const long long sec = (us / 1000000LL) % 60, frac = us % 1000000LL;
        const std::string sign = neg ? "-" : "";
        if (h)
            s += sign + std::to_string(h) + "H";
        if (m)
            s += sign + std::to_string(m) + "M";
        if (sec || frac) {
            s += sign + std::to_string(sec);
            if (frac) {
                char buf[16];
                std::snprintf(buf, sizeof buf, ".%06lld", frac);
                std::string f = buf;
                while (f.back() == '0')
                    f.pop_back();
                s += f;
            }
            s += "S";
        }
    }
    return s == "P" ? "PT0S" : s;
}

std::string uuidText(duckdb_hugeint h)
{
    const uint64_t upper = uint64_t(h.upper) ^ (uint64_t(1) << 63);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", unsigned(upper >> 32),
                  unsigned((upper >> 16) & 0xffff), unsigned(upper & 0xffff),
                  unsigned(h.lower >> 48), (unsigned long long)(h.lower & 0xffffffffffffULL));
    return buf;
}

std::string takeString(char *s)
{
    std::string out = s ? s : "";
    duckdb_free(s);
    return out;
}

// A VARCHAR or BLOB value: up to 12 bytes are kept in the value itself, longer ones behind its
// pointer (duckdb.h, duckdb_string_t), read here without a call into the library per value.
std::string_view stringAt(const void *data, idx_t row)
{
    const duckdb_string_t &s = static_cast<const duckdb_string_t *>(data)[row];
    const uint32_t length = s.value.inlined.length;
    return {length <= sizeof s.value.inlined.inlined ? s.value.inlined.inlined : s.value.pointer.ptr,
            length};
}

} // namespace

std::string typeName(duckdb_logical_type type)
{
    const std::string alias = takeString(duckdb_logical_type_get_alias(type));
    if (!alias.empty())
        return alias;
    switch (duckdb_get_type_id(type)) {
    case DUCKDB_TYPE_BOOLEAN:
        return "BOOLEAN";
    case DUCKDB_TYPE_TINYINT:
        return "TINYINT";
    case DUCKDB_TYPE_SMALLINT:
        return "SMALLINT";
    case DUCKDB_TYPE_INTEGER:
        return "INTEGER";
    case DUCKDB_TYPE_BIGINT:
        return "BIGINT";
    case DUCKDB_TYPE_UTINYINT:
        return "UTINYINT";
    case DUCKDB_TYPE_USMALLINT:
        return "USMALLINT";
    case DUCKDB_TYPE_UINTEGER:
        return "UINTEGER";
    case DUCKDB_TYPE_UBIGINT:
        return "UBIGINT";
    case DUCKDB_TYPE_HUGEINT:
        return "HUGEINT";
    case DUCKDB_TYPE_UHUGEINT:
        return "UHUGEINT";
    case DUCKDB_TYPE_FLOAT:
        return "FLOAT";
    case DUCKDB_TYPE_DOUBLE:
        return "DOUBLE";
    case DUCKDB_TYPE_DECIMAL:
        return "DECIMAL(" + std::to_string(duckdb_decimal_width(type)) + ","
               + std::to_string(duckdb_decimal_scale(type)) + ")";
    case DUCKDB_TYPE_VARCHAR:
        return "VARCHAR";
    case DUCKDB_TYPE_BLOB:
        return "BLOB";
    case DUCKDB_TYPE_DATE:
        return "DATE";
    case DUCKDB_TYPE_TIME:
        return "TIME";
    case DUCKDB_TYPE_TIME_TZ:
        return "TIME WITH TIME ZONE";
    case DUCKDB_TYPE_TIMESTAMP:
        return "TIMESTAMP";
    case DUCKDB_TYPE_TIMESTAMP_S:
        return "TIMESTAMP_S";
    case DUCKDB_TYPE_TIMESTAMP_MS:
        return "TIMESTAMP_MS";
    case DUCKDB_TYPE_TIMESTAMP_NS:
        return "TIMESTAMP_NS";
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        return "TIMESTAMP WITH TIME ZONE";
    case DUCKDB_TYPE_INTERVAL:
        return "INTERVAL";
    case DUCKDB_TYPE_UUID:
        return "UUID";
    case DUCKDB_TYPE_ENUM:
        return "ENUM";
    case DUCKDB_TYPE_LIST: {
        TypeGuard c{duckdb_list_type_child_type(type)};
        return typeName(c.t) + "[]";
    }
    case DUCKDB_TYPE_ARRAY: {
        TypeGuard c{duckdb_array_type_child_type(type)};
        return typeName(c.t) + "[" + std::to_string(duckdb_array_type_array_size(type)) + "]";
    }
    case DUCKDB_TYPE_STRUCT: {
        std::string s = "STRUCT(";
        const idx_t n = duckdb_struct_type_child_count(type);
        for (idx_t i = 0; i < n; ++i) {
            TypeGuard c{duckdb_struct_type_child_type(type, i)};
            s += (i ? ", " : "") + takeString(duckdb_struct_type_child_name(type, i)) + " "
                 + typeName(c.t);
        }
        return s + ")";
    }
    case DUCKDB_TYPE_MAP: {
        TypeGuard k{duckdb_map_type_key_type(type)}, v{duckdb_map_type_value_type(type)};
        return "MAP(" + typeName(k.t) + ", " + typeName(v.t) + ")";
    }
    case DUCKDB_TYPE_UNION:
        return "UNION";
    case DUCKDB_TYPE_BIT:
        return "BIT";
    case DUCKDB_TYPE_SQLNULL:
        return "NULL";
    default:
        return "UNKNOWN";
    }
}

json vectorValue(duckdb_vector vec, duckdb_logical_type type, idx_t row)
{
    uint64_t *validity = duckdb_vector_get_validity(vec);
    if (validity && !duckdb_validity_row_is_valid(validity, row))
        return nullptr;
    void *data = duckdb_vector_get_data(vec);
    switch (duckdb_get_type_id(type)) {
    case DUCKDB_TYPE_BOOLEAN:
        return static_cast<bool *>(data)[row];
    case DUCKDB_TYPE_TINYINT:
        return static_cast<int8_t *>(data)[row];
    case DUCKDB_TYPE_SMALLINT:
        return static_cast<int16_t *>(data)[row];
    case DUCKDB_TYPE_INTEGER:
        return static_cast<int32_t *>(data)[row];
    case DUCKDB_TYPE_BIGINT:
        return integerValue(static_cast<int64_t *>(data)[row]);
    case DUCKDB_TYPE_UTINYINT:
        return static_cast<uint8_t *>(data)[row];
    case DUCKDB_TYPE_USMALLINT:
        return static_cast<uint16_t *>(data)[row];
    case DUCKDB_TYPE_UINTEGER:
        return static_cast<uint32_t *>(data)[row];
    case DUCKDB_TYPE_UBIGINT:
        return unsignedValue(static_cast<uint64_t *>(data)[row]);
    case DUCKDB_TYPE_HUGEINT: {
        const auto h = static_cast<duckdb_hugeint *>(data)[row];
        return i128Value((i128(h.upper) << 64) | i128(h.lower));
    }
    case DUCKDB_TYPE_UHUGEINT: {
        const auto h = static_cast<duckdb_uhugeint *>(data)[row];
        const u128 v = (u128(h.upper) << 64) | u128(h.lower);
        return v <= u128(9007199254740991ULL) ? json(static_cast<long long>(v))
                                              : json{{"$int", u128Text(v)}};
    }
    case DUCKDB_TYPE_FLOAT:
        return floatValue(static_cast<float *>(data)[row]);
    case DUCKDB_TYPE_DOUBLE:
        return floatValue(static_cast<double *>(data)[row]);
    case DUCKDB_TYPE_DECIMAL: {
        const int scale = duckdb_decimal_scale(type);
        i128 v = 0;
        switch (duckdb_decimal_internal_type(type)) {
        case DUCKDB_TYPE_SMALLINT:
            v = static_cast<int16_t *>(data)[row];
            break;
        case DUCKDB_TYPE_INTEGER:
            v = static_cast<int32_t *>(data)[row];
            break;
        case DUCKDB_TYPE_BIGINT:
            v = static_cast<int64_t *>(data)[row];
            break;
        default: {
            const auto h = static_cast<duckdb_hugeint *>(data)[row];
            v = (i128(h.upper) << 64) | i128(h.lower);
        }
        }
        return decimalText(v, scale);
    }
    case DUCKDB_TYPE_VARCHAR:
        return textValue(stringAt(data, row));
    case DUCKDB_TYPE_BLOB:
        return bytesValue(stringAt(data, row));
    case DUCKDB_TYPE_DATE: {
        const int32_t days = static_cast<duckdb_date *>(data)[row].days;
        if (days == INT32_MAX)
            return "infinity";
        if (days == -INT32_MAX)
            return "-infinity";
        return dateText(days);
    }
    case DUCKDB_TYPE_TIME:
        return timeText(static_cast<duckdb_time *>(data)[row].micros);
    case DUCKDB_TYPE_TIME_TZ: {
        const duckdb_time_tz_struct t = duckdb_from_time_tz(
            static_cast<duckdb_time_tz *>(data)[row]);
        const long long micros = ((t.time.hour * 60LL + t.time.min) * 60 + t.time.sec) * 1000000LL
                                 + t.time.micros;
        const int off = t.offset;
        char buf[16];
        std::snprintf(buf, sizeof buf, "%c%02d:%02d", off < 0 ? '-' : '+', std::abs(off) / 3600,
                      (std::abs(off) / 60) % 60);
        return timeText(micros) + buf;
    }
    case DUCKDB_TYPE_TIMESTAMP:
        return timestampValue(static_cast<duckdb_timestamp *>(data)[row].micros, false);
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        return timestampValue(static_cast<duckdb_timestamp *>(data)[row].micros, true);
    case DUCKDB_TYPE_TIMESTAMP_S: {
        const int64_t s = static_cast<duckdb_timestamp_s *>(data)[row].seconds;
        return timestampValue(s == INT64_MAX || s == -INT64_MAX ? s : s * 1000000LL, false);
    }
    case DUCKDB_TYPE_TIMESTAMP_MS: {
        const int64_t ms = static_cast<duckdb_timestamp_ms *>(data)[row].millis;
        return timestampValue(ms == INT64_MAX || ms == -INT64_MAX ? ms : ms * 1000LL, false);
    }
    case DUCKDB_TYPE_TIMESTAMP_NS: {
        const int64_t ns = static_cast<duckdb_timestamp_ns *>(data)[row].nanos;
        return timestampValue(ns == INT64_MAX || ns == -INT64_MAX ? ns : ns / 1000LL, false);
    }
    case DUCKDB_TYPE_INTERVAL:
        return intervalText(static_cast<duckdb_interval *>(data)[row]);
    case DUCKDB_TYPE_UUID:
        return uuidText(static_cast<duckdb_hugeint *>(data)[row]);
    case DUCKDB_TYPE_ENUM: {
        idx_t index = 0;
        switch (duckdb_enum_internal_type(type)) {
        case DUCKDB_TYPE_UTINYINT:
            index = static_cast<uint8_t *>(data)[row];
            break;
        case DUCKDB_TYPE_USMALLINT:
            index = static_cast<uint16_t *>(data)[row];
            break;
        default:
            index = static_cast<uint32_t *>(data)[row];
        }
        return takeString(duckdb_enum_dictionary_value(type, index));
    }
    case DUCKDB_TYPE_LIST:
    case DUCKDB_TYPE_MAP: {
        const auto entry = static_cast<duckdb_list_entry *>(data)[row];
        duckdb_vector child = duckdb_list_vector_get_child(vec);
        TypeGuard childType{duckdb_list_type_child_type(type)};
        json out = json::array();
        for (idx_t i = 0; i < entry.length; ++i) {
            json v = vectorValue(child, childType.t, entry.offset + i);
            if (duckdb_get_type_id(type) == DUCKDB_TYPE_MAP) // STRUCT(key, value) -> [key, value]
                out.push_back(json::array({v.value("key", json()), v.value("value", json())}));
            else
                out.push_back(std::move(v));
        }
        return out;
    }
    case DUCKDB_TYPE_ARRAY: {
        const idx_t size = duckdb_array_type_array_size(type);
        duckdb_vector child = duckdb_array_vector_get_child(vec);
        TypeGuard childType{duckdb_array_type_child_type(type)};
        json out = json::array();
        for (idx_t i = 0; i < size; ++i)
            out.push_back(vectorValue(child, childType.t, row * size + i));
        return out;
    }
    case DUCKDB_TYPE_STRUCT: {
        json out = json::object();
        const idx_t n = duckdb_struct_type_child_count(type);
        for (idx_t i = 0; i < n; ++i) {
            TypeGuard childType{duckdb_struct_type_child_type(type, i)};
            out[takeString(duckdb_struct_type_child_name(type, i))]
                = vectorValue(duckdb_struct_vector_get_child(vec, i), childType.t, row);
        }
        return out;
    }
    default:
        return "(a " + typeName(type) + " value: not representable; cast it to VARCHAR)";
    }
}

ChunkColumn chunkColumn(duckdb_data_chunk chunk, idx_t column, duckdb_logical_type type)
{
    ChunkColumn c;
    c.vector = duckdb_data_chunk_get_vector(chunk, column);
    c.type = type;
    c.id = duckdb_get_type_id(type);
    c.data = duckdb_vector_get_data(c.vector);
    c.validity = duckdb_vector_get_validity(c.vector);
    return c;
}

void writeValue(RowWriter &rows, const ChunkColumn &c, idx_t row)
{
    // The validity mask: one bit per row, 64 rows to a word (duckdb.h).
    if (c.validity && !((c.validity[row / 64] >> (row % 64)) & 1))
        return rows.null();
    switch (c.id) {
    case DUCKDB_TYPE_TINYINT:
        return rows.integer(static_cast<const int8_t *>(c.data)[row]);
    case DUCKDB_TYPE_SMALLINT:
        return rows.integer(static_cast<const int16_t *>(c.data)[row]);
    case DUCKDB_TYPE_INTEGER:
        return rows.integer(static_cast<const int32_t *>(c.data)[row]);
    case DUCKDB_TYPE_BIGINT:
        return rows.integer(static_cast<const int64_t *>(c.data)[row]);
    case DUCKDB_TYPE_UTINYINT:
        return rows.integer(static_cast<const uint8_t *>(c.data)[row]);
    case DUCKDB_TYPE_USMALLINT:
        return rows.integer(static_cast<const uint16_t *>(c.data)[row]);
    case DUCKDB_TYPE_UINTEGER:
        return rows.integer(static_cast<const uint32_t *>(c.data)[row]);
    case DUCKDB_TYPE_DOUBLE:
        return rows.floating(static_cast<const double *>(c.data)[row]);
    case DUCKDB_TYPE_VARCHAR:
        return rows.text(stringAt(c.data, row));
    case DUCKDB_TYPE_BLOB:
        return rows.bytes(stringAt(c.data, row));
    default:
        return rows.value(vectorValue(c.vector, c.type, row));
    }
}

} // namespace DbHost
