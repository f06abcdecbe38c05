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

namespace Detail {

// Past a quoted name or string starting at `i` ('...', "...", `...`, and [...] unless
// `brackets` is false — DuckDB's lists; a doubled quote inside stays in it); `i` unchanged when
// nothing quoted starts there.
inline size_t skipQuoted(std::string_view sql, size_t i, bool brackets = true)
{
    if (i >= sql.size())
        return i;
    const char open = sql[i];
    const char close = open == '[' ? ']' : open;
    if (open != '\'' && open != '"' && open != '`' && (open != '[' || !brackets))
        return i;
    for (size_t j = i + 1; j < sql.size(); ++j) {
        if (sql[j] != close)
            continue;
        if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
            ++j;
            continue;
        }
        return j + 1;
    }
    return sql.size();
}

// Past the parenthesized group starting at `i` (nested groups, quotes and comments inside);
// npos when none starts there or it never closes.
inline size_t skipGroup(std::string_view sql, size_t i)
{
    if (i >= sql.size() || sql[i] != '(')
        return std::string_view::npos;
    int depth = 0;
    while (i < sql.size()) {
        const size_t j = skipSpaceAndComments(sql, i);
        if (j != i) {
            i = j;
            continue;
        }
        const size_t q = skipQuoted(sql, i);
        if (q != i) {
            i = q;
            continue;
        }
        if (sql[i] == '(')
            ++depth;
        else if (sql[i] == ')' && --depth == 0)
            return i + 1;
        ++i;
    }
    return std::string_view::npos;
}

// The upper-case word at `i` (letters, digits, _ and $ after a letter or _), and where it ends.
inline std::string wordAt(std::string_view sql, size_t i, size_t *end)
{
    std::string out;
    if (i < sql.size() && (std::isalpha(uint8_t(sql[i])) || sql[i] == '_'))
        while (i < sql.size() && (std::isalnum(uint8_t(sql[i])) || sql[i] == '_' || sql[i] == '$'))
            out += char(std::toupper(uint8_t(sql[i++])));
    *end = i;
    return out;
}

} // namespace Detail

// What a statement does, as PostgreSQL's command tag names it: its first keyword, but for a
// statement with common table expressions (WITH [RECURSIVE] name [(columns)] [USING KEY (...)] AS
// [NOT] [MATERIALIZED] (...), ...) the keyword after them — "INSERT" for WITH ... INSERT, so that
// its rows count as rowsAffected — and "SELECT" for VALUES. "WITH" when the expressions do not
// parse.
inline std::string statementCommand(std::string_view sql)
{
    using namespace Detail;
    const auto named = [](std::string word) { return word == "VALUES" ? "SELECT" : word; };
    size_t i = skipSpaceAndComments(sql);
    size_t end = 0;
    std::string word = wordAt(sql, i, &end);
    if (word != "WITH")
        return named(firstKeyword(sql));
    const std::string with = "WITH"; // the answer when the expressions do not parse
    i = skipSpaceAndComments(sql, end);
    if (wordAt(sql, i, &end) == "RECURSIVE")
        i = skipSpaceAndComments(sql, end);
    for (;;) {
        // The expression's name.
        const size_t q = skipQuoted(sql, i);
        if (q != i)
            end = q;
        else if (wordAt(sql, i, &end).empty())
            return with;
        i = skipSpaceAndComments(sql, end);
        // Its columns, and DuckDB's USING KEY (...).
        if (i < sql.size() && sql[i] == '(') {
            i = skipGroup(sql, i);
            if (i == std::string_view::npos)
                return with;
            i = skipSpaceAndComments(sql, i);
        }
        word = wordAt(sql, i, &end);
        if (word == "USING") {
            i = skipSpaceAndComments(sql, end);
            if (wordAt(sql, i, &end) != "KEY")
                return with;
            i = skipGroup(sql, skipSpaceAndComments(sql, end));
            if (i == std::string_view::npos)
                return with;
            i = skipSpaceAndComments(sql, i);
            word = wordAt(sql, i, &end);
        }
        if (word != "AS")
            return with;
        i = skipSpaceAndComments(sql, end);
        word = wordAt(sql, i, &end);
        if (word == "NOT") {
            i = skipSpaceAndComments(sql, end);
            word = wordAt(sql, i, &end);
        }
        if (word == "MATERIALIZED")
            i = skipSpaceAndComments(sql, end);
        // Its body.
        i = skipGroup(sql, i);
        if (i == std::string_view::npos)
            return with;
        i = skipSpaceAndComments(sql, i);
        if (i < sql.size() && sql[i] == ',') {
            i = skipSpaceAndComments(sql, i + 1);
            continue;
        }
        word = wordAt(sql, i, &end);
        return word.empty() ? with : named(word);
    }
}

// True when `sql` holds only whitespace, semicolons and comments.
inline bool isBlank(std::string_view sql)
{
    return skipSpaceAndComments(sql) >= sql.size();
}

// The `index`-th statement (from 0) of a script, as PostgreSQL and DuckDB split one: at the
// semicolons outside quotes ('...', "...", `...`), dollar-quoted strings ($$...$$, $tag$...$tag$)
// and comments, blank pieces not counted; empty when the script has fewer statements.
inline std::string_view statementAt(std::string_view sql, size_t index)
{
    size_t start = 0, n = 0;
    for (size_t i = 0; i <= sql.size();) {
        if (i == sql.size() || sql[i] == ';') {
            const std::string_view piece = sql.substr(start, i - start);
            if (!isBlank(piece) && n++ == index)
                return piece;
            start = ++i;
            continue;
        }
        const char c = sql[i];
        const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
        if (c == '-' && next == '-') {
            const size_t end = sql.find('\n', i);
            i = end == std::string_view::npos ? sql.size() : end;
        } else if (c == '/' && next == '*') {
            const size_t end = sql.find("*/", i + 2);
            i = end == std::string_view::npos ? sql.size() : end + 2;
        } else if (const size_t q = Detail::skipQuoted(sql, i, false); q != i) {
            i = q;
        } else if (c == '$' && (next == '$' || std::isalpha(uint8_t(next)) || next == '_')) {
            // $tag$ (not $1, a parameter): up to the same tag again.
            size_t t = i + 1;
            while (t < sql.size() && (std::isalnum(uint8_t(sql[t])) || sql[t] == '_'))
                ++t;
            if (t < sql.size() && sql[t] == '$') {
                const std::string_view tag = sql.substr(i, t + 1 - i);
                const size_t end = sql.find(tag, t + 1);
                i = end == std::string_view::npos ? sql.size() : end + tag.size();
            } else {
                i = t;
            }
        } else {
            ++i;
        }
    }
    return {};
}

// Commands whose count of rows is rowsAffected (the others report 0).
inline bool changesRows(std::string_view command)
{
    return command == "INSERT" || command == "UPDATE" || command == "DELETE" || command == "MERGE"
           || command == "REPLACE" || command == "COPY";
}

} // namespace Sandbox::SqlCommand
