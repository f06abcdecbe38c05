#pragma once

#include <QByteArrayView>

// Helpers for sending process output as JSON text (docs/protocol.md, 2.3).
namespace Sandbox::Utf8 {

// The length of the longest prefix of bytes that does not end inside a UTF-8 sequence, so that
// a stream of chunks is split only at character boundaries. A sequence that can never complete
// (an invalid byte) does not hold data back.
qsizetype completePrefixLength(QByteArrayView bytes);

// Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF.
bool isValid(QByteArrayView bytes);

} // namespace Sandbox::Utf8
