// The engine's streams (docs/protocol.md 2.3) at the unit level: chunks end at UTF-8 boundaries,
// and the unfinished character at the end of a chunk is held only while more output may finish
// it, never while the program waits.
#include "protocol/streamframe.h"
#include "service/streamhub.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using Sandbox::Engine::OutputBytes;
using Sandbox::Engine::StreamHub;

namespace {

QJsonObject paramsOf(const QByteArray &notification)
{
    return QJsonDocument::fromJson(notification).object().value(QStringLiteral("params")).toObject();
}

QByteArray bytesOf(const QByteArray &notification)
{
    const QJsonObject p = paramsOf(notification);
    if (p.contains(QStringLiteral("dataBase64")))
        return QByteArray::fromBase64(p.value(QStringLiteral("dataBase64")).toString().toLatin1());
    return p.value(QStringLiteral("data")).toString().toUtf8();
}

// The stream frame inside a binary output message, checked against RFC 6455 as a client reads
// it: one final binary frame, not masked (a server's), its length in the fewest bytes that hold
// it, and exactly the bytes that follow. Empty when the header is wrong.
QByteArray frameOf(const QByteArray &message)
{
    if (message.size() < 2 || uchar(message[0]) != 0x82 || (uchar(message[1]) & 0x80) != 0)
        return {};
    const auto *p = reinterpret_cast<const uchar *>(message.constData());
    qsizetype header = 2;
    quint64 length = p[1];
    if (length == 126) {
        header = 4;
        length = message.size() >= 4 ? quint64(p[2]) << 8 | p[3] : 0;
        if (length < 126)
            return {};
    } else if (length == 127) {
        header = 10;
        length = 0;
        for (int i = 2; i < 10 && i < message.size(); ++i)
            length = length << 8 | p[i];
        if (length <= 0xffff)
            return {};
    }
    if (quint64(message.size() - header) != length)
        return {};
    return message.mid(header);
}

} // namespace

class tst_StreamHub : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aPartialCharacterIsSentWhenTheProgramPauses();
    void aCharacterSplitAcrossReadsStaysWhole();
    void steadyOutputKeepsHoldingOnlyTheLastPartialCharacter();
    void binaryAndJsonConnectionsGetTheSameChunks_data();
    void binaryAndJsonConnectionsGetTheSameChunks();
    void aBinaryMessageIsOneWebSocketFrameOfItsLength_data();
    void aBinaryMessageIsOneWebSocketFrameOfItsLength();
    void outputStaysInTheArrayItWasReadInto();
    void aWatcherFollowsBesideTheConnectionThatStartedIt();
    void aWatcherIsStoppedByItsConnectionGoingAway();
    void aKeysStreamsKeepWithinItsLimitOldestEndedFirst();
    void runningStreamsGiveUpTheirOldestOutputLast();
};

// `printf 'h\303'; sleep 60`: the reader sees both bytes long before the program's next output.
void tst_StreamHub::aPartialCharacterIsSentWhenTheProgramPauses()
{
    StreamHub hub;
    QList<QByteArray> sent;
    const QString id = hub.open(QStringLiteral("key"), 1,
                                [&](const QByteArray &n) { sent.append(n); }, {});
    hub.output(id, 1, "h\xc3");
    QCOMPARE(sent.size(), 1);
    QCOMPARE(bytesOf(sent[0]), QByteArray("h"));
    QTRY_COMPARE_WITH_TIMEOUT(sent.size(), 2, 2000);
    QCOMPARE(bytesOf(sent[1]), QByteArray("\xc3"));
    QVERIFY(paramsOf(sent[1]).contains(QStringLiteral("dataBase64")));
    // What completes it later comes as it is: the bytes, in order, are what the program wrote.
    hub.output(id, 1, "\xa9!");
    QCOMPARE(sent.size(), 3);
    QCOMPARE(bytesOf(sent[0]) + bytesOf(sent[1]) + bytesOf(sent[2]), QByteArray("h\xc3\xa9!"));
}

