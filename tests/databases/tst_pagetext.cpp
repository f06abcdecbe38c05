// PageText: a page of rows as sandbox-dbhost writes it, taken out of its answer line (where the
// line's one check, Json::validate, found it) and passed to the client as it is — only when it is
// an array of arrays, with every other member kept.
#include "databases/pagetext.h"
#include "protocol/json.h"

#include <QJsonDocument>
#include <QTest>

using namespace Sandbox::Engine;

class tst_PageText : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void split_data();
    void split();
    void rowsHeadThenRowsIsTheSameObject();
    void objectRows_data();
    void objectRows();
    void aMalformedPageIsRefusedWhole_data();
    void aMalformedPageIsRefusedWhole();
};

void tst_PageText::split_data()
{
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<bool>("splits");
    QTest::addColumn<int>("rowCount");
    QTest::addColumn<QByteArray>("members");

    QTest::newRow("a page") << QByteArray(R"({"cursor":"c1","rows":[[1,"a"],[2,"b"]],"id":3})")
                            << true << 2 << QByteArray(R"({"cursor":"c1","id":3})");
    QTest::newRow("rows last, spaces")
        << QByteArray(R"( { "done" : false , "rows" : [ [1] , [2] , [3] ] } )") << true << 3
        << QByteArray(R"({"done" : false})");
    QTest::newRow("no rows") << QByteArray(R"({"rows":[],"done":true})") << true << 0
                             << QByteArray(R"({"done":true})");
    QTest::newRow("brackets and commas in strings")
        << QByteArray(R"({"rows":[["],[,\"]"],[{"$int":"9007199254740993"},null]]})") << true << 2
        << QByteArray("{}");
    QTest::newRow("nested values")
        << QByteArray(R"({"rows":[[[1,[2]],{"a":[3]}]]})") << true << 1 << QByteArray("{}");
    QTest::newRow("a row that is not an array")
        << QByteArray(R"({"rows":[[1],2]})") << false << 0 << QByteArray();
    QTest::newRow("a row that is an object")
        << QByteArray(R"({"rows":[{"a":1}]})") << false << 0 << QByteArray();
    QTest::newRow("rows that are not an array")
        << QByteArray(R"({"rows":"[[1]]"})") << false << 0 << QByteArray();
    QTest::newRow("no rows member")
        << QByteArray(R"({"results":[[1]]})") << false << 0 << QByteArray();
    QTest::newRow("rows repeated: the first, the others dropped")
        << QByteArray(R"({"rows":[[1]],"done":true,"rows":[[2],[3]]})") << true << 1
        << QByteArray(R"({"done":true})");
    QTest::newRow("not an object") << QByteArray(R"([[1]])") << false << 0 << QByteArray();
}

void tst_PageText::split()
{
    QFETCH(QByteArray, line);
    QFETCH(bool, splits);
    QFETCH(int, rowCount);
    QFETCH(QByteArray, members);
    Sandbox::Json::Member rows;
    QVERIFY(!Sandbox::Json::validate(line, {"rows"}, &rows));
    const Page page = PageText::fromLine(line, rows);
    QCOMPARE(page.hasRowsText(), splits);
    const QJsonDocument whole = QJsonDocument::fromJson(line);
    if (!splits) {
        // Not a page of arrays: every member as a tree, "rows" too.
        QCOMPARE(QJsonValue(page.members),
                 whole.isObject() ? QJsonValue(whole.object()) : QJsonValue(QJsonObject()));
        return;
    }
    QCOMPARE(page.rowsTextCount, rowCount);
    QCOMPARE(page.members, QJsonDocument::fromJson(members).object());
    // The rows are the line's own text, and exactly the (first) array that the line holds.
    const QByteArray text = page.rowsText;
    QVERIFY(line.contains(text));
    const QJsonArray parsed = QJsonDocument::fromJson(text).array();
    QCOMPARE(parsed.size(), rowCount);
    QCOMPARE(PageText::rowsOf(page), parsed);
}

