// The REST route table of core/protocol: what the client builds for a method is what the engine
// routes back to that method, with the same params, for every route.
#include "protocol/restroutes.h"

#include <QJsonDocument>
#include <QTest>
#include <QUrl>

using namespace Sandbox;

class tst_RestRoutes final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data()
    {
        QTest::addColumn<int>("index");
        const QList<Rest::Route> &routes = Rest::routes();
        for (qsizetype i = 0; i < routes.size(); ++i)
            QTest::newRow(qPrintable(QString::fromLatin1(routes[i].verb) + u' ' + routes[i].path))
                << int(i);
    }

    void roundTrip()
    {
        QFETCH(int, index);
        const Rest::Route &route = Rest::routes().at(index);
        QJsonObject params;
        for (const QString &name : route.pathParams())
            params.insert(name, name == QLatin1String("id") ? QStringLiteral("sb 1%x")
                                                            : QStringLiteral("run_2"));
        for (const Rest::Route::QueryItem &q : route.query) {
            switch (q.kind) {
            case Rest::Route::Query::Text:
                params.insert(q.name, QStringLiteral("a b&c=d+e%20ü.txt"));
                break;
            case Rest::Route::Query::Integer:
                params.insert(q.name, 7);
                break;
            case Rest::Route::Query::Flag:
                params.insert(q.name, true);
                break;
            }
        }
        QJsonObject expected = params;
        if (route.body == Rest::Route::Body::Json) {
            params.insert(QStringLiteral("name"), QStringLiteral("x"));
            params.insert(QStringLiteral("options"), QJsonObject{{QStringLiteral("stream"), true},
                                                                 {QStringLiteral("timeout"), 5}});
            expected = params;
            if (route.once) // REST answers once: no stream
                expected.insert(QStringLiteral("options"),
                                QJsonObject{{QStringLiteral("timeout"), 5}});
        }
        if (route.body == Rest::Route::Body::Raw) {
            params.insert(QStringLiteral("content"), QStringLiteral("AP8="));
            params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
            expected = params;
        }
        if (route.answer == Rest::Route::Answer::Raw)
            expected.insert(QStringLiteral("encoding"), QStringLiteral("base64"));

        const std::optional<Rest::Request> request = Rest::requestForCall(route.method, params);
        QVERIFY(request);
        QCOMPARE(request->verb, route.verb);
        QVERIFY2(!request->path.contains(u' ') && !request->path.contains(u'{'),
                 qPrintable(request->path));
        if (route.body == Rest::Route::Body::Raw)
            QCOMPARE(request->body, QByteArray("\x00\xff", 2));
        if (route.body == Rest::Route::Body::None)
            QVERIFY(request->body.isNull());

        // What the engine sees: the path decoded, the query as sent.
        const QString path = QUrl::fromPercentEncoding(request->path.toLatin1());
        const QUrlQuery query(request->query.toString(QUrl::FullyEncoded));
        const Result<Rest::Call> call = Rest::callForRequest(request->verb, path, query,
                                                             request->body);
        QVERIFY2(call, qPrintable(call ? QString() : call.error().message));
        QCOMPARE(call->method, route.method);
        QCOMPARE(call->route->successStatus, route.successStatus);
        QCOMPARE(QJsonDocument(call->params).toJson(QJsonDocument::Compact),
                 QJsonDocument(expected).toJson(QJsonDocument::Compact));
    }

    void everyRouteIsExported()
    {
        const QJsonArray json = Rest::routesToJson();
        QCOMPARE(json.size(), Rest::routes().size());
        const QJsonObject readFile = [&] {
            for (const QJsonValue &v : json) {
                if (v[QStringLiteral("method")] == QLatin1String("agents.readFile"))
                    return v.toObject();
            }
            return QJsonObject();
        }();
        QCOMPARE(readFile.value(QStringLiteral("verb")).toString(), QStringLiteral("GET"));
        QCOMPARE(readFile.value(QStringLiteral("path")).toString(),
                 QStringLiteral("/api/agents/{id}/files/content"));
        QCOMPARE(readFile.value(QStringLiteral("answer")).toString(), QStringLiteral("raw"));
    }

    void noRoute_data()
    {
        QTest::addColumn<QByteArray>("verb");
        QTest::addColumn<QString>("path");
        QTest::newRow("unknown collection") << QByteArray("GET") << QStringLiteral("/api/nothing");
        QTest::newRow("unknown verb") << QByteArray("PATCH") << QStringLiteral("/api/agents");
        QTest::newRow("unknown action")
            << QByteArray("POST") << QStringLiteral("/api/agents/sb_1/nosuch");
        QTest::newRow("database action on an agent")
            << QByteArray("POST") << QStringLiteral("/api/agents/sb_1/query");
        QTest::newRow("too long") << QByteArray("GET") << QStringLiteral("/api/agents/sb_1/x/y/z");
        QTest::newRow("root") << QByteArray("GET") << QStringLiteral("/");
    }

    void noRoute()
    {
        QFETCH(QByteArray, verb);
        QFETCH(QString, path);
        const Result<Rest::Call> call = Rest::callForRequest(verb, path, {}, {});
        QVERIFY(!call);
        QCOMPARE(call.error().code, ErrorCode::MethodNotFound);
        QCOMPARE(call.error().message,
                 QStringLiteral("no route for %1 %2").arg(QString::fromLatin1(verb), path));
    }

    void badBodies()
    {
        const QString path = QStringLiteral("/api/agents");
        auto parse = Rest::callForRequest("POST", path, {}, "{nope");
        QVERIFY(!parse);
        QCOMPARE(parse.error().code, ErrorCode::ParseError);
        auto array = Rest::callForRequest("POST", path, {}, "[1,2]");
        QVERIFY(!array);
        QCOMPARE(array.error().code, ErrorCode::InvalidRequest);
        auto empty = Rest::callForRequest("POST", path, {}, " ");
        QVERIFY(empty);
        QCOMPARE(empty->params, QJsonObject());
    }

    void queryValues()
    {
        // A number that is not one stays text, for the method's -32602 to name it.
        QUrlQuery q(QStringLiteral("limit=many"));
        auto runs = Rest::callForRequest("GET", QStringLiteral("/api/agents/sb_1/runs"), q, {});
        QVERIFY(runs);
        QCOMPARE(runs->params.value(QStringLiteral("limit")), QJsonValue(QStringLiteral("many")));
        // "true" is a flag too; an empty path is left out.
        auto list = Rest::callForRequest("GET", QStringLiteral("/api/agents/sb_1/files"),
                                         QUrlQuery(QStringLiteral("path=&recursive=true")), {});
        QVERIFY(list);
        QCOMPARE(list->params, (QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                                            {QStringLiteral("recursive"), true}}));
    }

    void webSocketOnlyMethods()
    {
        for (const char *m : {"agents.runConversation", "stream.cancel", "databases.begin",
                              "sandbox.exec", "nothing"})
            QVERIFY2(!Rest::requestForCall(QLatin1String(m), {}), m);
    }
};

QTEST_GUILESS_MAIN(tst_RestRoutes)
#include "tst_restroutes.moc"
