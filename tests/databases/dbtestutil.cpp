#include "dbtestutil.h"

#include "enginefixture.h"

#include <QTest>

void addEngineRows()
{
    QTest::addColumn<QString>("type");
    for (const char *t : {"postgres", "sqlite", "duckdb"})
        QTest::newRow(t) << QString::fromLatin1(t);
}

QHash<QString, QString> createOfEachEngine(EngineFixture &engine)
{
    QHash<QString, QString> ids;
    for (const QString &type :
         {QStringLiteral("postgres"), QStringLiteral("sqlite"), QStringLiteral("duckdb")}) {
        const QJsonObject r = engine.create(QStringLiteral("databases.create"),
                                            {{QStringLiteral("type"), type},
                                             {QStringLiteral("size"), QStringLiteral("basic")}},
                                            120000);
        if (r.isEmpty())
            return {};
        ids.insert(type, r.value(QStringLiteral("id")).toString());
    }
    return ids;
}

QJsonObject DbCall::query(const QString &sql, const QJsonArray &params, QJsonObject extra) const
{
    extra.insert(QStringLiteral("id"), id);
    extra.insert(QStringLiteral("sql"), sql);
    extra.insert(QStringLiteral("params"), params);
    if (!extra.contains(QStringLiteral("rowMode")))
        extra.insert(QStringLiteral("rowMode"), QStringLiteral("array"));
    return rpc->result(QStringLiteral("databases.query"), extra, 120000);
}

QJsonObject DbCall::execute(const QString &sql, const QJsonArray &params) const
{
    return rpc->result(QStringLiteral("databases.execute"),
                       {{QStringLiteral("id"), id},
                        {QStringLiteral("sql"), sql},
                        {QStringLiteral("params"), params}},
                       120000);
}

QJsonObject DbCall::method(const QString &name, QJsonObject params) const
{
    params.insert(QStringLiteral("id"), id);
    return rpc->result(QStringLiteral("databases.") + name, params, 120000);
}

QString Dialect::endless() const
{
    if (type == QLatin1String("postgres"))
        return QStringLiteral("SELECT pg_sleep(60)");
    if (type == QLatin1String("sqlite"))
        return QStringLiteral("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                              "SELECT count(*) FROM c");
    return QStringLiteral(
        "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range * b.range = -1");
}
