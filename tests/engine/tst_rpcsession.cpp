// One /rpc connection (RpcSession) over a real loopback WebSocket, against a real StreamHub: a
// connection that falls over its limit of unsent bytes while the hub is delivering to it (a
// replay) is dropped after the hub is done, and then follows no stream any more. Upgraded from a
// TCP connection of its own as the engine does it: a request is handled in the turn of the event
// loop that read it, its answer written in the turn that made it, and a flood is still taken at
// the connection's rate. Output written to that connection under the WebSocket and answers
// written through it arrive whole and in order, and so do answers written as frames of their
// own, of every size around the header's length steps. Each message is a use of the key.
#include "api/bytebudget.h"
#include "api/keystore.h"
#include "api/logthrottle.h"
#include "api/rpcsession.h"
#include "protocol/streamframe.h"
#include "service/streamhub.h"
#include "state/registry.h"

#include <QElapsedTimer>
#include <QHostAddress>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QSet>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>
#include <QWebSocketServer>

#include <algorithm>

using Sandbox::Engine::ByteBudget;
using Sandbox::Engine::KeyStore;
using Sandbox::Engine::LogThrottle;
using Sandbox::Engine::Registry;
using Sandbox::Engine::RpcSession;
using Sandbox::Engine::StreamHub;

class tst_RpcSession : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aReaderDroppedDuringAReplayFollowsNothing_data();
    void aReaderDroppedDuringAReplayFollowsNothing();
    void aRequestIsHandledInTheTurnThatReadIt();
    void anAnswerLeavesInTheTurnThatMadeIt();
    void aFloodIsStillTakenAtTheConnectionsRate();
    void outputAndAnswersArriveWholeAndInOrder();
    void answersOfEverySizeArriveWhole();
    void aKeyInUseOnAnOpenConnectionIsShownUsed();
};

namespace {

// A WebSocket server as the engine's: the TCP connection accepted first, then upgraded, and the
// session given both.
class UpgradingServer final : public QObject
{
public:
    UpgradingServer(StreamHub *hub, const QString &key, KeyStore *keys = nullptr)
    {
        m_tcp.listen(QHostAddress::LocalHost, 0);
        connect(&m_tcp, &QTcpServer::newConnection, this, [this] {
            connection = m_tcp.nextPendingConnection();
            m_ws.handleConnection(connection);
        });
        connect(&m_ws, &QWebSocketServer::newConnection, this, [this, hub, key, keys] {
            session = new RpcSession(m_ws.nextPendingConnection(), connection, key, keys, nullptr,
                                     hub, &m_budget, &m_log);
        });
    }
    ~UpgradingServer() override { delete session.data(); } // before the budget it uses
    QUrl url() const { return QUrl(QStringLiteral("ws://127.0.0.1:%1").arg(m_tcp.serverPort())); }

    QPointer<QTcpSocket> connection; // the upgraded connection under the session
    QPointer<RpcSession> session;

private:
    QTcpServer m_tcp;
    QWebSocketServer m_ws{QStringLiteral("tst"), QWebSocketServer::NonSecureMode};
    ByteBudget m_budget{64 * 1024 * 1024};
    LogThrottle m_log{1000};
};

QByteArray request(int id, const QString &method, const QJsonObject &params)
{
    return QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                     {QStringLiteral("id"), id},
                                     {QStringLiteral("method"), method},
                                     {QStringLiteral("params"), params}})
        .toJson(QJsonDocument::Compact);
}

} // namespace

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
    limits.keyKeptBytes = limits.allKeptBytes = limits.backlogBytes * 2; // all of that one stream
    StreamHub hub(limits);
    const QString key = QStringLiteral("key");
    const QString streamId = hub.open(key, 7, {}, {});
    const QByteArray chunk(1024 * 1024, 'x');
    const int chunks = int(RpcSession::MaxUnsentBytes / chunk.size()) + 8;
    for (int i = 0; i < chunks; ++i)
        hub.output(streamId, 1, chunk);
    QCOMPARE(hub.sinkBacklog(streamId), -1);

    UpgradingServer server(&hub, key);
    QPointer<RpcSession> &session = server.session;

    QWebSocket client;
    bool disconnected = false;
    connect(&client, &QWebSocket::disconnected, this, [&] { disconnected = true; });
    client.open(server.url());
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

