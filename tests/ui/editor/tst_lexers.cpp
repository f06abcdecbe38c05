// Lexers by file type, with one fixed-pitch font in every style; the Dockerfile lexer's styles.
#include <common/uistyle.h>
#include <editor/dockerfilelexer.h>
#include <editor/lexerfactory.h>

#include <Qsci/qscilexer.h>
#include <Qsci/qsciscintilla.h>

#include <QFontInfo>
#include <QTest>

using namespace Sandbox::Ui;

class TestLexers final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void language_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("language");
        QTest::addColumn<QString>("lexer"); // QsciLexer::language()
        QTest::newRow("sql") << "/workspace/q.sql"
                             << "sql"
                             << "SQL";
        QTest::newRow("shell") << "/workspace/run.sh"
                               << "shell"
                               << "Bash";
        QTest::newRow("bashrc") << "/workspace/.bashrc"
                                << "shell"
                                << "Bash";
        QTest::newRow("python") << "/workspace/main.py"
                                << "python"
                                << "Python";
        QTest::newRow("javascript") << "/workspace/app.mjs"
                                    << "javascript"
                                    << "JavaScript";
        QTest::newRow("typescript") << "/workspace/app.tsx"
                                    << "typescript"
                                    << "JavaScript";
        QTest::newRow("json") << "/workspace/package.json"
                              << "json"
                              << "JSON";
        QTest::newRow("yaml") << "/workspace/ci.yml"
                              << "yaml"
                              << "YAML";
        QTest::newRow("markdown") << "/workspace/README.md"
                                  << "markdown"
                                  << "Markdown";
        QTest::newRow("c++") << "/workspace/a.cpp"
                             << "cpp"
                             << "C++";
        QTest::newRow("c header") << "/workspace/a.h"
                                  << "cpp"
                                  << "C++";
        QTest::newRow("dockerfile") << "/workspace/Dockerfile"
                                    << "dockerfile"
                                    << "Dockerfile";
        QTest::newRow("containerfile variant") << "/workspace/api.Dockerfile"
                                               << "dockerfile"
                                               << "Dockerfile";
        QTest::newRow("diff") << "/workspace/fix.patch"
                              << "diff"
                              << "Diff";
        QTest::newRow("makefile") << "/workspace/Makefile"
                                  << "makefile"
                                  << "Makefile";
        QTest::newRow("cmake") << "/workspace/CMakeLists.txt"
                               << "cmake"
                               << "CMake";
        QTest::newRow("toml") << "/workspace/Cargo.toml"
                              << "properties"
                              << "Properties";
        QTest::newRow("go") << "/workspace/main.go"
                            << "go"
                            << "C++";
        QTest::newRow("plain text") << "/workspace/notes.txt"
                                    << ""
                                    << "";
        QTest::newRow("no suffix") << "/workspace/LICENSE"
                                   << ""
                                   << "";
    }

    void language()
    {
        QFETCH(QString, file);
        QFETCH(QString, language);
        QFETCH(QString, lexer);
        QCOMPARE(LexerFactory::languageFor(file), language);
        QObject owner;
        QsciLexer *l = LexerFactory::create(file, &owner);
        if (lexer.isEmpty()) {
            QVERIFY(!l);
            return;
        }
        QVERIFY(l);
        QCOMPARE(QString::fromLatin1(l->language()), lexer);
        // Every style fixed-pitch: no serif comments.
        for (int style = 0; style < 128; ++style) {
            if (l->description(style).isEmpty())
                continue;
            QVERIFY2(QFontInfo(l->font(style)).fixedPitch(),
                     qPrintable(QStringLiteral("style %1 (%2) uses %3")
                                    .arg(style)
                                    .arg(l->description(style), l->font(style).family())));
        }
    }

    void dockerfileStyles()
    {
        QsciScintilla editor;
        auto *lexer = new DockerfileLexer(&editor);
        editor.setLexer(lexer);
        editor.setText(QStringLiteral(
            "# base\nFROM debian:12 AS build\nRUN apt-get update \\\n    && echo \"$HOME\"\n"));
        editor.SendScintilla(QsciScintillaBase::SCI_COLOURISE, 0, -1);
        const auto styleAt = [&](int line, int index) {
            return int(editor.SendScintilla(QsciScintillaBase::SCI_GETSTYLEAT,
                                            editor.positionFromLineIndex(line, index)));
        };
        QCOMPARE(styleAt(0, 0), int(DockerfileLexer::Comment));
        QCOMPARE(styleAt(1, 0), int(DockerfileLexer::Instruction));
        QCOMPARE(styleAt(1, 5), int(DockerfileLexer::Default));
        QCOMPARE(styleAt(2, 0), int(DockerfileLexer::Instruction));
        // A continuation line is not an instruction even if it starts with a word.
        QCOMPARE(styleAt(3, 7), int(DockerfileLexer::Default));
        QCOMPARE(styleAt(3, 12), int(DockerfileLexer::String));
    }
};

QTEST_MAIN(TestLexers)
#include "tst_lexers.moc"
