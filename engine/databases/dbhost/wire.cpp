#include "wire.h"

#include "../jsontext.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

namespace DbHost {

namespace {
constexpr long long kMaxSafe = RowWriter::kMaxSafeInteger; // 2^53 - 1
const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
} // namespace

std::string base64Encode(std::string_view in)
{
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += kAlphabet[(n >> 6) & 63];
        out += kAlphabet[n & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t n = uint8_t(in[i]) << 16;
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += kAlphabet[(n >> 6) & 63];
        out += '=';
    }
    return out;
}

bool base64Decode(std::string_view text, std::string *out)
{
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+' || c == '-')
            return 62;
        if (c == '/' || c == '_')
            return 63;
        return -1;
    };
    out->clear();
    uint32_t acc = 0;
    int bits = 0;
    size_t padding = 0;
    for (char c : text) {
        if (c == '=') {
            ++padding;
            continue;
        }
        if (padding)
            return false;
        const int v = value(c);
        if (v < 0)
            return false;
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->push_back(char((acc >> bits) & 0xff));
        }
    }
    return padding <= 2;
}

bool isValidUtf8(std::string_view s)
{
    size_t i = 0;
    const size_t n = s.size();
    // ASCII eight bytes at a time: most text is, and a page checks every string it holds.
    for (uint64_t word; i + 8 <= n; i += 8) {
        std::memcpy(&word, s.data() + i, 8);
        if (word & 0x8080808080808080ULL)
            break;
    }
    while (i < n) {
        const uint8_t c = uint8_t(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        uint32_t cp = 0;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else
            return false;
        if (i + len > n)
            return false;
        for (int k = 1; k < len; ++k) {
            const uint8_t cc = uint8_t(s[i + k]);
            if ((cc & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)
            || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

json integerValue(long long v)
{
    if (v > kMaxSafe || v < -kMaxSafe)
        return json{{"$int", std::to_string(v)}};
    return json(v);
}

json unsignedValue(unsigned long long v)
{
    if (v > static_cast<unsigned long long>(kMaxSafe))
        return json{{"$int", std::to_string(v)}};
    return json(static_cast<long long>(v));
}

json bigIntegerText(const std::string &digits)
{
    // Up to 15 digits always fit in 2^53.
    const size_t len = digits.size() - (digits.starts_with('-') ? 1 : 0);
    if (len <= 15)
        return json(std::stoll(digits));
    return json{{"$int", digits}};
}

json floatValue(double v)
{
    if (std::isnan(v))
        return json{{"$float", "NaN"}};
    if (std::isinf(v))
        return json{{"$float", v > 0 ? "Infinity" : "-Infinity"}};
    return json(v);
}

json bytesValue(std::string_view bytes)
{
    return json{{"$bytes", base64Encode(bytes)}};
}

json textValue(std::string_view text)
{
    if (!isValidUtf8(text))
        return bytesValue(text);
    return json(std::string(text));
}

bool taggedParam(const json &v, std::string *tag, std::string *payload)
{
    if (!v.is_object() || v.size() != 1)
        return false;
    const auto it = v.begin();
    if (!it.value().is_string())
        return false;
    const std::string &key = it.key();
    if (key != "$int" && key != "$bytes" && key != "$float")
        return false;
    *tag = key.substr(1);
    *payload = it.value().get<std::string>();
    return true;
}

size_t approximateSize(const json &v)
{
    switch (v.type()) {
    case json::value_t::string:
        return v.get_ref<const std::string &>().size() + 2;
    case json::value_t::object:
    case json::value_t::array: {
        size_t n = 2;
        for (const auto &e : v)
            n += approximateSize(e) + 1;
        return n + (v.is_object() ? 16 * v.size() : 0);
    }
    default:
        return 8;
    }
}

void RowWriter::floating(double v)
{
    if (!std::isfinite(v)) {
        separate();
        m_out += std::isnan(v) ? "{\"$float\":\"NaN\"}"
                 : v > 0       ? "{\"$float\":\"Infinity\"}"
                               : "{\"$float\":\"-Infinity\"}";
        return;
    }
    separate();
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    const std::string_view digits(buf, size_t(r.ptr - buf));
    m_out += digits;
    // As nlohmann writes a double: with a fraction or exponent, so that it reads back as one.
    if (digits.find_first_of(".e") == std::string_view::npos)
        m_out += ".0";
}

namespace {

// Whether every byte of `s` is printable ASCII other than '"' and '\\': then its JSON string is
// `s` itself between quotes, written in one copy. Eight bytes at a time: a byte of 0x80 or more,
// below 0x20 (x - 0x20 borrows into the high bit), or equal to '"' or '\\' (x ^ c is zero) shows
// as its high bit.
bool isPlainAscii(std::string_view s)
{
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    const auto zeroByte = [](uint64_t w) { return (w - kOnes) & ~w & kHigh; };
    size_t i = 0;
    for (uint64_t w; i + 8 <= s.size(); i += 8) {
        std::memcpy(&w, s.data() + i, 8);
        if ((w & kHigh) | ((w - 0x20 * kOnes) & ~w & kHigh) | zeroByte(w ^ ('"' * kOnes))
            | zeroByte(w ^ ('\\' * kOnes)))
            return false;
    }
    for (; i < s.size(); ++i) {
        const uint8_t c = uint8_t(s[i]);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
            return false;
    }
    return true;
}

} // namespace

void RowWriter::checkRow(size_t adding) const
{
    if (m_out.size() - m_rowStart + adding > kMaxRowBytes)
        throw DbError{"too_large",
                      "a row of the result is over 16 MiB, the most one row may take: select a "
                      "part of its values (substr(), length())"};
}

std::string clippedMessage(std::string message)
{
    if (message.size() <= kMaxMessageBytes)
        return message;
    size_t cut = kMaxMessageBytes - 64; // and the note of what was cut: kMaxMessageBytes in all
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80)
        --cut; // not inside a character
    const size_t left = message.size() - cut;
    message.resize(cut);
    return message + "... (" + std::to_string(left) + " bytes more)";
}

void RowWriter::text(std::string_view s)
{
    checkRow(s.size());
    if (isPlainAscii(s)) {
        char *const start = m_out.room(s.size() + 3); // a comma, the quotes
        char *p = start;
        if (!std::exchange(m_firstValue, false))
            *p++ = ',';
        *p++ = '"';
        p = std::copy_n(s.data(), s.size(), p);
        *p++ = '"';
        m_out.commit(size_t(p - start));
        return;
    }
    if (!isValidUtf8(s))
        return bytes(s);
    separate();
    Sandbox::JsonText::appendString(m_out, s);
}

void RowWriter::bytes(std::string_view b)
{
    checkRow(b.size() / 3 * 4);
    separate();
    m_out += "{\"$bytes\":\"";
    m_out += base64Encode(b);
    m_out += "\"}";
}

void RowWriter::value(const json &v)
{
    separate();
    m_out += v.dump(-1, ' ', false, json::error_handler_t::replace);
    checkRow(0);
}

std::vector<uint8_t> RowWriter::finish()
{
    if (!m_rows)
        m_out += '['; // the page's own bracket, for a page without rows
    m_out += ']';
    m_rows = 0;
    return m_out.take();
}

json rowsText(std::vector<uint8_t> text)
{
    return json::binary(std::move(text)); // the text itself, not a copy (a page is up to 12 MiB)
}

AnswerLine answerLine(const json &answer)
{
    const auto rows = answer.is_object() ? answer.find("rows") : answer.end();
    if (rows == answer.end() || !rows->is_binary())
        return {answer.dump(-1, ' ', false, json::error_handler_t::replace), {}, "\n"};
    json rest = json::object(); // the other members: not a copy of the rows
    for (auto it = answer.begin(); it != answer.end(); ++it)
        if (it.key() != "rows")
            rest[it.key()] = it.value();
    const auto &text = rows->get_binary();
    AnswerLine line{rest.dump(-1, ' ', false, json::error_handler_t::replace),
                    std::string_view(reinterpret_cast<const char *>(text.data()), text.size()),
                    "}\n"};
    line.head.pop_back(); // the closing brace
    line.head += rest.empty() ? "\"rows\":" : ",\"rows\":";
    return line;
}

} // namespace DbHost
