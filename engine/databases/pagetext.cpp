#include "pagetext.h"

#include <QJsonDocument>

namespace Sandbox::Engine::PageText {

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

QByteArray withRows(const QJsonObject &members, QByteArrayView rows)
{
    QByteArray out = QJsonDocument(members).toJson(QJsonDocument::Compact);
    out.chop(1); // its closing brace
    out += members.isEmpty() ? "\"rows\":" : ",\"rows\":";
    out += rows;
    out += '}';
    return out;
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
