#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QLatin1StringView>

#include <optional>

// A page of rows kept as the JSON text it came as (docs/protocol.md 4.3.3), for the engine
// (which passes a database host's text to the client as it is) and the client (which decodes the
// rows with a reader made for them, SqlRows, instead of a tree of JSON values).
namespace Sandbox::PageText {

// The members of a page object that hold its rows as text when it was split: the rows' text (an
// array of arrays, a string) and their count.
inline constexpr QLatin1StringView kText("$rowsText");
inline constexpr QLatin1StringView kCount("$rowCount");

struct Split
{
    QByteArray members; // the other members, as an object's text
    QByteArray rows;    // the member's value as text
    qsizetype rowCount = 0;
};

// Splits the text of a JSON object — valid JSON, as Json::validate() says — into its member `key`
// (its name with quotes, as it is written: "\"result\"") and the others. Nothing when it has no
// such member.
std::optional<Split> splitMember(QByteArrayView object, QByteArrayView key);

// As splitMember() for the "rows" member, which must be an array of arrays (rowCount: how many).
// Nothing when it has no "rows", or when that is not an array of arrays.
std::optional<Split> split(QByteArrayView object);

} // namespace Sandbox::PageText
