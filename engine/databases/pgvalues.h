#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonValue>
#include <QList>
#include <QString>

namespace Sandbox::Engine::PgValues {

// The type name of a built-in PostgreSQL type oid ("int8", "timestamptz", "_int4" for arrays);
// an empty string for an oid this table does not know.
QString typeName(unsigned oid);

// A value in PostgreSQL's text output format to its JSON form (docs/protocol.md 4.3): numbers
// within 2^53, {"$int"} beyond, {"$bytes"} for bytea, {"$float"} for NaN/Infinity, ISO 8601 for
// timestamps, JSON arrays for arrays; text for everything else.
QJsonValue toJson(unsigned oid, const char *text, int length);

// The same value as toJson() gives, appended to `out` as JSON text (a page's rows written once,
// without a tree of values): the common types straight from the server's text, others through
// toJson().
void appendJson(QByteArray &out, unsigned oid, const char *text, int length);

// A JSON parameter to PostgreSQL's text input (or raw bytes, then `binary` is set).
struct Param
{
    QByteArray value;
    bool isNull = false;
    bool binary = false;
};
Result<Param> fromJson(const QJsonValue &value, int index);

} // namespace Sandbox::Engine::PgValues
