#pragma once

#include <QByteArrayView>
#include <QJsonValue>
#include <QString>

#include <initializer_list>
#include <optional>

// Strict JSON (RFC 8259) for everything the engine and the client read from the other side:
// JSON-RPC messages, REST bodies, lines from a sandbox. QJsonDocument alone is lenient (it takes
// `[-2.]`, `[.2e-3]`, raw control characters in strings, ...); every text goes through
// validate() first, which decides, and QJsonDocument only builds the values.
namespace Sandbox::Json {

// How deep arrays and objects may nest. Deeper text is refused (RFC 8259 section 9 lets a
// parser set this limit), so that a hostile peer cannot exhaust the stack of anything that
// walks the value afterwards.
inline constexpr int MaxDepth = 128;

struct SyntaxError
{
    qsizetype offset = 0; // in bytes, where the text stops being JSON
    QString message;
};

// Checks that `text` is exactly one JSON text: UTF-8 without a byte order mark, whitespace only
// where the grammar allows it, numbers as the grammar writes them, strings with the escapes it
// lists and no raw control characters, \u escapes that form whole code points (no lone
// surrogates), at most `maxDepth` levels of nesting. Linear time, no allocation, no recursion.
std::optional<SyntaxError> validate(QByteArrayView text, int maxDepth = MaxDepth);

// Where the value of one member lies in a text: the member named by `path`, object members from
// the top ({"result", "rows"}: the top-level object's "result", an object, and its "rows"),
// names compared as they are written (a name written with escapes does not match), the first
// such member where names repeat. For an array, how many elements it has and whether each is an
// array (a page of rows, docs/protocol.md 4.3.3).
struct Member
{
    qsizetype begin = -1; // the value's first byte; -1 when there is no such member
    qsizetype end = -1;   // one past its last byte
    bool isArray = false;
    bool allArrays = true; // every element is an array (true for an empty array)
    qsizetype elements = 0;

    bool found() const { return begin >= 0; }
    bool isArrayOfArrays() const { return isArray && allArrays; }
};

// validate(), and where the member named by `path` (at most 8 names) is, in the same single pass:
// a caller that takes one member out of a message (a page's rows) need not scan the text again.
// `member` is filled only when the text is valid.
std::optional<SyntaxError> validate(QByteArrayView text, std::initializer_list<QByteArrayView> path,
                                    Member *member, int maxDepth = MaxDepth);

struct Parsed
{
    QJsonValue value = QJsonValue(QJsonValue::Undefined); // Undefined when `error` is set
    std::optional<SyntaxError> error;
};

// validate(), then the value (any JSON value, also a scalar at the top level). Integers that fit
// in 64 bits stay exact; other numbers are doubles, as QJsonValue holds them.
Parsed parse(QByteArrayView text, int maxDepth = MaxDepth);

} // namespace Sandbox::Json