void tst_PageText::rowsHeadThenRowsIsTheSameObject()
{
    const QByteArray rows = R"([[1,"x"],[null,{"$bytes":"AAE="}]])";
    const QJsonObject members{{QStringLiteral("rowCount"), 2}, {QStringLiteral("done"), false}};
    const QJsonObject page
        = QJsonDocument::fromJson(PageText::rowsHead(members) + rows + '}').object();
    QCOMPARE(page.value(u"rowCount").toInt(), 2);
    QCOMPARE(page.value(u"done").toBool(true), false);
    QCOMPARE(page.value(u"rows").toArray(), QJsonDocument::fromJson(rows).array());
    const QJsonObject empty = QJsonDocument::fromJson(PageText::rowsHead({}) + "[]" + '}').object();
    QCOMPARE(empty.keys(), QStringList{QStringLiteral("rows")});
    QVERIFY(empty.value(u"rows").isArray());
}

void tst_PageText::objectRows_data()
{
    QTest::addColumn<QByteArray>("rows");    // as a backend or a host wrote them
    QTest::addColumn<QStringList>("names");  // the fields' names
    QTest::addColumn<QByteArray>("objects"); // the text the client gets, exactly

    const QStringList ab{QStringLiteral("a"), QStringLiteral("b")};
    QTest::newRow("two rows") << QByteArray(R"([[1,"x"],[null,true]])") << ab
                              << QByteArray(R"([{"a":1,"b":"x"},{"a":null,"b":true}])");
    QTest::newRow("no rows") << QByteArray("[]") << ab << QByteArray("[]");
    QTest::newRow("an empty row") << QByteArray("[[]]") << ab << QByteArray("[{}]");
    QTest::newRow("strings that look like the rows' syntax")
        << QByteArray(R"([["],[,\"]\\","\\"],["\\\\\"",""]])") << ab
        << QByteArray(R"([{"a":"],[,\"]\\","b":"\\"},{"a":"\\\\\"","b":""}])");
    QTest::newRow("nested values")
        << QByteArray(R"([[[1,[2,"]"]],{"k":[3],"l":{"m":"}"}}]])") << ab
        << QByteArray(R"([{"a":[1,[2,"]"]],"b":{"k":[3],"l":{"m":"}"}}}])");
    QTest::newRow("typed values")
        << QByteArray(R"([[{"$int":"9007199254740993"},{"$bytes":"AAE="}]])") << ab
        << QByteArray(R"([{"a":{"$int":"9007199254740993"},"b":{"$bytes":"AAE="}}])");
    QTest::newRow("numbers") << QByteArray("[[-0.5e+10,12],[0,1E3]]") << ab
                             << QByteArray(R"([{"a":-0.5e+10,"b":12},{"a":0,"b":1E3}])");
    QTest::newRow("whitespace a host may write")
        << QByteArray(" [ [ 1 , \"x\" ] ,\n\t[ 2\r, [ 3 , 4 ] ] ] ") << ab
        << QByteArray(R"([{"a":1,"b":"x"},{"a":2,"b":[ 3 , 4 ]}])");
    QTest::newRow("a repeated name keeps its first place and its last column")
        << QByteArray(R"([[1,2,3]])")
        << QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("a")}
        << QByteArray(R"([{"a":3,"b":2}])");
    QTest::newRow("a repeated name in a row shorter than the fields")
        << QByteArray(R"([[1,2]])")
        << QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("a")}
        << QByteArray(R"([{"a":1,"b":2}])");
    QTest::newRow("values past the fields are left out")
        << QByteArray(R"([[1,2,3]])") << ab << QByteArray(R"([{"a":1,"b":2}])");
    QTest::newRow("no fields") << QByteArray(R"([[1]])") << QStringList() << QByteArray("[{}]");
    QTest::newRow("names that need escapes, and not ASCII")
        << QByteArray(R"([[1,2,3]])")
        << QStringList{QStringLiteral("q\"uote"), QStringLiteral("back\\slash\n"),
                       QStringLiteral("h\u00e9 \U0001F600")}
        << QByteArray(
               "[{\"q\\\"uote\":1,\"back\\\\slash\\n\":2,\"h\xc3\xa9 \xf0\x9f\x98\x80\":3}]");
    QTest::newRow("an empty name")
        << QByteArray(R"([[1]])") << QStringList{QString()} << QByteArray(R"([{"":1}])");
}

