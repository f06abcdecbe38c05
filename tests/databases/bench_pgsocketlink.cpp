// Benchmark (label bench): what the engine's PgSocketLink costs a point select. The engine's own
// libpq connection (PgConnection, non-blocking on one event loop, as in sandboxd) runs the same
// point selects on the same server in the same run, over the two paths in turn:
//   direct — libpq connects to the server's socket in the sandbox's /run/db by its name
//   link   — libpq connects to the engine-private link to the socket's inode (the engine's path).
#include "databases/pgconnection.h"
#include "databases/pgsocketlink.h"
#include "enginefixture.h"
#include "samplestats.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

#include <libpq-fe.h>

using namespace Sandbox;
using namespace Sandbox::Engine;

namespace {

using SampleStats::median;
using SampleStats::percentile;

} // namespace

class bench_PgSocketLink : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void pointSelect();

private:
    // Opens a PgConnection with libpq's host=dir; null on failure.
    PgConnection *open(const QString &dir);
    // One point select; its time in ms, or -1.
    double select(PgConnection *c, int key);

    EngineFixture m_engine;
    QString m_id;
    uid_t m_uid = 0;
};

void bench_PgSocketLink::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_id = m_engine
               .create(QStringLiteral("databases.create"),
                       {{QStringLiteral("type"), QStringLiteral("postgres")}})
               .value(QStringLiteral("id"))
               .toString();
    QVERIFY2(!m_id.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("databases.execute"),
                         {{QStringLiteral("id"), m_id},
                          {QStringLiteral("sql"),
                           QStringLiteral("CREATE TABLE kv(id integer PRIMARY KEY, v text); "
                                          "INSERT INTO kv SELECT g, 'value ' || g FROM "
                                          "generate_series(1, 100000) g")}},
                         120000)
                 .isEmpty());
    m_uid = m_engine.rpc()
                .result(QStringLiteral("sandbox.exec"),
                        {{QStringLiteral("id"), m_id},
                         {QStringLiteral("command"), QStringLiteral("id -u")}})
                .value(QStringLiteral("stdout"))
                .toString()
                .trimmed()
                .toUInt();
    QVERIFY(m_uid > 0 || ::geteuid() != 0);
}

PgConnection *bench_PgSocketLink::open(const QString &dir)
{
    auto *c = new PgConnection(this);
    bool done = false, ok = false;
    QEventLoop loop;
    c->open({{"host", QFile::encodeName(dir)},
             {"port", "5432"},
             {"dbname", "postgres"},
             {"user", "sandbox"},
             {"sslmode", "disable"},
             {"gssencmode", "disable"}},
            [&](Result<bool> r) {
                done = true;
                ok = bool(r);
                if (!r)
                    qWarning("connect: %s", qPrintable(r.error().message));
                loop.quit();
            });
    if (!done)
        loop.exec();
    if (!ok) {
        delete c;
        return nullptr;
    }
    return c;
}

double bench_PgSocketLink::select(PgConnection *c, int key)
{
    QElapsedTimer clock;
    clock.start();
    bool finished = false, right = false;
    QEventLoop loop;
    PgConnection::Sink sink;
    const QByteArray expected = "value " + QByteArray::number(key);
    sink.result = [&](PGresult *r) {
        right = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                && QByteArray(PQgetvalue(r, 0, 0)) == expected;
    };
    sink.finished = [&] {
        finished = true;
        loop.quit();
    };
    sink.failed = [&](const QString &why) {
        qWarning("query: %s", qPrintable(why));
        loop.quit();
    };
    if (!c->send("SELECT v FROM kv WHERE id = $1", {QByteArray::number(key)}, {false}, {false},
                 false, false, sink))
        return -1;
    if (!finished)
        loop.exec();
    return finished && right ? double(clock.nsecsElapsed()) / 1e6 : -1;
}

void bench_PgSocketLink::pointSelect()
{
    const QString volume = m_engine.process().dataDir() + QStringLiteral("/sandboxes/") + m_id
                           + QStringLiteral("/volume");
    QTemporaryDir linkRoot(QDir::tempPath() + QStringLiteral("/bench-link-XXXXXX"));
    PgSocketLink link({volume, m_uid});
    QVERIFY(link.create(linkRoot.path() + QStringLiteral("/pg")));
    QVERIFY(link.pin());
    std::unique_ptr<PgConnection> direct(open(volume + QStringLiteral("/run")));
    std::unique_ptr<PgConnection> linked(open(link.directory()));
    QVERIFY(direct && linked);
    for (int i = 0; i < 200; ++i) { // warm both up
        QVERIFY(select(direct.get(), 1 + i) >= 0);
        QVERIFY(select(linked.get(), 1 + i) >= 0);
    }
    // Interleaved, so that both paths see the same machine.
    QList<double> a, b;
    for (int i = 0; i < 3000; ++i) {
        const int key = 1 + (i * 7919) % 100000;
        const double d = select(direct.get(), key);
        const double r = select(linked.get(), key);
        QVERIFY(d >= 0 && r >= 0);
        a << d;
        b << r;
    }
    qInfo(
        "BENCH postgres point select on the engine's libpq connection: to the sandbox's socket by "
        "its name median %.3f ms (p95 %.3f); through the engine's PgSocketLink median %.3f ms "
        "(p95 %.3f); %+.0f us per query, ratio %.2fx",
        median(a), percentile(a, 0.95), median(b), percentile(b, 0.95),
        (median(b) - median(a)) * 1000, median(b) / median(a));
}

QTEST_GUILESS_MAIN(bench_PgSocketLink)
#include "bench_pgsocketlink.moc"