// Reads that split a character (every pipe read may) still give JSON readers whole characters.
void tst_StreamHub::aCharacterSplitAcrossReadsStaysWhole()
{
    StreamHub hub;
    QList<QByteArray> sent;
    const QString id = hub.open(QStringLiteral("key"), 1,
                                [&](const QByteArray &n) { sent.append(n); }, {});
    hub.output(id, 1, "caf\xc3");
    hub.output(id, 1, "\xa9 au lait");
    QCOMPARE(sent.size(), 2);
    QCOMPARE(paramsOf(sent[0]).value(QStringLiteral("data")).toString(), QStringLiteral("caf"));
    QCOMPARE(paramsOf(sent[1]).value(QStringLiteral("data")).toString(),
             QString::fromUtf8("\xc3\xa9 au lait"));
    QTest::qWait(100); // nothing is left over to send
    QCOMPARE(sent.size(), 2);
}

// A fast stream whose every read ends inside a character is never split by the hold timer: only
// the last partial character waits, and only until the pause.
void tst_StreamHub::steadyOutputKeepsHoldingOnlyTheLastPartialCharacter()
{
    StreamHub::Limits limits;
    limits.carryHoldMs = 1000; // far above a read every 10 ms, even on a loaded machine
    StreamHub hub(limits);
    QList<QByteArray> sent;
    const QString id = hub.open(QStringLiteral("key"), 1,
                                [&](const QByteArray &n) { sent.append(n); }, {});
    QByteArray written;
    QElapsedTimer clock;
    clock.start();
    hub.output(id, 1, "\xc3");
    written += "\xc3";
    while (clock.elapsed() < 300) { // a read every ~10 ms, each ending inside a character
        QTest::qWait(10);           // on purpose: the reads are spread over time
        hub.output(id, 1, "\xa9x\xc3");
        written += "\xa9x\xc3";
    }
    const qsizetype whileSteady = sent.size();
    for (const QByteArray &n : std::as_const(sent))
        QVERIFY2(!paramsOf(n).contains(QStringLiteral("dataBase64")), n.constData());
    QTRY_COMPARE_WITH_TIMEOUT(sent.size(), whileSteady + 1, 2000);
    QByteArray received;
    for (const QByteArray &n : std::as_const(sent))
        received += bytesOf(n);
    QCOMPARE(received, written);
}

void tst_StreamHub::binaryAndJsonConnectionsGetTheSameChunks_data()
{
    QTest::addColumn<QJsonValue>("requestId");
    QTest::newRow("a number") << QJsonValue(7);
    // Long enough that its frames are made as they are sent, not kept in the backlog.
    QTest::newRow("a long string") << QJsonValue(QString(300, u'r'));
}

// The same seq and bytes, live and replayed, whichever encoding the connection takes
// (docs/protocol.md 2.6), with the request id as it was sent.
void tst_StreamHub::binaryAndJsonConnectionsGetTheSameChunks()
{
    QFETCH(QJsonValue, requestId);
    StreamHub hub;
    QList<QByteArray> frames;
    const int owner = 0;
    hub.setBinarySink(&owner, [&](const QByteArray &f) { frames.append(f); });
    const QString id = hub.open(QStringLiteral("key"), requestId, [](const QByteArray &) {}, {});
    hub.setSinkOwner(id, &owner);
    hub.output(id, 1, "caf\xc3");
    hub.output(id, 2, "\xa9 err");
    hub.output(id, 1, "\xa9!");
    // Each channel holds its own unfinished character.
    const QList<QByteArray> want{"caf", "\xa9 err", "\xc3\xa9!"};
    QCOMPARE(frames.size(), 3);
    const QByteArray idJson = QJsonDocument(QJsonArray{requestId}).toJson(QJsonDocument::Compact);
    for (int i = 0; i < 3; ++i) {
        QString why;
        const auto f = Sandbox::StreamFrame::decode(frameOf(frames[i]), &why);
        QVERIFY2(f, qPrintable(why));
        QCOMPARE(f->streamId, id);
        QCOMPARE(f->seq, i + 1);
        QCOMPARE(f->requestIdJson, idJson.mid(1, idJson.size() - 2));
        QCOMPARE(int(f->channel), i == 1 ? 2 : 1);
        QCOMPARE(f->data, want[i]);
    }
    // A JSON connection resuming from the start gets the same chunks under the same seq.
    QList<QByteArray> json;
    auto r = hub.resume(QStringLiteral("key"), id, 0, [&](const QByteArray &n) { json.append(n); });
    QVERIFY(r);
    const int jsonOwner = 0;
    hub.setSinkOwner(id, &jsonOwner);
    r->replay();
    QCOMPARE(json.size(), 3);
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(paramsOf(json[i]).value(QStringLiteral("seq")).toInt(), i + 1);
        QCOMPARE(paramsOf(json[i]).value(QStringLiteral("requestId")), requestId);
        QCOMPARE(bytesOf(json[i]), want[i]);
    }
}

