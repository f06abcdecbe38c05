// The terminal's emulation (libvterm, xterm-256color) as a program sees it: what it prints lands
// where it asked, with its colours; lines scrolled off the top are kept (bounded); keys, pastes
// and the mouse reach the program encoded as the modes it set ask.
#include <terminal/terminalscreen.h>

#include <QSignalSpy>
#include <QTest>

using namespace Sandbox::Ui;

class tst_TerminalScreen final : public QObject
{
    Q_OBJECT

private:
    // Same scrollback, screen and cursor, cell by cell: text, colours, attributes and width. With
    // `asSeen`, a blank's foreground, bold and italic (nothing shows them) may differ.
    static void compareScreens(const TerminalScreen &a, const TerminalScreen &b, bool asSeen = false)
    {
        QCOMPARE(a.scrollbackLines(), b.scrollbackLines());
        QCOMPARE(a.cursor(), b.cursor());
        QCOMPARE(a.screenText(), b.screenText());
        for (int row = -a.scrollbackLines(); row < a.rows(); ++row) {
            const TerminalScreen::Line x = a.line(row);
            const TerminalScreen::Line y = b.line(row);
            QVERIFY2(x.size() == y.size(),
                     qPrintable(QStringLiteral("row %1: %2 / %3 cells: %4 / %5")
                                    .arg(row)
                                    .arg(x.size())
                                    .arg(y.size())
                                    .arg(a.lineText(row), b.lineText(row))));
            for (int col = 0; col < x.size(); ++col) {
                const auto &p = x.at(col);
                const auto &q = y.at(col);
                const QString where = QStringLiteral("row %1 col %2").arg(row).arg(col);
                const bool unseen = asSeen && p.text == QLatin1String(" ");
                QVERIFY2(p.text == q.text && (unseen || p.fg == q.fg) && p.bg == q.bg
                             && (unseen || (p.bold == q.bold && p.italic == q.italic))
                             && p.underline == q.underline && p.strike == q.strike
                             && p.reverse == q.reverse && p.width == q.width,
                         qPrintable(where + u": " + p.text + u" / " + q.text + u' ' + p.fg.name()
                                    + u'/' + q.fg.name() + u' ' + p.bg.name() + u'/' + q.bg.name()
                                    + u' ' + QString::number(p.width) + u'/'
                                    + QString::number(q.width)));
            }
        }
    }

private Q_SLOTS:
    void printsWhereTheProgramAsks()
    {
        TerminalScreen s(20, 5);
        s.feed("hello\r\nworld\x1b[3;5Hthere\x1b[1;1Hj");
        QCOMPARE(s.lineText(0), QStringLiteral("jello"));
        QCOMPARE(s.lineText(1), QStringLiteral("world"));
        QCOMPARE(s.lineText(2), QStringLiteral("    there"));
        QCOMPARE(s.cursor(), QPoint(1, 0));
    }

    void coloursAndAttributes()
    {
        TerminalScreen s(20, 3);
        s.setDefaultColors(Qt::black, Qt::white);
        s.feed("\x1b[1;31mR\x1b[0m\x1b[38;5;21mB\x1b[38;2;1;2;3mT\x1b[7mV\x1b[0mn");
        const auto line = s.line(0);
        QVERIFY(line.at(0).bold);
        QCOMPARE(line.at(0).fg.red() > 100 && line.at(0).fg.green() < 100, true);
        QCOMPARE(line.at(1).fg, QColor(0, 0, 0xff)); // xterm-256 colour 21
        QCOMPARE(line.at(2).fg, QColor(1, 2, 3));
        QVERIFY(line.at(3).reverse);
        QCOMPARE(line.at(4).fg, QColor(Qt::black));
        QCOMPARE(line.at(4).bg, QColor(Qt::white));
    }

