// Runs tests/conformance/cases.json (the machine-readable half of docs/protocol.md) against a
// real sandboxd. The Worker runs the same file: worker/test/conformance.test.ts.
#include "enginefixture.h"
#include "protocol/error.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTest>

namespace {

class Matcher
{
public:
    QHash<QString, QJsonValue> captures;

    // Replaces "${name}" in every string of a value with captured values.
    QJsonValue substitute(const QJsonValue &v) const
    {
        if (v.isString())
            return substituteString(v.toString());
        if (v.isArray()) {
            QJsonArray out;
            for (const QJsonValue &e : v.toArray())
                out.append(substitute(e));
            return out;
        }
        if (v.isObject()) {
            QJsonObject out;
            const QJsonObject o = v.toObject();
            for (auto it = o.begin(); it != o.end(); ++it)
                out.insert(it.key(), substitute(it.value()));
            return out;
        }
        return v;
    }

    QString substituteString(QString s) const
    {
        static const QRegularExpression var(QStringLiteral("\\$\\{(\\w+)\\}"));
        auto it = var.globalMatch(s);
        QList<QPair<QString, QString>> repl;
        while (it.hasNext()) {
            const auto m = it.next();
            const QJsonValue v = captures.value(m.captured(1));
            repl.append({m.captured(0),
                         v.isString()
                             ? v.toString()
                             : QString::fromUtf8(
                                   QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact))
                                   .mid(1)
                                   .chopped(1)});
        }
        for (const auto &[from, to] : repl)
            s.replace(from, to);
        return s;
    }

    // Empty string: matches; otherwise where and why not.
    QString match(const QJsonValue &pattern, const QJsonValue &actual, const QString &where)
    {
        if (pattern.isString()) {
            const QString p = pattern.toString();
            if (p.startsWith(u'$') && !p.startsWith(QLatin1String("${"))) {
                bool ok = true;
                if (p == QLatin1String("$string"))
                    ok = actual.isString();
                else if (p == QLatin1String("$number"))
                    ok = actual.isDouble();
                else if (p == QLatin1String("$integer"))
                    ok = actual.isDouble()
                         && actual.toDouble() == double(qint64(actual.toDouble()));
                else if (p == QLatin1String("$boolean"))
                    ok = actual.isBool();
                else if (p == QLatin1String("$object"))
                    ok = actual.isObject();
                else if (p == QLatin1String("$array"))
                    ok = actual.isArray();
                else if (p == QLatin1String("$null"))
                    ok = actual.isNull();
                else if (p == QLatin1String("$any"))
                    ok = !actual.isUndefined();
                else if (p == QLatin1String("$absent"))
                    ok = actual.isUndefined();
                else
                    return where + QStringLiteral(": unknown matcher ") + p;
                return ok ? QString()
                          : where + QStringLiteral(": expected %1, got %2").arg(p, show(actual));
            }
            const QString expected = substituteString(p);
            return actual.isString() && actual.toString() == expected
                       ? QString()
                       : where
                             + QStringLiteral(": expected \"%1\", got %2")
                                   .arg(expected, show(actual));
        }
        if (pattern.isObject()) {
            const QJsonObject po = pattern.toObject();
            if (po.contains(QStringLiteral("$capture"))) {
                if (actual.isUndefined())
                    return where + QStringLiteral(": nothing to capture");
                captures.insert(po.value(QStringLiteral("$capture")).toString(), actual);
                return {};
            }
            if (po.contains(QStringLiteral("$startsWith"))) {
                return actual.toString().startsWith(
                           po.value(QStringLiteral("$startsWith")).toString())
                           ? QString()
                           : where + QStringLiteral(": wrong prefix in ") + show(actual);
            }
            if (po.contains(QStringLiteral("$unordered"))
                || po.contains(QStringLiteral("$contains"))) {
                const bool exact = po.contains(QStringLiteral("$unordered"));
                const QJsonArray want = po.value(exact ? QStringLiteral("$unordered")
                                                       : QStringLiteral("$contains"))
                                            .toArray();
                if (!actual.isArray())
                    return where + QStringLiteral(": expected an array, got ") + show(actual);
                QJsonArray have = actual.toArray();
                if (exact && have.size() != want.size())
                    return where
                           + QStringLiteral(": expected %1 elements, got %2")
                                 .arg(want.size())
                                 .arg(have.size());
                for (const QJsonValue &w : want) {
                    bool found = false;
                    for (qsizetype i = 0; i < have.size() && !found; ++i) {
                        Matcher probe = *this;
                        if (probe.match(w, have[i], where).isEmpty()) {
                            captures = probe.captures;
                            if (exact)
                                have.removeAt(i);
                            found = true;
                        }
                    }
                    if (!found)
                        return where + QStringLiteral(": no element matches ") + show(w)
                               + QStringLiteral(" in ") + show(actual);
                }
                return {};
            }
            if (!actual.isObject())
                return where + QStringLiteral(": expected an object, got ") + show(actual);
            const QJsonObject ao = actual.toObject();
            for (auto it = po.begin(); it != po.end(); ++it) {
                const QString err = match(it.value(), ao.value(it.key()), where + u'.' + it.key());
                if (!err.isEmpty())
                    return err;
            }
            return {};
        }
        if (pattern.isArray()) {
            const QJsonArray pa = pattern.toArray();
            const QJsonArray aa = actual.toArray();
            if (!actual.isArray() || pa.size() != aa.size())
                return where + QStringLiteral(": expected an array of %1, got ").arg(pa.size())
                       + show(actual);
            for (qsizetype i = 0; i < pa.size(); ++i) {
                const QString err = match(pa[i], aa[i], where + QStringLiteral("[%1]").arg(i));
                if (!err.isEmpty())
                    return err;
            }
            return {};
        }
        return pattern == actual
                   ? QString()
                   : where
                         + QStringLiteral(": expected %1, got %2").arg(show(pattern), show(actual));
    }

