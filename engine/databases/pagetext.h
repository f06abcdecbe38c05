#pragma once

#include "databasebackend.h"
#include "protocol/json.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>

#include <optional>

namespace Sandbox::Engine::PageText {

// A page of rows as JSON text (Page::rowsText), from a server that writes its own
// (sandbox-dbhost, PostgreSQL's array rows): checked once by the engine and passed to the client
// as it is, not parsed and written again.

// A page's rows whichever way it holds them: "rows", or its text (parsed here).
QJsonArray rowsOf(const Page &page);

// How many rows a page holds, whichever way.
qsizetype rowCountOf(const Page &page);
// `first`'s rows followed by `more`'s, with `more`'s other members (done).
Page concat(const Page &first, const Page &more);

// `rows`, the text of `count` rows as arrays (valid JSON: a backend's or a host's checked text),
// written as objects: each value under the name of its field (`fields` as a page holds them,
// [{name, ...}]) in the fields' order, as docs/protocol.md 4.3.3 says object rows are: a name that
// repeats keeps its first place and its last column's value (as an object that JavaScript builds
// column by column), values past the fields are left out. One pass over the text, which is
// copied, not parsed; `count` sizes the room made ahead (a wrong one only costs a reallocation).
// Nothing when the objects could take more than `maxBytes`: their names are repeated on every
// row, and a page of short values under long names (a name may be megabytes long) is many times
// its arrays' text.
std::optional<QByteArray> objectRows(QByteArrayView rows, qsizetype count, const QJsonArray &fields,
                                     qsizetype maxBytes);

// The text of `members` (an object without "rows") up to where the text of its rows goes: the
// members and `"rows":`. The rows' text and "}" complete it (written one after another, the rows
// are not copied into it).
QByteArray rowsHead(const QJsonObject &members);

// An answer line of a database host, valid JSON (as Json::validate() said, with `rows` where it
// found the member "rows"): its members, and its rows as their text when they are an array of
// arrays (as they are where the host wrote them so; else they stay a member).
Page fromLine(QByteArrayView line, const Json::Member &rows);

} // namespace Sandbox::Engine::PageText
