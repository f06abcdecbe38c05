#include "json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <array>
#include <cstring>

namespace Sandbox::Json {

namespace {

inline constexpr int DepthCeiling = 1024; // the most any caller may ask for

bool isWhitespace(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool isDigit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

int hexValue(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// True when none of the eight bytes at p is a quote, a backslash, a control character or
// non-ASCII (SWAR: a zero byte of x ^ pattern marks a match; "less than 0x20" by subtraction).
bool plainAscii8(const unsigned char *p)
{
    constexpr quint64 ones = 0x0101010101010101ULL;
    constexpr quint64 highs = 0x8080808080808080ULL;
    quint64 x;
    memcpy(&x, p, 8);
    const auto hasZero = [](quint64 v) { return (v - ones) & ~v & highs; };
    const quint64 special = hasZero(x ^ (ones * '"')) | hasZero(x ^ (ones * '\\'))
                            | ((x - ones * 0x20) & ~x & highs) | (x & highs);
    return special == 0;
}

// One pass over the text; the first error wins and stops it.
class Validator
{
public:
    Validator(QByteArrayView text, int maxDepth)
        : m_p(reinterpret_cast<const unsigned char *>(text.data()))
        , m_n(text.size())
        , m_maxDepth(std::clamp(maxDepth, 1, DepthCeiling))
    {}

    // Also finds the member `path` names (Json::Member) while it checks.
    void watch(std::initializer_list<QByteArrayView> path, Member *member)
    {
        m_pathLength = int(std::min<size_t>(path.size(), m_path.size()));
        std::copy_n(path.begin(), m_pathLength, m_path.begin());
        m_member = member;
        *m_member = Member{};
        if (m_pathLength > 0)
            m_next = Next::Descend; // the top-level value is the first object of the path
    }

    std::optional<SyntaxError> run()
    {
        if (m_n >= 3 && m_p[0] == 0xef && m_p[1] == 0xbb && m_p[2] == 0xbf)
            return fail(0, "a byte order mark is not allowed");
        skipWhitespace();
        if (m_pos == m_n)
            return fail(m_pos, "no JSON value");
        if (!value())
            return m_error;
        // Each completed value returns here only at depth 0; containers are walked in value().
        skipWhitespace();
        if (m_pos != m_n)
            return fail(m_pos, "unexpected text after the JSON value");
        return std::nullopt;
    }

private:
    // Reads one value, containers included, without recursion: the nesting lives in m_stack.
    bool value()
    {
        int depth = 0;
        for (;;) {
            // Here a value is expected.
            skipWhitespace();
            if (m_pos == m_n)
                return failed(m_pos, "unexpected end of the text: a value is missing");
            const unsigned char c = m_p[m_pos];
            if (depth == m_elementDepth) {
                ++m_member->elements;
                m_member->allArrays = m_member->allArrays && c == '[';
            }
            if (m_next != Next::Nothing)
                valueStarts(depth, c);
            if (c == '{' || c == '[') {
                if (depth == m_maxDepth)
                    return failed(m_pos, "nested too deeply (more than %1 levels)", m_maxDepth);
                m_stack[depth++] = c;
                ++m_pos;
                skipWhitespace();
                const unsigned char close = c == '{' ? '}' : ']';
                if (m_pos < m_n && m_p[m_pos] == close) {
                    ++m_pos;
                    --depth;
                } else if (c == '{') {
                    if (!member(depth))
                        return false;
                    continue;
                } else {
                    continue;
                }
            } else if (c == '"') {
                if (!string())
                    return false;
            } else if (c == '-' || isDigit(c)) {
                if (!number())
                    return false;
            } else if (c == 't') {
                if (!literal("true"))
                    return false;
            } else if (c == 'f') {
                if (!literal("false"))
                    return false;
            } else if (c == 'n') {
                if (!literal("null"))
                    return false;
            } else {
                return failed(m_pos, "unexpected character: a value is expected");
            }
            // A value is complete: close containers, or go on to the next element.
            for (;;) {
                if (depth == m_memberDepth) {
                    m_member->end = m_pos;
                    m_memberDepth = m_elementDepth = -1;
                }
                if (depth < m_onPath)
                    m_onPath = -1; // the object the path went through closed without the member
                if (depth == 0)
                    return true;
                skipWhitespace();
                if (m_pos == m_n)
                    return failed(m_pos, "unexpected end of the text: a container is not closed");
                const unsigned char open = m_stack[depth - 1];
                const unsigned char next = m_p[m_pos];
                if (next == ',') {
                    ++m_pos;
                    if (open == '{') {
                        skipWhitespace();
                        if (!member(depth))
                            return false;
                    }
                    break; // the next element's value
                }
                if ((open == '{' && next == '}') || (open == '[' && next == ']')) {
                    ++m_pos;
                    --depth;
                    continue;
                }
                return failed(m_pos, open == '{' ? "expected ',' or '}' after an object member"
                                                 : "expected ',' or ']' after an array element");
            }
        }
    }

    // What the path (watch()) expects of the value that starts at `depth`, where it is `c`.
    void valueStarts(int depth, unsigned char c)
    {
        if (m_next == Next::Descend) {
            if (c == '{')
                m_onPath = depth + 1;
        } else {
            m_member->begin = m_pos;
            m_member->isArray = c == '[';
            m_memberDepth = depth;
            if (c == '[')
                m_elementDepth = depth + 1;
        }
        m_next = Next::Nothing;
    }

    // An object member's name and colon, in an object at `depth`; its value follows.
    bool member(int depth)
    {
        if (m_pos == m_n || m_p[m_pos] != '"')
            return failed(m_pos, "expected a string as the member name");
        const qsizetype name = m_pos + 1;
        if (!string())
            return false;
        if (depth == m_onPath
            && QByteArrayView(m_p + name, m_pos - 1 - name) == m_path[size_t(depth - 1)]) {
            m_onPath = -1; // the first member of that name only
            m_next = depth == m_pathLength ? Next::Member : Next::Descend;
        }
        skipWhitespace();
        if (m_pos == m_n || m_p[m_pos] != ':')
            return failed(m_pos, "expected ':' after the member name");
        ++m_pos;
        return true;
    }

    bool string()
    {
        const qsizetype start = m_pos;
        ++m_pos; // the opening quote
        for (;;) {
            // The common case: printable ASCII that needs no attention, eight bytes at a time.
            while (m_pos + 8 <= m_n && plainAscii8(m_p + m_pos))
                m_pos += 8;
            while (m_pos < m_n) {
                const unsigned char c = m_p[m_pos];
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                    break;
                ++m_pos;
            }
            if (m_pos == m_n)
                return failed(start, "the string is not terminated");
            const unsigned char c = m_p[m_pos];
            if (c == '"') {
                ++m_pos;
                return true;
            }
            if (c < 0x20)
                return failed(m_pos, "a control character must be escaped in a string");
            if (c >= 0x80) {
                if (!utf8Sequence())
                    return false;
                continue;
            }
            // A backslash.
            if (m_pos + 1 >= m_n)
                return failed(start, "the string is not terminated");
            const unsigned char e = m_p[m_pos + 1];
            switch (e) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                m_pos += 2;
                break;
            case 'u':
                if (!unicodeEscape())
                    return false;
                break;
            default:
                return failed(m_pos, "an unknown escape in a string");
            }
        }
    }

    // \uXXXX at m_pos; a high surrogate must be followed by an escaped low one.
    bool unicodeEscape()
    {
        const int unit = hex4(m_pos + 2);
        if (unit < 0)
            return failed(m_pos, "\\u must be followed by four hex digits");
        if (unit >= 0xdc00 && unit <= 0xdfff)
            return failed(m_pos, "a lone low surrogate in a \\u escape");
        if (unit >= 0xd800 && unit <= 0xdbff) {
            const qsizetype low = m_pos + 6;
            const int second = (low + 1 < m_n && m_p[low] == '\\' && m_p[low + 1] == 'u')
                                   ? hex4(low + 2)
                                   : -1;
            if (second < 0xdc00 || second > 0xdfff)
                return failed(m_pos, "a high surrogate in a \\u escape without its low surrogate");
            m_pos += 12;
            return true;
        }
        m_pos += 6;
        return true;
    }

    int hex4(qsizetype at) const
    {
        if (at + 4 > m_n)
            return -1;
        int v = 0;
        for (int i = 0; i < 4; ++i) {
            const int h = hexValue(m_p[at + i]);
            if (h < 0)
                return -1;
            v = v * 16 + h;
        }
        return v;
    }

    // One UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
    bool utf8Sequence()
    {
        const unsigned char c = m_p[m_pos];
        int len = 0;
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4;
        if (len == 0 || m_pos + len > m_n)
            return failed(m_pos, "invalid UTF-8");
        for (int i = 1; i < len; ++i) {
            if ((m_p[m_pos + i] & 0xc0) != 0x80)
                return failed(m_pos, "invalid UTF-8");
        }
        const unsigned char c1 = m_p[m_pos + 1];
        if ((c == 0xe0 && c1 < 0xa0) || (c == 0xf0 && c1 < 0x90))
            return failed(m_pos, "invalid UTF-8 (an overlong sequence)");
        if (c == 0xed && c1 > 0x9f)
            return failed(m_pos, "invalid UTF-8 (an encoded surrogate)");
        if (c == 0xf4 && c1 > 0x8f)
            return failed(m_pos, "invalid UTF-8 (beyond U+10FFFF)");
        m_pos += len;
        return true;
    }

    // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    bool number()
    {
        const qsizetype start = m_pos;
        if (m_p[m_pos] == '-')
            ++m_pos;
        if (m_pos == m_n || !isDigit(m_p[m_pos]))
            return failed(start, "a number needs a digit after its sign");
        if (m_p[m_pos] == '0') {
            ++m_pos;
        } else {
            while (m_pos < m_n && isDigit(m_p[m_pos]))
                ++m_pos;
        }
        if (m_pos < m_n && m_p[m_pos] == '.') {
            ++m_pos;
            if (m_pos == m_n || !isDigit(m_p[m_pos]))
                return failed(start, "a number needs digits after its decimal point");
            while (m_pos < m_n && isDigit(m_p[m_pos]))
                ++m_pos;
        }
        if (m_pos < m_n && (m_p[m_pos] == 'e' || m_p[m_pos] == 'E')) {
            ++m_pos;
            if (m_pos < m_n && (m_p[m_pos] == '+' || m_p[m_pos] == '-'))
                ++m_pos;
            if (m_pos == m_n || !isDigit(m_p[m_pos]))
                return failed(start, "a number needs digits in its exponent");
            while (m_pos < m_n && isDigit(m_p[m_pos]))
                ++m_pos;
        }
        return true;
    }

    bool literal(const char *word)
    {
        const qsizetype len = qsizetype(strlen(word));
        if (m_pos + len > m_n || memcmp(m_p + m_pos, word, size_t(len)) != 0)
            return failed(m_pos, "unexpected character: a value is expected");
        m_pos += len;
        return true;
    }

    void skipWhitespace()
    {
        while (m_pos < m_n && isWhitespace(m_p[m_pos]))
            ++m_pos;
    }

    bool failed(qsizetype at, const char *message, int arg = -1)
    {
        QString text = QString::fromLatin1(message);
        if (arg >= 0)
            text = text.arg(arg);
        m_error = SyntaxError{at, text};
        return false;
    }

    std::optional<SyntaxError> fail(qsizetype at, const char *message)
    {
        failed(at, message);
        return m_error;
    }

    const unsigned char *m_p;
    qsizetype m_n;
    int m_maxDepth;
    qsizetype m_pos = 0;
    std::array<unsigned char, DepthCeiling> m_stack{};
    std::optional<SyntaxError> m_error;

    // watch(): the path, the object on it that is open (its depth; -1: none), what the next
    // value is to the path, and the member's value while it is open (the depth it started at,
    // and its elements' depth).
    enum class Next : quint8 { Nothing, Descend, Member };
    std::array<QByteArrayView, 8> m_path{};
    int m_pathLength = 0;
    Member *m_member = nullptr;
    int m_onPath = -1;
    Next m_next = Next::Nothing;
    int m_memberDepth = -1;
    int m_elementDepth = -1;
};

} // namespace

std::optional<SyntaxError> validate(QByteArrayView text, int maxDepth)
{
    return Validator(text, maxDepth).run();
}

std::optional<SyntaxError> validate(QByteArrayView text, std::initializer_list<QByteArrayView> path,
                                    Member *member, int maxDepth)
{
    Validator v(text, maxDepth);
    Member found;
    v.watch(path, &found);
    std::optional<SyntaxError> error = v.run();
    *member = error ? Member{} : found;
    return error;
}

Parsed parse(QByteArrayView text, int maxDepth)
{
    Parsed parsed;
    parsed.error = validate(text, maxDepth);
    if (parsed.error)
        return parsed;
    // Qt's reader drops U+FEFF written as its raw bytes inside a string (a file's byte order mark
    // sent in `content` vanished, a key that began with one lost it); the same character as an
    // escape it keeps. In valid JSON those bytes occur only inside strings.
    static constexpr QByteArrayView kRawBom("\xEF\xBB\xBF");
    QByteArray escaped;
    if (text.contains(kRawBom)) {
        escaped = text.toByteArray().replace(kRawBom, QByteArrayView("\\ufeff"));
        text = escaped;
    }
    // Valid JSON from here on; QJsonDocument only builds the values. It takes arrays and objects
    // at the top level only, so a scalar is read as the one element of an array.
    qsizetype first = 0;
    while (first < text.size() && isWhitespace(static_cast<unsigned char>(text[first])))
        ++first;
    const char lead = text[first];
    QJsonParseError qtError;
    if (lead == '{' || lead == '[') {
        const QJsonDocument doc
            = QJsonDocument::fromJson(QByteArray::fromRawData(text.data(), text.size()), &qtError);
        if (qtError.error == QJsonParseError::NoError)
            parsed.value = doc.isObject() ? QJsonValue(doc.object()) : QJsonValue(doc.array());
    } else {
        const QJsonDocument doc = QJsonDocument::fromJson('[' + text.toByteArray() + ']', &qtError);
        if (qtError.error == QJsonParseError::NoError)
            parsed.value = doc.array().first();
    }
    if (qtError.error != QJsonParseError::NoError) {
        // Valid by the grammar but not representable (a number beyond what a double holds).
        parsed.value = QJsonValue(QJsonValue::Undefined);
        parsed.error = SyntaxError{qtError.offset, qtError.errorString()};
    }
    return parsed;
}

} // namespace Sandbox::Json