    void wideCharactersTakeTwoCells()
    {
        TerminalScreen s(10, 2);
        s.feed("a\xe4\xb8\xad"
               "b"); // a 中 b
        const auto line = s.line(0);
        QCOMPARE(line.at(1).text, QStringLiteral("\u4e2d"));
        QCOMPARE(line.at(1).width, 2);
        QCOMPARE(line.at(3).text, QStringLiteral("b"));
        QCOMPARE(s.lineText(0), QStringLiteral("a\u4e2db"));
    }

    void scrolledLinesAreKeptBounded()
    {
        TerminalScreen s(10, 3);
        s.setScrollbackLimit(5);
        for (int i = 0; i < 10; ++i)
            s.feed(QByteArray(QByteArray("line") + QByteArray::number(i) + "\r\n"));
        QCOMPARE(s.scrollbackLines(), 5);
        QCOMPARE(s.lineText(-1), QStringLiteral("line7"));
        QCOMPARE(s.lineText(-5), QStringLiteral("line3"));
        QCOMPARE(s.lineText(0), QStringLiteral("line8"));
        QCOMPARE(s.text(QPoint(0, -2), QPoint(9, 0)), QStringLiteral("line6\nline7\nline8"));
    }

    void alternateScreenKeepsTheMainOne()
    {
        TerminalScreen s(10, 3);
        s.feed("shell$ ");
        s.feed("\x1b[?1049h\x1b[2J\x1b[Hfull");
        QVERIFY(s.altScreen());
        QCOMPARE(s.lineText(0), QStringLiteral("full"));
        s.feed("\x1b[?1049l");
        QVERIFY(!s.altScreen());
        QCOMPARE(s.lineText(0), QStringLiteral("shell$"));
    }

    // A program's REP (repeat the last character) before anything was printed does not hang
    // the terminal (libvterm 0.1 loops for ever on it): it repeats blanks.
    void repeatBeforeAnyCharacterIsHarmless()
    {
        TerminalScreen s(20, 3);
        s.feed("\x1b[5bok");
        QCOMPARE(s.lineText(0), QStringLiteral("     ok"));
        s.reset();
        s.feed("\x1b[2bok");
        QCOMPARE(s.lineText(0), QStringLiteral("  ok"));
    }

    void keysFollowTheCursorKeyMode()
    {
        TerminalScreen s(10, 3);
        QSignalSpy input(&s, &TerminalScreen::input);
        s.typeKey(TerminalScreen::Key::Up);
        s.feed("\x1b[?1h"); // application cursor keys (vim, less)
        s.typeKey(TerminalScreen::Key::Up);
        s.typeText(QStringLiteral("c"), TerminalScreen::Control);
        s.typeText(QStringLiteral("x"), TerminalScreen::Alt);
        s.typeKey(TerminalScreen::Key::Enter);
        s.typeKey(TerminalScreen::Key::Tab);
        QByteArray all;
        for (const auto &args : input)
            all += args.at(0).toByteArray();
        QCOMPARE(all, QByteArray("\x1b[A\x1bOA\x03\x1bx\r\t"));
    }

    void pasteIsBracketedWhenAsked()
    {
        TerminalScreen s(10, 3);
        QSignalSpy input(&s, &TerminalScreen::input);
        s.paste(QStringLiteral("a\nb"));
        s.feed("\x1b[?2004h");
        s.paste(QStringLiteral("x\x1b[201~y\n"));
        QByteArray all;
        for (const auto &args : input)
            all += args.at(0).toByteArray();
        // A paste cannot close the bracket itself (and run what follows as typed).
        QCOMPARE(all, QByteArray("a\rb\x1b[200~xy\r\x1b[201~"));
    }

    void mouseIsReportedWhenAsked()
    {
        TerminalScreen s(80, 24);
        QSignalSpy input(&s, &TerminalScreen::input);
        QCOMPARE(s.mouseMode(), TerminalScreen::MouseMode::None); // the view selects text then
        s.feed("\x1b[?1000h\x1b[?1006h");
        QCOMPARE(s.mouseMode(), TerminalScreen::MouseMode::Click);
        s.mouseMove(2, 4);
        s.mouseButton(1, true);
        s.mouseButton(1, false);
        QByteArray all;
        for (const auto &args : input)
            all += args.at(0).toByteArray();
        QCOMPARE(all, QByteArray("\x1b[<0;5;3M\x1b[<0;5;3m"));
    }

