// Streams (docs/protocol.md 2.3) across dropped connections, against a real QWebSocketServer
// that keeps a backlog per stream and honours stream.resume.
#include "rpctestserver.h"

#include <client/agentsservice.h>
#include <client/execstream.h>
#include <client/rpcclient.h>
#include <client/websockettransport.h>

#include <QJsonArray>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>
#include <QWebSocket>

using namespace Sandbox;

namespace {

QJsonObject notification(const QString &method, const QJsonObject &params)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
            {QStringLiteral("method"), method},
            {QStringLiteral("params"), params}};
}

QByteArray expectedLines(int from, int to)
{
    QByteArray out;
    for (int i = from; i <= to; ++i)
        out += "line " + QByteArray::number(i) + '\n';
    return out;
}

// A server-side stream: produces `total` lines as stream.output notifications (then stream.end),
// keeps them in a bounded backlog, sends them live to the connection that follows the stream,
// and drops that connection after a random number of messages, `drops` times.
class StreamingServer final : public QObject
{
public:
    int total = 10000;
    int linesPerTick = 40;
    int drops = 0;
    int minBetweenDrops = 50;
    int maxBetweenDrops = 3000;
    int backlogLimit = 0;      // chunks kept; 0: all
    int resendOverlap = 0;     // a sloppy server that resends this many before `after`
    bool answerRequest = true; // answer the exec request after the end (if its connection lives)
    bool burstWhenDropped = false; // produce everything at once after the first drop
    QRandomGenerator random;

    RpcTestServer server;
    QString streamId = QStringLiteral("st_test");
    QList<QJsonObject> backlog; // backlog[i] has seq firstKept + i
    qint64 firstKept = 1;
    qint64 produced = 0; // seq of the last notification made
    bool done = false;
    QPointer<QWebSocket> follower;
    QPointer<QWebSocket> requester;
    QJsonObject request;
    int sentOnConnection = 0;
    int nextDropAt = 0;
    int resumes = 0;
    int gapsAnswered = 0;
    QTimer producer;

    explicit StreamingServer(quint32 seed)
        : random(seed)
    {
        producer.setInterval(0);
        connect(&producer, &QTimer::timeout, this, [this] { produce(linesPerTick); });
        server.handler = [this](QWebSocket *socket, const QJsonObject &m) { handle(socket, m); };
        connect(&server, &RpcTestServer::clientConnected, this, [this] { sentOnConnection = 0; });
    }

    int pickDrop() { return int(random.bounded(minBetweenDrops, maxBetweenDrops + 1)); }

