// RpcClient and WebSocketTransport against a real QWebSocketServer on 127.0.0.1.
#include "rpctestserver.h"

#include <client/client.h>
#include <client/inmemorytransport.h>
#include <client/rpcclient.h>
#include <client/websockettransport.h>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QWebSocket>
#include <QWebSocketServer>

#include <optional>

using namespace Sandbox;

namespace {

const QString kKey = QStringLiteral("sk_test_0123456789");

// Collects the one answer of a call.
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

QJsonObject echoParams(int n)
{
    return QJsonObject{{QStringLiteral("n"), n}};
}

} // namespace

class tst_RpcClient final : public QObject
{
    Q_OBJECT

private:
    std::unique_ptr<RpcClient> makeClient(const QUrl &url, const QString &key = kKey)
    {
        auto client = std::make_unique<RpcClient>(new WebSocketTransport(url, key));
        client->setReconnectPolicy({10, 200, 0.2, 0});
        return client;
    }

    bool connectClient(RpcClient *client)
    {
        client->open();
        return QTest::qWaitFor([client] { return client->state() == RpcClient::State::Connected; },
                               5000);
    }

private Q_SLOTS:
    void callSucceedsWithBearerKey()
    {
        RpcTestServer server;
        QVERIFY(server.listen());
        auto client = makeClient(server.url());
        QSignalSpy states(client.get(), &RpcClient::stateChanged);
        QVERIFY(connectClient(client.get()));
        QCOMPARE(states.at(0).at(0).value<RpcClient::State>(), RpcClient::State::Connecting);
        QCOMPARE(server.lastAuthorization, QByteArray("Bearer " + kKey.toUtf8()));

        Answer a;
        RpcCall call = client->call(QStringLiteral("test.echo"), echoParams(7), nullptr,
                                    a.callback());
        QCOMPARE(a.count, 0); // never from inside call()
        QTRY_COMPARE(a.count, 1);
        QVERIFY(a.result->ok());
        QCOMPARE(a.result->value().toObject(), echoParams(7));
        QVERIFY(!call.isPending());
        QCOMPARE(client->pendingCount(), 0);
        // The key travels in the header only, never in the URL.
        QVERIFY(!server.url().toString().contains(kKey));
    }

    // A request is on the wire when sendText returns: not in the socket's buffer until the event
    // loop's next turn (a wake-up and its system calls more per call, and no earlier answer).
    void aRequestIsOnTheWireWhenSent()
    {
        QTcpServer tcp;
        QVERIFY(tcp.listen(QHostAddress::LocalHost, 0));
        QWebSocketServer ws(QStringLiteral("tst"), QWebSocketServer::NonSecureMode);
        QPointer<QTcpSocket> serverSide;
        connect(&tcp, &QTcpServer::newConnection, this, [&] {
            serverSide = tcp.nextPendingConnection();
            ws.handleConnection(serverSide);
        });
        WebSocketTransport transport(QUrl(QStringLiteral("ws://127.0.0.1:%1").arg(tcp.serverPort())),
                                     kKey);
        QSignalSpy opened(&transport, &Transport::opened);
        transport.open();
        QVERIFY(opened.wait(5000));
        QTRY_VERIFY(serverSide && ws.hasPendingConnections());
        std::unique_ptr<QWebSocket> upgraded(ws.nextPendingConnection());
        serverSide->readAll();
        QVERIFY(transport.sendText(R"({"jsonrpc":"2.0","id":1,"method":"test.echo","params":{}})"));
        // Without running this thread's event loop: only what the client wrote already arrives.
        QVERIFY(serverSide->waitForReadyRead(2000));
    }

