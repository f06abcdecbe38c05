// The console's statement splitter: semicolons inside quotes, comments and dollar quotes stay.
#include <sql/sqlsplitter.h>

#include <QTest>

using namespace Sandbox::Ui;

class tst_SqlSplitter : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void split_data();
    void split();
    void offsetsPointIntoTheScript();
    void statementUnderCursor();
    void codePointsToUtf16();
};

void tst_SqlSplitter::split_data()
{
    QTest::addColumn<QString>("script");
    QTest::addColumn<QStringList>("statements");
    QTest::newRow("two statements")
        << QStringLiteral("SELECT 1; SELECT 2;")
        << QStringList{QStringLiteral("SELECT 1"), QStringLiteral("SELECT 2")};
    QTest::newRow("no final semicolon")
        << QStringLiteral("SELECT 1;\nSELECT 2")
        << QStringList{QStringLiteral("SELECT 1"), QStringLiteral("SELECT 2")};
    QTest::newRow("semicolon in a string")
        << QStringLiteral("SELECT 'a;b'; SELECT 2")
        << QStringList{QStringLiteral("SELECT 'a;b'"), QStringLiteral("SELECT 2")};
    QTest::newRow("doubled quote")
        << QStringLiteral("SELECT 'it''s;'; SELECT 2")
        << QStringList{QStringLiteral("SELECT 'it''s;'"), QStringLiteral("SELECT 2")};
    QTest::newRow("E string with backslash")
        << QStringLiteral("SELECT E'a\\';b'; SELECT 2")
        << QStringList{QStringLiteral("SELECT E'a\\';b'"), QStringLiteral("SELECT 2")};
    QTest::newRow("quoted identifier")
        << QStringLiteral("SELECT 1 AS \"x;y\"; SELECT 2")
        << QStringList{QStringLiteral("SELECT 1 AS \"x;y\""), QStringLiteral("SELECT 2")};
    QTest::newRow("line comment") << QStringLiteral("SELECT 1 -- ; not here\n; SELECT 2")
                                  << QStringList{QStringLiteral("SELECT 1 -- ; not here"),
                                                 QStringLiteral("SELECT 2")};
    QTest::newRow("nested block comment")
        << QStringLiteral("SELECT /* a /* ; */ ; */ 1; SELECT 2")
        << QStringList{QStringLiteral("SELECT /* a /* ; */ ; */ 1"), QStringLiteral("SELECT 2")};
    QTest::newRow("dollar quoting")
        << QStringLiteral(
               "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; SELECT 2")
        << QStringList{QStringLiteral(
                           "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql"),
                       QStringLiteral("SELECT 2")};
    QTest::newRow("tagged dollar quoting")
        << QStringLiteral("DO $body$ BEGIN PERFORM 1; END $body$; SELECT 2")
        << QStringList{QStringLiteral("DO $body$ BEGIN PERFORM 1; END $body$"),
                       QStringLiteral("SELECT 2")};
    QTest::newRow("parameters are not dollar quotes")
        << QStringLiteral("SELECT $1; SELECT $2")
        << QStringList{QStringLiteral("SELECT $1"), QStringLiteral("SELECT $2")};
    QTest::newRow("blank and comment-only pieces")
        << QStringLiteral(" ;; -- only a comment\n; SELECT 1")
        << QStringList{QStringLiteral("SELECT 1")};
    QTest::newRow("empty") << QString() << QStringList{};
}

void tst_SqlSplitter::split()
{
    QFETCH(QString, script);
    QFETCH(QStringList, statements);
    QStringList got;
    for (const SqlStatementRange &s : splitSql(script))
        got.append(s.text);
    QCOMPARE(got, statements);
}

void tst_SqlSplitter::offsetsPointIntoTheScript()
{
    const QString script = QStringLiteral("  SELECT 'ü';\n\nSELECT 2  ");
    const auto parts = splitSql(script);
    QCOMPARE(parts.size(), 2);
    for (const SqlStatementRange &s : parts)
        QCOMPARE(script.mid(s.start, s.end - s.start), s.text);
}

void tst_SqlSplitter::statementUnderCursor()
{
    const QString script = QStringLiteral("SELECT 1;\nSELECT 2;\n\nSELECT 3");
    const auto parts = splitSql(script);
    QCOMPARE(statementAt(parts, 0), 0);
    QCOMPARE(statementAt(parts, int(script.indexOf(QStringLiteral("2")))), 1);
    QCOMPARE(statementAt(parts, int(script.indexOf(QStringLiteral("SELECT 2")) - 1)),
             0); // just after "SELECT 1;"
    QCOMPARE(statementAt(parts, int(script.size())), 2);
}

void tst_SqlSplitter::codePointsToUtf16()
{
    const QString s = QStringLiteral("a🚀b");
    QCOMPARE(utf16Offset(s, 1), 0);
    QCOMPARE(utf16Offset(s, 2), 1);
    QCOMPARE(utf16Offset(s, 3), 3); // the rocket is two UTF-16 units
}

QTEST_GUILESS_MAIN(tst_SqlSplitter)
#include "tst_sqlsplitter.moc"
