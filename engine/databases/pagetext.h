#pragma once

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>

#include <optional>

namespace Sandbox::Engine::PageText {

// A page of rows as JSON text, from a server that writes its own (sandbox-dbhost): checked once
// by the engine and passed to the client as it is, not parsed and written again.

// The page's members that hold it: the rows' text (an array of arrays) and their count.
inline constexpr QLatin1StringView kText("$rowsText");
inline constexpr QLatin1StringView kCount("$rowCount");

struct Split
{
    QByteArray members; // the other members, as an object's text
    QByteArray rows;    // the "rows" member's text: an array of arrays
    qsizetype rowCount = 0;
};

// Splits the text of a JSON object — valid JSON, as Json::validate() says — into its "rows"
// member and the others. Nothing when it has no "rows", or when that is not an array of arrays.
std::optional<Split> split(QByteArrayView object);

// A page's rows whichever way it holds them: "rows", or the text under kText (parsed here).
QJsonArray rowsOf(const QJsonObject &page);

// How many rows a page holds, whichever way.
qsizetype rowCountOf(const QJsonObject &page);
// `first`'s rows followed by `more`'s, with `more`'s other members (done).
QJsonObject concat(const QJsonObject &first, const QJsonObject &more);

// The text of `members` (an object without "rows") with "rows" set to the text `rows`.
QByteArray withRows(const QJsonObject &members, QByteArrayView rows);

} // namespace Sandbox::Engine::PageText