    void handle(QWebSocket *socket, const QJsonObject &m)
    {
        const QString method = m.value(QStringLiteral("method")).toString();
        const QJsonObject params = m.value(QStringLiteral("params")).toObject();
        if (method == QStringLiteral("test.echo")) {
            RpcTestServer::reply(socket, m, params);
        } else if (method == QStringLiteral("agents.exec")) {
            nextDropAt = pickDrop();
            QVERIFY(params.value(QStringLiteral("options"))
                        .toObject()
                        .value(QStringLiteral("stream"))
                        .toBool());
            request = m;
            requester = socket;
            follower = socket;
            producer.start();
        } else if (method == QStringLiteral("stream.resume")) {
            ++resumes;
            QCOMPARE(params.value(QStringLiteral("streamId")).toString(), streamId);
            const qint64 after = params.value(QStringLiteral("after")).toInteger();
            if (after + 1 < firstKept) {
                ++gapsAnswered;
                RpcTestServer::send(socket,
                                    QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                                {QStringLiteral("id"),
                                                 m.value(QStringLiteral("id"))},
                                                {QStringLiteral("error"),
                                                 QJsonObject{{QStringLiteral("code"), -32009},
                                                             {QStringLiteral("message"),
                                                              QStringLiteral("stream gap")},
                                                             {QStringLiteral("data"),
                                                              QJsonObject{{QStringLiteral("first"),
                                                                           double(firstKept)}}}}}});
                return;
            }
            RpcTestServer::reply(socket, m,
                                 QJsonObject{{QStringLiteral("streamId"), streamId},
                                             {QStringLiteral("after"), double(after)},
                                             {QStringLiteral("last"), double(produced)},
                                             {QStringLiteral("done"), done}});
            follower = socket;
            const qint64 from = std::max(firstKept, after + 1 - resendOverlap);
            for (qint64 seq = from; seq <= produced && follower; ++seq)
                sendLive(backlog.at(int(seq - firstKept)));
        }
    }

    void sendLive(const QJsonObject &message)
    {
        if (!follower)
            return;
        RpcTestServer::send(follower, message);
        if (drops > 0 && ++sentOnConnection >= nextDropAt) {
            --drops;
            nextDropAt = pickDrop();
            QWebSocket *s = follower;
            follower = nullptr;
            s->abort();
            if (burstWhenDropped)
                produce(total);
        }
    }

    void append(const QJsonObject &message)
    {
        backlog.append(message);
        if (backlogLimit > 0 && backlog.size() > backlogLimit) {
            backlog.removeFirst();
            ++firstKept;
        }
        sendLive(message);
    }

    void produce(int lines)
    {
        for (int i = 0; i < lines && !done; ++i) {
            const qint64 seq = produced + 1;
            if (seq > total) {
                produced = seq;
                done = true;
                producer.stop();
                const QJsonObject result{{QStringLiteral("exitCode"), 0},
                                         {QStringLiteral("durationMs"), 42},
                                         {QStringLiteral("truncated"), false},
                                         {QStringLiteral("timedOut"), false}};
                append(notification(QStringLiteral("stream.end"),
                                    {{QStringLiteral("streamId"), streamId},
                                     {QStringLiteral("seq"), double(seq)},
                                     {QStringLiteral("requestId"),
                                      request.value(QStringLiteral("id"))},
                                     {QStringLiteral("result"), result}}));
                if (answerRequest && requester) {
                    QJsonObject full = result;
                    full.insert(QStringLiteral("streamId"), streamId);
                    full.insert(QStringLiteral("stdout"), QString());
                    RpcTestServer::reply(requester, request, full);
                }
                return;
            }
            produced = seq;
            append(notification(QStringLiteral("stream.output"),
                                {{QStringLiteral("streamId"), streamId},
                                 {QStringLiteral("seq"), double(seq)},
                                 {QStringLiteral("requestId"), request.value(QStringLiteral("id"))},
                                 {QStringLiteral("channel"), QStringLiteral("stdout")},
                                 {QStringLiteral("data"),
                                  QString::fromLatin1("line " + QByteArray::number(seq) + '\n')}}));
        }
    }
};

// What the client side saw of one stream.
struct Collected
{
    QByteArray stdoutData;
    int outputs = 0;
    int finished = 0;
    int failed = 0;
    QList<QPair<qint64, qint64>> gaps;
    ExecResult result;
    Error error;

    void follow(ExecStream *stream, QObject *context)
    {
        QObject::connect(stream, &ExecStream::output, context,
                         [this](const QString &channel, const QByteArray &data) {
                             QCOMPARE(channel, QStringLiteral("stdout"));
                             stdoutData += data;
                             ++outputs;
                         });
        QObject::connect(stream, &ExecStream::finished, context, [this](const ExecResult &r) {
            ++finished;
            result = r;
        });
        QObject::connect(stream, &ExecStream::failed, context, [this](const Error &e) {
            ++failed;
            error = e;
        });
        QObject::connect(stream, &ExecStream::gap, context, [this](qint64 a, qint64 b) {
            gaps.append({a, b});
        });
    }
};

} // namespace

class tst_Streams final : public QObject
{
    Q_OBJECT

private:
    std::unique_ptr<RpcClient> connectTo(const QUrl &url)
    {
        auto client = std::make_unique<RpcClient>(new WebSocketTransport(url, QStringLiteral("k")));
        client->setReconnectPolicy({5, 50, 0.2, 0});
        client->open();
        if (!QTest::qWaitFor([&] { return client->state() == RpcClient::State::Connected; }, 5000))
            return nullptr;
        return client;
    }

private Q_SLOTS:
    void everyLineExactlyOnceAcrossDrops_data()
    {
        QTest::addColumn<quint32>("seed");
        QTest::addColumn<int>("drops");
        QTest::addColumn<int>("resendOverlap");
        QTest::addColumn<bool>("answerRequest");
        // Drops come after 50..maxBetweenDrops messages on a connection; drops * maxBetweenDrops
        // stays under the 10 001 notifications, so that every planned drop happens.
        QTest::addColumn<int>("maxBetweenDrops");

        QTest::newRow("3 drops, exact resume") << 1u << 3 << 0 << true << 3000;
        QTest::newRow("6 drops, server resends 25 already seen") << 2u << 6 << 25 << true << 1500;
        QTest::newRow("10 drops, the exec response never comes") << 3u << 10 << 0 << false << 900;
        QTest::newRow("40 drops, some during the replay") << 5u << 40 << 0 << true << 220;
        QTest::newRow("no drops") << 4u << 0 << 0 << true << 0;
    }

