// The console's scrollback: line splitting per channel, carriage returns, tabs, formats, and the
// caps that keep a million lines from growing memory without bound.
#include <client/allocatortuning.h>
#include <console/consolebuffer.h>

#include <QElapsedTimer>
#include <QTest>

#include <sys/resource.h>

using namespace Sandbox::Ui;
using Channel = ConsoleBuffer::Channel;
using Kind = ConsoleBuffer::LineKind;

namespace {
// Minor page faults of this process so far: pages touched for the first time.
qint64 pageFaults()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

QStringList lines(const ConsoleBuffer &b)
{
    QStringList out;
    for (qint64 i = 0; i < b.lineCount(); ++i)
        out << b.line(i).text;
    return out;
}

// Every line as the view sees it: its kind, text and runs with their formats; then the counts.
QStringList described(const ConsoleBuffer &b)
{
    QStringList out;
    for (qint64 i = 0; i < b.lineCount(); ++i) {
        const ConsoleBuffer::Line line = b.line(i);
        QString d = QString::number(int(line.kind)) + u'|' + line.text;
        for (const ConsoleBuffer::Span &s : line.spans) {
            const TextFormat &f = b.format(s.format);
            d += QStringLiteral("|%1+%2:%3/%4/%5")
                     .arg(s.start)
                     .arg(s.length)
                     .arg(f.foreground, 0, 16)
                     .arg(f.background, 0, 16)
                     .arg(f.flags);
        }
        out << d;
    }
    out << QStringLiteral("total %1, first %2, chars %3, widest %4")
               .arg(b.totalLines())
               .arg(b.firstLineNumber())
               .arg(b.charCount())
               .arg(b.widestLine());
    return out;
}

// Output with everything the plain-line path must hand over: colours left on across lines, an
// open stderr line while stdout goes on, CR progress bars, CR LF, tabs, backspaces, UTF-8 (wide
// characters, invalid bytes, a sequence cut between chunks), an overlong line, an OSC string and
// a CSI cut short by a line feed, control characters, many plain lines, no final line feed.
QList<QPair<Channel, QByteArray>> mixedOutput()
{
    QList<QPair<Channel, QByteArray>> out{
        {Channel::Stdout, "plain line 1\nplain line 2\n"},
        {Channel::Stdout, "\x1b[31mred starts and stays\nstill red, in plain bytes\n"},
        {Channel::Stdout, "\x1b[0mback to normal\n"},
        {Channel::Stderr, "error: partial"},
        {Channel::Stdout, "stdout while stderr is open\nand one more\n"},
        {Channel::Stderr, " line, ended\n"},
        {Channel::Stdout, "progress 10%\rprogress 50%\rprogress 100%\r\nafter progress\n"},
        {Channel::Stdout, "tab\there\tand\tthere\nabc\bd\n"},
        {Channel::Stdout, "gr\xc3\xbc\xc3\x9f"
                          "e \xe2\x82\xac \xe6\xbc\xa2\xe5\xad\x97 wide\n"},
        {Channel::Stdout, QByteArray(300, 'x') + "\n"},
        {Channel::Stdout, "\x1b]0;a title with\na line feed\x07"
                          "after the osc\n"},
        {Channel::Stdout, "before \x1b[3\nafter a csi that took the line feed\n"},
        {Channel::Stdout, "\x1b]0;a title\n"},
        {Channel::Stdout, "still the title\n\x07shown\nline\n\x1b[3"},
        {Channel::Stdout, "1mred after an escape cut between chunks\n\x1b[0mline\n\xe2\x82"},
        {Channel::Stdout, "plain after a cut UTF-8 sequence\n"},
        {Channel::Stdout, "\x1b[1;4;38;5;208mbold orange\x1b[22m not bold\x1b[0m\n\x1b[44m"},
        {Channel::Stdout, "on blue\n\x1b[49m\r\n\n\n"},
        {Channel::Stderr, "\x1b[33mwarning\x1b[0m\n"},
        {Channel::Stdout, "\xff\xfe invalid\ncut \xe2\x82"},
        {Channel::Stdout, "\xac euro\n\x7f del and \x07 bell\n"},
    };
    QByteArray many;
    for (int i = 0; i < 500; ++i)
        many += "line " + QByteArray::number(i) + '\n';
    out.append({Channel::Stdout, many});
    out.append({Channel::Stderr, "no final line feed"});
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
        // Lines dropped one chunk at a time, many times over the records' ring, a line open at
        // the end: every line kept is the right one.
        for (int i = 5000; i < 20000; i += 7) {
            QByteArray more;
            for (int j = i; j < qMin(i + 7, 20000); ++j)
                more += "line " + QByteArray::number(j) + (j == 19999 ? "" : "\n");
            b.appendOutput(Channel::Stdout, more);
        }
        QCOMPARE(b.totalLines(), 20000);
        for (qint64 i = 0; i < b.lineCount(); ++i)
            QCOMPARE(b.line(i).text, QStringLiteral("line %1").arg(b.firstLineNumber() + i));
        // And when the cap is raised after lines went round: more are kept, still in order.
        ConsoleBuffer c(1000, 1 << 30);
        const auto appendNumbered = [&c](int from, int to) {
            for (int i = from; i < to; i += 7) {
                QByteArray more;
                for (int j = i; j < qMin(i + 7, to); ++j)
                    more += "line " + QByteArray::number(j) + '\n';
                c.appendOutput(Channel::Stdout, more);
            }
        };
        appendNumbered(0, 3000);
        c.setLimits(3000, 1 << 30);
        appendNumbered(3000, 6000);
        QCOMPARE(c.lineCount(), 3000);
        for (qint64 i = 0; i < c.lineCount(); ++i)
            QCOMPARE(c.line(i).text, QStringLiteral("line %1").arg(c.firstLineNumber() + i));
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

    // Whole lines in one chunk take the plain-line path; the same bytes in small pieces go through
    // the decoder and the parser: what the buffer holds must not depend on it.
    void chunkingDoesNotChangeTheLines_data()
    {
        QTest::addColumn<int>("piece");
        QTest::addColumn<int>("maxLines");
        QTest::newRow("bytes one by one") << 1 << 100000;
        QTest::newRow("pieces of 7 bytes") << 7 << 100000;
        QTest::newRow("pieces of 64 bytes") << 64 << 100000;
        QTest::newRow("pieces of 7 bytes, 40 lines kept") << 7 << 40;
        QTest::newRow("pieces of 4096 bytes, 40 lines kept") << 4096 << 40;
    }
    void chunkingDoesNotChangeTheLines()
    {
        QFETCH(int, piece);
        QFETCH(int, maxLines);
        ConsoleBuffer whole(maxLines, 1 << 30);
        ConsoleBuffer pieces(maxLines, 1 << 30);
        whole.setMaxLineLength(100);
        pieces.setMaxLineLength(100);
        for (const auto &[channel, bytes] : mixedOutput()) {
            whole.appendOutput(channel, bytes);
            for (qsizetype at = 0; at < bytes.size(); at += piece)
                pieces.appendOutput(channel, bytes.mid(at, piece));
        }
        QCOMPARE(described(whole), described(pieces));
        whole.finishOutput();
        pieces.finishOutput();
        QCOMPARE(described(whole), described(pieces));
        // And what the user sees: a few lines spelled out.
        const QStringList shown = lines(whole);
        if (maxLines > 1000) {
            QCOMPARE(shown.mid(0, 3),
                     (QStringList{QStringLiteral("plain line 1"), QStringLiteral("plain line 2"),
                                  QStringLiteral("red starts and stays")}));
            QCOMPARE(whole.line(3).text, QStringLiteral("still red, in plain bytes"));
            QCOMPARE(whole.line(3).spans.size(), 1);
            QCOMPARE(whole.format(whole.line(3).spans[0].format).foreground,
                     AnsiParser::paletteColor(1));
            QVERIFY(shown.contains(QStringLiteral("error: partial line, ended")));
            QVERIFY(shown.contains(QStringLiteral("progress 100%")));
            QVERIFY(shown.contains(QStringLiteral("grüße € 漢字 wide")));
            QVERIFY(shown.contains(QStringLiteral("on blue")));
            QVERIFY(shown.contains(QStringLiteral("cut € euro")));
            QVERIFY(shown.contains(QStringLiteral("before after a csi that took the line feed")));
            QVERIFY(shown.contains(QStringLiteral("shown")));
            QVERIFY(!shown.contains(QStringLiteral("still the title")));
            QVERIFY(shown.contains(QStringLiteral("red after an escape cut between chunks")));
            // The broken sequence shows as a replacement character, on the line that follows it.
            const QStringList cut = shown.filter(QStringLiteral("after a cut UTF-8 sequence"));
            QCOMPARE(cut.size(), 1);
            QVERIFY(cut.first().startsWith(u'\ufffd'));
        }
        QCOMPARE(shown.last(), QStringLiteral("no final line feed"));
        QCOMPARE(shown.at(shown.size() - 2), QStringLiteral("line 499"));
    }

    // A chunk of plain lines bigger than several of the blocks lines are kept in (each block's
    // lines are copied in one piece): every line has its own text, as when the same bytes come
    // in pieces that cut lines.
    void plainLinesAcrossBlocks()
    {
        QByteArray bytes;
        QStringList expected;
        for (int i = 0; bytes.size() < 600 * 1024; ++i) {
            const QByteArray line = "line " + QByteArray::number(i) + ' '
                                    + QByteArray(i % 300, char('a' + i % 26));
            bytes += line + '\n';
            expected << QString::fromLatin1(line);
            if (i % 97 == 0) {
                bytes += '\n';
                expected << QString();
            }
        }
        ConsoleBuffer whole(1 << 20, 1 << 30);
        ConsoleBuffer pieces(1 << 20, 1 << 30);
        whole.appendOutput(Channel::Stdout, "\x1b[33m"); // the lines after it are yellow
        pieces.appendOutput(Channel::Stdout, "\x1b[33m");
        whole.appendOutput(Channel::Stdout, bytes);
        for (qsizetype at = 0; at < bytes.size(); at += 1000)
            pieces.appendOutput(Channel::Stdout, bytes.mid(at, 1000));
        QCOMPARE(lines(whole), expected);
        QCOMPARE(described(whole), described(pieces));
        QCOMPARE(whole.line(5).spans.size(), 1);
        QCOMPARE(whole.format(whole.line(5).spans[0].format).foreground,
                 AnsiParser::paletteColor(3));
    }

    // Lines in blocks: a stderr line finished long after the stdout lines around it, dropped
    // lines and clear() leave the right text in every line.
    void linesFinishedLateKeepTheirText()
    {
        ConsoleBuffer b(30000, 1 << 30);
        b.appendOutput(Channel::Stderr, "slow ");
        QByteArray chunk;
        for (int i = 0; i < 20000; ++i)
            chunk += "stdout line " + QByteArray::number(i) + '\n';
        b.appendOutput(Channel::Stdout, chunk);
        b.appendOutput(Channel::Stderr, "stderr line\n");
        QCOMPARE(b.line(0).text, QStringLiteral("slow stderr line"));
        QCOMPARE(b.line(0).kind, Kind::Stderr);
        b.appendOutput(Channel::Stdout, chunk); // the first 10 000 lines go
        QCOMPARE(b.firstLineNumber(), 10001);
        QCOMPARE(b.line(0).text, QStringLiteral("stdout line 10000"));
        QCOMPARE(b.line(b.lineCount() - 1).text, QStringLiteral("stdout line 19999"));
        b.clear();
        b.appendOutput(Channel::Stdout, "after clear\n");
        QCOMPARE(lines(b), QStringList{QStringLiteral("after clear")});
    }

    // With the allocator as the desktop sets it, a flood into a console opened after another's
    // reuses the memory that one gave back instead of touching fresh pages (a page fault each
    // 4 KiB: on a virtual machine the costliest part of a flood). Each chunk comes in an array of
    // its own, as messages come off the socket.
    void secondFloodReusesMemory()
    {
        QVERIFY(Sandbox::tuneAllocatorForStreams());
        QByteArray lines;
        for (int i = 0; lines.size() < 64 * 1024; ++i)
            lines += QByteArray(90, 'x') + ' ' + QByteArray::number(i).rightJustified(8, '0')
                     + '\n';
        qint64 faults[2] = {0, 0};
        qint64 held = 0; // bytes of text the buffer holds at the end of a flood
        for (qint64 &f : faults) {
            const qint64 before = pageFaults();
            {
                ConsoleBuffer b; // default caps: ~10 MiB of these lines
                for (qint64 n = 0; n < 24 * 1024 * 1024; n += lines.size()) {
                    const QByteArray chunk(lines.constData(), lines.size()); // a fresh array
                    b.appendOutput(Channel::Stdout, chunk);
                }
                QCOMPARE(b.lineCount(), ConsoleBuffer::DefaultMaxLines);
                held = b.charCount();
            }
            f = pageFaults() - before;
        }
        qInfo("page faults: first flood %lld, second %lld (%lld pages of text held)",
              static_cast<long long>(faults[0]), static_cast<long long>(faults[1]),
              static_cast<long long>(held / 4096));
        QVERIFY2(faults[1] < held / 4096 / 10, "the second flood touched fresh memory again");
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
