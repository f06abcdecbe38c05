// The console's ANSI parser: SGR colours and attributes, sequences split between chunks, and
// the escapes it must swallow rather than print.
#include <console/ansiparser.h>

#include <QTest>

using namespace Sandbox::Ui;

namespace {
// Renders tokens as "[fg/bg/flags]text" runs and \n \r \b markers, for compact expectations.
QString render(const QList<AnsiParser::Token> &tokens)
{
    QString out;
    for (const auto &t : tokens) {
        switch (t.type) {
        case AnsiParser::Token::Type::Text:
            if (t.format.isDefault())
                out += t.text.toString();
            else
                out += QStringLiteral("[%1/%2/%3]%4")
                           .arg(t.format.foreground, 0, 16)
                           .arg(t.format.background, 0, 16)
                           .arg(t.format.flags)
                           .arg(t.text.toString());
            break;
        case AnsiParser::Token::Type::LineFeed:
            out += QStringLiteral("\\n");
            break;
        case AnsiParser::Token::Type::CarriageReturn:
            out += QStringLiteral("\\r");
            break;
        case AnsiParser::Token::Type::Backspace:
            out += QStringLiteral("\\b");
            break;
        }
    }
    return out;
}

QString parse(const QStringList &chunks)
{
    AnsiParser parser;
    QString out;
    QList<QString> keep; // token views point into the chunks
    for (const QString &chunk : chunks) {
        keep.append(chunk);
        QList<AnsiParser::Token> tokens;
        parser.feed(keep.last(), tokens);
        out += render(tokens);
    }
    return out;
}
} // namespace

class TestAnsiParser final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parse_data()
    {
        QTest::addColumn<QStringList>("chunks");
        QTest::addColumn<QString>("expected");
        const QString e = QStringLiteral("\x1b");
        QTest::newRow("plain text")
            << QStringList{QStringLiteral("hello")} << QStringLiteral("hello");
        QTest::newRow("lines and carriage returns")
            << QStringList{QStringLiteral("a\r\nb\n")} << QStringLiteral("a\\r\\nb\\n");
        QTest::newRow("red then reset")
            << QStringList{e + QStringLiteral("[31mred") + e + QStringLiteral("[0m plain")}
            << QStringLiteral("[ffcd3131/0/0]red plain");
        QTest::newRow("bold bright green on blue") << QStringList{e + QStringLiteral("[1;92;44mX")}
                                                   << QStringLiteral("[ff23d18b/ff2472c8/1]X");
        QTest::newRow("256 colours")
            << QStringList{e + QStringLiteral("[38;5;196mX")} << QStringLiteral("[ffff0000/0/0]X");
        QTest::newRow("24-bit colour") << QStringList{e + QStringLiteral("[38;2;1;2;3mX")}
                                       << QStringLiteral("[ff010203/0/0]X");
        QTest::newRow("sequence split across chunks")
            << QStringList{QStringLiteral("a") + e, QStringLiteral("[3"), QStringLiteral("1mb")}
            << QStringLiteral("a[ffcd3131/0/0]b");
        QTest::newRow("erase line and cursor moves are dropped")
            << QStringList{QStringLiteral("a") + e + QStringLiteral("[2K") + e
                           + QStringLiteral("[10;5Hb")}
            << QStringLiteral("ab");
        QTest::newRow("OSC title with BEL is dropped")
            << QStringList{e + QStringLiteral("]0;title\x07") + QStringLiteral("x")}
            << QStringLiteral("x");
        QTest::newRow("OSC with ST is dropped")
            << QStringList{e + QStringLiteral("]8;;http://x") + e + QStringLiteral("\\link")}
            << QStringLiteral("link");
        QTest::newRow("private mode set is not SGR")
            << QStringList{e + QStringLiteral("[?25lx")} << QStringLiteral("x");
        QTest::newRow("reset of bold only")
            << QStringList{e + QStringLiteral("[1;31mA") + e + QStringLiteral("[22mB")}
            << QStringLiteral("[ffcd3131/0/1]A[ffcd3131/0/0]B");
        QTest::newRow("bell and other controls dropped, tab and backspace kept")
            << QStringList{QStringLiteral("a\x07\tb\bc\x01")} << QStringLiteral("a\tb\\bc");
        QTest::newRow("overlong CSI is abandoned")
            << QStringList{e + QStringLiteral("[") + QString(100, u'1') + QStringLiteral("mZ")}
            << QString(35, u'1') + QStringLiteral("mZ");
        QTest::newRow("inverse and its reset")
            << QStringList{e + QStringLiteral("[7mI") + e + QStringLiteral("[27mJ")}
            << QStringLiteral("[0/0/16]IJ");
    }

    void parse()
    {
        QFETCH(QStringList, chunks);
        QFETCH(QString, expected);
        QCOMPARE(::parse(chunks), expected);
    }

    void palette()
    {
        QCOMPARE(AnsiParser::paletteColor(16), 0xff000000u);
        QCOMPARE(AnsiParser::paletteColor(231), 0xffffffffu);
        QCOMPARE(AnsiParser::paletteColor(232), 0xff080808u);
        QCOMPARE(AnsiParser::paletteColor(256), 0u);
    }
};

QTEST_GUILESS_MAIN(TestAnsiParser)
#include "tst_ansiparser.moc"