    void answersTheProgramsQueries()
    {
        TerminalScreen s(80, 24);
        QSignalSpy input(&s, &TerminalScreen::input);
        s.feed("ab\x1b[6n"); // where is the cursor?
        QCOMPARE(input.count(), 1);
        QCOMPARE(input.at(0).at(0).toByteArray(), QByteArray("\x1b[1;3R"));
    }

    void resetForgetsEverything()
    {
        TerminalScreen s(10, 2);
        s.feed("a\r\nb\r\nc\r\n\x1b[?1000h\x1b]0;title\x07");
        QCOMPARE(s.title(), QStringLiteral("title"));
        QVERIFY(s.scrollbackLines() > 0);
        s.reset();
        QCOMPARE(s.scrollbackLines(), 0);
        QCOMPARE(s.screenText(), QStringLiteral("\n"));
        QCOMPARE(s.mouseMode(), TerminalScreen::MouseMode::None);
    }

    void resizeKeepsTheText()
    {
        TerminalScreen s(10, 3);
        s.feed("abc");
        s.resize(40, 10);
        QCOMPARE(s.cols(), 40);
        QCOMPARE(s.rows(), 10);
        QCOMPARE(s.lineText(0), QStringLiteral("abc"));
    }

    // A long line wrapped at 80 columns is wrapped again at 40 and at 120; the cursor stays
    // after the prompt; a line that ended before the edge stays a line of its own. (A line that
    // ends exactly at the edge is taken as wrapped: libvterm 0.1 does not say which rows did.)
    void resizeReflowsWrappedLines()
    {
        TerminalScreen s(80, 24);
        s.feed(QByteArray(QByteArray(190, 'x') + "\r\nshort\r\n$ "));
        QCOMPARE(s.lineText(0), QString(80, u'x'));
        QCOMPARE(s.lineText(2), QString(30, u'x'));
        s.resize(40, 24);
        for (int r = 0; r < 4; ++r)
            QCOMPARE(s.lineText(r), QString(40, u'x'));
        QCOMPARE(s.lineText(4), QString(30, u'x'));
        QCOMPARE(s.lineText(5), QStringLiteral("short"));
        QCOMPARE(s.lineText(6), QStringLiteral("$"));
        QCOMPARE(s.cursor(), QPoint(2, 6));
        s.resize(120, 24);
        QCOMPARE(s.lineText(0), QString(120, u'x'));
        QCOMPARE(s.lineText(1), QString(70, u'x'));
        QCOMPARE(s.lineText(2), QStringLiteral("short"));
        QCOMPARE(s.lineText(3), QStringLiteral("$"));
        QCOMPARE(s.cursor(), QPoint(2, 3));
        // What the program writes next goes where the cursor is.
        s.feed("ls");
        QCOMPARE(s.lineText(3), QStringLiteral("$ ls"));
    }

    // Rows that no longer fit go to the scrollback, and come back from it when they fit again;
    // colours stay with their characters.
    void reflowMovesRowsThroughTheScrollback()
    {
        TerminalScreen s(20, 3);
        s.feed(QByteArray("\x1b[31m" + QByteArray(50, 'a') + "\x1b[0m\r\nb"));
        QCOMPARE(s.scrollbackLines(), 1);
        s.resize(10, 3);
        QCOMPARE(s.scrollbackLines(), 3);
        QCOMPARE(s.lineText(-3), QString(10, u'a'));
        QCOMPARE(s.lineText(0), QString(10, u'a'));
        QCOMPARE(s.lineText(1), QString(10, u'a'));
        QCOMPARE(s.lineText(2), QStringLiteral("b"));
        QCOMPARE(s.cursor(), QPoint(1, 2));
        QCOMPARE(s.line(0).at(0).fg, s.line(-1).at(0).fg);
        QVERIFY(s.line(0).at(0).fg != s.defaultForeground());
        QCOMPARE(s.line(2).at(0).fg, s.defaultForeground());
        s.resize(25, 3);
        QCOMPARE(s.scrollbackLines(), 0);
        QCOMPARE(s.lineText(0), QString(25, u'a'));
        QCOMPARE(s.lineText(1), QString(25, u'a'));
        QCOMPARE(s.lineText(2), QStringLiteral("b"));
    }

