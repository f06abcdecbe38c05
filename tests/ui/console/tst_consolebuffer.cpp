// The console's scrollback: line splitting per channel, carriage returns, tabs, formats, and the
// caps that keep a million lines from growing memory without bound.
#include <console/consolebuffer.h>

#include <QElapsedTimer>
#include <QTest>

using namespace Sandbox::Ui;
using Channel = ConsoleBuffer::Channel;
using Kind = ConsoleBuffer::LineKind;

namespace {
QStringList lines(const ConsoleBuffer &b)
{
    QStringList out;
    for (qint64 i = 0; i < b.lineCount(); ++i)
        out << b.line(i).text;
    return out;
}
} // namespace

class TestConsoleBuffer final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void splitsLinesAcrossChunks()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "hel");
        QCOMPARE(lines(b), QStringList{QStringLiteral("hel")}); // a partial line is shown at once
        b.appendOutput(Channel::Stdout, "lo\nwor");
        b.appendOutput(Channel::Stdout, "ld\n\n");
        QCOMPARE(lines(b),
                 (QStringList{QStringLiteral("hello"), QStringLiteral("world"), QString()}));
    }

    void channelsNeverShareALine()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "out-");
        b.appendOutput(Channel::Stderr, "err-");
        b.appendOutput(Channel::Stdout, "more\n");
        b.appendOutput(Channel::Stderr, "tail\n");
        QCOMPARE(lines(b), (QStringList{QStringLiteral("out-more"), QStringLiteral("err-tail")}));
        QCOMPARE(b.line(0).kind, Kind::Stdout);
        QCOMPARE(b.line(1).kind, Kind::Stderr);
    }

    void carriageReturnRewritesTheLine()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "progress 10%\rprogress 50%\r");
        b.appendOutput(Channel::Stdout, "progress 100%\r\ndone\r\n");
        QCOMPARE(lines(b), (QStringList{QStringLiteral("progress 100%"), QStringLiteral("done")}));
    }

    void tabsExpandAndBackspaceErases()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "a\tb\tc\nabc\bd\n");
        QCOMPARE(lines(b),
                 (QStringList{QStringLiteral("a       b       c"), QStringLiteral("abd")}));
    }

    void utf8SplitBetweenChunks()
    {
        ConsoleBuffer b;
        const QByteArray text = QStringLiteral("grüße €\n").toUtf8();
        for (char c : text)
            b.appendOutput(Channel::Stdout, QByteArray(1, c));
        QCOMPARE(lines(b), QStringList{QStringLiteral("grüße €")});
    }

    void formatsBecomeSpans()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "ok \x1b[31mfailed\x1b[0m done\n");
        QCOMPARE(b.lineCount(), 1);
        const auto &line = b.line(0);
        QCOMPARE(line.text, QStringLiteral("ok failed done"));
        QCOMPARE(line.spans.size(), 1);
        QCOMPARE(line.spans[0].start, 3);
        QCOMPARE(line.spans[0].length, 6);
        QCOMPARE(b.format(line.spans[0].format).foreground, AnsiParser::paletteColor(1));
    }

    void ownLinesEndOpenOutput()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "no newline");
        b.appendLine(Kind::Info, QStringLiteral("[exit 0]"));
        b.appendOutput(Channel::Stdout, "next\n");
        QCOMPARE(lines(b), (QStringList{QStringLiteral("no newline"), QStringLiteral("[exit 0]"),
                                        QStringLiteral("next")}));
    }

    void overlongLineIsBroken()
    {
        ConsoleBuffer b;
        b.setMaxLineLength(100);
        b.appendOutput(Channel::Stdout, QByteArray(250, 'x'));
        QCOMPARE(b.lineCount(), 3);
        QCOMPARE(b.line(0).text.size(), 100);
        QCOMPARE(b.line(2).text.size(), 50);
    }

    void capsLines()
    {
        ConsoleBuffer b(1000, 1 << 30);
        QByteArray chunk;
        for (int i = 0; i < 5000; ++i)
            chunk += "line " + QByteArray::number(i) + '\n';
        b.appendOutput(Channel::Stdout, chunk);
        QCOMPARE(b.lineCount(), 1000);
        QCOMPARE(b.totalLines(), 5000);
        QCOMPARE(b.droppedLines(), 4000);
        QCOMPARE(b.line(0).text, QStringLiteral("line 4000"));
        QCOMPARE(b.line(999).text, QStringLiteral("line 4999"));
    }

    void capsCharacters()
    {
        ConsoleBuffer b(1000000, 10000);
        for (int i = 0; i < 1000; ++i)
            b.appendOutput(Channel::Stdout, QByteArray(QByteArray(99, 'y') + '\n'));
        QVERIFY(b.charCount() <= 10000);
        QCOMPARE(b.lineCount(), 101); // 101 lines of 99 characters is the most under 10 000
    }

    // A million lines: the buffer stays at its cap and appending stays fast.
    void millionLinesStayBounded()
    {
        ConsoleBuffer b; // default caps
        QByteArray chunk;
        for (int i = 0; i < 1000; ++i)
            chunk += "2026-11-29T09:00:00Z worker[42]: processed item " + QByteArray::number(i)
                     + " \x1b[32mok\x1b[0m\n";
        QElapsedTimer t;
        t.start();
        for (int n = 0; n < 1000; ++n)
            b.appendOutput(n % 5 == 0 ? Channel::Stderr : Channel::Stdout, chunk);
        const qint64 ms = t.elapsed();
        QCOMPARE(b.totalLines(), 1000000);
        QCOMPARE(b.lineCount(), ConsoleBuffer::DefaultMaxLines);
        QVERIFY(b.charCount() <= ConsoleBuffer::DefaultMaxChars);
        qInfo("1,000,000 lines appended in %lld ms", static_cast<long long>(ms));
        QVERIFY2(ms < 20000, "appending a million lines took far too long");
    }

    void clearKeepsNumbering()
    {
        ConsoleBuffer b;
        b.appendOutput(Channel::Stdout, "a\nb\n");
        b.clear();
        QCOMPARE(b.lineCount(), 0);
        QCOMPARE(b.firstLineNumber(), 2);
        b.appendOutput(Channel::Stdout, "c\n");
        QCOMPARE(lines(b), QStringList{QStringLiteral("c")});
    }
};

QTEST_GUILESS_MAIN(TestConsoleBuffer)
#include "tst_consolebuffer.moc"
