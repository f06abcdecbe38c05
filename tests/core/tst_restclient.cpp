// RestClient against a tiny real HTTP/1.1 server on 127.0.0.1 (QTcpServer).
#include <client/agentsservice.h>
#include <client/localengine.h>
#include <client/restclient.h>
#include <client/sessionsservice.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <optional>

using namespace Sandbox;

namespace {

struct HttpRequest
{
    QByteArray method;
    QByteArray target;                    // path?query
    QMap<QByteArray, QByteArray> headers; // lower-case names
    QByteArray body;
};

struct HttpResponse
{
    int status = 200;
    QByteArray body;
    QByteArray contentType = "application/json";
    bool hang = false; // never answer
};

// One request per connection, answered by `handler`, then `Connection: close`.
class TinyHttpServer final : public QObject
{
public:
    std::function<HttpResponse(const HttpRequest &)> handler;
    QList<HttpRequest> requests;

    TinyHttpServer()
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                s->setParent(this);
                auto buffer = std::make_shared<QByteArray>();
                connect(s, &QTcpSocket::readyRead, s, [this, s, buffer] {
                    *buffer += s->readAll();
                    const qsizetype end = buffer->indexOf("\r\n\r\n");
                    if (end < 0)
                        return;
                    HttpRequest r;
                    const QList<QByteArray> lines = buffer->left(end).split('\n');
                    const QList<QByteArray> first = lines.first().trimmed().split(' ');
                    r.method = first.value(0);
                    r.target = first.value(1);
                    for (qsizetype i = 1; i < lines.size(); ++i) {
                        const qsizetype colon = lines[i].indexOf(':');
                        if (colon > 0)
                            r.headers.insert(lines[i].left(colon).trimmed().toLower(),
                                             lines[i].mid(colon + 1).trimmed());
                    }
                    const qsizetype length = r.headers.value("content-length", "0").toLongLong();
                    if (buffer->size() < end + 4 + length)
                        return;
                    r.body = buffer->mid(end + 4, length);
                    buffer->clear();
                    requests.append(r);
                    const HttpResponse response = handler(r);
                    if (response.hang)
                        return;
                    QByteArray out = "HTTP/1.1 " + QByteArray::number(response.status)
                                     + " X\r\nContent-Type: " + response.contentType
                                     + "\r\nContent-Length: "
                                     + QByteArray::number(response.body.size())
                                     + "\r\nConnection: close\r\n\r\n" + response.body;
                    s->write(out);
                    s->disconnectFromHost();
                });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
    }

    bool listen() { return m_server.listen(QHostAddress::LocalHost); }
    QUrl url() const
    {
        return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort()));
    }

private:
    QTcpServer m_server;
};

struct Answer
{
    int count = 0;
    std::optional<Result<QJsonValue>> result;
    JsonCallback callback()
    {
        return [this](Result<QJsonValue> r) {
            ++count;
            result = std::move(r);
        };
    }
};

QByteArray json(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

const QString kKey = QStringLiteral("sk_rest");

} // namespace