    // A long run of plain lines in one feed is put where scrolling would leave it instead of
    // being scrolled through line by line: the screen, the scrollback (text, colours,
    // attributes) and the cursor are the same as when the output comes a byte at a time.
    void bigFeedIsTheSameAsByteByByte_data()
    {
        QTest::addColumn<QByteArray>("before");
        QTest::addColumn<int>("scrollback");
        QByteArray lines;
        for (int i = 0; i < 400; ++i)
            lines += QByteArray(i % 53, char('a' + i % 26)) + QByteArray::number(i) + "\r\n";
        QTest::newRow("lines of every length, some wrapped") << QByteArray() << 1000;
        QTest::newRow("in a pen") << QByteArray("\x1b[1;4;31;44m") << 1000;
        QTest::newRow("after a screen of text") << QByteArray("$ ls\r\n" + lines.left(900)) << 1000;
        QTest::newRow("after a clear") << QByteArray("x\r\ny\x1b[H\x1b[2Jtop\r\n") << 1000;
        QTest::newRow("bottom row written before") << QByteArray("\x1b[8;1Hleft\x1b[7;1H") << 1000;
        QTest::newRow("a scrollback shorter than the run") << QByteArray() << 50;
        QTest::newRow("no scrollback") << QByteArray() << 0;
        QTest::newRow("a scrolling region") << QByteArray("\x1b[2;5r") << 1000;
        QTest::newRow("no autowrap") << QByteArray("\x1b[?7l") << 1000;
        QTest::newRow("insert and newline modes") << QByteArray("\x1b[4h\x1b[20h") << 1000;
        QTest::newRow("line drawing characters") << QByteArray("\x1b(0") << 1000;
        QTest::newRow("line drawing and back") << QByteArray("\x1b(0qq\x1b(B") << 1000;
        QTest::newRow("shifted out") << QByteArray("\x1b)0\x0e") << 1000;
        QTest::newRow("a sequence cut at the line feed") << QByteArray("\x1b[?25") << 1000;
        QTest::newRow("a title under way") << QByteArray("\x1b]0;ti") << 1000;
        QTest::newRow("the alternate screen") << QByteArray("\x1b[?1049h") << 1000;
        QTest::newRow("a wide character before") << QByteArray("\xe4\xb8\xad") << 1000;
    }

    void bigFeedIsTheSameAsByteByByte()
    {
        QFETCH(QByteArray, before);
        QFETCH(int, scrollback);
        QByteArray output = before + "\r\n";
        for (int i = 0; i < 400; ++i)
            output += QByteArray(i % 53, char('a' + i % 26)) + QByteArray::number(i) + "\r\n";
        output += "\x1b[0mnot plain: \xc3\xa9\r\n";
        for (int i = 0; i < 100; ++i)
            output += "more " + QByteArray::number(i) + "\r\n";
        output += "$ ";

        TerminalScreen whole(20, 8);
        TerminalScreen bytewise(20, 8);
        for (TerminalScreen *s : {&whole, &bytewise})
            s->setScrollbackLimit(scrollback);
        QSignalSpy scrolled(&whole, &TerminalScreen::scrollbackChanged);
        whole.feed(output);
        for (const char c : std::as_const(output))
            bytewise.feed(QByteArrayView(&c, 1));

        QCOMPARE(whole.scrollbackLines(), qMin(scrollback, bytewise.scrollbackLines()));
        compareScreens(whole, bytewise);
        // The view hears of the scrollback once for the whole feed.
        QVERIFY(scrolled.count() <= 1);
    }