// The request is handled by the end of the read that brought it: not one turn of the event loop
// later, from a timer (a wake-up and its system calls more for every request).
void tst_RpcSession::aRequestIsHandledInTheTurnThatReadIt()
{
    StreamHub hub;
    const QString key = QStringLiteral("key");
    UpgradingServer server(&hub, key);
    QWebSocket client;
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    QTRY_VERIFY(server.session && server.connection);

    // stream.resume makes the connection the stream's reader: the hub says so at once.
    const QString streamId = hub.open(key, 7, {}, {});
    hub.output(streamId, 1, "output");
    QCOMPARE(hub.sinkBacklog(streamId), -1);
    int reads = 0;
    bool followedAtEndOfFirstRead = false;
    // Connected after the session's own: runs at the end of each read, in the same turn.
    connect(server.connection, &QIODevice::readyRead, this, [&] {
        if (reads++ == 0)
            followedAtEndOfFirstRead = hub.sinkBacklog(streamId) != -1;
    });
    QList<QJsonObject> answers;
    connect(&client, &QWebSocket::textMessageReceived, this, [&](const QString &text) {
        answers.append(QJsonDocument::fromJson(text.toUtf8()).object());
    });
    client.sendTextMessage(QString::fromUtf8(
        request(1, QStringLiteral("stream.resume"),
                {{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}})));
    QTRY_VERIFY(reads > 0);
    QVERIFY2(followedAtEndOfFirstRead, "the request waited for another turn of the event loop");
    QTRY_VERIFY(!answers.isEmpty());
    QCOMPARE(answers.first().value(QStringLiteral("id")).toInt(), 1);
    QVERIFY(answers.first().contains(QStringLiteral("result")));
}

// An answer is on its way to the client by the end of the turn of the event loop that made it:
// not left in the socket's buffer until the next turn finds the socket writable (a wake-up and
// two system calls more for every request).
void tst_RpcSession::anAnswerLeavesInTheTurnThatMadeIt()
{
    StreamHub hub;
    UpgradingServer server(&hub, QStringLiteral("key"));
    QWebSocket client;
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    QTRY_VERIFY(server.session && server.connection);
    int reads = 0;
    qint64 unsentAtEndOfRead = -1;
    // Connected after the session's own: runs at the end of each read, in the same turn.
    connect(server.connection, &QIODevice::readyRead, this, [&] {
        if (reads++ == 0)
            unsentAtEndOfRead = server.connection->bytesToWrite();
    });
    QList<QJsonObject> answers;
    connect(&client, &QWebSocket::textMessageReceived, this, [&](const QString &text) {
        answers.append(QJsonDocument::fromJson(text.toUtf8()).object());
    });
    // rpc.cancel of a request that is not running: answered -32002 in the same turn.
    client.sendTextMessage(
        QString::fromUtf8(request(3, QStringLiteral("rpc.cancel"), {{QStringLiteral("id"), 99}})));
    QTRY_VERIFY(reads > 0);
    QCOMPARE(unsentAtEndOfRead, 0);
    QTRY_COMPARE(answers.size(), 1);
    QCOMPARE(answers.first().value(QStringLiteral("id")).toInt(), 3);
    QVERIFY(answers.first().contains(QStringLiteral("error")));
}

// More requests at once than a burst may take: the rest are answered at the sustained rate, also
// when they come in the reads that would take them at once.
void tst_RpcSession::aFloodIsStillTakenAtTheConnectionsRate()
{
    StreamHub hub;
    UpgradingServer server(&hub, QStringLiteral("key"));
    QWebSocket client;
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    QTRY_VERIFY(server.session);
    const int beyond = 500;
    const int flood = RpcSession::MessageBurst + beyond;
    int answered = 0;
    QElapsedTimer sinceSent;
    qint64 lastAnswerMs = 0;
    connect(&client, &QWebSocket::textMessageReceived, this, [&](const QString &text) {
        // rpc.cancel of a request that is not running: answered -32002 without a method behind.
        if (QJsonDocument::fromJson(text.toUtf8()).object().contains(QStringLiteral("error")))
            ++answered;
        lastAnswerMs = sinceSent.elapsed();
    });
    sinceSent.start();
    for (int i = 0; i < flood; ++i)
        client.sendTextMessage(QString::fromUtf8(
            request(i, QStringLiteral("rpc.cancel"), {{QStringLiteral("id"), 1000000 + i}})));
    QTRY_COMPARE_WITH_TIMEOUT(answered, flood, 30000);
    QVERIFY(server.session);
    // The burst at once, then MessagesPerSecond: the last `beyond` need that long at least (less
    // what the tokens regained while the burst was taken; the flood counts from its first send).
    const qint64 atLeastMs = qint64(beyond) * 1000 / RpcSession::MessagesPerSecond;
    QVERIFY2(lastAnswerMs >= atLeastMs * 8 / 10,
             qPrintable(
                 QStringLiteral("%1 requests answered within %2 ms").arg(flood).arg(lastAnswerMs)));
}

