// Benchmark (label bench): database create -> first query result per engine, a point-select
// round trip through the engine against psql / sqlite3 on the same data, and rows per second
// streamed for a 1,000,000-row result. Prints figures and ratios against baselines measured in
// the same run.
#include "engineprocess.h"
#include "testclient.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTest>

#include <algorithm>

namespace {

double median(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v[v.size() / 2];
}

double percentile(QList<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v[qMin<qsizetype>(v.size() - 1, qsizetype(v.size() * p))];
}

double ms(const QElapsedTimer &t)
{
    return double(t.nsecsElapsed()) / 1e6;
}

// A long-lived command-line client (psql, sqlite3) fed one query per line: the direct path.
class LineClient
{
public:
    bool start(const QString &program, const QStringList &args)
    {
        m_p.setProgram(program);
        m_p.setArguments(args);
        m_p.setProcessChannelMode(QProcess::MergedChannels);
        m_p.start();
        return m_p.waitForStarted(5000);
    }
    // Sends one statement and waits for one line of output.
    QByteArray ask(const QByteArray &sql)
    {
        m_p.write(sql + '\n');
        while (!m_p.canReadLine())
            if (!m_p.waitForReadyRead(10000))
                return {};
        return m_p.readLine().trimmed();
    }
    ~LineClient()
    {
        m_p.closeWriteChannel();
        if (!m_p.waitForFinished(3000))
            m_p.kill();
    }

private:
    QProcess m_p;
};

} // namespace

class bench_Databases : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void createToFirstResult_data();
    void createToFirstResult();
    void pointSelectRoundTrip_data();
    void pointSelectRoundTrip();
    void streamAMillionRows_data();
    void streamAMillionRows();

private:
    QJsonObject call(const QString &method, const QJsonObject &params)
    {
        return m_rpc.result(method, params, 120000);
    }
    QString create(const QString &type, double *createMs, double *firstResultMs);
    void engines();

    EngineProcess m_engine;
    RpcTestClient m_rpc;
    QHash<QString, QString> m_ids;
};

void bench_Databases::engines()
{
    QTest::addColumn<QString>("type");
    for (const char *t : {"postgres", "sqlite", "duckdb"})
        QTest::newRow(t) << QString::fromLatin1(t);
}

void bench_Databases::initTestCase()
{
    QVERIFY2(m_engine.start({QStringLiteral("--max-running"), QStringLiteral("32"),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("65536")}),
             qPrintable(m_engine.log()));
    QVERIFY(m_rpc.open(m_engine.wsUrl(), m_engine.key()));
    // The PostgreSQL template is built once per data dir: not part of a create.
    double a, b;
    QVERIFY(!create(QStringLiteral("postgres"), &a, &b).isEmpty());
    qInfo("one-time PostgreSQL template + first database: %.0f ms", a);
}

void bench_Databases::cleanupTestCase()
{
    m_engine.terminate();
}

QString bench_Databases::create(const QString &type, double *createMs, double *firstResultMs)
{
    QElapsedTimer clock;
    clock.start();
    // The default size (standard-1: half a CPU); "lite" has 1/16 of a CPU, which throttles start-up.
    const QJsonObject created = call(QStringLiteral("databases.create"),
                                     {{QStringLiteral("type"), type}});
    *createMs = ms(clock);
    const QString id = created.value(QStringLiteral("id")).toString();
    if (id.isEmpty())
        return {};
    const QJsonObject r = call(QStringLiteral("databases.query"),
                               {{QStringLiteral("id"), id},
                                {QStringLiteral("sql"), QStringLiteral("SELECT 1")}});
    *firstResultMs = ms(clock);
    return r.value(QStringLiteral("rowCount")).toInt() == 1 ? id : QString();
}

