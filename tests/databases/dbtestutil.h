#pragma once

#include "testclient.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QString>

class EngineFixture;

// The three engines as the rows of a data-driven test (a "type" column).
void addEngineRows();
// One database of each engine (size "basic") on a started engine: their ids by type, or an empty
// hash at the first that fails (the engine's last error says why).
QHash<QString, QString> createOfEachEngine(EngineFixture &engine);

// Shortcuts for the database tests: one RPC call per line, answers as JSON.
struct DbCall
{
    RpcTestClient *rpc;
    QString id;

    QJsonObject query(const QString &sql, const QJsonArray &params = {},
                      QJsonObject extra = {}) const;
    QJsonObject execute(const QString &sql, const QJsonArray &params = {}) const;
    QJsonObject method(const QString &name, QJsonObject params = {}) const;
    // The error object of the last failed call (empty when it succeeded).
    QJsonObject lastError() const { return rpc->lastError(); }
};

// The SQL dialect bits that differ between the engines.
struct Dialect
{
    QString type;
    QString p(int n) const
    {
        return type == QLatin1String("sqlite") ? QStringLiteral("?") : QStringLiteral("$%1").arg(n);
    }
    // A statement that runs until it is cancelled.
    QString endless() const;
};
