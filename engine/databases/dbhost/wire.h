#pragma once
// Helpers shared by the dbhost backends: the value conventions of docs/protocol.md 4.3
// (tagged JSON for what JSON cannot carry), base64, UTF-8 checks, and the error type.

#include "../sqlcommand.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
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
// needs; reserve() grows by doubling (an exact reserve per value would copy the page each time).
class PageBytes
{
public:
    void reserve(size_t n)
    {
        if (n > m_bytes.capacity())
            m_bytes.reserve(std::max(n, 2 * m_bytes.capacity()));
    }
    size_t size() const { return m_bytes.size(); }
    void append(const char *p, size_t n) { m_bytes.insert(m_bytes.end(), p, p + n); }
    PageBytes &operator+=(char c)
    {
        m_bytes.push_back(uint8_t(c));
        return *this;
    }
    PageBytes &operator+=(std::string_view s)
    {
        append(s.data(), s.size());
        return *this;
    }
    std::vector<uint8_t> take() { return std::exchange(m_bytes, {}); }

private:
    std::vector<uint8_t> m_bytes;
};

// The rows of a page written straight to JSON text (an array of arrays), by the rules of the
// value functions above, without a tree of values: what a page costs is its text. The text goes
// into an answer as rowsText() and out unchanged through answerLine().
class RowWriter
{
public:
    void beginRow();
    void endRow() { m_out += ']'; }
    void null() { separate(), m_out += "null"; }
    void integer(long long v);
    void floating(double v);
    void text(std::string_view s); // a string, or $bytes when not UTF-8
    void bytes(std::string_view b);
    void value(const json &v); // any other value, as it dumps
    size_t rows() const { return m_rows; }
    size_t size() const { return m_out.size(); }
    // The array's text; the writer is empty afterwards.
    std::vector<uint8_t> finish();

private:
    void separate();
    PageBytes m_out;
    size_t m_rows = 0;
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

// A statement's first keyword and blank SQL, as the engine reads them (../sqlcommand.h).
using Sandbox::SqlCommand::firstKeyword;
inline bool isBlankSql(std::string_view sql)
{
    return Sandbox::SqlCommand::isBlank(sql);
}

} // namespace DbHost
