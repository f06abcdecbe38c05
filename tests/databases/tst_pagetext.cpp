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
    void withRowsIsTheSameObject();
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

void tst_PageText::withRowsIsTheSameObject()
{
    const QByteArray rows = R"([[1,"x"],[null,{"$bytes":"AAE="}]])";
    const QJsonObject members{{QStringLiteral("rowCount"), 2}, {QStringLiteral("done"), false}};
    const QJsonObject page = QJsonDocument::fromJson(PageText::withRows(members, rows)).object();
    QCOMPARE(page.value(u"rowCount").toInt(), 2);
    QCOMPARE(page.value(u"done").toBool(true), false);
    QCOMPARE(page.value(u"rows").toArray(), QJsonDocument::fromJson(rows).array());
    const QJsonObject empty = QJsonDocument::fromJson(PageText::withRows({}, "[]")).object();
    QCOMPARE(empty.keys(), QStringList{QStringLiteral("rows")});
    QVERIFY(empty.value(u"rows").isArray());
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
