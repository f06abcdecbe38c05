#pragma once

#include "databasebackend.h"
#include "protocol/json.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>

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

// The text of `members` (an object without "rows") with "rows" set to the text `rows`.
QByteArray withRows(const QJsonObject &members, QByteArrayView rows);

// An answer line of a database host, valid JSON (as Json::validate() said, with `rows` where it
// found the member "rows"): its members, and its rows as their text when they are an array of
// arrays (as they are where the host wrote them so; else they stay a member).
Page fromLine(QByteArrayView line, const Json::Member &rows);

} // namespace Sandbox::Engine::PageText
