// SqlRows: a page of rows decoded by the reader made for it — every value as JSON reads it (the
// forms of docs/protocol.md 4.3.5 kept), typed where the client asks, and malformed text from a
// hostile peer refused with a clear error, never a crash or a partial page.
#include <client/databasetypes.h>
#include <client/sqlrows.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <cmath>

using namespace Sandbox;

class tst_SqlRows : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void readsAsJsonDoes_data();
    void readsAsJsonDoes();
    void typedValues();
    void textOfCells();
    void malformedPagesAreRefused_data();
    void malformedPagesAreRefused();
    void outOfRangeCellsAreEmpty();
    void queryPageTakesRowsText();
};

void tst_SqlRows::readsAsJsonDoes_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("an empty page") << QByteArray("[]");
    QTest::newRow("an empty row") << QByteArray("[[]]");
    QTest::newRow("scalars") << QByteArray(R"([[1,"a",true,false,null,-0.5,1e3]])");
    QTest::newRow("whitespace everywhere")
        << QByteArray(" [ [ 1 , \"a\" ] ,\n\t[ 2 , \"b\" ]\r\n ] ");
    QTest::newRow("NULL apart from an empty string") << QByteArray(R"([[null,""]])");
    QTest::newRow("integers beyond 2^53, bare and tagged")
        << QByteArray(R"([[9007199254740993,-9223372036854775808,{"$int":"9007199254740993"}]])");
    QTest::newRow("beyond 64 bits: a double") << QByteArray(R"([[18446744073709551616,-1.5e300]])");
    QTest::newRow("escapes") << QByteArray(
        R"([["a\"b\\c\/d\b\f\n\r\t","\u00e9\u4e2d","\ud83d\ude00","x\u0000y"]])");
    QTest::newRow("raw UTF-8") << QByteArray("[[\"é中😀\"]]");
    QTest::newRow("blobs and floats")
        << QByteArray(R"([[{"$bytes":"AAEC"},{"$float":"NaN"},{"$float":"-Infinity"}]])");
    QTest::newRow("nested values with brackets in strings")
        << QByteArray(R"([[[1,[2,"]"]],{"a":{"b":"}\""}},[]]])");
    QTest::newRow("rows of different widths") << QByteArray(R"([[1],[1,2,3],[]])");
}

void tst_SqlRows::readsAsJsonDoes()
{
    QFETCH(QByteArray, text);
    const Result<SqlRows> rows = SqlRows::fromJson(text);
    QVERIFY2(rows, qPrintable(rows ? QString() : rows.error().message));
    const QJsonArray expected = QJsonDocument::fromJson(text).array();
    QCOMPARE(rows->size(), expected.size());
    for (qsizetype r = 0; r < expected.size(); ++r) {
        const QJsonArray row = expected.at(r).toArray();
        QCOMPARE(rows->columnCount(r), row.size());
        QCOMPARE(rows->row(r), row);
        for (qsizetype c = 0; c < row.size(); ++c) {
            QCOMPARE(rows->value(r, c), row.at(c));
            QCOMPARE(rows->isNull(r, c), row.at(c).isNull());
            QCOMPARE(rows->text(r, c), SqlValue::toText(row.at(c)));
        }
    }
    // The text stays as it came: a page stored and read again is the same page.
    QCOMPARE(rows->toJson(), text);
    const Result<SqlRows> again = SqlRows::fromArray(expected);
    QVERIFY(again);
    QCOMPARE(again->size(), rows->size());
    for (qsizetype r = 0; r < rows->size(); ++r)
        QCOMPARE(again->row(r), rows->row(r));
}

void tst_SqlRows::typedValues()
{
    const Result<SqlRows> rows = SqlRows::fromJson(
        R"([[9007199254740993,{"$int":"-9007199254740993"},{"$int":"170141183460469231731687303715884105727"},)"
        R"({"$bytes":"AAEC"},{"$float":"NaN"},0.1,"x",null,true]])");
    QVERIFY(rows);
    QCOMPARE(rows->variant(0, 0).typeId(), QMetaType::LongLong);
    QCOMPARE(rows->variant(0, 0).toLongLong(), 9007199254740993LL);
    QCOMPARE(rows->variant(0, 1).toLongLong(), -9007199254740993LL);
    // Beyond 64 bits: the digits, exactly.
    QCOMPARE(rows->variant(0, 2).toString(),
             QStringLiteral("170141183460469231731687303715884105727"));
    QCOMPARE(rows->variant(0, 3).toByteArray(), QByteArray("\x00\x01\x02", 3));
    QVERIFY(std::isnan(rows->variant(0, 4).toDouble()));
    QCOMPARE(rows->variant(0, 5).toDouble(), 0.1);
    QCOMPARE(rows->variant(0, 6).toString(), QStringLiteral("x"));
    QVERIFY(!rows->variant(0, 7).isValid());
    QCOMPARE(rows->variant(0, 8).toBool(), true);
    // The smallest 64-bit integer is one too (it read as a double before).
    const Result<SqlRows> min = SqlRows::fromJson("[[-9223372036854775808]]");
    QVERIFY(min);
    QCOMPARE(min->text(0, 0), QStringLiteral("-9223372036854775808"));
    QCOMPARE(SqlValue::toText(min->value(0, 0)), QStringLiteral("-9223372036854775808"));
    QCOMPARE(SqlValue::toVariant(min->value(0, 0)).typeId(), QMetaType::LongLong);
}