    void pageRowsComeAsTextWhenAsked_data()
    {
        QTest::addColumn<QByteArray>("result"); // the answer's result, as the server writes it
        QTest::addColumn<bool>("asked");        // the call set CallOptions::rowsText
        QTest::addColumn<bool>("asText");       // the rows came as their text there

        const QByteArray page = "{\"rowCount\":2,\"rows\":[[1,\"a\\\"]\"],[2,null]],"
                                "\"cursor\":\"c\"}";
        QTest::newRow("a page, asked") << page << true << true;
        QTest::newRow("a page, not asked") << page << false << false;
        QTest::newRow("rows that are not arrays")
            << QByteArray("{\"rows\":[1,2],\"cursor\":\"c\"}") << true << false;
        QTest::newRow("a result without rows")
            << QByteArray("{\"cursor\":\"c\",\"n\":{\"rows\":[[1]]}}") << true << false;
    }

    // A page of rows is handed over as its text (for SqlRows) only to a call that asked for it;
    // everything else about the message is read as usual.
    void pageRowsComeAsTextWhenAsked()
    {
        QFETCH(QByteArray, result);
        QFETCH(bool, asked);
        QFETCH(bool, asText);
        RpcTestServer server;
        QVERIFY(server.listen());
        server.handler = [&](QWebSocket *socket, const QJsonObject &message) {
            RpcTestServer::sendRaw(socket, "{\"jsonrpc\":\"2.0\",\"id\":"
                                               + QByteArray::number(
                                                   message.value(QStringLiteral("id")).toInteger())
                                               + ",\"result\":" + result + "}");
        };
        auto client = makeClient(server.url());
        QVERIFY(connectClient(client.get()));
        QSignalSpy protocolErrors(client.get(), &RpcClient::protocolError);
        Answer a;
        CallOptions options;
        if (asked)
            options.rowsText = std::make_shared<QByteArray>();
        const std::shared_ptr<QByteArray> rowsText = options.rowsText;
        RpcCall call = client->call(QStringLiteral("test.page"), {}, nullptr, a.callback(), options);
        QTRY_COMPARE(a.count, 1);
        QVERIFY(a.result->ok());
        const QJsonObject got = a.result->value().toObject();
        QJsonObject expected = QJsonDocument::fromJson(result).object();
        QCOMPARE(rowsText && !rowsText->isNull(), asText);
        if (asText) {
            QCOMPARE(*rowsText, QByteArray("[[1,\"a\\\"]\"],[2,null]]"));
            expected.remove(QStringLiteral("rows"));
        }
        QCOMPARE(got, expected);
        QCOMPARE(protocolErrors.size(), 0);
    }

    void malformedServerInput_data()
    {
        QTest::addColumn<QByteArray>("payload"); // "$ID" is replaced by the request's id
        QTest::addColumn<bool>("binary");
        QTest::addColumn<bool>("thenAnswer");  // the server also sends the proper answer
        QTest::addColumn<int>("expectedCode"); // 0: the call succeeds
        QTest::addColumn<bool>("expectProtocolError");

        QTest::newRow("text that is not JSON")
            << QByteArray("this is not json {") << false << true << 0 << true;
        QTest::newRow("a JSON scalar") << QByteArray("42") << false << true << 0 << true;
        QTest::newRow("an empty batch") << QByteArray("[]") << false << true << 0 << true;
        QTest::newRow("wrong jsonrpc version on the answer")
            << QByteArray(R"({"jsonrpc":"1.0","id":$ID,"result":1})") << false << false
            << int(ErrorCode::InternalError) << true;
        QTest::newRow("a response for an unknown id")
            << QByteArray(R"({"jsonrpc":"2.0","id":987654,"result":1})") << false << true << 0
            << true;
        QTest::newRow("a response with a string id nobody used")
            << QByteArray(R"({"jsonrpc":"2.0","id":"x","result":1})") << false << true << 0 << true;
        QTest::newRow("a response without result or error")
            << QByteArray(R"({"jsonrpc":"2.0","id":$ID})") << false << false
            << int(ErrorCode::InternalError) << true;
        QTest::newRow("a response with both result and error")
            << QByteArray(
                   R"({"jsonrpc":"2.0","id":$ID,"result":1,"error":{"code":1,"message":"x"}})")
            << false << false << int(ErrorCode::InternalError) << true;
        QTest::newRow("an error object that is a string")
            << QByteArray(R"({"jsonrpc":"2.0","id":$ID,"error":"boom"})") << false << false
            << int(ErrorCode::InternalError) << false;
        QTest::newRow("an error object without a code")
            << QByteArray(R"({"jsonrpc":"2.0","id":$ID,"error":{"message":"boom"}})") << false
            << false << int(ErrorCode::InternalError) << false;
        QTest::newRow("a proper application error")
            << QByteArray(R"({"jsonrpc":"2.0","id":$ID,"error":{"code":-32002,"message":"no"}})")
            << false << false << int(ErrorCode::NotFound) << false;
        QTest::newRow("a notification with positional params")
            << QByteArray(R"({"jsonrpc":"2.0","method":"x.y","params":[1,2]})") << false << true
            << 0 << true;
        QTest::newRow("a stream.output without seq")
            << QByteArray(R"({"jsonrpc":"2.0","method":"stream.output","params":{"streamId":"s"}})")
            << false << true << 0 << true;
        QTest::newRow("a binary frame")
            << QByteArray("\x00\x01\x02", 3) << true << true << 0 << true;
        QTest::newRow("the answer inside a batch")
            << QByteArray(R"([{"jsonrpc":"2.0","id":$ID,"result":{"n":1}}])") << false << false << 0
            << false;
        QTest::newRow("a message over 16 MiB")
            << QByteArray("HUGE") << false << false << int(ErrorCode::ConnectionError) << false;
    }

