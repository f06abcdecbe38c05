#include "databasecatalog.h"

#include "databasebackend.h"
#include "databasehost.h"
#include "databasesettings.h"
#include "pagetext.h"
#include "protocol/fieldreader.h"
#include "timedcall.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QPointer>

namespace Sandbox::Engine {

namespace {

using Reply = Methods::Reply;

QJsonArray rowsOf(const Result<Page> &r)
{
    return PageText::rowsOf(*r);
}

bool truthy(const QJsonValue &v)
{
    return v.isBool() ? v.toBool() : v.toInt() != 0;
}

QJsonArray tablesOf(const QJsonArray &rows)
{
    QJsonArray tables;
    for (const QJsonValue &row : rows) {
        const QJsonArray a = row.toArray();
        tables.append(QJsonObject{{QStringLiteral("schema"), a[0]},
                                  {QStringLiteral("name"), a[1]},
                                  {QStringLiteral("type"), a[2]}});
    }
    return tables;
}

QJsonArray databasesOf(const QJsonArray &rows, bool owners)
{
    QJsonArray out;
    for (const QJsonValue &row : rows) {
        const QJsonArray a = row.toArray();
        QJsonObject o{{QStringLiteral("name"), a[0]}};
        o.insert(owners ? QStringLiteral("owner") : QStringLiteral("file"), a[1]);
        if (owners)
            o.insert(QStringLiteral("sizeBytes"), a[2]);
        out.append(o);
    }
    return out;
}

QJsonArray columnsOf(const QJsonArray &rows)
{
    QJsonArray columns;
    for (const QJsonValue &row : rows) {
        const QJsonArray a = row.toArray();
        columns.append(QJsonObject{{QStringLiteral("name"), a[0]},
                                   {QStringLiteral("type"), a[1]},
                                   {QStringLiteral("nullable"), truthy(a[2])},
                                   {QStringLiteral("default"), a[3]},
                                   {QStringLiteral("primaryKey"), truthy(a[4])}});
    }
    return columns;
}

QJsonArray indexesOf(const QJsonArray &rows)
{
    QJsonArray indexes;
    for (const QJsonValue &row : rows) {
        const QJsonArray a = row.toArray();
        QJsonValue cols = a[4];
        if (cols.isString()) { // SQLite json_group_array, DuckDB expressions text
            const QJsonDocument d = QJsonDocument::fromJson(cols.toString().toUtf8());
            cols = d.isArray() ? QJsonValue(d.array()) : QJsonValue(QJsonArray{cols});
        }
        indexes.append(QJsonObject{{QStringLiteral("name"), a[0]},
                                   {QStringLiteral("unique"), truthy(a[1])},
                                   {QStringLiteral("primary"), truthy(a[2])},
                                   {QStringLiteral("definition"), a[3]},
                                   {QStringLiteral("columns"), cols}});
    }
    return indexes;
}

void createDatabase(DatabaseHost *host, CallDeadlines *deadlines, const QString &id,
                    const QString &name, const CallContext &ctx, const Reply &reply)
{
    host->withBackend(
        ctx, id,
        [deadlines, name, c = ctx, reply](Result<DatabaseBackend *> b, ActivityToken token) {
            if (!b)
                return reply(b.error());
            SqlRequest req;
            req.sql = QStringLiteral("CREATE DATABASE %1").arg(quoteIdent(name));
            req.execute = true;
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                deadlines, kDefaultTimeoutMs, kCancelGraceMs, c,
                [backend, req](PageDone d) { return backend->query(req, std::move(d)); },
                [name, reply, activity = share(std::move(token))](Result<Page> r) {
                    activity->end();
                    if (!r) {
                        Error e = r.error();
                        if (e.data.toObject().value(QStringLiteral("sqlstate")).toString()
                            == QLatin1String("42P04"))
                            e.code = ErrorCode::AlreadyExists;
                        return reply(e);
                    }
                    reply(QJsonValue(QJsonObject{{QStringLiteral("name"), name},
                                                 {QStringLiteral("created"), true}}));
                });
        });
}

void describeTable(DatabaseHost *host, CallDeadlines *deadlines, const QString &id,
                   const SqlDialect &d, FieldReader &p, const CallContext &ctx, const Reply &reply)
{
    const QString table = p.requiredSqlText(QStringLiteral("table"));
    const QString schema = p.optionalSqlText(QStringLiteral("schema"), d.defaultSchema);
    if (p.failed())
        return reply(p.error());
    const QJsonArray args{schema, table};
    const QString indexesSql = d.indexes;
    internalQuery(host, deadlines, ctx, id, d.columns, args,
                  [host, deadlines, c = ctx, id, indexesSql, args, table, schema,
                   reply](Result<Page> r) {
                      if (!r)
                          return reply(r.error());
                      const QJsonArray columns = columnsOf(rowsOf(r));
                      if (columns.isEmpty())
                          return reply(
                              Error::notFound(QStringLiteral("table %1.%2").arg(schema, table)));
                      internalQuery(host, deadlines, c, id, indexesSql, args,
                                    [reply, columns, table, schema](Result<Page> r) {
                                        reply(QJsonValue(
                                            QJsonObject{{QStringLiteral("schema"), schema},
                                                        {QStringLiteral("table"), table},
                                                        {QStringLiteral("columns"), columns},
                                                        {QStringLiteral("indexes"),
                                                         r ? indexesOf(rowsOf(r)) : QJsonArray()}}));
                                    });
                  });
}

} // namespace