    void everyLineExactlyOnceAcrossDrops()
    {
        QFETCH(quint32, seed);
        QFETCH(int, drops);
        QFETCH(int, resendOverlap);
        QFETCH(bool, answerRequest);
        QFETCH(int, maxBetweenDrops);

        StreamingServer s(seed);
        s.maxBetweenDrops = std::max(maxBetweenDrops, s.minBetweenDrops);
        s.drops = drops;
        s.resendOverlap = resendOverlap;
        s.answerRequest = answerRequest;
        QVERIFY(s.server.listen());
        auto client = connectTo(s.server.url());
        QVERIFY(client);

        AgentsService agents(client.get());
        QObject owner;
        ExecStream *stream = agents.execStreaming(QStringLiteral("sb_1"),
                                                  QStringLiteral("seq 10000"), {}, &owner);
        QVERIFY(stream);
        QSignalSpy started(stream, &ExecStream::started);
        Collected c;
        c.follow(stream, this);

        QTRY_VERIFY_WITH_TIMEOUT(c.finished + c.failed > 0, 60000);
        QCOMPARE(c.failed, 0);
        QCOMPARE(c.finished, 1);
        QCOMPARE(c.result.exitCode, 0);
        QCOMPARE(c.result.durationMs, 42);
        QCOMPARE(started.count(), 1);
        QCOMPARE(stream->streamId(), s.streamId);
        QCOMPARE(stream->lastSeq(), qint64(s.total + 1));
        QVERIFY(stream->isDone());
        QVERIFY(c.gaps.isEmpty());
        QCOMPARE(c.outputs, s.total);
        QCOMPARE(c.stdoutData.size(), expectedLines(1, s.total).size());
        QVERIFY(c.stdoutData == expectedLines(1, s.total)); // every line once, in order
        QCOMPARE(s.drops, 0);                               // all the drops happened
        QCOMPARE(s.server.connectionCount, drops + 1);
        QCOMPARE(s.resumes, drops);
        QCOMPARE(client->openStreamCount(), 0);

        // Nothing more arrives afterwards (e.g. a late response or a repeated end).
        Collected after;
        after.follow(stream, this);
        QSignalSpy echo(&s.server, &RpcTestServer::messageReceived);
        int answered = 0;
        RpcCall probe = client->call(QStringLiteral("test.echo"), {}, nullptr,
                                     [&](Result<QJsonValue>) { ++answered; });
        QTRY_COMPARE(answered, 1);
        QCOMPARE(after.finished + after.outputs + after.failed, 0);
        QCOMPARE(client->pendingCount(), 0);
    }

    void gapIsReportedAndSkipped()
    {
        StreamingServer s(7);
        s.total = 2000;
        s.drops = 1;
        s.minBetweenDrops = s.maxBetweenDrops = 300; // seq 300 is the last one sent
        s.backlogLimit = 100;
        s.burstWhenDropped = true; // the rest is made while the client is away
        QVERIFY(s.server.listen());
        auto client = connectTo(s.server.url());
        QVERIFY(client);

        QObject owner;
        ExecStream *stream = AgentsService(client.get())
                                 .execStreaming(QStringLiteral("sb_1"), QStringLiteral("x"), {},
                                                &owner);
        Collected c;
        c.follow(stream, this);
        QTRY_VERIFY_WITH_TIMEOUT(c.finished + c.failed > 0, 30000);
        QCOMPARE(c.failed, 0);
        QCOMPARE(c.finished, 1);
        QCOMPARE(s.gapsAnswered, 1);
        // The backlog holds the last 100 of 2001 notifications: seq 1902..2001.
        QCOMPARE(s.firstKept, qint64(1902));
        QCOMPARE(c.gaps.size(), 1);
        const qint64 lastSeen = c.stdoutData.count('\n') - (2000 - 1901);
        QCOMPARE(c.gaps.first().first, lastSeen + 1);
        QCOMPARE(c.gaps.first().second, qint64(1901));
        QVERIFY(c.stdoutData == expectedLines(1, int(lastSeen)) + expectedLines(1902, 2000));
    }

    void streamFailsWhenTheRequestFails_data()
    {
        QTest::addColumn<int>("code");
        QTest::newRow("sandbox not running") << int(ErrorCode::SandboxNotRunning);
        QTest::newRow("not found") << int(ErrorCode::NotFound);
    }