void tst_SqlRows::textOfCells()
{
    const Result<SqlRows> rows = SqlRows::fromJson(
        R"([[42,{"$bytes":"AAEC"},"line\nbreak",[1,"a"],2.5,null]])");
    QVERIFY(rows);
    QCOMPARE(rows->text(0, 0), QStringLiteral("42"));
    QCOMPARE(rows->text(0, 1), QStringLiteral("\\x000102"));
    QCOMPARE(rows->text(0, 1, false), QStringLiteral("AAEC"));
    QCOMPARE(rows->text(0, 2), QStringLiteral("line\nbreak"));
    QCOMPARE(rows->text(0, 3), QStringLiteral("[1,\"a\"]"));
    QCOMPARE(rows->text(0, 4), QStringLiteral("2.5"));
    QCOMPARE(rows->text(0, 5), QString());
}

void tst_SqlRows::malformedPagesAreRefused_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("nothing") << QByteArray();
    QTest::newRow("not an array") << QByteArray(R"({"rows":[]})");
    QTest::newRow("a row that is a scalar") << QByteArray("[[1],2]");
    QTest::newRow("a row that is an object") << QByteArray(R"([{"a":1}])");
    QTest::newRow("truncated in a row") << QByteArray("[[1,2");
    QTest::newRow("truncated in a string") << QByteArray(R"([["abc)");
    QTest::newRow("truncated in an escape") << QByteArray(R"([["abc\)");
    QTest::newRow("truncated in a nested value") << QByteArray(R"([[[1,[2]]])");
    QTest::newRow("truncated after the rows") << QByteArray("[[1]");
    QTest::newRow("text after the rows") << QByteArray("[[1]] x");
    QTest::newRow("a missing comma") << QByteArray("[[1 2]]");
    QTest::newRow("a trailing comma") << QByteArray("[[1,]]");
    QTest::newRow("an unknown escape") << QByteArray(R"([["\q"]])");
    QTest::newRow("a short \\u escape") << QByteArray(R"([["\u12"]])");
    QTest::newRow("a lone low surrogate") << QByteArray(R"([["\udc00"]])");
    QTest::newRow("a high surrogate alone") << QByteArray(R"([["\ud83dx"]])");
    QTest::newRow("a raw control character") << QByteArray("[[\"a\x01\"]]");
    QTest::newRow("a bare word") << QByteArray("[[nul]]");
    QTest::newRow("a sign alone") << QByteArray("[[-]]");
    QTest::newRow("a plus sign") << QByteArray("[[+1]]");
    QTest::newRow("a broken exponent") << QByteArray("[[1e]]");
    QTest::newRow("nested too deeply")
        << QByteArray("[[" + QByteArray(5000, '[') + QByteArray(5000, ']') + "]]");
}

void tst_SqlRows::malformedPagesAreRefused()
{
    QFETCH(QByteArray, text);
    const Result<SqlRows> rows = SqlRows::fromJson(text);
    QVERIFY(!rows);
    QCOMPARE(rows.error().code, ErrorCode::InvalidParams);
    QVERIFY2(rows.error().message.startsWith(QStringLiteral("malformed rows: ")),
             qPrintable(rows.error().message));
}

void tst_SqlRows::outOfRangeCellsAreEmpty()
{
    const Result<SqlRows> rows = SqlRows::fromJson("[[1,2],[3]]");
    QVERIFY(rows);
    QCOMPARE(rows->size(), 2);
    QVERIFY(rows->value(1, 1).isUndefined());
    QVERIFY(rows->value(2, 0).isUndefined());
    QVERIFY(rows->value(-1, 0).isUndefined());
    QVERIFY(rows->isNull(0, 5));
    QCOMPARE(rows->columnCount(7), 0);
    QVERIFY(rows->row(9).isEmpty());
    QVERIFY(SqlRows().isEmpty());
}

void tst_SqlRows::queryPageTakesRowsText()
{
    // As RpcClient hands a page over for a call with CallOptions::rowsText: the rows' text apart.
    const QJsonObject members{{QStringLiteral("rowCount"), 2},
                              {QStringLiteral("cursor"), QStringLiteral("cur_1")}};
    const Result<QueryPage> page = QueryPage::fromJson(members, R"([[1,"a"],[2,null]])");
    QVERIFY(page);
    QCOMPARE(page->rows.size(), 2);
    QCOMPARE(page->rows.text(0, 1), QStringLiteral("a"));
    QVERIFY(page->rows.isNull(1, 1));
    QCOMPARE(page->cursor, QStringLiteral("cur_1"));
    QVERIFY(!page->done);
    // As a REST answer has them.
    const Result<QueryPage> tree = QueryPage::fromJson(
        QJsonObject{{QStringLiteral("rows"), QJsonArray{QJsonArray{1, QStringLiteral("a")}}}});
    QVERIFY(tree);
    QCOMPARE(tree->rows.value(0, 1), QJsonValue(QStringLiteral("a")));
    // Rows that are not arrays, either way: an error that says so.
    for (const Result<QueryPage> &refused :
         {QueryPage::fromJson(QJsonObject{}, "[[1],2]"),
          QueryPage::fromJson(QJsonObject{{QStringLiteral("rows"), QJsonArray{1, 2}}})}) {
        QVERIFY(!refused);
        QVERIFY2(refused.error().message.contains(QStringLiteral("rows")),
                 qPrintable(refused.error().message));
    }
}

QTEST_GUILESS_MAIN(tst_SqlRows)
#include "tst_sqlrows.moc"