void internalQuery(DatabaseHost *host, CallDeadlines *deadlines, const CallContext &ctx,
                   const QString &id, const QString &sql, const QJsonArray &params, PageDone done)
{
    host->withBackend(
        ctx, id,
        [deadlines, sql, params, c = ctx, done](Result<DatabaseBackend *> b, ActivityToken token) {
            if (!b)
                return done(b.error());
            SqlRequest req;
            req.sql = sql;
            req.params = params;
            req.pageSize = PageLimits::kMaxRows;
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                deadlines, kDefaultTimeoutMs, kCancelGraceMs, c,
                [backend, req](PageDone d) { return backend->query(req, std::move(d)); },
                [backend, done, activity = share(std::move(token))](Result<Page> r) {
                    activity->end();
                    if (r && !r->value(QStringLiteral("cursor")).toString().isEmpty() && backend)
                        backend->closeCursor(
                            r->value(QStringLiteral("cursor")).toString()); // more than enough rows
                    done(r);
                });
        });
}

void catalogCall(DatabaseHost *host, CallDeadlines *deadlines, const QString &method,
                 const QJsonObject &params, const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    if (p.failed())
        return reply(p.error());
    const Result<const SqlDialect *> dialect = host->dialectOf(ctx.keyId, id);
    if (!dialect)
        return reply(dialect.error());
    const SqlDialect &d = **dialect;

    if (method == QLatin1String("version"))
        return internalQuery(host, deadlines, ctx, id, d.version, {},
                             [reply, type = d.type](Result<Page> r) {
                                 if (!r)
                                     return reply(r.error());
                                 reply(QJsonValue(
                                     QJsonObject{{QStringLiteral("type"), type},
                                                 {QStringLiteral("version"),
                                                  rowsOf(r).at(0).toArray().at(0).toString()}}));
                             });
    if (method == QLatin1String("ping")) {
        QElapsedTimer clock;
        clock.start();
        return internalQuery(host, deadlines, ctx, id, QStringLiteral("SELECT 1"), {},
                             [reply, clock](Result<Page> r) {
                                 reply(QJsonValue(QJsonObject{{QStringLiteral("ok"), bool(r)},
                                                              {QStringLiteral("latencyMs"),
                                                               double(clock.nsecsElapsed()) / 1e6},
                                                              {QStringLiteral("error"),
                                                               r ? QJsonValue()
                                                                 : QJsonValue(r.error().message)}}));
                             });
    }
    if (method == QLatin1String("listTables"))
        return internalQuery(host, deadlines, ctx, id, d.listTables, {}, [reply](Result<Page> r) {
            if (!r)
                return reply(r.error());
            reply(QJsonValue(QJsonObject{{QStringLiteral("tables"), tablesOf(rowsOf(r))}}));
        });
    if (method == QLatin1String("listDatabases"))
        return internalQuery(host, deadlines, ctx, id, d.listDatabases, {},
                             [reply, owners = d.databasesHaveOwners](Result<Page> r) {
                                 if (!r)
                                     return reply(r.error());
                                 reply(QJsonValue(QJsonObject{{QStringLiteral("databases"),
                                                               databasesOf(rowsOf(r), owners)}}));
                             });
    if (method == QLatin1String("createDatabase")) {
        const QString name = p.requiredString(QStringLiteral("name"));
        if (!p.failed() && !isValidSqlName(name))
            p.fail(QStringLiteral("name"),
                   QStringLiteral("must be a name of letters, digits, _ $ - (at most 63)"));
        if (p.failed())
            return reply(p.error());
        if (!d.createsDatabases)
            return reply(Error{ErrorCode::NotImplemented,
                               QStringLiteral("createDatabase is for PostgreSQL; a %1 database is "
                                              "one file (ATTACH another file instead)")
                                   .arg(d.type),
                               {}});
        return createDatabase(host, deadlines, id, name, ctx, reply);
    }
    describeTable(host, deadlines, id, d, p, ctx, reply);
}

} // namespace Sandbox::Engine