void tst_StreamHub::aBinaryMessageIsOneWebSocketFrameOfItsLength_data()
{
    QTest::addColumn<QJsonValue>("requestId");
    QTest::addColumn<qsizetype>("payload"); // the stream frame's bytes: its prefix and the data
    // The WebSocket header takes 2 bytes up to 125, 4 up to 65 535, then 10.
    for (const qsizetype payload : {125, 126, 0xffff, 0x10000, 1024 * 1024 + 100}) {
        QTest::addRow("request id 7, %lld bytes", qlonglong(payload)) << QJsonValue(7) << payload;
        // Its messages are made as they are sent, not kept in the backlog (its prefix alone is
        // over 125 bytes).
        if (payload > 0xffff)
            QTest::addRow("a long request id, %lld bytes", qlonglong(payload))
                << QJsonValue(QString(300, u'r')) << payload;
    }
}

// A connection writes a binary output message to its socket as it is (docs/protocol.md 2.6),
// live and replayed: a header a WebSocket client reads as one frame of exactly that frame.
void tst_StreamHub::aBinaryMessageIsOneWebSocketFrameOfItsLength()
{
    QFETCH(QJsonValue, requestId);
    QFETCH(qsizetype, payload);
    StreamHub hub;
    QList<QByteArray> messages;
    const int owner = 0;
    hub.setBinarySink(&owner, [&](const QByteArray &m) { messages.append(m); });
    const QString id = hub.open(QStringLiteral("key"), requestId, [](const QByteArray &) {}, {});
    hub.setSinkOwner(id, &owner);
    const QByteArray idJson = QJsonDocument(QJsonArray{requestId}).toJson(QJsonDocument::Compact);
    const qsizetype prefix = Sandbox::StreamFrame::HeaderBytes + id.size() + idJson.size() - 2;
    QVERIFY(payload > prefix);
    const QByteArray data(payload - prefix, 'x');
    hub.output(id, 1, data);
    hub.output(id, 2, "after");
    auto r = hub.resume(QStringLiteral("key"), id, 0, [](const QByteArray &) {});
    QVERIFY(r);
    hub.setSinkOwner(id, &owner);
    r->replay();
    QCOMPARE(messages.size(), 4);
    for (int i = 0; i < 4; ++i) {
        const QByteArray frame = frameOf(messages[i]);
        QVERIFY2(!frame.isEmpty(), qPrintable(QStringLiteral("message %1").arg(i)));
        QString why;
        const auto f = Sandbox::StreamFrame::decode(frame, &why);
        QVERIFY2(f, qPrintable(why));
        QCOMPARE(f->seq, i % 2 + 1);
        QCOMPARE(f->data, i % 2 == 0 ? data : QByteArray("after"));
        if (i % 2 == 0)
            QCOMPARE(frame.size(), payload);
    }
    QCOMPARE(messages[2], messages[0]); // replayed exactly as first sent
}

