#include "sqlrows.h"

#include "databasetypes.h"

#include <protocol/json.h>

#include <QJsonDocument>

#include <charconv>
#include <cstring>
#include <limits>

namespace Sandbox {

// One pass over a page's text: cells appended as the values come, the first error stops it.
class SqlRows::Reader
{
public:
    explicit Reader(SqlRows &rows)
        : m_rows(rows)
        , m_p(rows.m_text.constData())
        , m_n(rows.m_text.size())
    {}

    std::optional<QString> run()
    {
        // A value takes at least two bytes of text ("1,"): room for them all at once.
        m_rows.m_cells.reserve(m_n / 2);
        skipSpace();
        if (!take('['))
            return fail("a page of rows must be an array");
        skipSpace();
        if (!take(']')) {
            for (;;) {
                skipSpace();
                if (!take('['))
                    return fail("each row must be an array");
                m_rows.m_rowStart.append(m_rows.m_cells.size());
                if (const auto error = row())
                    return error;
                skipSpace();
                if (take(','))
                    continue;
                if (take(']'))
                    break;
                return fail("expected ',' or ']' after a row");
            }
        }
        skipSpace();
        if (m_pos != m_n)
            return fail("unexpected text after the rows");
        m_rows.m_rowStart.append(m_rows.m_cells.size());
        return std::nullopt;
    }

private:
    // The values of a row, after its '['.
    std::optional<QString> row()
    {
        skipSpace();
        if (take(']'))
            return std::nullopt;
        for (;;) {
            skipSpace();
            if (const auto error = value())
                return error;
            skipSpace();
            if (take(','))
                continue;
            if (take(']'))
                return std::nullopt;
            return fail("expected ',' or ']' after a value");
        }
    }

    std::optional<QString> value()
    {
        if (m_pos >= m_n)
            return fail("the text ends inside a row");
        Cell c;
        const char lead = m_p[m_pos];
        if (lead == '"') {
            if (const auto error = string(&c))
                return error;
        } else if (lead == '-' || (lead >= '0' && lead <= '9')) {
            if (!number(&c))
                return fail("a malformed number");
        } else if (lead == '[' || lead == '{') {
            const qsizetype start = m_pos;
            if (const auto error = skipNested())
                return error;
            c.kind = Kind::Nested;
            c.offset = start;
            c.length = quint32(m_pos - start);
        } else if (literal("null")) {
            c.kind = Kind::Null;
        } else if (literal("true")) {
            c.kind = Kind::True;
        } else if (literal("false")) {
            c.kind = Kind::False;
        } else {
            return fail("a value is expected");
        }
        m_rows.m_cells.append(c);
        return std::nullopt;
    }

    std::optional<QString> string(Cell *c)
    {
        const qsizetype start = ++m_pos;
        while (m_pos < m_n) {
            const auto ch = static_cast<unsigned char>(m_p[m_pos]);
            if (ch == '"') {
                c->kind = Kind::String;
                c->offset = start;
                c->length = quint32(m_pos - start);
                ++m_pos;
                return std::nullopt;
            }
            if (ch == '\\')
                return escaped(c, start);
            if (ch < 0x20)
                return fail("a control character in a string");
            ++m_pos;
        }
        return fail("a string is not terminated");
    }

    // The rest of a string from its first escape on, unescaped into m_unescaped.
    std::optional<QString> escaped(Cell *c, qsizetype start)
    {
        QByteArray &out = m_rows.m_unescaped;
        const qsizetype from = out.size();
        out.append(m_p + start, m_pos - start);
        while (m_pos < m_n) {
            const char ch = m_p[m_pos];
            if (ch == '"') {
                ++m_pos;
                c->kind = Kind::Escaped;
                c->offset = from;
                c->length = quint32(out.size() - from);
                return std::nullopt;
            }
            if (static_cast<unsigned char>(ch) < 0x20)
                return fail("a control character in a string");
            if (ch != '\\') {
                out.append(ch);
                ++m_pos;
                continue;
            }
            if (m_pos + 1 >= m_n)
                break;
            const char e = m_p[m_pos + 1];
            m_pos += 2;
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out.append(e);
                break;
            case 'b':
                out.append('\b');
                break;
            case 'f':
                out.append('\f');
                break;
            case 'n':
                out.append('\n');
                break;
            case 'r':
                out.append('\r');
                break;
            case 't':
                out.append('\t');
                break;
            case 'u': {
                char32_t cp = 0;
                if (!codePoint(&cp))
                    return fail("a malformed \\u escape");
                appendUtf8(out, cp);
                break;
            }
            default:
                return fail("an unknown escape in a string");
            }
        }
        return fail("a string is not terminated");
    }