class tst_RestClient final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void methodsMapToRoutes_data()
    {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QJsonObject>("params");
        QTest::addColumn<QByteArray>("httpMethod");
        QTest::addColumn<QByteArray>("target");
        QTest::addColumn<QByteArray>("body"); // empty: none expected

        QTest::newRow("agents.list")
            << QStringLiteral("agents.list") << QJsonObject{} << QByteArray("GET")
            << QByteArray("/api/agents") << QByteArray();
        QTest::newRow("agents.create posts its params")
            << QStringLiteral("agents.create")
            << QJsonObject{{QStringLiteral("type"), QStringLiteral("codex")}} << QByteArray("POST")
            << QByteArray("/api/agents") << QByteArray(R"({"type":"codex"})");
        QTest::newRow("agents.get with an id that needs escaping")
            << QStringLiteral("agents.get")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb/1 x")}} << QByteArray("GET")
            << QByteArray("/api/agents/sb%2F1%20x") << QByteArray();
        QTest::newRow("agents.exec posts command and options")
            << QStringLiteral("agents.exec")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                           {QStringLiteral("command"), QStringLiteral("ls")}}
            << QByteArray("POST") << QByteArray("/api/agents/sb_1/exec")
            << QByteArray(R"({"command":"ls"})");
        QTest::newRow("agents.listFiles as a query")
            << QStringLiteral("agents.listFiles")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                           {QStringLiteral("path"), QStringLiteral("src")},
                           {QStringLiteral("recursive"), true}}
            << QByteArray("GET") << QByteArray("/api/agents/sb_1/files?path=src&recursive=1")
            << QByteArray();
        QTest::newRow("agents.stat with a path full of separators")
            << QStringLiteral("agents.stat")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                           {QStringLiteral("path"), QStringLiteral("a b&c=d+e.txt")}}
            << QByteArray("GET")
            << QByteArray("/api/agents/sb_1/files/stat?path=a%20b%26c%3Dd%2Be.txt") << QByteArray();
        QTest::newRow("agents.delete")
            << QStringLiteral("agents.delete")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")}} << QByteArray("DELETE")
            << QByteArray("/api/agents/sb_1") << QByteArray();
        QTest::newRow("agents.writeFile sends raw bytes")
            << QStringLiteral("agents.writeFile")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                           {QStringLiteral("path"), QStringLiteral("a.bin")},
                           {QStringLiteral("content"), QStringLiteral("AP8=")},
                           {QStringLiteral("encoding"), QStringLiteral("base64")}}
            << QByteArray("PUT") << QByteArray("/api/agents/sb_1/files/content?path=a.bin")
            << QByteArray("\x00\xff", 2);
        QTest::newRow("agents.writeFile refusing missing folders")
            << QStringLiteral("agents.writeFile")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("sb_1")},
                           {QStringLiteral("path"), QStringLiteral("a/b.txt")},
                           {QStringLiteral("content"), QStringLiteral("x")},
                           {QStringLiteral("parents"), false}}
            << QByteArray("PUT")
            << QByteArray("/api/agents/sb_1/files/content?path=a%2Fb.txt&parents=0")
            << QByteArray("x");
        QTest::newRow("databases.setName puts the name")
            << QStringLiteral("databases.setName")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("db_1")},
                           {QStringLiteral("name"), QStringLiteral("pg-demo")}}
            << QByteArray("PUT") << QByteArray("/api/databases/db_1/name")
            << QByteArray(R"({"name":"pg-demo"})");
        QTest::newRow("databases.query")
            << QStringLiteral("databases.query")
            << QJsonObject{{QStringLiteral("id"), QStringLiteral("db_1")},
                           {QStringLiteral("sql"), QStringLiteral("select 1")}}
            << QByteArray("POST") << QByteArray("/api/databases/db_1/query")
            << QByteArray(R"({"sql":"select 1"})");
        QTest::newRow("sessions.quota")
            << QStringLiteral("sessions.quota") << QJsonObject{} << QByteArray("GET")
            << QByteArray("/api/sessions/quota") << QByteArray();
    }

    void methodsMapToRoutes()
    {
        QFETCH(QString, method);
        QFETCH(QJsonObject, params);
        QFETCH(QByteArray, httpMethod);
        QFETCH(QByteArray, target);
        QFETCH(QByteArray, body);

        TinyHttpServer server;
        server.handler = [](const HttpRequest &) { return HttpResponse{200, R"({"ok":true})"}; };
        QVERIFY(server.listen());
        RestClient rest(server.url(), kKey);
        Answer a;
        RpcCall call = rest.call(method, params, nullptr, a.callback());
        QTRY_COMPARE(a.count, 1);
        QVERIFY(a.result->ok());
        QCOMPARE(a.result->value().toObject().value(QStringLiteral("ok")).toBool(), true);
        QCOMPARE(server.requests.size(), 1);
        const HttpRequest &r = server.requests.first();
        QCOMPARE(r.method, httpMethod);
        QCOMPARE(r.target, target);
        QCOMPARE(r.headers.value("authorization"), QByteArray("Bearer " + kKey.toUtf8()));
        if (!body.isEmpty())
            QCOMPARE(r.body, body);
    }

    void typedServiceOverRest()
    {
        TinyHttpServer server;
        server.handler = [](const HttpRequest &r) {
            if (r.target.startsWith("/api/agents/sb_1/files/content"))
                return HttpResponse{200, QByteArray("\x01\x02hello", 7), "application/octet-stream"};
            return HttpResponse{200, json({{QStringLiteral("id"), QStringLiteral("k1")},
                                           {QStringLiteral("backend"), QStringLiteral("local")},
                                           {QStringLiteral("sandboxes"),
                                            QJsonObject{{QStringLiteral("total"), 3},
                                                        {QStringLiteral("running"), 1}}}})};
        };
        QVERIFY(server.listen());
        RestClient rest(server.url(), kKey);
        std::optional<Result<SessionInfo>> session;
        RpcCall a = SessionsService(&rest).current(nullptr,
                                                   [&](Result<SessionInfo> r) { session = r; });
        QTRY_VERIFY(session);
        QVERIFY(session->ok());
        QCOMPARE(session->value().sandboxesTotal, 3);
        QCOMPARE(session->value().backend, QStringLiteral("local"));

        std::optional<Result<FileContent>> file;
        AgentsService agents(&rest);
        RpcCall b = agents.readFile(QStringLiteral("sb_1"), QStringLiteral("x.bin"), {}, nullptr,
                                    [&](Result<FileContent> r) { file = r; });
        QTRY_VERIFY(file);
        QVERIFY(file->ok());
        QCOMPARE(file->value().content, QByteArray("\x01\x02hello", 7));
        QVERIFY(!agents.execStreaming(QStringLiteral("sb_1"), QStringLiteral("ls"), {}, this));
    }

    void errorMapping_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("expectedCode");
        QTest::addColumn<QString>("expectedMessage"); // empty: any

        QTest::newRow("an error body")
            << 404
            << QByteArray(
                   R"({"error":{"code":-32002,"message":"sandbox sb_9 not found","data":{"id":"sb_9"}}})")
            << int(ErrorCode::NotFound) << QStringLiteral("sandbox sb_9 not found");
        QTest::newRow("401 with an error body")
            << 401 << QByteArray(R"({"error":{"code":-32001,"message":"unauthorized"}})")
            << int(ErrorCode::Unauthorized) << QStringLiteral("unauthorized");
        QTest::newRow("409 without a body")
            << 409 << QByteArray() << int(ErrorCode::SandboxNotRunning) << QString();
        QTest::newRow("500 with HTML")
            << 500 << QByteArray("<html>oops</html>") << int(ErrorCode::InternalError) << QString();
        QTest::newRow("429 with a malformed error object")
            << 429 << QByteArray(R"({"error":"slow down"})") << int(ErrorCode::QuotaExceeded)
            << QString();
        QTest::newRow("200 that is not JSON")
            << 200 << QByteArray("not json") << int(ErrorCode::InternalError) << QString();
    }

    void errorMapping()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(int, expectedCode);
        QFETCH(QString, expectedMessage);
        TinyHttpServer server;
        server.handler = [&](const HttpRequest &) { return HttpResponse{status, body}; };
        QVERIFY(server.listen());
        RestClient rest(server.url(), kKey);
        Answer a;
        RpcCall call = rest.request("GET", QStringLiteral("/api/agents/sb_9"), {},
                                    QJsonValue::Undefined, nullptr, a.callback());
        QTRY_COMPARE(a.count, 1);
        QVERIFY(!a.result->ok());
        QCOMPARE(int(a.result->error().code), expectedCode);
        if (!expectedMessage.isEmpty())
            QCOMPARE(a.result->error().message, expectedMessage);
    }

    void networkFailures_data()
    {
        QTest::addColumn<QString>("what");
        QTest::newRow("connection refused") << QStringLiteral("refused");
        QTest::newRow("no answer in time") << QStringLiteral("timeout");
        QTest::newRow("no route for a method") << QStringLiteral("noroute");
    }

    void networkFailures()
    {
        QFETCH(QString, what);
        TinyHttpServer server;
        server.handler = [](const HttpRequest &) { return HttpResponse{200, {}, {}, true}; };
        QVERIFY(server.listen());
        QUrl url = server.url();
        if (what == QStringLiteral("refused")) {
            QTcpServer reserve;
            QVERIFY(reserve.listen(QHostAddress::LocalHost));
            url = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(reserve.serverPort()));
        }
        RestClient rest(url, kKey);
        Answer a;
        RpcCall call = what == QStringLiteral("noroute")
                           ? rest.call(QStringLiteral("stream.resume"), {}, nullptr, a.callback())
                           : rest.request("GET", QStringLiteral("/api/agents"), {},
                                          QJsonValue::Undefined, nullptr, a.callback(),
                                          CallOptions{100});
        QCOMPARE(a.count, 0);
        QTRY_COMPARE(a.count, 1);
        QVERIFY(!a.result->ok());
        const ErrorCode expected = what == QStringLiteral("refused")   ? ErrorCode::ConnectionError
                                   : what == QStringLiteral("timeout") ? ErrorCode::Timeout
                                                                       : ErrorCode::NotImplemented;
        QCOMPARE(a.result->error().code, expected);
    }

    void cancel_data()
    {
        QTest::addColumn<bool>("viaContext");
        QTest::newRow("cancel() on the handle") << false;
        QTest::newRow("the context object destroyed") << true;
    }

    void cancel()
    {
        QFETCH(bool, viaContext);
        TinyHttpServer server;
        bool hung = false;
        server.handler = [&](const HttpRequest &) {
            hung = true;
            return HttpResponse{200, {}, {}, true};
        };
        QVERIFY(server.listen());
        RestClient rest(server.url(), kKey);
        Answer a;
        auto context = std::make_unique<QObject>();
        RpcCall call = rest.request("GET", QStringLiteral("/api/agents"), {}, QJsonValue::Undefined,
                                    context.get(), a.callback());
        QTRY_VERIFY(hung);
        if (viaContext)
            context.reset();
        else
            call.cancel();
        QVERIFY(!call.isPending() || viaContext);
        // A second request completes; the first callback never ran.
        server.handler = [](const HttpRequest &) { return HttpResponse{200, "[]"}; };
        Answer b;
        RpcCall next = rest.request("GET", QStringLiteral("/api/agents"), {}, QJsonValue::Undefined,
                                    nullptr, b.callback());
        QTRY_COMPARE(b.count, 1);
        QCOMPARE(a.count, 0);
    }

    void localEngineFindsARunningEngine()
    {
        TinyHttpServer server;
        server.handler = [](const HttpRequest &r) {
            if (r.target == "/health" && !r.headers.contains("authorization"))
                return HttpResponse{200, R"({"status":"ok","version":"0.1.0","backend":"local"})"};
            return HttpResponse{404, {}};
        };
        QVERIFY(server.listen());
        QTemporaryDir dataDir;
        QVERIFY(dataDir.isValid());
        QFile key(dataDir.filePath(QStringLiteral("api-key")));
        QVERIFY(key.open(QIODevice::WriteOnly));
        key.write("sk_local\n");
        key.close();

        ConnectionProfile profile = ConnectionProfile::local(dataDir.path());
        profile.url = server.url();
        QCOMPARE(profile.rpcUrl().toString(),
                 QStringLiteral("ws://127.0.0.1:%1/rpc").arg(server.url().port()));
        LocalEngine engine(profile);
        engine.setProgram(QStringLiteral("/nonexistent/sandboxd"));
        QSignalSpy ready(&engine, &LocalEngine::ready);
        QSignalSpy started(&engine, &LocalEngine::engineStarted);
        engine.ensureRunning();
        QVERIFY(ready.wait());
        QCOMPARE(ready.at(0).at(0).value<ConnectionProfile>().apiKey, QStringLiteral("sk_local"));
        QCOMPARE(started.count(), 0);
    }

    void localEngineReportsWhenNothingCanStart()
    {
        QTcpServer reserve;
        QVERIFY(reserve.listen(QHostAddress::LocalHost));
        QTemporaryDir dataDir;
        ConnectionProfile profile = ConnectionProfile::local(dataDir.path());
        profile.url = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(reserve.serverPort()));
        reserve.close();
        LocalEngine engine(profile);
        engine.setProgram(dataDir.filePath(QStringLiteral("no-such-sandboxd")));
        QSignalSpy failed(&engine, &LocalEngine::failed);
        engine.ensureRunning();
        QVERIFY(failed.wait());
        QCOMPARE(failed.at(0).at(0).value<Error>().code, ErrorCode::ConnectionError);
        QVERIFY(!engine.isBusy());
    }
};

QTEST_GUILESS_MAIN(tst_RestClient)
#include "tst_restclient.moc"