    static QString show(const QJsonValue &v)
    {
        if (v.isUndefined())
            return QStringLiteral("(absent)");
        QString s = QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact))
                        .mid(1)
                        .chopped(1);
        return s.size() > 400 ? s.left(400) + QStringLiteral("...") : s;
    }
};

} // namespace

class tst_Conformance : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void cases_data();
    void cases();
    void routes_data();
    void routes();

private:
    EngineFixture m_engine;
    QString m_otherKey;
};

void tst_Conformance::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    const QJsonObject k = m_engine.rpc().result(QStringLiteral("keys.create"),
                                                {{QStringLiteral("name"),
                                                  QStringLiteral("other")}});
    m_otherKey = k.value(QStringLiteral("key")).toString();
    QVERIFY(!m_otherKey.isEmpty());
}

void tst_Conformance::cleanupTestCase()
{
    m_engine.cleanup();
}

void tst_Conformance::cases_data()
{
    QTest::addColumn<QJsonObject>("testCase");
    QFile f(QStringLiteral(SANDBOX_SOURCE_DIR "/tests/conformance/cases.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray cases
        = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray();
    QVERIFY(!cases.isEmpty());
    for (const QJsonValue &c : cases)
        QTest::newRow(qPrintable(c.toObject().value(QStringLiteral("name")).toString()))
            << c.toObject();
}

void tst_Conformance::cases()
{
    QFETCH(QJsonObject, testCase);
    Matcher m;
    RpcTestClient rpc;
    RpcTestClient second;
    RpcTestClient other;
    int step = 0;
    for (const QJsonValue &sv : testCase.value(QStringLiteral("steps")).toArray()) {
        ++step;
        const QJsonObject s = sv.toObject();
        const QJsonObject expect = s.value(QStringLiteral("expect")).toObject();
        const QString where = QStringLiteral("step %1").arg(step);

        if (s.contains(QStringLiteral("http"))) {
            const QJsonObject h = m.substitute(s.value(QStringLiteral("http"))).toObject();
            const QString auth = h.value(QStringLiteral("auth")).toString(QStringLiteral("key"));
            QString bearer = m_engine.process().key();
            if (auth == QLatin1String("none"))
                bearer.clear();
            else if (auth == QLatin1String("bad"))
                bearer = QStringLiteral("sk_wrong0000000000000000000000000000000000000");
            else if (auth == QLatin1String("other"))
                bearer = m_otherKey;
            QByteArray body;
            if (h.contains(QStringLiteral("rawBody")))
                body = h.value(QStringLiteral("rawBody")).toString().toUtf8();
            else if (h.contains(QStringLiteral("body")))
                body = QJsonDocument(h.value(QStringLiteral("body")).toObject())
                           .toJson(QJsonDocument::Compact);
            QUrl url = m_engine.process().url();
            const QString pathAndQuery = h.value(QStringLiteral("path")).toString();
            url = url.resolved(QUrl(pathAndQuery));
            const HttpAnswer a = httpRequest(h.value(QStringLiteral("method")).toString().toLatin1(),
                                             url, bearer, body);
            QVERIFY2(a.status == expect.value(QStringLiteral("status")).toInt(),
                     qPrintable(where
                                + QStringLiteral(": HTTP status %1, body %2")
                                      .arg(a.status)
                                      .arg(QString::fromUtf8(a.body))));
            if (expect.contains(QStringLiteral("body"))) {
                const QString err = m.match(expect.value(QStringLiteral("body")), a.json(),
                                            where + QStringLiteral(" body"));
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
            continue;
        }
        if (s.contains(QStringLiteral("ws"))) {
            const QString auth
                = s.value(QStringLiteral("ws")).toObject().value(QStringLiteral("auth")).toString();
            RpcTestClient probe;
            QUrl url = m_engine.process().wsUrl();
            bool open = false;
            if (auth == QLatin1String("none")) {
                open = probe.open(url, {});
            } else if (auth == QLatin1String("bad")) {
                open = probe.open(url, QStringLiteral("sk_wrong"));
            } else if (auth == QLatin1String("query")) {
                url.setQuery(QStringLiteral("key=") + m_engine.process().key());
                open = probe.open(url, {});
            } else if (auth == QLatin1String("subprotocol")) {
                open = probe.open(url, {},
                                  {QStringLiteral("sandbox.v1"),
                                   QStringLiteral("bearer.") + m_engine.process().key()});
                if (open)
                    QCOMPARE(probe.socket()->subprotocol(), QStringLiteral("sandbox.v1"));
            }
            QVERIFY2(open == expect.value(QStringLiteral("open")).toBool(),
                     qPrintable(where + QStringLiteral(": ws auth ") + auth));
            continue;
        }
        QVERIFY2(s.contains(QStringLiteral("rpc")),
                 qPrintable(where + QStringLiteral(": unknown step")));
        const QJsonObject r = s.value(QStringLiteral("rpc")).toObject();
        // "on": a second connection of the key ("second") or one of the other key ("other").
        const QString on = r.value(QStringLiteral("on")).toString();
        RpcTestClient &conn = on == QLatin1String("second")  ? second
                              : on == QLatin1String("other") ? other
                                                             : rpc;
        if (!conn.isOpen())
            QVERIFY(conn.open(m_engine.process().wsUrl(),
                              on == QLatin1String("other") ? m_otherKey : m_engine.process().key()));
        QJsonValue sentId;
        if (r.contains(QStringLiteral("raw"))) {
            conn.sendText(r.value(QStringLiteral("raw")).toString().toUtf8());
        } else {
            const QJsonValue send = m.substitute(r.value(QStringLiteral("send")));
            sentId = send.toObject().value(QStringLiteral("id"));
            conn.sendText(send.isArray()
                              ? QJsonDocument(send.toArray()).toJson(QJsonDocument::Compact)
                              : QJsonDocument(send.toObject()).toJson(QJsonDocument::Compact));
        }
        if (expect.value(QStringLiteral("nothing")).toBool()) {
            conn.sendText(
                R"({"jsonrpc":"2.0","id":"sentinel","method":"sessions.current","params":{}})");
            const QJsonValue next = conn.nextMessage();
            QVERIFY2(next.toObject().value(QStringLiteral("id"))
                         == QJsonValue(QStringLiteral("sentinel")),
                     qPrintable(where + QStringLiteral(": expected no answer, got ")
                                + Matcher::show(next)));
            continue;
        }
        // Long enough for an agent run whose CLI retries an unreachable API (20-45 s here).
        const QJsonValue answer = conn.nextMessage(120000);
        const QString err = m.match(expect.value(QStringLiteral("message")), answer, where);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        for (const char *channelName : {"stdout", "stderr"}) {
            const QString channel = QLatin1String(channelName);
            if (!expect.contains(channel))
                continue;
            QString text;
            for (const QJsonObject &n : std::as_const(conn.notifications)) {
                const QJsonObject p = n.value(QStringLiteral("params")).toObject();
                if (n.value(QStringLiteral("method")) == QLatin1String("stream.output")
                    && p.value(QStringLiteral("requestId")) == sentId
                    && p.value(QStringLiteral("channel")) == channel)
                    text += p.value(QStringLiteral("data")).toString();
            }
            QCOMPARE(text, expect.value(channel).toString());
        }
        if (expect.contains(QStringLiteral("notifications"))) {
            // Every notification this connection got so far, once a request sent after this one
            // is answered (a replay may follow the answer).
            conn.sendText(
                R"({"jsonrpc":"2.0","id":"sentinel","method":"sessions.current","params":{}})");
            const QJsonValue next = conn.nextMessage();
            QVERIFY2(next.toObject().value(QStringLiteral("id"))
                         == QJsonValue(QStringLiteral("sentinel")),
                     qPrintable(where + QStringLiteral(": unexpected ") + Matcher::show(next)));
            QJsonArray notes;
            for (const QJsonObject &n : std::as_const(conn.notifications))
                notes.append(n);
            const QString notesErr = m.match(expect.value(QStringLiteral("notifications")), notes,
                                             where + QStringLiteral(" notifications"));
            QVERIFY2(notesErr.isEmpty(), qPrintable(notesErr));
        }
    }
}

// Every route of core/protocol's table (exported as JSON at build time, as the Worker's
// conformance test reads it) reaches a method: the answer may be any error but "no route"
// (-32601). The ids name no sandbox and JSON bodies are not objects, so nothing changes.
void tst_Conformance::routes_data()
{
    QTest::addColumn<QJsonObject>("route");
    QFile f(QStringLiteral(SANDBOX_ROUTES_JSON));
    QVERIFY2(f.open(QIODevice::ReadOnly), SANDBOX_ROUTES_JSON);
    const QJsonArray routes
        = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("routes")).toArray();
    QVERIFY(routes.size() > 40);
    for (const QJsonValue &r : routes) {
        const QJsonObject o = r.toObject();
        QTest::newRow(qPrintable(o.value(QStringLiteral("verb")).toString() + u' '
                                 + o.value(QStringLiteral("path")).toString()))
            << o;
    }
}

void tst_Conformance::routes()
{
    QFETCH(QJsonObject, route);
    QString path = route.value(QStringLiteral("path")).toString();
    path.replace(QStringLiteral("{id}"), QStringLiteral("sb_routecheck"));
    path.replace(QStringLiteral("{runId}"), QStringLiteral("run_routecheck"));
    const QString body = route.value(QStringLiteral("body")).toString();
    const QByteArray payload = body == QLatin1String("json")  ? QByteArray("[]")
                               : body == QLatin1String("raw") ? QByteArray("x")
                                                              : QByteArray();
    const HttpAnswer a = httpRequest(route.value(QStringLiteral("verb")).toString().toLatin1(),
                                     m_engine.process().url().resolved(QUrl(path)),
                                     m_engine.process().key(), payload);
    const int code = a.json()
                         .toObject()
                         .value(QStringLiteral("error"))
                         .toObject()
                         .value(QStringLiteral("code"))
                         .toInt();
    QVERIFY2(a.status != 0, qPrintable(path));
    QVERIFY2(code != int(Sandbox::ErrorCode::MethodNotFound),
             qPrintable(QStringLiteral("no route: %1").arg(QString::fromUtf8(a.body))));
}

QTEST_GUILESS_MAIN(tst_Conformance)
#include "tst_conformance.moc"