    void streamFailsWhenTheRequestFails()
    {
        QFETCH(int, code);
        RpcTestServer server;
        server.handler = [code](QWebSocket *socket, const QJsonObject &m) {
            RpcTestServer::send(socket,
                                QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                            {QStringLiteral("id"), m.value(QStringLiteral("id"))},
                                            {QStringLiteral("error"),
                                             QJsonObject{{QStringLiteral("code"), code},
                                                         {QStringLiteral("message"),
                                                          QStringLiteral("no")}}}});
        };
        QVERIFY(server.listen());
        auto client = connectTo(server.url());
        QVERIFY(client);
        QObject owner;
        ExecStream *stream = AgentsService(client.get())
                                 .execStreaming(QStringLiteral("sb_1"), QStringLiteral("x"), {},
                                                &owner);
        Collected c;
        c.follow(stream, this);
        QTRY_COMPARE(c.failed, 1);
        QCOMPARE(int(c.error.code), code);
        QCOMPARE(c.finished, 0);
        QVERIFY(stream->isDone());
    }

    void expiredStreamFailsOnResume()
    {
        // The server forgets the stream while the client is away: resume answers "not found".
        RpcTestServer server;
        QJsonObject exec;
        server.handler = [&](QWebSocket *socket, const QJsonObject &m) {
            const QString method = m.value(QStringLiteral("method")).toString();
            if (method == QStringLiteral("agents.exec")) {
                exec = m;
                RpcTestServer::send(
                    socket,
                    notification(QStringLiteral("stream.output"),
                                 {{QStringLiteral("streamId"), QStringLiteral("st_x")},
                                  {QStringLiteral("seq"), 1},
                                  {QStringLiteral("requestId"), m.value(QStringLiteral("id"))},
                                  {QStringLiteral("channel"), QStringLiteral("stderr")},
                                  {QStringLiteral("dataBase64"), QStringLiteral("/w==")}}));
            } else if (method == QStringLiteral("stream.resume")) {
                RpcTestServer::send(socket,
                                    QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                                {QStringLiteral("id"),
                                                 m.value(QStringLiteral("id"))},
                                                {QStringLiteral("error"),
                                                 QJsonObject{{QStringLiteral("code"), -32002},
                                                             {QStringLiteral("message"),
                                                              QStringLiteral("no such stream")}}}});
            }
        };
        QVERIFY(server.listen());
        auto client = connectTo(server.url());
        QVERIFY(client);
        QObject owner;
        ExecStream *stream = AgentsService(client.get())
                                 .execStreaming(QStringLiteral("sb_1"), QStringLiteral("x"), {},
                                                &owner);
        QSignalSpy output(stream, &ExecStream::output);
        QSignalSpy failed(stream, &ExecStream::failed);
        QTRY_COMPARE(output.count(), 1);
        QCOMPARE(output.at(0).at(0).toString(), QStringLiteral("stderr"));
        QCOMPARE(output.at(0).at(1).toByteArray(), QByteArray("\xff"));
        server.dropAll();
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 5000);
        QCOMPARE(failed.at(0).at(0).value<Error>().code, ErrorCode::NotFound);
        QCOMPARE(client->openStreamCount(), 0);
    }

    void destroyingTheStreamStopsFollowing()
    {
        StreamingServer s(9);
        s.total = 500;
        s.linesPerTick = 5;
        s.producer.setInterval(20);
        QVERIFY(s.server.listen());
        auto client = connectTo(s.server.url());
        QVERIFY(client);
        auto owner = std::make_unique<QObject>();
        ExecStream *stream = AgentsService(client.get())
                                 .execStreaming(QStringLiteral("sb_1"), QStringLiteral("x"), {},
                                                owner.get());
        QSignalSpy output(stream, &ExecStream::output);
        QSignalSpy notifications(client.get(), &RpcClient::notification);
        QTRY_VERIFY(output.count() > 10);
        QVERIFY(!s.done);
        QCOMPARE(notifications.count(), 0);
        owner.reset(); // deletes the stream
        QCOMPARE(client->openStreamCount(), 0);
        // The rest of the stream is reported as notifications nobody follows; nothing crashes.
        QTRY_VERIFY_WITH_TIMEOUT(s.done, 10000);
        QTRY_VERIFY(notifications.count() > 0);
    }
};

QTEST_GUILESS_MAIN(tst_Streams)
#include "tst_streams.moc"
