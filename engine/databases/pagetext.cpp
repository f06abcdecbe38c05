#include "pagetext.h"

#include <QJsonDocument>

namespace Sandbox::Engine::PageText {

QJsonArray rowsOf(const QJsonObject &page)
{
    const auto text = page.constFind(kText);
    if (text == page.constEnd())
        return page.value(QStringLiteral("rows")).toArray();
    return QJsonDocument::fromJson(text->toString().toUtf8()).array();
}

qsizetype rowCountOf(const QJsonObject &page)
{
    return page.contains(kText) ? page.value(kCount).toInteger()
                                : page.value(QStringLiteral("rows")).toArray().size();
}

QJsonObject concat(const QJsonObject &first, const QJsonObject &more)
{
    QJsonObject out = more;
    if (first.contains(kText) && more.contains(kText)) {
        const qsizetype a = first.value(kCount).toInteger(), b = more.value(kCount).toInteger();
        QString text = first.value(kText).toString();
        const QString rest = more.value(kText).toString();
        if (b > 0) {
            text.chop(1); // "]"
            if (a > 0)
                text += u',';
            text += QStringView(rest).sliced(rest.indexOf(u'[') + 1);
        }
        out.insert(kText, text);
        out.insert(kCount, a + b);
        return out;
    }
    QJsonArray rows = rowsOf(first);
    for (const QJsonValue &row : rowsOf(more))
        rows.append(row);
    out.remove(kText);
    out.remove(kCount);
    out.insert(QStringLiteral("rows"), rows);
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

} // namespace Sandbox::Engine::PageText
