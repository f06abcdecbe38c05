#include "pagetext.h"

#include "jsontext.h"

#include <QHash>
#include <QJsonDocument>

#include <cstring>
#include <vector>

namespace Sandbox::Engine::PageText {

namespace {

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

qsizetype skipSpace(QByteArrayView t, qsizetype i)
{
    while (i < t.size() && isSpace(t[i]))
        ++i;
    return i;
}

// One past the closing quote of the string whose opening quote is at `i`, in valid JSON.
qsizetype stringEnd(QByteArrayView t, qsizetype i)
{
    for (++i; i < t.size();) {
        const void *quote = std::memchr(t.data() + i, '"', size_t(t.size() - i));
        if (!quote)
            return t.size();
        qsizetype q = static_cast<const char *>(quote) - t.data();
        qsizetype backslashes = 0;
        while (q - backslashes - 1 >= i && t[q - backslashes - 1] == '\\')
            ++backslashes;
        if (backslashes % 2 == 0)
            return q + 1;
        i = q + 1; // an escaped quote
    }
    return t.size();
}

// One past the end of the value that starts at `i`, in valid JSON.
qsizetype valueEnd(QByteArrayView t, qsizetype i)
{
    int depth = 0;
    while (i < t.size()) {
        const char c = t[i];
        if (c == '"') {
            i = stringEnd(t, i);
            if (depth == 0)
                return i;
            continue;
        }
        if (c == '[' || c == '{') {
            ++depth;
        } else if (c == ']' || c == '}') {
            if (depth == 0)
                return i; // a scalar's end
            if (--depth == 0)
                return i + 1;
        } else if (depth == 0 && (c == ',' || isSpace(c))) {
            return i;
        }
        ++i;
    }
    return i;
}

} // namespace

QJsonArray rowsOf(const Page &page)
{
    if (!page.hasRowsText())
        return page.value(QStringLiteral("rows")).toArray();
    return QJsonDocument::fromJson(page.rowsText).array();
}

qsizetype rowCountOf(const Page &page)
{
    return page.hasRowsText() ? page.rowsTextCount
                              : page.value(QStringLiteral("rows")).toArray().size();
}

Page concat(const Page &first, const Page &more)
{
    Page out = more;
    if (first.hasRowsText() && more.hasRowsText()) {
        const qsizetype a = first.rowsTextCount, b = more.rowsTextCount;
        QByteArray text = first.rowsText;
        if (b > 0) {
            text.chop(1); // "]"
            if (a > 0)
                text += ',';
            text += QByteArrayView(more.rowsText).sliced(more.rowsText.indexOf('[') + 1);
        }
        out.rowsText = text;
        out.rowsTextCount = a + b;
        return out;
    }
    QJsonArray rows = rowsOf(first);
    for (const QJsonValue &row : rowsOf(more))
        rows.append(row);
    out.rowsText = QByteArray();
    out.rowsTextCount = 0;
    out.members.insert(QStringLiteral("rows"), rows);
    return out;
}

std::optional<QByteArray> objectRows(QByteArrayView rows, qsizetype count, const QJsonArray &fields,
                                     qsizetype maxBytes)
{
    // The keys in the order their names first come, each as a JSON string and a colon, with the
    // columns of its name, the last first.
    struct Key
    {
        QByteArray text;
        QList<qsizetype> columns;
    };
    QList<Key> keys;
    QHash<QString, qsizetype> keyOf;
    qsizetype keyBytes = 0;
    for (qsizetype i = 0; i < fields.size(); ++i) {
        const QString name = fields.at(i).toObject().value(QStringLiteral("name")).toString();
        auto at = keyOf.constFind(name);
        if (at == keyOf.cend()) {
            Key key;
            JsonText::appendString(key.text, name.toUtf8().toStdString());
            key.text += ':';
            keyBytes += key.text.size() + 1;
            at = keyOf.insert(name, keys.size());
            keys.append(std::move(key));
        }
        keys[*at].columns.prepend(i);
    }
    qsizetype i = skipSpace(rows, 0);
    if (i >= rows.size() || rows[i] != '[')
        return QByteArray("[]");
    if (rows.size() + count * keyBytes + 2 > maxBytes)
        return std::nullopt;
    // Written through a pointer into room made ahead (a row's objects take at most its arrays'
    // text and the keys), not appended piece by piece.
    QByteArray out(rows.size() + count * keyBytes + 2, Qt::Uninitialized);
    char *at = out.data();
    const auto put = [&at](QByteArrayView text) {
        std::memcpy(at, text.data(), size_t(text.size()));
        at += text.size();
    };
    put("[");
    std::vector<QByteArrayView> values; // a row's
    values.reserve(size_t(fields.size()));
    for (i = skipSpace(rows, i + 1); i < rows.size() && rows[i] == '[';) {
        const qsizetype rowBegin = i;
        values.clear();
        for (i = skipSpace(rows, i + 1); i < rows.size() && rows[i] != ']';) {
            const qsizetype end = valueEnd(rows, i);
            values.push_back(rows.sliced(i, end - i));
            i = skipSpace(rows, end);
            if (i < rows.size() && rows[i] == ',')
                i = skipSpace(rows, i + 1);
        }
        // The row's text, its separator, braces and keys: room enough whatever `count` said.
        const qsizetype written = at - out.constData();
        const qsizetype room = written + (i - rowBegin) + keyBytes + 4;
        if (room > maxBytes) // more rows than `count` said
            return std::nullopt;
        if (room > out.size()) {
            out.resize(qMin(qMax(room, 2 * out.size()), maxBytes));
            at = out.data() + written;
        }
        i = skipSpace(rows, i + 1); // past the row's "]"
        if (i < rows.size() && rows[i] == ',')
            i = skipSpace(rows, i + 1);
        if (written > 1)
            put(",");
        put("{");
        bool first = true;
        for (const Key &key : std::as_const(keys)) {
            for (const qsizetype column : key.columns) {
                if (size_t(column) >= values.size())
                    continue;
                if (!std::exchange(first, false))
                    put(",");
                put(key.text);
                put(values[size_t(column)]);
                break;
            }
        }
        put("}");
    }
    out.resize(at - out.constData());
    out += ']';
    return out;
}

QByteArray rowsHead(const QJsonObject &members)
{
    QByteArray head = QJsonDocument(members).toJson(QJsonDocument::Compact);
    head.chop(1); // its closing brace
    head += members.isEmpty() ? "\"rows\":" : ",\"rows\":";
    return head;
}

Page fromLine(QByteArrayView line, const Json::Member &rows)
{
    if (!rows.isArrayOfArrays())
        return Page(QJsonDocument::fromJson(line.toByteArray()).object());
    // The other members: the line with the rows' text left out (a null in its place, then
    // dropped, and with it any other "rows" a line might repeat).
    QByteArray members;
    members.reserve(line.size() - (rows.end - rows.begin) + 4);
    members += line.first(rows.begin);
    members += "null";
    members += line.sliced(rows.end);
    Page page(QJsonDocument::fromJson(members).object());
    page.members.remove(QStringLiteral("rows"));
    page.rowsText = line.sliced(rows.begin, rows.end - rows.begin).toByteArray();
    page.rowsTextCount = rows.elements;
    return page;
}

} // namespace Sandbox::Engine::PageText