// Output read from a pipe (OutputPipe) stays in the array it was read into: its binary message
// is that array, the data where the read put it, the unfinished character of the chunk before
// put in front of it; and a read that filled little of its array does not keep the rest.
void tst_StreamHub::outputStaysInTheArrayItWasReadInto()
{
    StreamHub hub;
    QList<QByteArray> messages;
    const int owner = 0;
    hub.setBinarySink(&owner, [&](const QByteArray &m) { messages.append(m); });
    const QString id = hub.open(QStringLiteral("key"), 7, [](const QByteArray &) {}, {});
    hub.setSinkOwner(id, &owner);

    // A read of 20 KiB into an array of 256 KiB (the pipe held less than it said): taken, and
    // what it did not fill is given back.
    QByteArray first(OutputBytes::kRoom + 256 * 1024, Qt::Uninitialized);
    const QByteArray text = QByteArray(20 * 1024 - 1, 'c') + "\xc3";
    memcpy(first.data() + OutputBytes::kRoom, text.constData(), size_t(text.size()));
    hub.output(id, 1, OutputBytes(&first, text.size()));
    QVERIFY(first.isNull()); // taken: the reader reads into a new array next time
    QCOMPARE(messages.size(), 1);
    QVERIFY2(messages[0].capacity() < text.size() + 2048,
             qPrintable(QString::number(messages[0].capacity())));
    QCOMPARE(Sandbox::StreamFrame::decode(frameOf(messages[0]), nullptr)->data, text.chopped(1));

    const qsizetype size = 1024 * 1024;
    QByteArray big(OutputBytes::kRoom + size, Qt::Uninitialized);
    big[OutputBytes::kRoom] = '\xa9';
    memset(big.data() + OutputBytes::kRoom + 1, 'x', size_t(size - 1));
    const char *read = big.constData() + OutputBytes::kRoom;
    hub.output(id, 1, OutputBytes(&big, size));
    QVERIFY(big.isNull());
    QCOMPARE(messages.size(), 2);
    const auto frame = Sandbox::StreamFrame::decode(frameOf(messages[1]), nullptr);
    QVERIFY(frame);
    QCOMPARE(frame->seq, 2);
    QCOMPARE(frame->data, "\xc3\xa9" + QByteArray(size - 1, 'x'));
    QCOMPARE(messages[1].constData() + messages[1].size() - frame->data.size(), read - 1);

    // Output that cannot be taken (a frame's, a terminal's) is copied, as before; so is a small
    // read, whose array the reader keeps using (kept, each would hold the room in front of it).
    const QByteArray frameOutput("from a frame");
    hub.output(id, 2, frameOutput);
    QByteArray small(OutputBytes::kRoom + 4096, Qt::Uninitialized);
    memcpy(small.data() + OutputBytes::kRoom, "small", 5);
    hub.output(id, 2, OutputBytes(&small, 5));
    QVERIFY(!small.isNull());
    QCOMPARE(messages.size(), 4);
    QCOMPARE(Sandbox::StreamFrame::decode(frameOf(messages[2]), nullptr)->data, frameOutput);
    QCOMPARE(Sandbox::StreamFrame::decode(frameOf(messages[3]), nullptr)->data, "small");
    QVERIFY(messages[3].capacity() < 256);
}

