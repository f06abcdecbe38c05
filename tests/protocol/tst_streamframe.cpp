// Binary output frames (docs/protocol.md 2.6) as a client decodes them: the output is the end of
// the message the client got, not a copy, and yet a reader that changes what it got changes
// nothing else (neither the message nor another reader's output).
#include "protocol/streamframe.h"

#include <QTest>

using namespace Sandbox;

class tst_StreamFrame : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theOutputIsTheMessagesEndNotACopy();
};

void tst_StreamFrame::theOutputIsTheMessagesEndNotACopy()
{
    const QByteArray data(256 * 1024, 'o');
    const QByteArray message = StreamFrame::encodeOutput("st_1", "7", 3,
                                                         StreamFrame::Channel::Stderr, data);
    QString why;
    auto frame = StreamFrame::decode(message, &why);
    QVERIFY2(frame, qPrintable(why));
    QCOMPARE(frame->streamId, QStringLiteral("st_1"));
    QCOMPARE(frame->requestIdJson, QByteArray("7"));
    QCOMPARE(frame->seq, 3);
    QCOMPARE(frame->channel, StreamFrame::Channel::Stderr);
    QCOMPARE(frame->data, data);
    QCOMPARE(frame->data.constData(), message.constData() + message.size() - data.size());
    QCOMPARE(frame->data.constData()[data.size()], '\0'); // a C string, as every QByteArray

    // Readers may keep, change and grow what they got.
    auto other = StreamFrame::decode(message, &why);
    QVERIFY(other);
    frame->data[0] = 'x';
    frame->data.append("more");
    QCOMPARE(frame->data, "x" + data.mid(1) + "more");
    QCOMPARE(other->data, data);
    QCOMPARE(StreamFrame::decode(message, &why)->data, data);
    QVERIFY(message.endsWith(data));
    // What a reader kept outlives the message it came in.
    QByteArray kept;
    {
        QByteArray own = StreamFrame::encodeOutput("st_2", "8", 1, StreamFrame::Channel::Stdout,
                                                   "kept");
        kept = StreamFrame::decode(own, &why)->data;
        own.fill('-');
    }
    kept.append(" and more");
    QCOMPARE(kept, QByteArray("kept and more"));
}

QTEST_GUILESS_MAIN(tst_StreamFrame)
#include "tst_streamframe.moc"