    void malformedServerInput()
    {
        QFETCH(QByteArray, payload);
        QFETCH(bool, binary);
        QFETCH(bool, thenAnswer);
        QFETCH(int, expectedCode);
        QFETCH(bool, expectProtocolError);

        RpcTestServer server;
        QVERIFY(server.listen());
        server.handler = [&](QWebSocket *socket, const QJsonObject &message) {
            const QString method = message.value(QStringLiteral("method")).toString();
            if (method == QStringLiteral("test.echo")) {
                RpcTestServer::reply(socket, message, message.value(QStringLiteral("params")));
                return;
            }
            if (method != QStringLiteral("test.malformed"))
                return;
            const QByteArray id = QByteArray::number(
                message.value(QStringLiteral("id")).toInteger());
            if (payload == "HUGE") {
                socket->sendTextMessage(QString(17 * 1024 * 1024, u'x'));
            } else if (binary) {
                socket->sendBinaryMessage(payload);
            } else {
                QByteArray text = payload;
                RpcTestServer::sendRaw(socket, text.replace("$ID", id));
            }
            if (thenAnswer)
                RpcTestServer::reply(socket, message, QJsonObject{{QStringLiteral("n"), 1}});
        };
        auto client = makeClient(server.url());
        QVERIFY(connectClient(client.get()));
        QSignalSpy protocolErrors(client.get(), &RpcClient::protocolError);

        Answer a;
        RpcCall call = client->call(QStringLiteral("test.malformed"), {}, nullptr, a.callback(),
                                    CallOptions{10000});
        QTRY_COMPARE_WITH_TIMEOUT(a.count, 1, 10000);
        if (expectedCode == 0) {
            QVERIFY2(a.result->ok(),
                     qPrintable(a.result->ok() ? QString() : a.result->error().message));
            QCOMPARE(a.result->value().toObject().value(QStringLiteral("n")).toInt(), 1);
        } else {
            QVERIFY(!a.result->ok());
            QCOMPARE(int(a.result->error().code), expectedCode);
            QVERIFY(!a.result->error().message.isEmpty());
        }
        if (expectProtocolError)
            QTRY_VERIFY(protocolErrors.count() >= 1);
        else
            QCOMPARE(protocolErrors.count(), 0);

        // The client keeps working (after a reconnect, for the oversized message).
        QVERIFY(
            QTest::qWaitFor([&] { return client->state() == RpcClient::State::Connected; }, 5000));
        Answer b;
        RpcCall next = client->call(QStringLiteral("test.echo"), echoParams(2), nullptr,
                                    b.callback());
        QTRY_COMPARE(b.count, 1);
        QVERIFY(b.result->ok());
        QCOMPARE(b.result->value().toObject(), echoParams(2));
        QCOMPARE(a.count, 1);
    }