// Object rows (the default rowMode) are written from the rows' text as arrays, one pass, not
// parsed: the same objects as the rows parsed and keyed by name, keys in the fields' order.
void tst_PageText::objectRows()
{
    QFETCH(QByteArray, rows);
    QFETCH(QStringList, names);
    QFETCH(QByteArray, objects);
    QVERIFY2(!Sandbox::Json::validate(rows), "the case's rows are valid JSON");
    QJsonArray fields;
    for (const QString &name : names)
        fields.append(QJsonObject{{QStringLiteral("name"), name}});
    const qsizetype count = QJsonDocument::fromJson(rows).array().size();
    const QByteArray got = PageText::objectRows(rows, count, fields, 1 << 20).value_or("none");
    QCOMPARE(got, objects);
    QVERIFY2(!Sandbox::Json::validate(got), got.constData());
    // The count is a hint for the room made ahead: a wrong one changes nothing.
    QCOMPARE(PageText::objectRows(rows, 0, fields, 1 << 20).value_or("none"), objects);
    QCOMPARE(PageText::objectRows(rows, count + 1000, fields, 1 << 20).value_or("none"), objects);
    // Within a bound: none when the objects could take more (counted ahead, or found on the way
    // when the count said fewer rows), whatever the rows' own text.
    if (count > 0 && !names.isEmpty()) {
        const qsizetype most = rows.size() + count * (objects.size() / count + 8);
        QVERIFY(PageText::objectRows(rows, count, fields, most).has_value());
        QVERIFY(!PageText::objectRows(rows, count, fields, objects.size() / 2).has_value());
        QVERIFY(!PageText::objectRows(rows, 0, fields, objects.size() / 2).has_value());
    }
    // What the engine answered before, from the parsed rows (keys in a QJsonObject's order).
    QJsonArray parsed;
    for (const QJsonValue &row : QJsonDocument::fromJson(rows).array()) {
        QJsonObject o;
        for (qsizetype i = 0; i < row.toArray().size() && i < names.size(); ++i)
            o.insert(names[i], row.toArray().at(i));
        parsed.append(o);
    }
    QCOMPARE(QJsonDocument::fromJson(got).array(), parsed);
}

void tst_PageText::aMalformedPageIsRefusedWhole_data()
{
    QTest::addColumn<QByteArray>("line");
    QTest::newRow("invalid UTF-8 in a row") << QByteArray("{\"rows\":[[\"a\xff\"]],\"id\":1}");
    QTest::newRow("an encoded surrogate") << QByteArray("{\"rows\":[[\"\xed\xa0\x80\"]],\"id\":1}");
    QTest::newRow("a raw control character") << QByteArray("{\"rows\":[[\"a\nb\"]],\"id\":1}");
    QTest::newRow("a truncated page") << QByteArray(R"({"id":1,"rows":[[1],[2)");
    QTest::newRow("text after the rows' end") << QByteArray(R"({"rows":[[1]]]],"id":1})");
    QTest::newRow("a lenient number") << QByteArray(R"({"rows":[[-2.]],"id":1})");
}

// What a database host (hostile: it is the sandbox's) sends is one line that the engine checks
// before anything of it is used: a page that is not strict JSON gives no rows, no members, not
// even the id of the call it claims to answer (the engine then ends that connection and fails its
// calls, never with part of a page: tst_databases aHostThatAnswersGarbageFailsItsCallsAtOnce).
void tst_PageText::aMalformedPageIsRefusedWhole()
{
    QFETCH(QByteArray, line);
    Sandbox::Json::Member rows;
    QVERIFY(Sandbox::Json::validate(line, {"rows"}, &rows));
    QVERIFY(!rows.found());
}

QTEST_GUILESS_MAIN(tst_PageText)
#include "tst_pagetext.moc"
