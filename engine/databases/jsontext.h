#pragma once
// A page's rows written straight to JSON text, in one place for the engine (PostgreSQL's rows,
// pgvalues.cpp) and sandbox-dbhost (SQLite's and DuckDB's, dbhost/wire.cpp). Plain C++ without
// Qt: sandbox-dbhost is built without it. `Out` is a std::string or a QByteArray.

#include <cstdint>
#include <string_view>

namespace Sandbox::JsonText {

// Appends `s`, valid UTF-8 (the caller checks), as a JSON string: quotes, backslashes and control
// characters escaped, everything else copied as it is.
template<typename Out>
void appendString(Out &out, std::string_view s)
{
    static const char kHex[] = "0123456789abcdef";
    out.reserve(out.size() + s.size() + 2);
    out += '"';
    size_t run = 0; // bytes copied as they are, written in one append
    for (size_t i = 0; i < s.size(); ++i) {
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
    out.append(s.data() + run, s.size() - run);
    out += '"';
}

} // namespace Sandbox::JsonText
