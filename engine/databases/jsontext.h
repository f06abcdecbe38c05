#pragma once
// A page's rows written straight to JSON text, in one place for the engine (PostgreSQL's rows,
// pgvalues.cpp) and sandbox-dbhost (SQLite's and DuckDB's, dbhost/wire.cpp). Plain C++ without
// Qt: sandbox-dbhost is built without it. `Out` is a std::string or a QByteArray.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace Sandbox::JsonText {

// Whether any of the 8 bytes of `w` must be escaped in a JSON string: below 0x20, '"' or '\\'.
// Exact for the word as a whole (which byte it is, the caller finds one byte at a time).
constexpr bool anyToEscape(uint64_t w)
{
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    const auto anyZero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    return (((w - kOnes * 0x20) & ~w & kHigh) | anyZero(w ^ (kOnes * '"'))
            | anyZero(w ^ (kOnes * '\\')))
           != 0;
}

// Appends `s`, valid UTF-8 (the caller checks), as a JSON string: quotes, backslashes and control
// characters escaped, everything else copied as it is. Eight bytes are looked at at once (a value
// of megabytes passes in a few milliseconds, on the engine's event loop).
template<typename Out>
void appendString(Out &out, std::string_view s)
{
    static const char kHex[] = "0123456789abcdef";
    out.reserve(out.size() + s.size() + 2);
    out += '"';
    size_t run = 0; // bytes copied as they are, written in one append
    size_t i = 0;
    while (i < s.size()) {
        if (s.size() - i >= 8) {
            uint64_t w = 0;
            std::memcpy(&w, s.data() + i, 8);
            if (!anyToEscape(w)) {
                i += 8;
                continue;
            }
        }
        for (const size_t stop = std::min(i + 8, s.size()); i < stop; ++i) {
            const uint8_t c = uint8_t(s[i]);
            if (c >= 0x20 && c != '"' && c != '\\')
                continue;
            out.append(s.data() + run, i - run);
            run = i + 1;
            switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 15];
            }
        }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
}

} // namespace Sandbox::JsonText
