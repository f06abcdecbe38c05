#pragma once

#include <QJsonObject>
#include <QString>

namespace Sandbox {
class FieldReader;
}

namespace Sandbox::Engine {

// What a database sandbox was created with; kept in its state dir as database.json (the engine's
// own file, 0600, never shown to the sandbox). The password is not kept: it is set on the role
// once, at the first start.
struct DatabaseSettings
{
    QString type;     // postgres | sqlite | duckdb
    QString database; // PostgreSQL: the database name; SQLite/DuckDB: the file in /workspace
    QString username; // PostgreSQL: the client role
    QString password; // only until the first start
    bool initialized = false;

    QJsonObject toJson(bool withPassword) const;
    static DatabaseSettings fromJson(const QJsonObject &o);

    // What a create of `type` without database, username or password makes (what a warm spare
    // starts with).
    static DatabaseSettings defaults(const QString &type);
    // Reads databases.create's database, username and password for a database of `type` (which
    // the caller checked), with their defaults; then validate() checks them (a bad one fails
    // `params`) and names a SQLite/DuckDB file by its path inside /workspace.
    static DatabaseSettings fromCreateParams(FieldReader &params, const QString &type);
    void validate(FieldReader &params);
    // The settings in the state dir of a database (empty when there are none) and saving them
    // there (the directory exists; fsync'd: milliseconds).
    static DatabaseSettings load(const QString &stateDir);
    static bool save(const QString &stateDir, const DatabaseSettings &settings);
};

// A PostgreSQL name the engine puts in SQL quoted: letters, digits, _ $ -, at most 63.
bool isValidSqlName(const QString &name);
// "name" with its double quotes doubled.
QString quoteIdent(const QString &name);

} // namespace Sandbox::Engine
