// PgValues::appendJson: a PostgreSQL row's values written straight to JSON text are the values
// toJson() gives, for every type and for text a hostile server could send instead of its own.
#include "databases/jsontext.h"
#include "databases/pgvalues.h"

#include <protocol/json.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace Sandbox::Engine;

class tst_PgValues : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void appendJsonIsToJson_data();
    void appendJsonIsToJson();
    void everyByteToEscapeIsEscapedWhereverItIs();
};

void tst_PgValues::appendJsonIsToJson_data()
{
    QTest::addColumn<uint>("oid");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QByteArray>("json"); // what the client reads

    QTest::newRow("int4") << 23u << QByteArray("-42") << QByteArray("-42");
    QTest::newRow("int8 within 2^53")
        << 20u << QByteArray("9007199254740991") << QByteArray("9007199254740991");
    QTest::newRow("int8 beyond 2^53")
        << 20u << QByteArray("9007199254740993") << QByteArray(R"({"$int":"9007199254740993"})");
    QTest::newRow("int8 minimum") << 20u << QByteArray("-9223372036854775808")
                                  << QByteArray(R"({"$int":"-9223372036854775808"})");
    QTest::newRow("int4 not a number") << 23u << QByteArray("12abc") << QByteArray("0");
    QTest::newRow("bool true") << 16u << QByteArray("t") << QByteArray("true");
    QTest::newRow("bool false") << 16u << QByteArray("f") << QByteArray("false");
    QTest::newRow("float8") << 701u << QByteArray("0.1") << QByteArray("0.1");
    QTest::newRow("float8 exponent") << 701u << QByteArray("1e+100") << QByteArray("1e+100");
    QTest::newRow("float4") << 700u << QByteArray("1.5") << QByteArray("1.5");
    QTest::newRow("float8 NaN") << 701u << QByteArray("NaN") << QByteArray(R"({"$float":"NaN"})");
    QTest::newRow("float8 -Infinity")
        << 701u << QByteArray("-Infinity") << QByteArray(R"({"$float":"-Infinity"})");
    QTest::newRow("float8 not JSON") << 701u << QByteArray("1..2") << QByteArray("0");
    QTest::newRow("text") << 25u << QByteArray("row 1") << QByteArray(R"("row 1")");
    QTest::newRow("text to escape")
        << 25u << QByteArray("a\"b\\c\nd\x01\x1f") << QByteArray(R"("a\"b\\c\nd\u0001\u001f")");
    QTest::newRow("text, UTF-8") << 1043u << QByteArray("h\xc3\xa9 \xf0\x9f\x98\x80")
                                 << QByteArray("\"h\xc3\xa9 \xf0\x9f\x98\x80\"");
    QTest::newRow("text, not UTF-8")
        << 25u << QByteArray("a\xff") << QByteArray("\"a\xef\xbf\xbd\"");
    QTest::newRow("numeric, exact") << 1700u << QByteArray("12.500") << QByteArray(R"("12.500")");
    QTest::newRow("unknown oid") << 99999u << QByteArray("x") << QByteArray(R"("x")");
    QTest::newRow("bytea") << 17u << QByteArray("\\x000102") << QByteArray(R"({"$bytes":"AAEC"})");
    QTest::newRow("timestamptz") << 1184u << QByteArray("2024-02-29 23:59:59.123456+00")
                                 << QByteArray(R"("2024-02-29T23:59:59.123456Z")");
    QTest::newRow("int4[]") << 1007u << QByteArray("{1,2,NULL}") << QByteArray("[1,2,null]");
    QTest::newRow("text[]") << 1009u << QByteArray(R"({"a b","c\"d"})")
                            << QByteArray(R"(["a b","c\"d"])");
}

void tst_PgValues::appendJsonIsToJson()
{
    QFETCH(uint, oid);
    QFETCH(QByteArray, text);
    QFETCH(QByteArray, json);
    QByteArray out = "[";
    PgValues::appendJson(out, oid, text.constData(), int(text.size()));
    out += ']';
    // Strict JSON, whatever the server sent.
    QVERIFY2(!Sandbox::Json::validate(out), out.constData());
    const QJsonValue got = QJsonDocument::fromJson(out).array().at(0);
    QCOMPARE(got, QJsonDocument::fromJson("[" + json + "]").array().at(0));
    QCOMPARE(got, PgValues::toJson(oid, text.constData(), int(text.size())));
}

// JsonText::appendString looks at eight bytes at once: every byte that must be escaped (and
// those next to them in value: 0x1f/0x20, '"' ± 1, '\\' ± 1, bytes from 0x80) is found at every
// place in a word and across words, alone and beside another.
void tst_PgValues::everyByteToEscapeIsEscapedWhereverItIs()
{
    QList<QByteArray> specials;
    for (int c = 0; c < 0x20; ++c)
        specials.append(QByteArray(1, char(c)));
    for (const char *s : {" ", "!", "\"", "#", "[", "\\", "]", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
                          "\xf0\x9f\x98\x80"})
        specials.append(QByteArray(s));
    for (const QByteArray &special : specials) {
        for (int length = 1; length <= 19; ++length) {
            for (int at = 0; at + special.size() <= length; ++at) {
                QByteArray text(length, 'a');
                text.replace(at, special.size(), special);
                if (at + 2 * special.size() + 3 <= length) // a second one, a word later
                    text.replace(length - special.size(), special.size(), special);
                std::string out = "[";
                Sandbox::JsonText::appendString(out, text.toStdString());
                out += ']';
                const QByteArray json = QByteArray::fromStdString(out);
                QVERIFY2(!Sandbox::Json::validate(json), json.toPercentEncoding().constData());
                QCOMPARE(QJsonDocument::fromJson(json).array().at(0).toString(),
                         QString::fromUtf8(text));
            }
        }
    }
}

QTEST_GUILESS_MAIN(tst_PgValues)
#include "tst_pgvalues.moc"
