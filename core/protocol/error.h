#pragma once

#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace Sandbox {

// The protocol's error codes (docs/protocol.md, 2.1). Values are the wire values.
enum class ErrorCode : int {
    ParseError = -32700,
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    InvalidParams = -32602,
    InternalError = -32603,
    Unauthorized = -32001,
    NotFound = -32002,
    QuotaExceeded = -32003,
    Timeout = -32004,
    SandboxNotRunning = -32005,
    PayloadTooLarge = -32006,
    PathNotAllowed = -32007,
    AlreadyExists = -32008,
    StreamGap = -32009,
    NotImplemented = -32010,
    SandboxError = -32011,
    Cancelled = -32012,
    FileError = -32013,
    // The database rejected a statement (syntax, constraint, type, ...): docs/protocol.md 4.3.
    QueryError = -32014,
    // Client-side only, never on the wire: the connection is gone or could not be made.
    ConnectionError = -1,
};

// The REST status that goes with a code (docs/protocol.md, 2.1).
int httpStatusFor(ErrorCode code);
// The code for a REST status when a body carries no error object.
ErrorCode errorCodeForHttpStatus(int status);
// "not found", "quota exceeded", ...: the short name used in messages and by sandboxctl.
QString errorCodeName(ErrorCode code);
bool isKnownErrorCode(int code);

// An error as a value: what every fallible call in core/ and engine/ returns instead of throwing.
struct Error
{
    ErrorCode code = ErrorCode::InternalError;
    QString message;
    QJsonValue data; // optional details, e.g. {"field":"timeout"}

    QJsonObject toJson() const;
    // Reads a JSON-RPC error object; anything malformed becomes an InternalError that says so.
    static Error fromJson(const QJsonValue &value);

    static Error invalidParams(const QString &field, const QString &why);
    static Error notFound(const QString &what);
};

} // namespace Sandbox