void bench_Databases::createToFirstResult_data()
{
    engines();
}
void bench_Databases::createToFirstResult()
{
    QFETCH(QString, type);
    const double target = type == QLatin1String("postgres") ? 300 : 30;
    QList<double> creates, firsts, floors;
    for (int i = 0; i < 7; ++i) {
        double c = 0, f = 0;
        const QString id = create(type, &c, &f);
        QVERIFY2(!id.isEmpty(), QJsonDocument(m_rpc.lastError()).toJson().constData());
        creates << c;
        firsts << f;
        call(QStringLiteral("databases.delete"), {{QStringLiteral("id"), id}});
        // Baseline: a bare sandbox of the same size (bubblewrap + cgroups + supervisor), no server.
        QElapsedTimer clock;
        clock.start();
        const QJsonObject bare = call(QStringLiteral("agents.create"),
                                      {{QStringLiteral("type"), QStringLiteral("claude-code")}});
        floors << ms(clock);
        call(QStringLiteral("agents.delete"),
             {{QStringLiteral("id"), bare.value(QStringLiteral("id")).toString()}});
    }
    const double first = median(firsts), floor = median(floors);
    qInfo("BENCH %s create->first result: median %.1f ms (create answered %.1f ms; p90 %.1f ms); "
          "target %.0f ms: %s; "
          "bare sandbox baseline %.1f ms, ratio %.2f",
          qPrintable(type), first, median(creates), percentile(firsts, 0.9), target,
          first < target ? "met" : "NOT met", floor, first / floor);
}

void bench_Databases::pointSelectRoundTrip_data()
{
    engines();
}
void bench_Databases::pointSelectRoundTrip()
{
    QFETCH(QString, type);
    double c, f;
    const QString id = create(type, &c, &f);
    QVERIFY(!id.isEmpty());
    m_ids.insert(type, id);
    const bool pg = type == QLatin1String("postgres");
    const QString fill
        = pg ? QStringLiteral("CREATE TABLE kv(id integer PRIMARY KEY, v text); INSERT INTO kv "
                              "SELECT g, 'value ' || g FROM generate_series(1, 100000) g")
          : type == QLatin1String("sqlite")
              ? QStringLiteral("CREATE TABLE kv(id INTEGER PRIMARY KEY, v TEXT); WITH RECURSIVE "
                               "c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c WHERE g < 100000) "
                               "INSERT INTO kv SELECT g, 'value ' || g FROM c")
              : QStringLiteral("CREATE TABLE kv(id INTEGER PRIMARY KEY, v VARCHAR); INSERT INTO kv "
                               "SELECT range, 'value ' || range FROM range(1, 100001)");
    QVERIFY(!call(QStringLiteral("databases.execute"),
                  {{QStringLiteral("id"), id}, {QStringLiteral("sql"), fill}})
                 .isEmpty());
    const QString mark = type == QLatin1String("sqlite") ? QStringLiteral("?")
                                                         : QStringLiteral("$1");
    const int n = 400;
    QList<double> engine;
    for (int i = 0; i < n; ++i) {
        const int key = 1 + (i * 7919) % 100000;
        QElapsedTimer clock;
        clock.start();
        const QJsonObject r = call(QStringLiteral("databases.query"),
                                   {{QStringLiteral("id"), id},
                                    {QStringLiteral("sql"),
                                     QString(QStringLiteral("SELECT v FROM kv WHERE id = ") + mark)},
                                    {QStringLiteral("params"), QJsonArray{key}},
                                    {QStringLiteral("rowMode"), QStringLiteral("array")}});
        engine << ms(clock);
        QCOMPARE(r.value(QStringLiteral("rows")).toArray().at(0).toArray().at(0).toString(),
                 QStringLiteral("value %1").arg(key));
    }
    // The direct path on the same data: a long-lived psql / sqlite3 on the host.
    const QString state = m_engine.dataDir() + QStringLiteral("/sandboxes/") + id;
    QList<double> direct;
    if (type == QLatin1String("duckdb")) {
        qInfo("BENCH duckdb point select through the engine: median %.3f ms, p95 %.3f ms (no "
              "DuckDB shell ships with the npm "
              "packages: no direct baseline)",
              median(engine), percentile(engine, 0.95));
        return;
    }
    LineClient cli;
    if (pg)
        QVERIFY(cli.start(QStringLiteral("psql"),
                          {QStringLiteral("-X"), QStringLiteral("-q"), QStringLiteral("-A"),
                           QStringLiteral("-t"), QStringLiteral("-h"),
                           state + QStringLiteral("/volume/run"), QStringLiteral("-U"),
                           QStringLiteral("sandbox"), QStringLiteral("-d"),
                           QStringLiteral("postgres")}));
    else
        QVERIFY(cli.start(QStringLiteral("sqlite3"),
                          {QStringLiteral("-batch"), QStringLiteral("-readonly"),
                           state + QStringLiteral("/volume/workspace/main.db")}));
    for (int i = 0; i < n; ++i) {
        const int key = 1 + (i * 7919) % 100000;
        QElapsedTimer clock;
        clock.start();
        const QByteArray line = cli.ask("SELECT v FROM kv WHERE id = " + QByteArray::number(key)
                                        + ';');
        direct << ms(clock);
        QCOMPARE(line, QByteArray("value ") + QByteArray::number(key));
    }
    qInfo("BENCH %s point select: through the engine median %.3f ms (p95 %.3f); %s directly median "
          "%.3f ms (p95 %.3f); ratio %.1fx",
          qPrintable(type), median(engine), percentile(engine, 0.95), pg ? "psql" : "sqlite3",
          median(direct), percentile(direct, 0.95), median(engine) / median(direct));
}

