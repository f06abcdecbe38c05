#pragma once

#include <QByteArrayView>
#include <QJsonValue>
#include <QString>

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

struct Parsed
{
    QJsonValue value = QJsonValue(QJsonValue::Undefined); // Undefined when `error` is set
    std::optional<SyntaxError> error;
};

// validate(), then the value (any JSON value, also a scalar at the top level). Integers that fit
// in 64 bits stay exact; other numbers are doubles, as QJsonValue holds them.
Parsed parse(QByteArrayView text, int maxDepth = MaxDepth);

} // namespace Sandbox::Json