// Output goes to the socket under the WebSocket (as binary messages made once for every
// connection), answers through the WebSocket: a client still gets every message whole, output in
// its order, the answer to stream.resume before the replay, and the answer to a request after
// the output the engine had sent before it read the request. Output of sizes around the steps of
// the WebSocket header (2, 4 or 10 bytes), and of a MiB, more than the socket takes at once.
void tst_RpcSession::outputAndAnswersArriveWholeAndInOrder()
{
    StreamHub hub;
    const QString key = QStringLiteral("key");
    const QString streamId = hub.open(key, 7, {}, {});
    QList<QByteArray> written;
    const auto output = [&](qsizetype n) {
        written.append(QByteArray(n, char('a' + written.size() % 26)));
        hub.output(streamId, 1, written.last());
    };
    // The stream's frames have 52 bytes before the data: 16, its id (35), the request id (1).
    const QList<qsizetype> sizes{1, 73, 74, 0xffff - 52, 0x10000 - 52, 1024 * 1024};
    for (const qsizetype n : sizes)
        output(n); // the backlog, replayed

    UpgradingServer server(&hub, key);
    QWebSocket client;
    struct Message
    {
        bool binary;
        QByteArray bytes;
    };
    QList<Message> got;
    connect(&client, &QWebSocket::binaryMessageReceived, this, [&](const QByteArray &m) {
        got.append({true, m});
    });
    connect(&client, &QWebSocket::textMessageReceived, this, [&](const QString &t) {
        got.append({false, t.toUtf8()});
    });
    bool disconnected = false;
    connect(&client, &QWebSocket::disconnected, this, [&] { disconnected = true; });
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    const auto answerAt = [&](int id) {
        for (int i = 0; i < got.size(); ++i) {
            if (!got[i].binary
                && QJsonDocument::fromJson(got[i].bytes).object().value(QStringLiteral("id"))
                       == QJsonValue(id))
                return i;
        }
        return -1;
    };
    const auto outputs = [&] {
        return std::count_if(got.cbegin(), got.cend(), [](const Message &m) { return m.binary; });
    };
    client.sendTextMessage(
        QString::fromUtf8(request(1, QStringLiteral("rpc.streamEncoding"),
                                  {{QStringLiteral("encoding"), QStringLiteral("binary")}})));
    client.sendTextMessage(QString::fromUtf8(
        request(2, QStringLiteral("stream.resume"),
                {{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}})));
    QTRY_COMPARE(outputs(), sizes.size());
    const int resumed = answerAt(2);
    QVERIFY(resumed >= 0);
    QVERIFY(std::none_of(got.cbegin(), got.cbegin() + resumed,
                         [](const Message &m) { return m.binary; }));

    // Live output, each followed by a request (rpc.cancel of a request that is not there).
    for (int i = 0; i < 12; ++i) {
        output(sizes[i % sizes.size()] + i % 2);
        const int id = 100 + i;
        client.sendTextMessage(
            QString::fromUtf8(request(id, QStringLiteral("rpc.cancel"),
                                      {{QStringLiteral("id"), QStringLiteral("none")}})));
        QTRY_VERIFY(answerAt(id) >= 0);
        // Output number sizes.size() + i came before the answer.
        int before = 0;
        for (int k = 0; k < answerAt(id); ++k)
            before += got[k].binary ? 1 : 0;
        QCOMPARE(before, sizes.size() + i + 1);
    }
    qint64 seq = 0;
    int next = 0;
    for (const Message &m : std::as_const(got)) {
        if (!m.binary) {
            QVERIFY2(QJsonDocument::fromJson(m.bytes).isObject(), m.bytes.constData());
            continue;
        }
        QString why;
        const auto frame = Sandbox::StreamFrame::decode(m.bytes, &why);
        QVERIFY2(frame, qPrintable(why));
        QCOMPARE(frame->streamId, streamId);
        QCOMPARE(frame->seq, ++seq);
        QCOMPARE(frame->data, written.value(next++));
    }
    QCOMPARE(next, written.size());
    QVERIFY(!disconnected);
}