    // After a resize the terminal shows what it would have shown had the output come at the new
    // width: long lines wrapped again with their colours, wide characters never cut, the cursor
    // after the prompt; done on the stored scrollback, as fast after a flood as before it.
    void resizeIsTheSameAsOutputAtTheNewWidth_data()
    {
        QTest::addColumn<QSize>("from");
        QTest::addColumn<QSize>("to");
        QTest::newRow("narrower") << QSize(80, 8) << QSize(40, 8);
        QTest::newRow("wider") << QSize(40, 8) << QSize(80, 8);
        QTest::newRow("wider, uneven") << QSize(80, 8) << QSize(123, 8);
        QTest::newRow("much narrower") << QSize(123, 8) << QSize(37, 8);
        QTest::newRow("three columns") << QSize(50, 8) << QSize(3, 8);
        QTest::newRow("narrower and taller") << QSize(80, 8) << QSize(40, 20);
        QTest::newRow("wider and shorter") << QSize(37, 20) << QSize(80, 5);
    }

    void resizeIsTheSameAsOutputAtTheNewWidth()
    {
        QFETCH(QSize, from);
        QFETCH(QSize, to);
        // Lines of many lengths, none ending exactly at the first width (such a line cannot be
        // told from a wrapped one), a colour changing in the middle of each, wide characters.
        // Foreground colours only: a background set where a line wraps colours the rest of the
        // new row (the terminal erases with it), which depends on where it wrapped.
        QByteArray output;
        for (int i = 0; i < 300; ++i) {
            QByteArray text = QByteArray::number(i) + ':'
                              + QByteArray((i * 37) % 290, char('a' + i % 26));
            if (text.size() % from.width() == 0)
                text += '.';
            text.insert(text.size() / 2,
                        "\x1b[" + QByteArray::number(31 + i % 6) + (i % 4 ? "m" : ";1m"));
            output += text + "\x1b[0m\r\n";
            if (i % 50 == 0)
                output += "\xe6\xbc\xa2\xe5\xad\x97 w\x1b[35mide\x1b[0m\r\n";
        }
        output += "$ ";
        TerminalScreen resized(from.width(), from.height());
        TerminalScreen fed(to.width(), to.height());
        for (TerminalScreen *s : {&resized, &fed}) {
            s->setScrollbackLimit(100000);
            s->feed(output);
        }
        resized.resize(to.width(), to.height());
        compareScreens(resized, fed, true);
        if (QTest::currentTestFailed())
            return;
        // What the program writes next goes where the cursor is.
        resized.feed("ls");
        fed.feed("ls");
        compareScreens(resized, fed, true);
    }

    // The scrollback stays within its limit when narrowing makes more rows of it.
    void resizeKeepsTheScrollbackBounded()
    {
        TerminalScreen s(80, 5);
        s.setScrollbackLimit(100);
        for (int i = 0; i < 300; ++i)
            s.feed(QByteArray(QByteArray::number(i) + ':' + QByteArray(70, 'x') + "\r\n"));
        QCOMPARE(s.scrollbackLines(), 100);
        s.resize(20, 5);
        QCOMPARE(s.scrollbackLines(), 100);
        // "299:" and 70 x on four rows of 20, the cursor on the row below.
        QVERIFY(s.lineText(0).startsWith(QLatin1String("299:")));
        QCOMPARE(s.lineText(3), QString(14, u'x'));
        QCOMPARE(s.lineText(4), QString());
        QVERIFY(s.lineText(-4).startsWith(QLatin1String("298:")));
    }

    // The alternate screen (vim, htop) is not reflowed: its program redraws at the new size.
    void alternateScreenIsNotReflowed()
    {
        TerminalScreen s(20, 3);
        s.feed(QByteArray("\x1b[?1049h" + QByteArray(30, 'z')));
        s.resize(10, 3);
        QCOMPARE(s.lineText(0), QString(10, u'z')); // cut, not wrapped again
        QCOMPARE(s.lineText(1), QString(10, u'z'));
        QCOMPARE(s.lineText(2), QString());
    }
};

QTEST_GUILESS_MAIN(tst_TerminalScreen)
#include "tst_terminalscreen.moc"
