// The engine's streams (docs/protocol.md 2.3) at the unit level: chunks end at UTF-8 boundaries,
// and the unfinished character at the end of a chunk is held only while more output may finish
// it, never while the program waits.
#include "protocol/streamframe.h"
#include "service/streamhub.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

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
        QTest::qWait(10);
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
        const auto f = Sandbox::StreamFrame::decode(frames[i], &why);
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

QTEST_GUILESS_MAIN(tst_StreamHub)
#include "tst_streamhub.moc"