    // The code point of \uXXXX (m_pos after the 'u'), a surrogate pair as one.
    bool codePoint(char32_t *cp)
    {
        int unit = hex4();
        if (unit < 0 || (unit >= 0xdc00 && unit <= 0xdfff))
            return false;
        if (unit >= 0xd800 && unit <= 0xdbff) {
            if (m_pos + 2 > m_n || m_p[m_pos] != '\\' || m_p[m_pos + 1] != 'u')
                return false;
            m_pos += 2;
            const int low = hex4();
            if (low < 0xdc00 || low > 0xdfff)
                return false;
            *cp = 0x10000 + ((char32_t(unit) - 0xd800) << 10) + (char32_t(low) - 0xdc00);
            return true;
        }
        *cp = char32_t(unit);
        return true;
    }

    int hex4()
    {
        if (m_pos + 4 > m_n)
            return -1;
        int v = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = m_p[m_pos + i];
            const int d = h >= '0' && h <= '9'   ? h - '0'
                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                 : -1;
            if (d < 0)
                return -1;
            v = v * 16 + d;
        }
        m_pos += 4;
        return v;
    }

    static void appendUtf8(QByteArray &out, char32_t cp)
    {
        if (cp < 0x80) {
            out.append(char(cp));
        } else if (cp < 0x800) {
            out.append(char(0xc0 | (cp >> 6)));
            out.append(char(0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
            out.append(char(0xe0 | (cp >> 12)));
            out.append(char(0x80 | ((cp >> 6) & 0x3f)));
            out.append(char(0x80 | (cp & 0x3f)));
        } else {
            out.append(char(0xf0 | (cp >> 18)));
            out.append(char(0x80 | ((cp >> 12) & 0x3f)));
            out.append(char(0x80 | ((cp >> 6) & 0x3f)));
            out.append(char(0x80 | (cp & 0x3f)));
        }
    }

    // An integer within 64 bits stays exact (as QJsonDocument keeps it); any other number is a
    // double.
    bool number(Cell *c)
    {
        const qsizetype start = m_pos;
        bool integral = true;
        while (m_pos < m_n) {
            const char ch = m_p[m_pos];
            if (ch == '.' || ch == 'e' || ch == 'E')
                integral = false;
            else if (!(ch >= '0' && ch <= '9') && ch != '-' && ch != '+')
                break;
            ++m_pos;
        }
        const char *first = m_p + start, *last = m_p + m_pos;
        if (integral) {
            qint64 i = 0;
            const auto r = std::from_chars(first, last, i);
            if (r.ec == std::errc() && r.ptr == last) {
                c->kind = Kind::Integer;
                c->integer = i;
                return true;
            }
            if (r.ec != std::errc::result_out_of_range)
                return false;
        }
        double d = 0;
        const auto r = std::from_chars(first, last, d);
        if (r.ptr != last || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
            return false;
        c->kind = Kind::Double;
        c->number = r.ec == std::errc() ? d
                    : *first == '-'     ? -std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::infinity();
        return true;
    }

    // An array or object, as text: brackets matched outside strings, at most Json::MaxDepth deep.
    std::optional<QString> skipNested()
    {
        int depth = 0;
        while (m_pos < m_n) {
            const char ch = m_p[m_pos];
            if (ch == '"') {
                for (++m_pos; m_pos < m_n && m_p[m_pos] != '"'; ++m_pos)
                    if (m_p[m_pos] == '\\')
                        ++m_pos;
                if (m_pos >= m_n)
                    break;
            } else if (ch == '[' || ch == '{') {
                if (++depth > Json::MaxDepth - 2) // inside the page's array and its row's
                    return fail("a value nested too deeply");
            } else if (ch == ']' || ch == '}') {
                if (--depth == 0) {
                    ++m_pos;
                    return std::nullopt;
                }
            }
            ++m_pos;
        }
        return fail("the text ends inside a value");
    }

    bool literal(const char *word)
    {
        const auto len = qsizetype(strlen(word));
        if (m_pos + len > m_n || memcmp(m_p + m_pos, word, size_t(len)) != 0)
            return false;
        m_pos += len;
        return true;
    }

    bool take(char ch)
    {
        if (m_pos < m_n && m_p[m_pos] == ch) {
            ++m_pos;
            return true;
        }
        return false;
    }

    void skipSpace()
    {
        while (m_pos < m_n
               && (m_p[m_pos] == ' ' || m_p[m_pos] == '\n' || m_p[m_pos] == '\r'
                   || m_p[m_pos] == '\t'))
            ++m_pos;
    }

    std::optional<QString> fail(const char *why) const
    {
        return QStringLiteral("%1 at byte %2 of %3").arg(QLatin1String(why)).arg(m_pos).arg(m_n);
    }

    SqlRows &m_rows;
    const char *m_p;
    qsizetype m_n;
    qsizetype m_pos = 0;
};

Result<SqlRows> SqlRows::fromJson(QByteArray text)
{
    SqlRows rows;
    rows.m_text = std::move(text);
    if (rows.m_text.size() > qsizetype(std::numeric_limits<quint32>::max()))
        return Error{ErrorCode::InvalidParams, QStringLiteral("a page of rows over 4 GiB"), {}};
    if (const auto error = Reader(rows).run())
        return Error{ErrorCode::InvalidParams, QStringLiteral("malformed rows: ") + *error, {}};
    rows.m_cells.squeeze();
    return rows;
}

Result<SqlRows> SqlRows::fromArray(const QJsonArray &rows)
{
    return fromJson(QJsonDocument(rows).toJson(QJsonDocument::Compact));
}

qsizetype SqlRows::columnCount(qsizetype row) const
{
    return row >= 0 && row < size() ? m_rowStart[row + 1] - m_rowStart[row] : 0;
}

const SqlRows::Cell *SqlRows::cell(qsizetype row, qsizetype column) const
{
    if (column < 0 || column >= columnCount(row))
        return nullptr;
    return &m_cells[m_rowStart[row] + column];
}

QJsonValue SqlRows::value(qsizetype row, qsizetype column) const
{
    const Cell *c = cell(row, column);
    if (!c)
        return QJsonValue(QJsonValue::Undefined);
    switch (c->kind) {
    case Kind::Null:
        return QJsonValue::Null;
    case Kind::False:
        return false;
    case Kind::True:
        return true;
    case Kind::Integer:
        return c->integer;
    case Kind::Double:
        return c->number;
    case Kind::String:
        return QString::fromUtf8(m_text.constData() + c->offset, c->length);
    case Kind::Escaped:
        return QString::fromUtf8(m_unescaped.constData() + c->offset, c->length);
    case Kind::Nested:
        return Json::parse(QByteArrayView(m_text.constData() + c->offset, c->length)).value;
    }
    return QJsonValue(QJsonValue::Undefined);
}

QJsonArray SqlRows::row(qsizetype row) const
{
    QJsonArray out;
    for (qsizetype i = 0; i < columnCount(row); ++i)
        out.append(value(row, i));
    return out;
}

bool SqlRows::isNull(qsizetype row, qsizetype column) const
{
    const Cell *c = cell(row, column);
    return !c || c->kind == Kind::Null;
}

QVariant SqlRows::variant(qsizetype row, qsizetype column) const
{
    const Cell *c = cell(row, column);
    if (!c)
        return {};
    switch (c->kind) {
    case Kind::Integer:
        return qlonglong(c->integer);
    case Kind::False:
    case Kind::True:
        return c->kind == Kind::True;
    default:
        return SqlValue::toVariant(value(row, column));
    }
}

QString SqlRows::text(qsizetype row, qsizetype column, bool bytesAsHex) const
{
    const Cell *c = cell(row, column);
    if (!c)
        return {};
    switch (c->kind) {
    case Kind::Integer:
        return QString::number(c->integer);
    case Kind::String:
    case Kind::Escaped:
        return value(row, column).toString();
    default:
        return SqlValue::toText(value(row, column), bytesAsHex);
    }
}

} // namespace Sandbox
