#pragma once
// What the first word of a statement says, in one place for the engine (a paged result's command
// before its server names it) and sandbox-dbhost (SQLite and DuckDB name theirs by it). Plain C++
// without Qt: sandbox-dbhost is built without it.

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace Sandbox::SqlCommand {

// Where the text after `i` stops being whitespace, semicolons and comments (-- and /* */).
inline size_t skipSpaceAndComments(std::string_view sql, size_t i = 0)
{
    while (i < sql.size()) {
        const char c = sql[i];
        if (std::isspace(uint8_t(c)) || c == ';') {
            ++i;
        } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
            while (i < sql.size() && sql[i] != '\n')
                ++i;
        } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
            const size_t end = sql.find("*/", i + 2);
            i = end == std::string_view::npos ? sql.size() : end + 2;
        } else {
            break;
        }
    }
    return i;
}

// The first keyword of a statement, upper-case ("SELECT", "INSERT", ...), skipping comments;
// empty when it does not start with a word.
inline std::string firstKeyword(std::string_view sql)
{
    size_t i = skipSpaceAndComments(sql);
    std::string out;
    while (i < sql.size() && std::isalpha(uint8_t(sql[i])))
        out += char(std::toupper(uint8_t(sql[i++])));
    return out;
}

// True when `sql` holds only whitespace, semicolons and comments.
inline bool isBlank(std::string_view sql)
{
    return skipSpaceAndComments(sql) >= sql.size();
}

// Commands whose count of rows is rowsAffected (the others report 0).
inline bool changesRows(std::string_view command)
{
    return command == "INSERT" || command == "UPDATE" || command == "DELETE" || command == "MERGE"
           || command == "REPLACE" || command == "COPY";
}

} // namespace Sandbox::SqlCommand
