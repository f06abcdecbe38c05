#pragma once

#include "protocol/result.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QString>

#include <functional>

namespace Sandbox::Engine {

class SupervisorChannel;

// The bounds of a page of rows, shared by the engine's methods and its backends.
namespace PageLimits {
constexpr int kDefaultRows = 1000;                // a page when the caller names no pageSize
constexpr int kMaxRows = 100000;                  // the largest pageSize a caller may ask for
constexpr int kExportRows = 5000;                 // a page of an export
constexpr int kTransactionRows = 1000;            // rows kept per statement of a transaction
constexpr qint64 kDefaultBytes = 4 * 1024 * 1024; // a page's bytes when the engine names none
constexpr qint64 kMaxBytes = 8 * 1024 * 1024;     // a page's bytes for every engine call
// One row as JSON text (docs/protocol.md 4.3.3): a row over a page's bytes is still answered, in
// a page of its own making, up to this; beyond it the call fails (-32006).
constexpr qint64 kMaxRowBytes = 16 * 1024 * 1024;
} // namespace PageLimits

// A row over PageLimits::kMaxRowBytes, as every backend answers it.
inline Error rowTooLarge()
{
    return Error{ErrorCode::PayloadTooLarge,
                 QStringLiteral("a row of the result is over 16 MiB, the most one row may take: "
                                "select a part of its values (substr(), length())"),
                 {}};
}

// An error's text from a database server (its message, detail, hint), from its UTF-8: at most
// 16 KiB of it (docs/protocol.md 4.3.6), cut at a character's start where it is longer, saying
// how much was left out (as sandbox-dbhost cuts its own), before it is converted. A server in a
// sandbox can make its errors as long as it likes (RAISE, error(), a long name it echoes).
inline QString clippedErrorText(QByteArrayView utf8)
{
    constexpr qsizetype kMax = 16 * 1024;
    if (utf8.size() <= kMax)
        return QString::fromUtf8(utf8);
    qsizetype cut = kMax - 64; // and the note of what was cut: 16 KiB in all
    while (cut > 0 && (uchar(utf8.at(cut)) & 0xC0) == 0x80)
        --cut;
    return QString::fromUtf8(utf8.first(cut))
           + QStringLiteral("... (%1 bytes more)").arg(utf8.size() - cut);
}

// A backend's SQL dialect as the catalog methods (databases.version, listTables, listDatabases,
// describeTable, createDatabase, exportData) need it: each backend answers for its own. Rows come
// back as arrays, their columns in the order named.
struct SqlDialect
{
    QString type;          // postgres | sqlite | duckdb
    QString version;       // one row: [the server's version text]
    QString listTables;    // rows [schema, name, "table"|"view"]
    QString listDatabases; // rows [name, owner|file, sizeBytes|null]
    QString columns; // params [schema, table]: rows [name, type, nullable, default, primaryKey]
    QString indexes; // params [schema, table]: rows [name, unique, primary, definition, columns]
    QString defaultSchema;
    bool databasesHaveOwners = false; // listDatabases: owner and sizeBytes (else: file)
    bool createsDatabases = false;    // databases.createDatabase
    bool writesFiles = false;         // exportFile: parquet, or any format to a path
};

// One SQL call as the adapter hands it to a backend.
struct SqlRequest
{
    QString sql;
    QJsonArray params;
    bool execute = false; // execute: a script allowed (without params), no rows back
    int pageSize = PageLimits::kDefaultRows;
    qint64 pageBytes = PageLimits::kDefaultBytes;
    // Run in this interactive transaction (begin()); no cursor then: one page, `truncated`.
    QString transaction;
    // The caller passes the pages' rows on as text (PageText): a backend that can write them as
    // text (an array of arrays) does, for this query and its cursor's fetches.
    bool rowsAsText = false;
};

// What a backend answers for a query, a fetch or a transaction: {fields:[{name,type}],
// rows:[[...]], command, rowsAffected, cursor|null} (fetch: {rows, done}). A page's rows are
// either "rows" in `members` or, where the caller asked for text (SqlRequest::rowsAsText) and the
// backend writes its own, `rowsText`: the JSON text of an array of arrays, checked, as the bytes
// that go to the client (no QString on the way, no tree of values).
struct Page
{
    QJsonObject members;
    QByteArray rowsText;         // null: the rows (if any) are members' "rows"
    qsizetype rowsTextCount = 0; // the rows in rowsText

    Page() = default;
    explicit Page(QJsonObject m)
        : members(std::move(m))
    {}
    bool hasRowsText() const { return !rowsText.isNull(); }
    QJsonValue value(const QString &key) const { return members.value(key); }
    bool contains(const QString &key) const { return members.contains(key); }
};

// How a backend call ends. A failure of the SQL is ErrorCode::QueryError with data
// {position?|offset?|line?, column?, sqlstate?, statementIndex?}; the adapter turns offsets into
// positions.
using PageDone = std::function<void(Result<Page>)>;
// Cancels the call it was returned for (the callback then answers Cancelled).
using CancelFn = std::function<void()>;

// The engine's side of one running database server (PostgreSQL over libpq; SQLite or DuckDB
// through sandbox-dbhost). Lives in the engine's thread; never blocks it.
class DatabaseBackend : public QObject
{
    Q_OBJECT

public:
    using QObject::QObject;

    // Starts the server inside the sandbox through its supervisor and answers once it accepts
    // queries.
    virtual void start(SupervisorChannel *channel, std::function<void(Result<bool>)> done) = 0;
    // Stops the server cleanly (committed data is already durable); `done` always runs.
    virtual void stop(std::function<void()> done) = 0;
    virtual bool isAlive() const = 0;
    virtual const SqlDialect &dialect() const = 0;
    // A server started ahead of its owner (a warm spare's, docs/protocol.md 6.4) becomes the
    // owner's as a first start would make it: `database`, `username` and `password` as the create
    // gave them (DatabaseSettings). A server that went away meanwhile is started again.
    virtual void handOut(const QString &database, const QString &username, const QString &password,
                         std::function<void(Result<bool>)> done)
        = 0;

    virtual CancelFn query(const SqlRequest &request, PageDone done) = 0;
    virtual CancelFn fetch(const QString &cursor, int pageSize, qint64 pageBytes, PageDone done) = 0;
    virtual void closeCursor(const QString &cursor) = 0;
    // statements: [{sql, params}]. Answers {results:[{command, fields, rows, rowsAffected}]}.
    virtual CancelFn transaction(const QJsonArray &statements, PageDone done) = 0;
    // Interactive transactions (databases.begin): a session of the server held under `name` with
    // a transaction open, for the queries that name it (SqlRequest::transaction), until finish()
    // commits or rolls it back. A query in it that fails rolls it back and ends it.
    virtual void begin(const QString &name, PageDone done) = 0;
    virtual void finish(const QString &name, bool commit, PageDone done) = 0;
    // Where dialect().writesFiles: the server writes the rows of `sql` to `path` inside the
    // sandbox (COPY ... TO) as format csv|json|parquet, and answers {rowCount}. Others answer
    // NotImplemented.
    virtual CancelFn exportFile(const QString &sql, const QString &format, const QString &path,
                                PageDone done);

Q_SIGNALS:
    // The server ended without being asked to (crash, kill -9). `why` has its last log lines.
    void serverExited(const QString &why);
};

inline CancelFn DatabaseBackend::exportFile(const QString &, const QString &, const QString &,
                                            PageDone done)
{
    done(Error{ErrorCode::NotImplemented,
               QStringLiteral("export to a file is for DuckDB databases"),
               {}});
    return [] {};
}

} // namespace Sandbox::Engine
