#pragma once

#include "protocol/result.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QString>

#include <functional>

namespace Sandbox::Engine {

class SupervisorChannel;

// One SQL call as the adapter hands it to a backend.
struct SqlRequest
{
    QString sql;
    QJsonArray params;
    bool execute = false; // execute: a script allowed (without params), no rows back
    int pageSize = 1000;
    qint64 pageBytes = 4 * 1024 * 1024;
    // Run in this interactive transaction (begin()); no cursor then: one page, `truncated`.
    QString transaction;
};

// What a backend answers for a query, a fetch or a transaction, and how it fails. Pages are
// {fields:[{name,type}], rows:[[...]], command, rowsAffected, cursor|null} (fetch: {rows, done}).
// A failure of the SQL is ErrorCode::QueryError with data {position?|offset?|line?, column?,
// sqlstate?, statementIndex?}; the adapter turns offsets into positions.
using PageDone = std::function<void(Result<QJsonObject>)>;
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

Q_SIGNALS:
    // The server ended without being asked to (crash, kill -9). `why` has its last log lines.
    void serverExited(const QString &why);
};

} // namespace Sandbox::Engine