void bench_Databases::streamAMillionRows_data()
{
    engines();
}
void bench_Databases::streamAMillionRows()
{
    QFETCH(QString, type);
    const QString id = m_ids.value(type);
    QVERIFY(!id.isEmpty());
    const QString sql
        = type == QLatin1String("postgres")
              ? QStringLiteral("SELECT g, 'row ' || g FROM generate_series(1, 1000000) g")
          : type == QLatin1String("sqlite")
              ? QStringLiteral("WITH RECURSIVE c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c "
                               "WHERE g < 1000000) SELECT g, 'row ' || g FROM c")
              : QStringLiteral("SELECT range + 1, 'row ' || (range + 1) FROM range(1000000)");
    QElapsedTimer clock;
    clock.start();
    QJsonObject page = call(QStringLiteral("databases.query"),
                            {{QStringLiteral("id"), id},
                             {QStringLiteral("sql"), sql},
                             {QStringLiteral("pageSize"), 10000},
                             {QStringLiteral("rowMode"), QStringLiteral("array")}});
    const double firstPage = ms(clock);
    qint64 rows = page.value(QStringLiteral("rows")).toArray().size();
    QString cursor = page.value(QStringLiteral("cursor")).toString();
    while (!cursor.isEmpty()) {
        page = call(QStringLiteral("databases.fetch"), {{QStringLiteral("id"), id},
                                                        {QStringLiteral("cursor"), cursor},
                                                        {QStringLiteral("pageSize"), 10000}});
        rows += page.value(QStringLiteral("rows")).toArray().size();
        cursor = page.value(QStringLiteral("cursor")).toString();
    }
    const double total = ms(clock);
    QCOMPARE(rows, 1000000);
    // Baseline: the same rows read directly by the engine's own kind of client on the host.
    double direct = 0;
    if (type != QLatin1String("duckdb")) {
        const QString state = m_engine.dataDir() + QStringLiteral("/sandboxes/") + id;
        QProcess p;
        QElapsedTimer d;
        d.start();
        if (type == QLatin1String("postgres"))
            p.start(QStringLiteral("psql"),
                    {QStringLiteral("-X"), QStringLiteral("-A"), QStringLiteral("-t"),
                     QStringLiteral("-h"), state + QStringLiteral("/volume/run"),
                     QStringLiteral("-U"), QStringLiteral("sandbox"), QStringLiteral("-d"),
                     QStringLiteral("postgres"), QStringLiteral("-c"), sql});
        else
            p.start(QStringLiteral("sqlite3"),
                    {QStringLiteral("-batch"), QStringLiteral("-readonly"),
                     state + QStringLiteral("/volume/workspace/main.db"), sql});
        qint64 lines = 0;
        while (p.state() != QProcess::NotRunning || p.bytesAvailable()) {
            p.waitForReadyRead(1000);
            lines += p.readAll().count('\n');
        }
        direct = ms(d);
        QCOMPARE(lines, 1000000);
    }
    qInfo("BENCH %s 1,000,000 rows streamed in pages of 10,000: first page %.1f ms, total %.0f ms, "
          "%.0f rows/s%s",
          qPrintable(type), firstPage, total, rows * 1000.0 / total,
          direct > 0
              ? qPrintable(QStringLiteral("; %1 directly %2 ms, %3 rows/s, ratio %4x")
                               .arg(type == QLatin1String("postgres") ? QStringLiteral("psql")
                                                                      : QStringLiteral("sqlite3"))
                               .arg(direct, 0, 'f', 0)
                               .arg(rows * 1000.0 / direct, 0, 'f', 0)
                               .arg(total / direct, 0, 'f', 1))
              : ", no direct DuckDB client to compare with");
}

QTEST_GUILESS_MAIN(bench_Databases)
#include "bench_databases.moc"
