#pragma once
// Helpers shared by the dbhost backends: the value conventions of docs/protocol.md 4.3
// (tagged JSON for what JSON cannot carry), base64, UTF-8 checks, and the error type.

#include "../sqlcommand.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace DbHost {

using json = nlohmann::json;

// What a request fails with. `offset` is the 0-based byte offset of the error in the SQL text
// of the request (-1: unknown); `line`/`column` (1-based) when the engine reports those instead.
struct DbError
{
    std::string code = "sql"; // sql | bad_request | cancelled | too_large | internal
    std::string message;
    long long offset = -1;
    int line = 0;
    int column = 0;
    int statementIndex = -1; // in a transaction
};

// The most one row of a result may take as JSON text, and an error's message: docs/protocol.md
// 4.3.3 and 4.3.6 (the engine holds every backend to the same; the host keeps to them itself).
constexpr size_t kMaxRowBytes = 16u << 20;
constexpr size_t kMaxMessageBytes = 16u << 10;

// `message` cut to kMaxMessageBytes at a character's start, saying how much was left out (the
// engine cuts what a host sends it the same way).
std::string clippedMessage(std::string message);

std::string base64Encode(std::string_view bytes);
bool base64Decode(std::string_view text, std::string *out);
bool isValidUtf8(std::string_view s);

// Integers beyond +-(2^53-1) do not survive a JSON double: they go as {"$int":"digits"}.
json integerValue(long long v);
json unsignedValue(unsigned long long v);
json bigIntegerText(const std::string &digits); // always {"$int":...} unless it fits in 2^53
json floatValue(double v);                      // NaN/Infinity as {"$float":"NaN"}
json bytesValue(std::string_view bytes);        // {"$bytes":"base64"}
json textValue(std::string_view text);          // a string, or $bytes when not UTF-8

// Reads a tagged parameter. Returns the tag ("int", "bytes", "float") and its payload.
bool taggedParam(const json &v, std::string *tag, std::string *payload);

// Approximate encoded size of a value, for page byte limits.
size_t approximateSize(const json &v);

// A page's text as the bytes an answer holds it in (json::binary's container), so that it is
// written once and never copied on its way to the socket. The operations JsonText::appendString
// needs, inline: a page is written a few bytes at a time (a value, a comma), and a vector's own
// insert() for each of those was the largest part of a page's cost beyond SQLite's own work. The
// vector's size is the room made so far (grown by doubling, zero-filled once); size() is what was
// written.
class PageBytes
{
public:
    void reserve(size_t n)
    {
        if (n > m_bytes.size())
            grow(n);
    }
    size_t size() const { return m_size; }
    void append(const char *p, size_t n)
    {
        if (n)
            std::memcpy(room(n), p, n);
        m_size += n;
    }
    PageBytes &operator+=(char c)
    {
        *room(1) = c;
        ++m_size;
        return *this;
    }
    PageBytes &operator+=(std::string_view s)
    {
        append(s.data(), s.size());
        return *this;
    }
    // Room for `n` bytes at the end, to write and then commit(); valid until the next call.
    char *room(size_t n)
    {
        if (m_size + n > m_bytes.size())
            grow(m_size + n);
        return reinterpret_cast<char *>(m_bytes.data()) + m_size;
    }
    void commit(size_t n) { m_size += n; }
    std::vector<uint8_t> take()
    {
        m_bytes.resize(m_size); // smaller: neither moved nor filled
        m_size = 0;
        return std::exchange(m_bytes, {});
    }

private:
    void grow(size_t n) { m_bytes.resize(std::max({n, 2 * m_bytes.size(), size_t(4096)})); }

    std::vector<uint8_t> m_bytes;
    size_t m_size = 0;
};

// The rows of a page written straight to JSON text (an array of arrays), by the rules of the
// value functions above, without a tree of values: what a page costs is its text. The text goes
// into an answer as rowsText() and out unchanged through answerLine().
class RowWriter
{
public:
    void beginRow()
    {
        m_out += m_rows++ ? std::string_view(",[") : std::string_view("[["); // the page's own first
        m_firstValue = true;
        m_rowStart = m_out.size();
    }
    void endRow()
    {
        m_out += ']';
        checkRow(0);
    }
    void null() { separate(), m_out += std::string_view("null"); }
    void integer(long long v)
    {
        // Written in place: a comma, {"$int":" and 20 digits at most, "}.
        char *const start = m_out.room(40);
        char *p = start;
        if (!std::exchange(m_firstValue, false))
            *p++ = ',';
        const bool safe = v <= kMaxSafeInteger && v >= -kMaxSafeInteger;
        if (!safe)
            p = std::copy_n("{\"$int\":\"", 9, p);
        p = std::to_chars(p, p + 20, v).ptr;
        if (!safe)
            p = std::copy_n("\"}", 2, p);
        m_out.commit(size_t(p - start));
    }
    void floating(double v);
    void text(std::string_view s); // a string, or $bytes when not UTF-8
    void bytes(std::string_view b);
    void value(const json &v); // any other value, as it dumps
    size_t rows() const { return m_rows; }
    size_t size() const { return m_out.size(); }
    // The array's text; the writer is empty afterwards.
    std::vector<uint8_t> finish();

    // Integers beyond +-(2^53-1) do not survive a JSON double: they go as {"$int":"digits"}.
    static constexpr long long kMaxSafeInteger = 9007199254740991LL;

private:
    void separate()
    {
        if (!std::exchange(m_firstValue, false))
            m_out += ',';
    }
    // Throws too_large when the row, with `adding` bytes more, would pass kMaxRowBytes: checked
    // before a long value is written, so that none is copied whole into a row refused anyway.
    void checkRow(size_t adding) const;
    PageBytes m_out;
    size_t m_rows = 0;
    size_t m_rowStart = 0;
    bool m_firstValue = true;
};

// A page's rows as written by RowWriter, for an answer's "rows" (kept as text, not re-parsed).
json rowsText(std::vector<uint8_t> text);

// An answer line in three parts, so that a page's rows go to the socket from where they were
// written: `answer` dumped without "rows", then "rows" as the text rowsText() holds (a view of
// it, valid while `answer` is), then the line's end.
struct AnswerLine
{
    std::string head;
    std::string_view rows;
    std::string tail;
};
AnswerLine answerLine(const json &answer);

// A statement's command and blank SQL, as the engine reads them (../sqlcommand.h).
using Sandbox::SqlCommand::statementAt;
using Sandbox::SqlCommand::statementCommand;
inline bool isBlankSql(std::string_view sql)
{
    return Sandbox::SqlCommand::isBlank(sql);
}

} // namespace DbHost
