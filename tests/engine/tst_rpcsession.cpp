// One /rpc connection (RpcSession) over a real loopback WebSocket, against a real StreamHub: a
// connection that falls over its limit of unsent bytes while the hub is delivering to it (a
// replay) is dropped after the hub is done, and then follows no stream any more.
#include "api/bytebudget.h"
#include "api/logthrottle.h"
#include "api/rpcsession.h"
#include "service/streamhub.h"

#include <QHostAddress>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QTest>
#include <QWebSocket>
#include <QWebSocketServer>

using Sandbox::Engine::ByteBudget;
using Sandbox::Engine::LogThrottle;
using Sandbox::Engine::RpcSession;
using Sandbox::Engine::StreamHub;

class tst_RpcSession : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aReaderDroppedDuringAReplayFollowsNothing_data();
    void aReaderDroppedDuringAReplayFollowsNothing();
};

void tst_RpcSession::aReaderDroppedDuringAReplayFollowsNothing_data()
{
    QTest::addColumn<QString>("encoding");
    QTest::newRow("binary frames") << QStringLiteral("binary");
    QTest::newRow("JSON notifications") << QStringLiteral("json");
}

// A stream whose backlog is more than the connection may hold unsent: resuming it from the start
// fills the socket's buffer during the replay, before the event loop can write any of it.
void tst_RpcSession::aReaderDroppedDuringAReplayFollowsNothing()
{
    QFETCH(QString, encoding);
    StreamHub::Limits limits;
    limits.backlogBytes = RpcSession::MaxUnsentBytes * 2;
    StreamHub hub(limits);
    ByteBudget budget(64 * 1024 * 1024);
    LogThrottle log(1000);
    const QString key = QStringLiteral("key");
    const QString streamId = hub.open(key, 7, {}, {});
    const QByteArray chunk(1024 * 1024, 'x');
    const int chunks = int(RpcSession::MaxUnsentBytes / chunk.size()) + 8;
    for (int i = 0; i < chunks; ++i)
        hub.output(streamId, 1, chunk);
    QCOMPARE(hub.sinkBacklog(streamId), -1);

    QWebSocketServer server(QStringLiteral("tst"), QWebSocketServer::NonSecureMode);
    QVERIFY(server.listen(QHostAddress::LocalHost, 0));
    QPointer<RpcSession> session;
    connect(&server, &QWebSocketServer::newConnection, this, [&] {
        session = new RpcSession(server.nextPendingConnection(), key, nullptr, &hub, &budget, &log);
    });

    QWebSocket client;
    bool disconnected = false;
    connect(&client, &QWebSocket::disconnected, this, [&] { disconnected = true; });
    client.open(QUrl(QStringLiteral("ws://127.0.0.1:%1").arg(server.serverPort())));
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    const auto send = [&](const QJsonObject &m) {
        client.sendTextMessage(QString::fromUtf8(QJsonDocument(m).toJson(QJsonDocument::Compact)));
    };
    send({{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
          {QStringLiteral("method"), QStringLiteral("rpc.streamEncoding")},
          {QStringLiteral("params"), QJsonObject{{QStringLiteral("encoding"), encoding}}}});
    send({{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
          {QStringLiteral("id"), 1},
          {QStringLiteral("method"), QStringLiteral("stream.resume")},
          {QStringLiteral("params"),
           QJsonObject{{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}}}});

    // The engine drops the connection that holds too much unsent...
    QTRY_VERIFY_WITH_TIMEOUT(disconnected, 20000);
    QTRY_VERIFY(session.isNull());
    // ...and the stream is followed by nobody: its output goes to the backlog only (a terminal's
    // program runs on), and a reconnecting client resumes it.
    QCOMPARE(hub.sinkBacklog(streamId), -1);
    hub.output(streamId, 1, "after the drop");
    QCOMPARE(hub.sinkBacklog(streamId), -1);
}

QTEST_GUILESS_MAIN(tst_RpcSession)
#include "tst_rpcsession.moc"