    void perRequestTimeout_data()
    {
        QTest::addColumn<int>("callTimeoutMs");
        QTest::addColumn<int>("clientDefaultMs");
        QTest::addColumn<int>("expectedMs");
        QTest::newRow("the call's own timeout") << 60 << 100000 << 60;
        QTest::newRow("the client's default timeout") << -1 << 80 << 80;
    }

    void perRequestTimeout()
    {
        QFETCH(int, callTimeoutMs);
        QFETCH(int, clientDefaultMs);
        QFETCH(int, expectedMs);

        RpcTestServer server;
        QVERIFY(server.listen());
        auto client = makeClient(server.url());
        client->setDefaultTimeout(clientDefaultMs);
        QVERIFY(connectClient(client.get()));

        Answer a;
        QElapsedTimer elapsed;
        elapsed.start();
        RpcCall call = client->call(QStringLiteral("test.hang"), {}, nullptr, a.callback(),
                                    CallOptions{callTimeoutMs});
        QTRY_COMPARE(a.count, 1);
        QVERIFY(elapsed.elapsed() >= expectedMs - 5);
        QVERIFY(!a.result->ok());
        QCOMPARE(a.result->error().code, ErrorCode::Timeout);
        // The server is told to stop working on it.
        QTRY_VERIFY(!server.received.isEmpty()
                    && server.received.last().value(QStringLiteral("method")).toString()
                           == QStringLiteral("rpc.cancel"));
        const QJsonObject request = server.received.first();
        QCOMPARE(server.received.last()
                     .value(QStringLiteral("params"))
                     .toObject()
                     .value(QStringLiteral("id")),
                 request.value(QStringLiteral("id")));
        // A late answer is no error and runs nothing.
        QSignalSpy protocolErrors(client.get(), &RpcClient::protocolError);
        RpcTestServer::reply(server.current(), request, 1);
        Answer b;
        RpcCall next = client->call(QStringLiteral("test.echo"), echoParams(3), nullptr,
                                    b.callback());
        QTRY_COMPARE(b.count, 1);
        QCOMPARE(a.count, 1);
        QCOMPARE(protocolErrors.count(), 0);
    }

