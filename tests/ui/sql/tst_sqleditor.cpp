// The SQL editor's completion as the user meets it: the popup offers keywords in any case, the
// schema's tables and columns as soon as the schema is set (even right after the dialect), a
// table's columns after "table.", and editors opened and closed at once never abort the app.

#include "sql/sqleditor.h"

#include <Qsci/qsciscintillabase.h>

#include <QApplication>
#include <QtTest>

using namespace Sandbox::Ui;

namespace {

// Types `text` at the end of the editor and asks for completion as Ctrl+Space would.
QString offered(SqlEditor &editor, const QString &text)
{
    editor.setText(text);
    editor.SendScintilla(QsciScintillaBase::SCI_DOCUMENTEND);
    editor.autoCompleteFromAPIs();
    if (!editor.SendScintilla(QsciScintillaBase::SCI_AUTOCACTIVE))
        return {};
    QByteArray current(256, '\0');
    const long n = editor.SendScintilla(QsciScintillaBase::SCI_AUTOCGETCURRENTTEXT, 0UL,
                                        static_cast<void *>(current.data()));
    current.resize(qMax(0L, n));
    current = QByteArray(current.constData()); // up to the NUL
    editor.SendScintilla(QsciScintillaBase::SCI_AUTOCCANCEL);
    return QString::fromUtf8(current);
}

QMap<QString, QStringList> bigSchema(int tables, int columns)
{
    QMap<QString, QStringList> schema;
    for (int t = 0; t < tables; ++t) {
        QStringList cols;
        for (int c = 0; c < columns; ++c)
            cols.append(QStringLiteral("col_%1_%2").arg(t).arg(c));
        schema.insert(QStringLiteral("table_%1").arg(t), cols);
    }
    return schema;
}

} // namespace

class TestSqlEditor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void schemaIsOfferedRightAfterTheDialect()
    {
        SqlEditor editor;
        editor.show();
        // The console sets the dialect when the database answers and the schema when it is read:
        // the two can come back to back.
        editor.setDialect(QStringLiteral("sqlite"));
        editor.setSchema(
            {{QStringLiteral("shipments"), {QStringLiteral("id"), QStringLiteral("carrier")}}});
        QCOMPARE(offered(editor, QStringLiteral("SELECT * FROM ship")),
                 QStringLiteral("shipments"));
        QCOMPARE(offered(editor, QStringLiteral("SELECT carr")), QStringLiteral("carrier"));
        // A new schema replaces the old at once.
        editor.setSchema({{QStringLiteral("invoices"), {QStringLiteral("total")}}});
        QCOMPARE(offered(editor, QStringLiteral("SELECT * FROM inv")), QStringLiteral("invoices"));
        QCOMPARE(offered(editor, QStringLiteral("SELECT * FROM ship")), QString());
    }

    void keywordsInAnyCase()
    {
        SqlEditor editor;
        editor.show();
        editor.setDialect(QStringLiteral("postgres"));
        // Set again, as the console does once the database answers: still any case.
        editor.setDialect(QStringLiteral("postgres"));
        QCOMPARE(offered(editor, QStringLiteral("sel")), QStringLiteral("SELECT"));
        QCOMPARE(offered(editor, QStringLiteral("SELECT 1 RETU")), QStringLiteral("RETURNING"));
        // The dialect's own words: DuckDB has PIVOT, PostgreSQL does not.
        QCOMPARE(offered(editor, QStringLiteral("piv")), QString());
        editor.setDialect(QStringLiteral("duckdb"));
        QCOMPARE(offered(editor, QStringLiteral("piv")), QStringLiteral("PIVOT"));
    }

    void aTablesColumnsAfterItsName()
    {
        SqlEditor editor;
        editor.show();
        editor.setSchema(
            {{QStringLiteral("People"), {QStringLiteral("name"), QStringLiteral("age")}},
             {QStringLiteral("pets"), {QStringLiteral("nickname")}}});
        // After "people." (any case): People's columns, first in order is "age".
        QCOMPARE(offered(editor, QStringLiteral("SELECT people.")), QStringLiteral("age"));
        QCOMPARE(offered(editor, QStringLiteral("SELECT People.na")), QStringLiteral("name"));
        // Not another table's.
        QCOMPARE(offered(editor, QStringLiteral("SELECT people.nick")), QString());
        QCOMPARE(offered(editor, QStringLiteral("SELECT pets.nick")), QStringLiteral("nickname"));
    }

    void aHugeSchemaIsBounded()
    {
        SqlEditor editor;
        // 400 000 names: the editor keeps the first 20 000 and offers them at once.
        editor.setSchema(bigSchema(2000, 200));
        QVERIFY(editor.completionWords().size() <= 20000 * 2 + 400);
        QCOMPARE(offered(editor, QStringLiteral("SELECT * FROM table_1")),
                 QStringLiteral("table_1"));
    }

    void editorsClosedAtOnceNeverAbort()
    {
        // Each editor prepares its completion as it opens and gets a schema; closing it at once
        // used to destroy a running preparation thread ("QThread: Destroyed while thread is
        // still running" aborts) whenever the machine was too busy to finish it in 500 ms.
        const QMap<QString, QStringList> schema = bigSchema(200, 40);
        for (int i = 0; i < 60; ++i) {
            auto *editor = new SqlEditor;
            editor->show();
            editor->setDialect(i % 2 ? QStringLiteral("duckdb") : QStringLiteral("sqlite"));
            QCoreApplication::processEvents();
            editor->setSchema(schema);
            delete editor;
        }
        // And one that lives on still completes.
        SqlEditor editor;
        editor.setSchema(schema);
        QCOMPARE(offered(editor, QStringLiteral("SELECT col_199_3")), QStringLiteral("col_199_3"));
    }
};

QTEST_MAIN(TestSqlEditor)
#include "tst_sqleditor.moc"
