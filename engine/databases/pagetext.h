#pragma once

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>

#include <protocol/pagetext.h>

namespace Sandbox::Engine::PageText {

// A page of rows as JSON text, from a server that writes its own (sandbox-dbhost): checked once
// by the engine and passed to the client as it is, not parsed and written again. The members that
// hold it, and its split from an answer, are the protocol's (protocol/pagetext.h).
using Sandbox::PageText::kCount;
using Sandbox::PageText::kText;
using Sandbox::PageText::split;
using Sandbox::PageText::Split;

// A page's rows whichever way it holds them: "rows", or the text under kText (parsed here).
QJsonArray rowsOf(const QJsonObject &page);

// How many rows a page holds, whichever way.
qsizetype rowCountOf(const QJsonObject &page);
// `first`'s rows followed by `more`'s, with `more`'s other members (done).
QJsonObject concat(const QJsonObject &first, const QJsonObject &more);

// The text of `members` (an object without "rows") with "rows" set to the text `rows`.
QByteArray withRows(const QJsonObject &members, QByteArrayView rows);

} // namespace Sandbox::Engine::PageText
