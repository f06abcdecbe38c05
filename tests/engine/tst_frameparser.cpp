// The engine's frame reader as a pure unit: bytes in, frames or one violation out, whatever way
// the bytes are split, with every header judged before its payload is held.

#include "runtime/frameparser.h"
#include "testframes.h"

#include <QtCore/QtEndian>
#include <QtTest/QtTest>

using namespace Qt::StringLiterals;
using namespace Sandbox::Engine;
using SupervisorWire::FrameType;
using TestFrames::frame;

namespace {

struct Seen
{
    QList<QPair<int, QByteArray>> frames;
    QString violation;
};

Seen drain(FrameParser &parser)
{
    Seen seen;
    FrameParser::Frame f;
    for (;;) {
        const auto status = parser.next(&f);
        if (status == FrameParser::Status::NeedMore)
            return seen;
        if (status == FrameParser::Status::Violation) {
            seen.violation = parser.violation();
            return seen;
        }
        seen.frames.append({int(f.type), f.payload.toByteArray()});
    }
}

} // namespace

class TestFrameParser : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void framesWhateverTheSplit()
    {
        const QByteArray stream = frame(32, 0, R"({"pid":2,"version":"2"})"_ba)
                                  + frame(17, 1, "out"_ba) + frame(16, 1, "{}"_ba)
                                  + frame(18, 2, QByteArray());
        for (int chunk : {1, 2, 5, 9, 10, 1000}) {
            FrameParser parser;
            Seen all;
            qint64 lastEnd = 0;
            for (qsizetype at = 0; at < stream.size(); at += chunk) {
                parser.feed(
                    QByteArrayView(stream).sliced(at, qMin<qsizetype>(chunk, stream.size() - at)));
                FrameParser::Frame f;
                while (parser.next(&f) == FrameParser::Status::HaveFrame) {
                    QCOMPARE(f.start, lastEnd);
                    lastEnd = f.end;
                    all.frames.append({int(f.type), f.payload.toByteArray()});
                }
                QVERIFY(!parser.failed());
            }
            QCOMPARE(all.frames.size(), 4);
            QCOMPARE(all.frames[1], qMakePair(17, "out"_ba));
            QCOMPARE(all.frames[3], qMakePair(18, QByteArray()));
            QCOMPARE(lastEnd, stream.size());
            QCOMPARE(parser.buffered(), 0);
        }
    }

    void violations_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("short length") << frame(16, 1, {}, 4) << u"length 4"_s;
        QTest::newRow("unknown type") << frame(99, 1, "x"_ba) << u"unknown type 99"_s;
        QTest::newRow("engine's type") << frame(1, 1, "{}"_ba) << u"unknown type 1"_s;
        QTest::newRow("huge HELLO") << frame(32, 0, QByteArray(4097, 'x')) << u"HELLO"_s;
        QTest::newRow("huge STDOUT")
            << frame(17, 1, QByteArray(256 * 1024 + 1, 'x')) << u"STDOUT"_s;
        QTest::newRow("huge EVENT") << frame(19, 1, QByteArray(64 * 1024 + 1, 'x')) << u"EVENT"_s;
        // Only the header is there: the claim alone is refused, nothing is buffered for it.
        QTest::newRow("claimed 4 GiB") << frame(16, 1, {}, 0xffffffffu) << u"RESPONSE"_s;
    }

    void violations()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        FrameParser parser;
        parser.feed(bytes);
        const Seen seen = drain(parser);
        QVERIFY(seen.frames.isEmpty());
        QVERIFY2(seen.violation.contains(expected), qPrintable(seen.violation));
        // Failed for good: more input is dropped, the answer stays the violation.
        parser.feed(frame(17, 1, "x"_ba));
        QCOMPARE(parser.buffered(), 0);
        FrameParser::Frame f;
        QCOMPARE(parser.next(&f), FrameParser::Status::Violation);
    }

    void headerCheckRunsOncePerFrameBeforeThePayload()
    {
        QList<quint32> seen;
        FrameParser parser([&](FrameType type, quint32 id, quint32 payload) {
            seen.append(payload);
            return type == FrameType::Response && id == 7 ? u"request 7 is not pending"_s
                                                          : QString();
        });
        const QByteArray ok = frame(17, 1, QByteArray(1000, 'a'));
        parser.feed(ok.first(20));
        FrameParser::Frame f;
        QCOMPARE(parser.next(&f), FrameParser::Status::NeedMore);
        QCOMPARE(parser.next(&f), FrameParser::Status::NeedMore);
        QCOMPARE(seen, QList<quint32>{1000});
        parser.feed(ok.sliced(20));
        QCOMPARE(parser.next(&f), FrameParser::Status::HaveFrame);
        QCOMPARE(seen.size(), 1);
        // Refused on its header alone: its payload never has to arrive.
        parser.feed(frame(16, 7, {}, 5 + 1000000));
        QCOMPARE(parser.next(&f), FrameParser::Status::Violation);
        QCOMPARE(parser.violation(), u"request 7 is not pending"_s);
    }

    void bufferStaysBounded()
    {
        // A long stream of small frames: what is held stays near one read's worth.
        FrameParser parser;
        const QByteArray f = frame(17, 1, QByteArray(100, 'x'));
        qsizetype maxHeld = 0;
        for (int i = 0; i < 20000; ++i) {
            parser.feed(f);
            FrameParser::Frame out;
            QCOMPARE(parser.next(&out), FrameParser::Status::HaveFrame);
            maxHeld = qMax(maxHeld, parser.buffered());
        }
        QCOMPARE(maxHeld, 0);
        QCOMPARE(parser.streamOffset(), qint64(f.size()) * 20000);
    }
};

QTEST_GUILESS_MAIN(TestFrameParser)
#include "tst_frameparser.moc"