// Answers go to the socket as frames the session writes itself (a header of 2, 4 or 10 bytes by
// their length): every length around the steps arrives whole, as the text it was, ASCII or not.
void tst_RpcSession::answersOfEverySizeArriveWhole()
{
    StreamHub hub;
    UpgradingServer server(&hub, QStringLiteral("key"));
    QWebSocket client;
    QList<QByteArray> got;
    connect(&client, &QWebSocket::textMessageReceived, this,
            [&](const QString &t) { got.append(t.toUtf8()); });
    bool disconnected = false;
    connect(&client, &QWebSocket::disconnected, this, [&] { disconnected = true; });
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    // The answer to rpc.cancel echoes the request's id: the id's length sets the answer's.
    QList<QString> ids;
    const QString wide = QStringLiteral("\u00e9\U0001F600"); // 2 and 4 bytes of UTF-8
    for (int n = 20; n < 60; ++n)
        ids.append(QString(n, QLatin1Char('a')));
    for (int n = 65420; n < 65480; ++n)
        ids.append(QString(n, QLatin1Char('b')));
    for (int n = 20; n < 40; ++n)
        ids.append(QString(n, QLatin1Char('c')) + wide.repeated(n % 5 + 1));
    QSet<qsizetype> sizes;
    for (const QString &id : std::as_const(ids)) {
        got.clear();
        const QByteArray text
            = QJsonDocument(
                  QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                              {QStringLiteral("id"), id},
                              {QStringLiteral("method"), QStringLiteral("rpc.cancel")},
                              {QStringLiteral("params"),
                               QJsonObject{{QStringLiteral("id"), QStringLiteral("none")}}}})
                  .toJson(QJsonDocument::Compact);
        client.sendTextMessage(QString::fromUtf8(text));
        QTRY_COMPARE(got.size(), 1);
        const QJsonDocument answer = QJsonDocument::fromJson(got.first());
        QVERIFY2(answer.isObject(), got.first().left(200).constData());
        QCOMPARE(answer.object().value(QStringLiteral("id")).toString(), id);
        sizes.insert(got.first().size());
    }
    // The steps were crossed: 125 | 126 and 65535 | 65536 bytes.
    QVERIFY(sizes.contains(125) && sizes.contains(126));
    QVERIFY(sizes.contains(65535) && sizes.contains(65536));
    QVERIFY(!disconnected);
}

// keys.list says when each key was last used, for a person deciding whether to revoke one: a key
// that opened the desktop's WebSocket hours ago and has used it since is in use, not idle since
// the connection opened. Each message on the connection is a use (kept once a minute at most).
void tst_RpcSession::aKeyInUseOnAnOpenConnectionIsShownUsed()
{
    QTemporaryDir dir;
    auto registry = Registry::open(dir.filePath(QStringLiteral("registry.db")));
    QVERIFY(registry);
    QDateTime now = QDateTime::fromString(QStringLiteral("2026-12-07T09:00:00.000Z"),
                                          Qt::ISODateWithMs);
    KeyStore keys(registry->get(), [&now] { return now; });
    const auto created = keys.create(QStringLiteral("desktop"));
    QVERIFY(created);
    QVERIFY(keys.verify(created->key.toLatin1())); // the upgrade proves the key
    const QDateTime opened = now;
    const auto lastUsed = [&] {
        for (const auto &k : keys.list())
            if (k.id == created->id)
                return k.lastUsedAt;
        return QDateTime();
    };
    QCOMPARE(lastUsed(), opened);

    StreamHub hub;
    UpgradingServer server(&hub, created->id, &keys);
    QWebSocket client;
    client.open(server.url());
    QTRY_VERIFY(client.state() == QAbstractSocket::ConnectedState);
    int answers = 0;
    connect(&client, &QWebSocket::textMessageReceived, this, [&] { ++answers; });
    const QString streamId = hub.open(created->id, 7, {}, {});
    const auto call = [&](int id) {
        client.sendTextMessage(QString::fromUtf8(
            request(id, QStringLiteral("stream.resume"),
                    {{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}})));
        QTRY_COMPARE(answers, id);
    };
    now = opened.addSecs(30); // within the minute: nothing to write
    call(1);
    QCOMPARE(lastUsed(), opened);
    now = opened.addSecs(3 * 3600);
    call(2);
    QCOMPARE(lastUsed(), now);
    // And the registry has it, as a restarted engine reads it.
    QCOMPARE(KeyStore(registry->get()).list().constFirst().lastUsedAt, now);
}

QTEST_GUILESS_MAIN(tst_RpcSession)
#include "tst_rpcsession.moc"