// stream.watch (docs/protocol.md 2.3): another connection of the key gets the backlog after
// `after`, then every new notification, while the starting connection keeps getting them too.
void tst_StreamHub::aWatcherFollowsBesideTheConnectionThatStartedIt()
{
    StreamHub hub;
    const int starter = 0;
    const int watcher = 0;
    QList<QByteArray> toStarter;
    QList<QByteArray> toWatcher;
    const QString id = hub.open(QStringLiteral("key"), 7,
                                [&](const QByteArray &n) { toStarter.append(n); }, {});
    hub.setSinkOwner(id, &starter);
    hub.output(id, 1, "one\n");
    hub.output(id, 2, "two\n");

    QCOMPARE(hub.watch(QStringLiteral("other key"), id, 0, &watcher, {}).error().code,
             Sandbox::ErrorCode::NotFound);
    QCOMPARE(hub.watch(QStringLiteral("key"), QStringLiteral("st_nope"), 0, &watcher, {}).error().code,
             Sandbox::ErrorCode::NotFound);
    auto w = hub.watch(QStringLiteral("key"), id, 1, &watcher,
                       [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(w);
    QCOMPARE(w->answer.value(QStringLiteral("last")).toInteger(), 2);
    QCOMPARE(w->answer.value(QStringLiteral("done")).toBool(), false);
    QVERIFY(toWatcher.isEmpty());
    w->replay();
    QCOMPARE(toWatcher.size(), 1);
    QCOMPARE(paramsOf(toWatcher[0]).value(QStringLiteral("seq")).toInteger(), 2);
    QCOMPARE(bytesOf(toWatcher[0]), QByteArray("two\n"));

    hub.event(id, QJsonObject{{QStringLiteral("type"), QStringLiteral("usage")}});
    hub.output(id, 1, "three\n");
    hub.end(id, QJsonObject{{QStringLiteral("result"), QJsonObject{}}});
    QCOMPARE(toStarter.size(), 5); // the starter lost nothing to the watcher
    QCOMPARE(toWatcher.size(), 4);
    for (int i = 1; i < 4; ++i)
        QCOMPARE(toWatcher[i],
                 toStarter[i + 1]); // the same notifications, requestId as first sent
    QCOMPARE(paramsOf(toWatcher[3]).value(QStringLiteral("requestId")).toInt(), 7);
    QCOMPARE(QJsonDocument::fromJson(toWatcher[3]).object().value(QStringLiteral("method")),
             QStringLiteral("stream.end"));

    // A watch after the end replays what is held and the end.
    auto late = hub.watch(QStringLiteral("key"), id, 3, &watcher,
                          [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(late);
    QCOMPARE(late->answer.value(QStringLiteral("done")).toBool(), true);
    late->replay();
    QCOMPARE(toWatcher.size(), 6);
    QCOMPARE(toWatcher[5], toStarter[4]);
}

void tst_StreamHub::aWatcherIsStoppedByItsConnectionGoingAway()
{
    StreamHub hub;
    const int starter = 0;
    const int watcher = 0;
    QList<QByteArray> toStarter;
    QList<QByteArray> toWatcher;
    const QString id = hub.open(QStringLiteral("key"), 1,
                                [&](const QByteArray &n) { toStarter.append(n); }, {});
    hub.setSinkOwner(id, &starter);
    auto w = hub.watch(QStringLiteral("key"), id, 0, &watcher,
                       [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(w);
    w->replay();
    // Watching twice from one connection delivers once.
    auto again = hub.watch(QStringLiteral("key"), id, 0, &watcher,
                           [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(again);
    again->replay();
    hub.output(id, 1, "a");
    QCOMPARE(toWatcher.size(), 1);
    hub.detach(&watcher);
    hub.output(id, 1, "b");
    QCOMPARE(toWatcher.size(), 1);
    QCOMPARE(toStarter.size(), 2);

    // The starter's connection drops; a watcher that then resumes it gets it once, as its own.
    auto w2 = hub.watch(QStringLiteral("key"), id, 2, &watcher,
                        [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(w2);
    w2->replay();
    hub.detach(&starter);
    auto resumed = hub.resume(QStringLiteral("key"), id, 2,
                              [&](const QByteArray &n) { toWatcher.append(n); });
    QVERIFY(resumed);
    hub.setSinkOwner(id, &watcher);
    resumed->replay();
    hub.output(id, 1, "c");
    QCOMPARE(toWatcher.size(), 2);
    QCOMPARE(bytesOf(toWatcher[1]), QByteArray("c"));
    QCOMPARE(toStarter.size(), 2);
}

// A key holder who runs stream after stream: the key's streams keep at most its limit together,
// the oldest ended ones let go first and whole (resume: not found), the newest still resumable;
// another key's streams keep theirs.
void tst_StreamHub::aKeysStreamsKeepWithinItsLimitOldestEndedFirst()
{
    StreamHub::Limits limits;
    limits.keyKeptBytes = 4 * 1024 * 1024;
    limits.allKeptBytes = 64 * 1024 * 1024;
    StreamHub hub(limits);
    const QByteArray mib(1024 * 1024, 'x');
    const QString others = hub.open(QStringLiteral("other key"), 1, {}, {});
    hub.output(others, 1, mib);
    hub.end(others, {{QStringLiteral("result"), 0}});
    QStringList ids;
    for (int i = 0; i < 12; ++i) {
        ids.append(hub.open(QStringLiteral("key"), i, {}, {}));
        hub.output(ids.last(), 1, mib);
        hub.end(ids.last(), {{QStringLiteral("result"), 0}});
        QVERIFY2(hub.keptBytes() <= limits.keyKeptBytes + 2 * mib.size(),
                 qPrintable(QString::number(hub.keptBytes())));
    }
    // 12 MiB of output, 4 kept: the first streams are gone, the last three whole.
    QCOMPARE(hub.resume(QStringLiteral("key"), ids.first(), 0, {}).error().code,
             Sandbox::ErrorCode::NotFound);
    for (qsizetype i = ids.size() - 3; i < ids.size(); ++i) {
        QList<QByteArray> replayed;
        auto r = hub.resume(QStringLiteral("key"), ids[i], 0,
                            [&](const QByteArray &n) { replayed.append(n); });
        QVERIFY2(r, qPrintable(ids[i]));
        r.value().replay();
        QCOMPARE(replayed.size(), 2); // its output and its end
        QCOMPARE(bytesOf(replayed[0]), mib);
    }
    QVERIFY(hub.resume(QStringLiteral("other key"), others, 0, {}));
    QTRY_VERIFY(hub.count() <= 1 + 4 + 1); // the let-go ones are erased on the next turn
}

// With no ended stream left to let go, a running stream's oldest output goes (a resume from
// before it is a gap, -32009), the newest stays; the stream itself runs on.
void tst_StreamHub::runningStreamsGiveUpTheirOldestOutputLast()
{
    StreamHub::Limits limits;
    limits.keyKeptBytes = 4 * 1024 * 1024;
    StreamHub hub(limits);
    const QByteArray mib(1024 * 1024, 'y');
    QList<QByteArray> sent;
    const QString first = hub.open(QStringLiteral("key"), 1,
                                   [&](const QByteArray &n) { sent.append(n); }, {});
    const QString second = hub.open(QStringLiteral("key"), 2, {}, {});
    for (int i = 0; i < 3; ++i)
        hub.output(first, 1, mib);
    for (int i = 0; i < 3; ++i)
        hub.output(second, 1, mib);
    QVERIFY2(hub.keptBytes() <= limits.keyKeptBytes, qPrintable(QString::number(hub.keptBytes())));
    QCOMPARE(sent.size(), 3); // what it already sent went out whole
    QCOMPARE(hub.resume(QStringLiteral("key"), first, 0, {}).error().code,
             Sandbox::ErrorCode::StreamGap);
    QVERIFY(hub.resume(QStringLiteral("key"), second, 0, {})); // the newer one is whole
    hub.output(first, 1, "still running");
    hub.end(first, {{QStringLiteral("result"), 0}});
    QList<QByteArray> replayed;
    auto r = hub.resume(QStringLiteral("key"), first, 3,
                        [&](const QByteArray &n) { replayed.append(n); });
    QVERIFY(r);
    r.value().replay();
    QCOMPARE(replayed.size(), 2);
    QCOMPARE(bytesOf(replayed[0]), QByteArray("still running"));
}

QTEST_GUILESS_MAIN(tst_StreamHub)
#include "tst_streamhub.moc"