    void cancel_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("cancel() on the handle") << QStringLiteral("cancel");
        QTest::newRow("the handle destroyed") << QStringLiteral("handle");
        QTest::newRow("the context object destroyed") << QStringLiteral("context");
        QTest::newRow("the handle moved over") << QStringLiteral("moved");
    }

    void cancel()
    {
        QFETCH(QString, how);
        RpcTestServer server;
        QVERIFY(server.listen());
        QJsonObject hung;
        server.handler = [&](QWebSocket *socket, const QJsonObject &message) {
            const QString method = message.value(QStringLiteral("method")).toString();
            if (method == QStringLiteral("test.hang"))
                hung = message;
            else if (method == QStringLiteral("test.echo"))
                RpcTestServer::reply(socket, message, message.value(QStringLiteral("params")));
        };
        auto client = makeClient(server.url());
        QVERIFY(connectClient(client.get()));
        QSignalSpy protocolErrors(client.get(), &RpcClient::protocolError);

        Answer a;
        auto context = std::make_unique<QObject>();
        auto call = std::make_unique<RpcCall>(
            client->call(QStringLiteral("test.hang"), {}, context.get(), a.callback()));
        QTRY_VERIFY(!hung.isEmpty());
        QVERIFY(call->isPending());
        QCOMPARE(client->pendingCount(), 1);
        if (how == QStringLiteral("cancel"))
            call->cancel();
        else if (how == QStringLiteral("handle"))
            call.reset();
        else if (how == QStringLiteral("context"))
            context.reset();
        else
            *call = client->call(QStringLiteral("test.echo"), echoParams(1), nullptr, nullptr);
        if (call && how != QStringLiteral("moved"))
            QVERIFY(!call->isPending());
        QCOMPARE(client->pendingCount(), how == QStringLiteral("moved") ? 1 : 0);

        QTRY_VERIFY(
            std::any_of(server.received.cbegin(), server.received.cend(), [&](const QJsonObject &m) {
                return m.value(QStringLiteral("method")).toString() == QStringLiteral("rpc.cancel")
                       && m.value(QStringLiteral("params")).toObject().value(QStringLiteral("id"))
                              == hung.value(QStringLiteral("id"));
            }));
        // The server answers anyway (it may have been too late): the callback still never runs.
        RpcTestServer::reply(server.current(), hung, 1);
        Answer b;
        RpcCall next = client->call(QStringLiteral("test.echo"), echoParams(4), nullptr,
                                    b.callback());
        QTRY_COMPARE(b.count, 1);
        QCOMPARE(a.count, 0);
        QCOMPARE(protocolErrors.count(), 0);
    }

    void unauthorized_data()
    {
        QTest::addColumn<bool>("httpRefusal");
        QTest::newRow("close code 4401 after the upgrade") << false;
        QTest::newRow("HTTP 401 on the upgrade") << true;
    }

    void unauthorized()
    {
        QFETCH(bool, httpRefusal);
        RpcTestServer server;
        QTcpServer http;
        QUrl url;
        int httpConnections = 0;
        if (httpRefusal) {
            QVERIFY(http.listen(QHostAddress::LocalHost));
            connect(&http, &QTcpServer::newConnection, this, [&] {
                while (QTcpSocket *s = http.nextPendingConnection()) {
                    ++httpConnections;
                    connect(s, &QTcpSocket::readyRead, s, [s] {
                        if (!s->readAll().contains("\r\n\r\n"))
                            return;
                        s->write("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
                                 "Content-Length: 0\r\nConnection: close\r\n\r\n");
                        s->disconnectFromHost();
                    });
                    connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
                }
            });
            url = QUrl(QStringLiteral("ws://127.0.0.1:%1/rpc").arg(http.serverPort()));
        } else {
            QVERIFY(server.listen());
            server.closeOnConnectCode = 4401;
            url = server.url();
        }
        auto client = makeClient(url, QStringLiteral("wrong"));
        QSignalSpy states(client.get(), &RpcClient::stateChanged);
        QSignalSpy reconnects(client.get(), &RpcClient::reconnectScheduled);
        Answer queued;
        client->open();
        RpcCall call = client->call(QStringLiteral("test.echo"), {}, nullptr, queued.callback());
        QTRY_COMPARE_WITH_TIMEOUT(client->state(), RpcClient::State::Unauthorized, 5000);
        QTRY_COMPARE(queued.count, 1);
        QCOMPARE(queued.result->error().code, ErrorCode::Unauthorized);
        QCOMPARE(reconnects.count(), 0);
        QCOMPARE(client->msUntilReconnect(), -1);
        // No further attempt: give a retry (10 ms backoff) ample time to show up.
        QVERIFY(!states.wait(300));
        QCOMPARE(httpRefusal ? httpConnections : server.connectionCount, 1);
        // New calls fail fast with the same reason.
        Answer after;
        RpcCall again = client->call(QStringLiteral("test.echo"), {}, nullptr, after.callback());
        QCOMPARE(after.count, 0);
        QTRY_COMPARE(after.count, 1);
        QCOMPARE(after.result->error().code, ErrorCode::Unauthorized);
    }

    void reconnectWithBackoff()
    {
        RpcTestServer server;
        QVERIFY(server.listen());
        auto client = makeClient(server.url());
        client->setReconnectPolicy({20, 1000, 0.2, 0});
        QVERIFY(connectClient(client.get()));
        QSignalSpy scheduled(client.get(), &RpcClient::reconnectScheduled);
        QSignalSpy states(client.get(), &RpcClient::stateChanged);

        // A request in flight when the connection drops fails with ConnectionError...
        Answer inFlight;
        RpcCall call = client->call(QStringLiteral("test.hang"), {}, nullptr, inFlight.callback());
        QTRY_COMPARE(server.received.size(), 1);
        server.dropOnConnect = 3; // the next three attempts are dropped at once
        server.dropAll();
        QTRY_COMPARE(inFlight.count, 1);
        QCOMPARE(inFlight.result->error().code, ErrorCode::ConnectionError);
        // ... one made while reconnecting waits for the connection.
        QTRY_COMPARE(client->state(), RpcClient::State::Reconnecting);
        QVERIFY(client->msUntilReconnect() >= 0);
        Answer queued;
        RpcCall waiting = client->call(QStringLiteral("test.echo"), echoParams(5), nullptr,
                                       queued.callback());
        QCOMPARE(client->queuedCount(), 1);

        QTRY_COMPARE_WITH_TIMEOUT(client->state(), RpcClient::State::Connected, 10000);
        QTRY_COMPARE(queued.count, 1);
        QVERIFY(queued.result->ok());
        QCOMPARE(server.connectionCount, 1 + 4);
        // 20, 40, 80, 160 ms, each with up to 20 % jitter.
        QCOMPARE(scheduled.count(), 4);
        for (int i = 0; i < scheduled.count(); ++i) {
            const int delay = scheduled.at(i).at(0).toInt();
            const int base = 20 << i;
            QVERIFY2(delay >= base && delay <= base + base / 5,
                     qPrintable(QStringLiteral("attempt %1: %2 ms").arg(i).arg(delay)));
        }
        QVERIFY(states.contains({QVariant::fromValue(RpcClient::State::Reconnecting)}));
    }

    void backoffIsCappedAndGivesUp()
    {
        // Nothing listens on this port.
        QTcpServer reserve;
        QVERIFY(reserve.listen(QHostAddress::LocalHost));
        const QUrl url(QStringLiteral("ws://127.0.0.1:%1/rpc").arg(reserve.serverPort()));
        reserve.close();
        auto client = makeClient(url);
        client->setReconnectPolicy({10, 25, 0.0, 4});
        QSignalSpy scheduled(client.get(), &RpcClient::reconnectScheduled);
        client->open();
        QTRY_COMPARE_WITH_TIMEOUT(client->state(), RpcClient::State::Disconnected, 5000);
        QCOMPARE(scheduled.count(), 3);
        QCOMPARE(scheduled.at(0).at(0).toInt(), 10);
        QCOMPARE(scheduled.at(1).at(0).toInt(), 20);
        QCOMPARE(scheduled.at(2).at(0).toInt(), 25);
    }

    void queueIsBounded()
    {
        QTcpServer reserve;
        QVERIFY(reserve.listen(QHostAddress::LocalHost));
        const QUrl url(QStringLiteral("ws://127.0.0.1:%1/rpc").arg(reserve.serverPort()));
        reserve.close();
        auto client = makeClient(url);
        client->setReconnectPolicy({60000, 60000, 0, 0});
        client->open();
        QTRY_COMPARE(client->state(), RpcClient::State::Reconnecting);

        int failed = 0;
        std::vector<RpcCall> calls;
        for (int i = 0; i < RpcClient::MaxQueuedRequests + 1; ++i) {
            calls.push_back(
                client->call(QStringLiteral("test.echo"), {}, nullptr, [&](Result<QJsonValue> r) {
                    QCOMPARE(r.error().code, ErrorCode::ConnectionError);
                    ++failed;
                }));
        }
        QCOMPARE(client->queuedCount(), RpcClient::MaxQueuedRequests);
        QTRY_COMPARE(failed, 1);
        // Closing fails the queued ones.
        client->close();
        QCOMPARE(client->state(), RpcClient::State::Disconnected);
        QCOMPARE(failed, RpcClient::MaxQueuedRequests + 1);
    }

    void failsFastWhenDisconnected()
    {
        auto client = makeClient(QUrl(QStringLiteral("ws://127.0.0.1:1/rpc")));
        Answer a;
        RpcCall call = client->call(QStringLiteral("test.echo"), {}, nullptr, a.callback());
        QCOMPARE(a.count, 0);
        QTRY_COMPARE(a.count, 1);
        QCOMPARE(a.result->error().code, ErrorCode::ConnectionError);
    }

    void serverNotificationsBecomeSignals()
    {
        RpcTestServer server;
        QVERIFY(server.listen());
        auto client = makeClient(server.url());
        QVERIFY(connectClient(client.get()));
        QSignalSpy notifications(client.get(), &RpcClient::notification);
        RpcTestServer::sendRaw(
            server.current(),
            R"({"jsonrpc":"2.0","method":"sandbox.changed","params":{"id":"sb_1"}})");
        QTRY_COMPARE(notifications.count(), 1);
        QCOMPARE(notifications.at(0).at(0).toString(), QStringLiteral("sandbox.changed"));
        QCOMPARE(notifications.at(0).at(1).toJsonObject().value(QStringLiteral("id")).toString(),
                 QStringLiteral("sb_1"));
        // A request from the server is answered "method not found".
        RpcTestServer::sendRaw(server.current(),
                               R"({"jsonrpc":"2.0","id":"s1","method":"client.ping","params":{}})");
        QTRY_VERIFY(!server.received.isEmpty());
        QCOMPARE(server.received.last()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("code"))
                     .toInt(),
                 int(ErrorCode::MethodNotFound));
    }

    void clientFacadeOverARemoteProfile()
    {
        RpcTestServer server;
        server.handler = [](QWebSocket *socket, const QJsonObject &m) {
            if (m.value(QStringLiteral("method")).toString() == QStringLiteral("sessions.current"))
                RpcTestServer::reply(socket, m,
                                     QJsonObject{{QStringLiteral("id"), QStringLiteral("key_1")},
                                                 {QStringLiteral("backend"),
                                                  QStringLiteral("local")},
                                                 {QStringLiteral("version"),
                                                  QStringLiteral("0.1.0")},
                                                 {QStringLiteral("sandboxes"),
                                                  QJsonObject{{QStringLiteral("total"), 0},
                                                              {QStringLiteral("running"), 0}}}});
        };
        QVERIFY(server.listen());
        Client client(
            ConnectionProfile::remote(QUrl(QStringLiteral("http://127.0.0.1:%1").arg(server.port())),
                                      kKey));
        QCOMPARE(client.rpc()->state(), RpcClient::State::Disconnected);
        std::optional<Result<SessionInfo>> session;
        client.open();
        // Made while connecting: waits in the queue.
        client.sessions().current(this, [&](Result<SessionInfo> r) { session = r; }).detach();
        QTRY_VERIFY(session);
        QVERIFY(session->ok());
        QCOMPARE(session->value().id, QStringLiteral("key_1"));
        QCOMPARE(server.lastAuthorization, QByteArray("Bearer " + kKey.toUtf8()));
        client.close();
        QCOMPARE(client.rpc()->state(), RpcClient::State::Disconnected);
    }

    void inMemoryTransport()
    {
        auto pair = InMemoryTransport::createPair();
        std::unique_ptr<InMemoryTransport> serverEnd(pair.server);
        RpcClient client(pair.client);
        connect(pair.server, &Transport::textReceived, this, [&](const QByteArray &text) {
            const QJsonObject m = QJsonDocument::fromJson(text).object();
            pair.server->sendText(
                QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                          {QStringLiteral("id"), m.value(QStringLiteral("id"))},
                                          {QStringLiteral("result"), QStringLiteral("pong")}})
                    .toJson(QJsonDocument::Compact));
        });
        client.open();
        Answer a;
        RpcCall call = client.call(QStringLiteral("ping"), {}, nullptr, a.callback());
        QCOMPARE(client.queuedCount(), 1);
        QTRY_COMPARE(a.count, 1);
        QCOMPARE(a.result->value().toString(), QStringLiteral("pong"));
        pair.server->closeWithCode(Transport::CloseUnauthorized, QStringLiteral("revoked"));
        QCOMPARE(client.state(), RpcClient::State::Unauthorized);
    }
};

QTEST_GUILESS_MAIN(tst_RpcClient)
#include "tst_rpcclient.moc"
