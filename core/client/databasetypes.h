#pragma once

#include "sqlrows.h"
#include "types.h"

#include <protocol/result.h>

#include <QByteArray>
#include <QJsonArray>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>
#include <QVariant>

namespace Sandbox {

// One column of a result (docs/protocol.md 4.3.2): its name and the engine's type name.
struct SqlField
{
    QString name;
    QString type;
};

// The values of docs/protocol.md 4.3.5 — plain JSON, or {"$int"|"$bytes"|"$float": ...}.
namespace SqlValue {
// NULL (JSON null) as opposed to an empty string.
bool isNull(const QJsonValue &value);
// qlonglong for integers (also $int within 64 bits; beyond, the digits as a QString), double,
// bool, QString, QByteArray for $bytes, QVariantList for arrays, QVariantMap for objects;
// an invalid QVariant for NULL.
QVariant toVariant(const QJsonValue &value);
// Text for a grid cell or an export: numbers exactly, bytes as \x hex (`bytesAsHex`) or base64,
// arrays and objects as JSON. NULL is an empty string (check isNull() to show it apart).
QString toText(const QJsonValue &value, bool bytesAsHex = true);
// A parameter from a QVariant: integers beyond 2^53 as $int, QByteArray as $bytes.
QJsonValue fromVariant(const QVariant &value);
QJsonValue bytes(const QByteArray &data);
QJsonValue bigInteger(qint64 value);
} // namespace SqlValue

// Where a -32014 error happened (docs/protocol.md 4.3.6); position/line/column are 1-based
// and count characters (code points) of the SQL text; 0 when the engine did not say.
struct SqlErrorLocation
{
    int position = 0;
    int line = 0;
    int column = 0;
    int statementIndex = -1;
    QString sqlstate;
    QString detail;
    QString hint;

    bool isValid() const { return position > 0 || line > 0; }
    static SqlErrorLocation fromError(const Error &error);
};

struct QueryOptions
{
    int pageSize = 1000;   // rows in the first page (1..100 000)
    int timeoutMs = 60000; // the statement timeout (1..3 600 000)
};

// A page of a result, in row arrays (rowMode "array"): the first page of a query, or a fetch.
struct QueryPage
{
    QList<SqlField> fields; // empty for a fetch
    SqlRows rows;
    QString command; // SELECT, INSERT, ...
    qint64 rowsAffected = 0;
    QString cursor; // empty when no rows follow
    bool done = true;

    // The rows come as "rows" (an array of arrays), or as `rowsText`, their JSON text, when the
    // call asked for them so (CallOptions::rowsText) and they came so.
    static Result<QueryPage> fromJson(const QJsonValue &value, const QByteArray &rowsText = {});
};

struct ExecuteResult
{
    qint64 rowsAffected = 0;
    QString command;

    static Result<ExecuteResult> fromJson(const QJsonValue &value);
};

struct SqlStatement
{
    QString sql;
    QJsonArray params;
};

struct TableInfo
{
    QString schema;
    QString name;
    QString type; // table | view
};

struct ColumnInfo
{
    QString name;
    QString type;
    bool nullable = true;
    QJsonValue defaultValue;
    bool primaryKey = false;
};

struct IndexInfo
{
    QString name;
    QStringList columns;
    bool unique = false;
    bool primary = false;
    QString definition;
};

struct TableDescription
{
    QString schema;
    QString table;
    QList<ColumnInfo> columns;
    QList<IndexInfo> indexes;

    static Result<TableDescription> fromJson(const QJsonValue &value);
};

struct DatabaseEntry
{
    QString name;
    QString owner; // PostgreSQL
    QString file;  // SQLite, DuckDB
    qint64 sizeBytes = -1;
};

// A database sandbox with what databases.get adds to the Sandbox object.
struct DatabaseInfo
{
    SandboxInfo sandbox;
    QString engine; // postgres | sqlite | duckdb
    QString database;
    QString username;
    qint64 startupTimeMs = -1;

    static Result<DatabaseInfo> fromJson(const QJsonValue &value);
};

struct ExportResult
{
    QString format;
    QByteArray content; // the file's bytes (CSV and JSON as UTF-8)
    qint64 rowCount = 0;
};

} // namespace Sandbox
