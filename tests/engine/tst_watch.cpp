// sandbox.watch (docs/protocol.md 4.5.1) against a real engine and a real sandbox: changes made by
// commands come as stream events; a flood of creates collapses into `rescan` and the engine keeps
// answering; a watch ends with cancel.
#include "enginefixture.h"
#include "healthprobe.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <algorithm>

class tst_Watch : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase();
    void cleanupTestCase();
    void changesComeAsEvents();
    void badWatchesAreRefused_data();
    void badWatchesAreRefused();
    void floodBecomesRescan();

private:
    QJsonObject exec(const QString &command);
    // The `event`s of stream `streamId` received so far.
    QList<QJsonObject> events(const QString &streamId) const;
    // Waits until an event of `streamId` matches every member of `want`; returns it.
    QJsonObject waitFor(const QString &streamId, const QJsonObject &want, int timeoutMs = 10000);
    QString watch(const QString &path, bool recursive);

    EngineFixture m_engine;
    QString m_id;
};

void tst_Watch::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_id = m_engine.createAgent(QStringLiteral("codex"), QStringLiteral("basic"));
    QVERIFY2(!m_id.isEmpty(), dump(m_engine.rpc().lastError()).constData());
}

void tst_Watch::cleanupTestCase()
{
    m_engine.cleanup();
}

QJsonObject tst_Watch::exec(const QString &command)
{
    return m_engine.exec(m_id, command, {{QStringLiteral("timeout"), 600000}}, 620000);
}

QList<QJsonObject> tst_Watch::events(const QString &streamId) const
{
    QList<QJsonObject> out;
    for (const QJsonObject &n : m_engine.rpc().notifications) {
        const QJsonObject params = n.value(QStringLiteral("params")).toObject();
        if (n.value(QStringLiteral("method")) == QLatin1String("stream.event")
            && params.value(QStringLiteral("streamId")) == streamId)
            out.append(params.value(QStringLiteral("event")).toObject());
    }
    return out;
}

QJsonObject tst_Watch::waitFor(const QString &streamId, const QJsonObject &want, int timeoutMs)
{
    const auto matches = [&want](const QJsonObject &e) {
        const QStringList keys = want.keys();
        return std::all_of(keys.begin(), keys.end(),
                           [&](const QString &k) { return e.value(k) == want.value(k); });
    };
    QJsonObject found;
    const auto seen = [&] {
        for (const QJsonObject &e : events(streamId)) {
            if (matches(e)) {
                found = e;
                return true;
            }
        }
        return false;
    };
    if (!QTest::qWaitFor(seen, timeoutMs)) {
        QByteArray all;
        for (const QJsonObject &e : events(streamId))
            all += QJsonDocument(e).toJson(QJsonDocument::Compact) + '\n';
        qWarning("no event like %s; got:\n%s",
                 QJsonDocument(want).toJson(QJsonDocument::Compact).constData(), all.constData());
    }
    return found;
}

QString tst_Watch::watch(const QString &path, bool recursive)
{
    const QJsonObject r = m_engine.rpc().result(QStringLiteral("sandbox.watch"),
                                                {{QStringLiteral("id"), m_id},
                                                 {QStringLiteral("path"), path},
                                                 {QStringLiteral("recursive"), recursive}});
    if (r.value(QStringLiteral("path")).toString() != path)
        qWarning("watch answered %s",
                 QJsonDocument(r.isEmpty() ? m_engine.rpc().lastError() : r).toJson().constData());
    return r.value(QStringLiteral("streamId")).toString();
}

void tst_Watch::changesComeAsEvents()
{
    const QString flat = watch(QStringLiteral("/workspace"), false);
    const QString deep = watch(QStringLiteral("/workspace"), true);
    QVERIFY(!flat.isEmpty() && !deep.isEmpty());
    const auto is = [](const char *type, const QString &path, bool isDir) {
        return QJsonObject{{QStringLiteral("type"), QLatin1String(type)},
                           {QStringLiteral("path"), path},
                           {QStringLiteral("isDir"), isDir}};
    };
    const QString file = QStringLiteral("/workspace/new.txt");
    exec(QStringLiteral("echo x > /workspace/new.txt"));
    QVERIFY(!waitFor(flat, is("create", file, false)).isEmpty());
    QVERIFY(!waitFor(deep, is("create", file, false)).isEmpty());
    exec(QStringLiteral("sleep 0.2; echo more >> new.txt"));
    QVERIFY(!waitFor(flat, is("modify", file, false)).isEmpty());
    // A new folder is watched at once: what is made in it shows up in the recursive watch only.
    exec(QStringLiteral("mkdir -p d/e && echo y > d/e/deep.txt"));
    QVERIFY(!waitFor(flat, is("create", QStringLiteral("/workspace/d"), true)).isEmpty());
    QVERIFY(
        !waitFor(deep, is("create", QStringLiteral("/workspace/d/e/deep.txt"), false)).isEmpty());
    exec(QStringLiteral("sleep 0.2; echo z > d/e/later.txt"));
    QVERIFY(
        !waitFor(deep, is("create", QStringLiteral("/workspace/d/e/later.txt"), false)).isEmpty());
    exec(QStringLiteral("mv new.txt moved.txt"));
    QJsonObject renamed = is("rename", QStringLiteral("/workspace/moved.txt"), false);
    renamed.insert(QStringLiteral("from"), file);
    QVERIFY(!waitFor(flat, renamed).isEmpty());
    exec(QStringLiteral("rm moved.txt"));
    QVERIFY(!waitFor(flat, is("delete", QStringLiteral("/workspace/moved.txt"), false)).isEmpty());
    for (const QJsonObject &e : events(flat))
        QVERIFY2(e.value(QStringLiteral("path")).toString().count(u'/') == 2,
                 "a flat watch reports only the folder's own entries");

    // Cancel ends the stream with its result.
    QVERIFY(m_engine.rpc()
                .call(QStringLiteral("stream.cancel"), {{QStringLiteral("streamId"), flat}})
                .contains(QStringLiteral("result")));
    QJsonObject end;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            for (const QJsonObject &n : m_engine.rpc().notifications) {
                const QJsonObject p = n.value(QStringLiteral("params")).toObject();
                if (n.value(QStringLiteral("method")) == QLatin1String("stream.end")
                    && p.value(QStringLiteral("streamId")) == flat)
                    end = p;
            }
            return !end.isEmpty();
        }(),
        10000);
    QCOMPARE(end.value(QStringLiteral("result")).toObject(),
             (QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace")},
                          {QStringLiteral("cancelled"), true}}));
    QVERIFY(m_engine.rpc()
                .call(QStringLiteral("stream.cancel"), {{QStringLiteral("streamId"), deep}})
                .contains(QStringLiteral("result")));
}

