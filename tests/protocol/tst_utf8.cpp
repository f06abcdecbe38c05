#include "protocol/utf8.h"

#include <QTest>

using namespace Sandbox;

class tst_Utf8 : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void completePrefix_data();
    void completePrefix();
    void validity_data();
    void validity();
    void agreesWithQtOnEveryTwoByteSequence();
};

void tst_Utf8::completePrefix_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("expected");
    QTest::newRow("ascii") << QByteArray("abc") << 3;
    QTest::newRow("complete euro sign") << QByteArray("a\xe2\x82\xac") << 4;
    QTest::newRow("euro sign missing its last byte") << QByteArray("a\xe2\x82") << 1;
    QTest::newRow("euro sign missing two bytes") << QByteArray("a\xe2") << 1;
    QTest::newRow("emoji missing one byte") << QByteArray("\xf0\x9f\x98") << 0;
    QTest::newRow("stray continuation byte is not held back") << QByteArray("a\x80") << 2;
    QTest::newRow("invalid lead byte is not held back") << QByteArray("a\xff") << 2;
    QTest::newRow("empty") << QByteArray() << 0;
}

void tst_Utf8::completePrefix()
{
    QFETCH(QByteArray, bytes);
    QFETCH(int, expected);
    QCOMPARE(Utf8::completePrefixLength(bytes), qsizetype(expected));
}

void tst_Utf8::validity_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<bool>("valid");
    QTest::newRow("ascii, longer than a word") << QByteArray("hello, world, hello") << true;
    QTest::newRow("mixed") << QByteArray("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80!")
                           << true;
    QTest::newRow("overlong slash") << QByteArray("\xc0\xaf") << false;
    QTest::newRow("overlong three-byte") << QByteArray("\xe0\x80\xaf") << false;
    QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << false;
    QTest::newRow("above U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << false;
    QTest::newRow("truncated at the end") << QByteArray("abc\xe2\x82") << false;
    QTest::newRow("binary") << QByteArray("\x00\xff\xfe", 3) << false;
}

void tst_Utf8::validity()
{
    QFETCH(QByteArray, bytes);
    QFETCH(bool, valid);
    QCOMPARE(Utf8::isValid(bytes), valid);
}

void tst_Utf8::agreesWithQtOnEveryTwoByteSequence()
{
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) {
            const char raw[2] = {char(a), char(b)};
            const QByteArray bytes(raw, 2);
            const bool qtValid = QString::fromUtf8(bytes).toUtf8() == bytes;
            QVERIFY2(Utf8::isValid(bytes) == qtValid, bytes.toHex().constData());
        }
    }
}

QTEST_APPLESS_MAIN(tst_Utf8)
#include "tst_utf8.moc"
