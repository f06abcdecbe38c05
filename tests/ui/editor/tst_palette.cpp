// Every colour of the editors and of the messages comes from the palette: on a dark palette the
// QScintilla paper is dark, the text and every lexer style read on it (WCAG contrast), the margins
// are dark, the SQL error card is a dark tint with light text; error and warning labels read on
// the dark window; and a theme switch while the widgets are open re-colours them.
#include <common/uistyle.h>
#include <editor/codeeditor.h>
#include <editor/lexerfactory.h>
#include <mainwindow/newsandboxdialog.h>
#include <sql/sqleditor.h>

#include <Qsci/qscilexer.h>

#include <QApplication>
#include <QLabel>
#include <QStyleFactory>
#include <QTest>

using namespace Sandbox::Ui;

namespace {

// Scintilla answers colours as 0x00BBGGRR.
QColor sciColor(long v)
{
    return QColor(int(v & 0xff), int((v >> 8) & 0xff), int((v >> 16) & 0xff));
}

QColor styleFore(QsciScintilla &e, int style)
{
    return sciColor(e.SendScintilla(QsciScintillaBase::SCI_STYLEGETFORE, style));
}

QColor styleBack(QsciScintilla &e, int style)
{
    return sciColor(e.SendScintilla(QsciScintillaBase::SCI_STYLEGETBACK, style));
}

bool isDarkColor(const QColor &c)
{
    return c.lightnessF() < 0.35;
}

QString describe(const QColor &fore, const QColor &back)
{
    return QStringLiteral("%1 on %2 (contrast %3)")
        .arg(fore.name(), back.name())
        .arg(Style::contrast(fore, back), 0, 'f', 2);
}

} // namespace

class TestPalette final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        m_light = QApplication::palette();
        QVERIFY(!Style::isDark(m_light));
        QVERIFY(Style::isDark(Style::darkPalette()));
    }

    void cleanup() { QApplication::setPalette(m_light); }

    void everyLexerStyleReadsOnADarkPaper_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("python") << "/workspace/a.py";
        QTest::newRow("sql") << "/workspace/q.sql";
        QTest::newRow("javascript") << "/workspace/app.js";
        QTest::newRow("c++") << "/workspace/main.cpp";
        QTest::newRow("json") << "/workspace/package.json";
        QTest::newRow("markdown") << "/workspace/README.md";
        QTest::newRow("shell") << "/workspace/run.sh";
        QTest::newRow("yaml") << "/workspace/ci.yaml";
        QTest::newRow("dockerfile") << "/workspace/Dockerfile";
    }

    void everyLexerStyleReadsOnADarkPaper()
    {
        QFETCH(QString, file);
        QApplication::setPalette(Style::darkPalette());
        CodeEditor editor;
        QsciLexer *lexer = LexerFactory::create(file, &editor);
        QVERIFY(lexer);
        editor.setLexer(lexer);
        const QColor base = Style::darkPalette().color(QPalette::Base);
        QVERIFY2(isDarkColor(styleBack(editor, QsciScintillaBase::STYLE_DEFAULT)),
                 qPrintable(styleBack(editor, QsciScintillaBase::STYLE_DEFAULT).name()));
        for (int style = 0; style < 128; ++style) {
            if (lexer->description(style).isEmpty())
                continue;
            const QColor fore = styleFore(editor, style);
            const QColor back = styleBack(editor, style);
            QVERIFY2(isDarkColor(back),
                     qPrintable(QStringLiteral("style %1 (%2) paper %3")
                                    .arg(style)
                                    .arg(lexer->description(style), back.name())));
            QVERIFY2(Style::contrast(fore, back) >= 4.5,
                     qPrintable(QStringLiteral("style %1 (%2): %3")
                                    .arg(style)
                                    .arg(lexer->description(style), describe(fore, back))));
        }
        // The margins (line numbers) too.
        const QColor margin = styleBack(editor, QsciScintillaBase::STYLE_LINENUMBER);
        QVERIFY2(isDarkColor(margin), qPrintable(margin.name()));
        QVERIFY2(Style::contrast(styleFore(editor, QsciScintillaBase::STYLE_LINENUMBER), margin)
                     >= 3.0,
                 qPrintable(
                     describe(styleFore(editor, QsciScintillaBase::STYLE_LINENUMBER), margin)));
        Q_UNUSED(base);
    }

    void sqlKeywordsAndErrorCardFollowAThemeSwitch()
    {
        // Opened on the light palette, then the theme switches to dark while the editor is open.
        SqlEditor editor;
        editor.setDialect(QStringLiteral("postgres"));
        editor.setText(QStringLiteral("SELECT nope FROM t;"));
        editor.markError(7, 4, QStringLiteral("column \"nope\" does not exist"));
        editor.SendScintilla(QsciScintillaBase::SCI_COLOURISE, 0, -1);
        const int keyword = int(editor.SendScintilla(QsciScintillaBase::SCI_GETSTYLEAT, 0));
        QVERIFY(!isDarkColor(styleBack(editor, keyword)));

        QApplication::setPalette(Style::darkPalette());
        QTRY_VERIFY2(isDarkColor(styleBack(editor, keyword)),
                     qPrintable(styleBack(editor, keyword).name()));
        const QColor kwFore = styleFore(editor, keyword);
        QVERIFY2(Style::contrast(kwFore, styleBack(editor, keyword)) >= 4.5,
                 qPrintable(describe(kwFore, styleBack(editor, keyword))));
        // Still blue (the keyword's hue), not grey.
        QVERIFY2(kwFore.hslSaturationF() > 0.2, qPrintable(kwFore.name()));

        // The error card: its annotation style is a dark tint with readable text.
        const int cardStyle
            = int(editor.SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLE, 0))
              + int(editor.SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLEOFFSET));
        const QColor cardBack = styleBack(editor, cardStyle);
        const QColor cardFore = styleFore(editor, cardStyle);
        QVERIFY2(isDarkColor(cardBack), qPrintable(cardBack.name()));
        QVERIFY2(Style::contrast(cardFore, cardBack) >= 4.5,
                 qPrintable(describe(cardFore, cardBack)));
        // Reddish: the card says "error".
        QVERIFY2(cardBack.red() > cardBack.blue(), qPrintable(cardBack.name()));

        // And back to light.
        QApplication::setPalette(m_light);
        QTRY_VERIFY(!isDarkColor(styleBack(editor, keyword)));
        QVERIFY(!isDarkColor(styleBack(editor, cardStyle)));
    }

    void messagesReadOnADarkWindow()
    {
        QApplication::setPalette(Style::darkPalette());
        NewSandboxDialog dialog;
        dialog.show();
        auto *warning = dialog.findChild<QLabel *>(QStringLiteral("networkWarning"));
        auto *error = dialog.findChild<QLabel *>(QStringLiteral("error"));
        QVERIFY(warning);
        QVERIFY(error);
        const QColor window = dialog.palette().color(QPalette::Window);
        for (QLabel *label : {warning, error}) {
            const QColor text = label->palette().color(QPalette::WindowText);
            QVERIFY2(Style::contrast(text, window) >= 4.5,
                     qPrintable(label->objectName() + QLatin1Char(' ') + describe(text, window)));
        }
        // The error is red, the warning amber: still their meaning.
        QVERIFY(error->palette().color(QPalette::WindowText).red()
                > error->palette().color(QPalette::WindowText).blue());
    }

private:
    QPalette m_light;
};

QTEST_MAIN(TestPalette)
#include "tst_palette.moc"