void tst_Watch::badWatchesAreRefused_data()
{
    QTest::addColumn<QJsonObject>("params");
    QTest::addColumn<int>("code");
    QTest::newRow("outside /workspace")
        << QJsonObject{{QStringLiteral("path"), QStringLiteral("/etc")}} << -32007;
    QTest::newRow("dot-dot out of it")
        << QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/../etc")}} << -32007;
    QTest::newRow("a folder that does not exist")
        << QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/nope")}} << -32002;
    QTest::newRow("a file") << QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/f")}}
                            << -32013;
    QTest::newRow("a link that leads out")
        << QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/out")}} << -32007;
}

void tst_Watch::badWatchesAreRefused()
{
    QFETCH(QJsonObject, params);
    QFETCH(int, code);
    exec(QStringLiteral("touch f; ln -sfn /etc out"));
    params.insert(QStringLiteral("id"), m_id);
    const QJsonObject answer = m_engine.rpc().call(QStringLiteral("sandbox.watch"), params);
    QCOMPARE(answer.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             code);
}

void tst_Watch::floodBecomesRescan()
{
    const QString deep = watch(QStringLiteral("/workspace"), true);
    QVERIFY(!deep.isEmpty());
    exec(QStringLiteral("mkdir -p flood"));
    QVERIFY(
        !waitFor(deep, {{QStringLiteral("path"), QStringLiteral("/workspace/flood")}}).isEmpty());

    // The same run's baseline: /health with the watch idle.
    HealthProbe idle(m_engine.process().url(), m_engine.process().pid(), 20);
    idle.start();
    QTest::qWait(2000); // a baseline needs a span of time, not a condition
    idle.stop();

    const qsizetype before = events(deep).size();
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 20);
    probe.start();
    QElapsedTimer t;
    t.start();
    const QJsonObject r = exec(QStringLiteral(
        "cd flood && i=0; while [ $i -lt 100000 ]; do : > f$i; i=$((i+1)); done; ls | wc -l"));
    const qint64 floodMs = t.elapsed();
    QCOMPARE(r.value(QStringLiteral("stdout")).toString().trimmed(), QStringLiteral("100000"));
    QVERIFY(!waitFor(deep, {{QStringLiteral("type"), QStringLiteral("rescan")},
                            {QStringLiteral("path"), QStringLiteral("/workspace")}})
                 .isEmpty());
    probe.stop();
    // The flood's tail may still be arriving (as rescans, at most one a second) after the first
    // rescan: wait until the stream has been quiet for 1.5 s.
    qsizetype seen = -1;
    QElapsedTimer quiet;
    QTRY_VERIFY_WITH_TIMEOUT(([&] {
                                 const qsizetype n = events(deep).size();
                                 if (n != seen) {
                                     seen = n;
                                     quiet.restart();
                                 }
                                 return quiet.elapsed() >= 1500;
                             }()),
                             60000);
    // After the flood, single changes come one by one again.
    exec(QStringLiteral("sleep 1.5; echo after > /workspace/after.txt"));
    QVERIFY(!waitFor(deep, {{QStringLiteral("type"), QStringLiteral("create")},
                            {QStringLiteral("path"), QStringLiteral("/workspace/after.txt")}})
                 .isEmpty());
    const QList<QJsonObject> all = events(deep);
    const qsizetype during = all.size() - before;
    const auto rescans = std::count_if(all.begin(), all.end(), [](const QJsonObject &e) {
        return e.value(QStringLiteral("type")) == QLatin1String("rescan");
    });
    qInfo("BENCH watch_flood: 100000 creates in %lld ms -> %lld events (%lld rescans); "
          "flood %s; idle baseline %s",
          floodMs, qlonglong(during), qlonglong(rescans), qPrintable(probe.summary()),
          qPrintable(idle.summary()));
    QVERIFY2(during < 5000, "the flood must collapse, not come as 100 000 events");
    const QString stall = probe.stall();
    QVERIFY2(stall.isEmpty(), qPrintable(stall));
    m_engine.rpc().call(QStringLiteral("stream.cancel"), {{QStringLiteral("streamId"), deep}});
}

QTEST_GUILESS_MAIN(tst_Watch)
#include "tst_watch.moc"
