#include "lexerfactory.h"

#include "dockerfilelexer.h"

#include "../common/uistyle.h"

#include <Qsci/qscilexerbash.h>
#include <Qsci/qscilexerbatch.h>
#include <Qsci/qscilexercmake.h>
#include <Qsci/qscilexercpp.h>
#include <Qsci/qscilexercsharp.h>
#include <Qsci/qscilexercss.h>
#include <Qsci/qscilexerdiff.h>
#include <Qsci/qscilexerhtml.h>
#include <Qsci/qscilexerjava.h>
#include <Qsci/qscilexerjavascript.h>
#include <Qsci/qscilexerjson.h>
#include <Qsci/qscilexerlua.h>
#include <Qsci/qscilexermakefile.h>
#include <Qsci/qscilexermarkdown.h>
#include <Qsci/qscilexerperl.h>
#include <Qsci/qscilexerproperties.h>
#include <Qsci/qscilexerpython.h>
#include <Qsci/qscilexerruby.h>
#include <Qsci/qscilexersql.h>
#include <Qsci/qscilexertex.h>
#include <Qsci/qscilexerxml.h>
#include <Qsci/qscilexeryaml.h>

#include <QFileInfo>
#include <QHash>

namespace Sandbox::Ui {

namespace {

// JavaScript's lexer with TypeScript's extra keywords.
class TypeScriptLexer final : public QsciLexerJavaScript
{
public:
    using QsciLexerJavaScript::QsciLexerJavaScript;
    const char *keywords(int set) const override
    {
        if (set == 1)
            return "abstract any as async await boolean break case catch class const constructor "
                   "continue debugger declare default delete do else enum export extends false "
                   "finally for from function get if implements import in infer instanceof "
                   "interface is keyof let module namespace never new null number object of "
                   "package private protected public readonly require return satisfies set "
                   "static string super switch symbol this throw true try type typeof undefined "
                   "unique unknown var void while with yield";
        return QsciLexerJavaScript::keywords(set);
    }
};

// Go and Rust have C-like syntax: the C++ lexer with their keywords.
class CLikeLexer final : public QsciLexerCPP
{
public:
    CLikeLexer(const char *keywords, QObject *parent)
        : QsciLexerCPP(parent)
        , m_keywords(keywords)
    {}
    const char *keywords(int set) const override { return set == 1 ? m_keywords : nullptr; }

private:
    const char *m_keywords;
};

QString languageForName(const QString &fileName)
{
    const QFileInfo info(fileName);
    const QString name = info.fileName();
    const QString lower = name.toLower();
    if (lower == QLatin1String("dockerfile") || lower == QLatin1String("containerfile")
        || lower.startsWith(QLatin1String("dockerfile."))
        || lower.endsWith(QLatin1String(".dockerfile"))
        || lower.endsWith(QLatin1String(".containerfile")))
        return QStringLiteral("dockerfile");
    if (lower == QLatin1String("makefile") || lower == QLatin1String("gnumakefile"))
        return QStringLiteral("makefile");
    if (lower == QLatin1String("cmakelists.txt"))
        return QStringLiteral("cmake");
    static const QHash<QString, QString> byName{
        {QStringLiteral(".bashrc"), QStringLiteral("shell")},
        {QStringLiteral(".profile"), QStringLiteral("shell")},
        {QStringLiteral(".bash_profile"), QStringLiteral("shell")},
        {QStringLiteral(".zshrc"), QStringLiteral("shell")},
        {QStringLiteral(".env"), QStringLiteral("properties")},
        {QStringLiteral(".gitconfig"), QStringLiteral("properties")},
        {QStringLiteral(".editorconfig"), QStringLiteral("properties")},
    };
    if (const auto it = byName.constFind(lower); it != byName.cend())
        return it.value();

    static const QHash<QString, QString> bySuffix{
        {QStringLiteral("sql"), QStringLiteral("sql")},
        {QStringLiteral("sh"), QStringLiteral("shell")},
        {QStringLiteral("bash"), QStringLiteral("shell")},
        {QStringLiteral("zsh"), QStringLiteral("shell")},
        {QStringLiteral("ksh"), QStringLiteral("shell")},
        {QStringLiteral("py"), QStringLiteral("python")},
        {QStringLiteral("pyw"), QStringLiteral("python")},
        {QStringLiteral("pyi"), QStringLiteral("python")},
        {QStringLiteral("js"), QStringLiteral("javascript")},
        {QStringLiteral("mjs"), QStringLiteral("javascript")},
        {QStringLiteral("cjs"), QStringLiteral("javascript")},
        {QStringLiteral("jsx"), QStringLiteral("javascript")},
        {QStringLiteral("ts"), QStringLiteral("typescript")},
        {QStringLiteral("tsx"), QStringLiteral("typescript")},
        {QStringLiteral("mts"), QStringLiteral("typescript")},
        {QStringLiteral("cts"), QStringLiteral("typescript")},
        {QStringLiteral("json"), QStringLiteral("json")},
        {QStringLiteral("jsonc"), QStringLiteral("json")},
        {QStringLiteral("json5"), QStringLiteral("json")},
        {QStringLiteral("ipynb"), QStringLiteral("json")},
        {QStringLiteral("yml"), QStringLiteral("yaml")},
        {QStringLiteral("yaml"), QStringLiteral("yaml")},
        {QStringLiteral("md"), QStringLiteral("markdown")},
        {QStringLiteral("markdown"), QStringLiteral("markdown")},
        {QStringLiteral("c"), QStringLiteral("cpp")},
        {QStringLiteral("h"), QStringLiteral("cpp")},
        {QStringLiteral("cc"), QStringLiteral("cpp")},
        {QStringLiteral("cpp"), QStringLiteral("cpp")},
        {QStringLiteral("cxx"), QStringLiteral("cpp")},
        {QStringLiteral("hpp"), QStringLiteral("cpp")},
        {QStringLiteral("hh"), QStringLiteral("cpp")},
        {QStringLiteral("hxx"), QStringLiteral("cpp")},
        {QStringLiteral("ino"), QStringLiteral("cpp")},
        {QStringLiteral("diff"), QStringLiteral("diff")},
        {QStringLiteral("patch"), QStringLiteral("diff")},
        {QStringLiteral("mk"), QStringLiteral("makefile")},
        {QStringLiteral("cmake"), QStringLiteral("cmake")},
        {QStringLiteral("html"), QStringLiteral("html")},
        {QStringLiteral("htm"), QStringLiteral("html")},
        {QStringLiteral("vue"), QStringLiteral("html")},
        {QStringLiteral("xml"), QStringLiteral("xml")},
        {QStringLiteral("svg"), QStringLiteral("xml")},
        {QStringLiteral("xsd"), QStringLiteral("xml")},
        {QStringLiteral("ui"), QStringLiteral("xml")},
        {QStringLiteral("qrc"), QStringLiteral("xml")},
        {QStringLiteral("plist"), QStringLiteral("xml")},
        {QStringLiteral("css"), QStringLiteral("css")},
        {QStringLiteral("scss"), QStringLiteral("css")},
        {QStringLiteral("less"), QStringLiteral("css")},
        {QStringLiteral("java"), QStringLiteral("java")},
        {QStringLiteral("kt"), QStringLiteral("java")},
        {QStringLiteral("rb"), QStringLiteral("ruby")},
        {QStringLiteral("pl"), QStringLiteral("perl")},
        {QStringLiteral("pm"), QStringLiteral("perl")},
        {QStringLiteral("lua"), QStringLiteral("lua")},
        {QStringLiteral("toml"), QStringLiteral("properties")},
        {QStringLiteral("ini"), QStringLiteral("properties")},
        {QStringLiteral("cfg"), QStringLiteral("properties")},
        {QStringLiteral("conf"), QStringLiteral("properties")},
        {QStringLiteral("properties"), QStringLiteral("properties")},
        {QStringLiteral("env"), QStringLiteral("properties")},
        {QStringLiteral("tex"), QStringLiteral("tex")},
        {QStringLiteral("cs"), QStringLiteral("csharp")},
        {QStringLiteral("bat"), QStringLiteral("batch")},
        {QStringLiteral("cmd"), QStringLiteral("batch")},
        {QStringLiteral("go"), QStringLiteral("go")},
        {QStringLiteral("rs"), QStringLiteral("rust")},
    };
    return bySuffix.value(info.suffix().toLower());
}

} // namespace

namespace LexerFactory {

QString languageFor(const QString &fileName)
{
    return languageForName(fileName);
}

QsciLexer *create(const QString &fileName, QObject *parent)
{
    const QString lang = languageForName(fileName);
    QsciLexer *lexer = nullptr;
    if (lang == QLatin1String("sql"))
        lexer = new QsciLexerSQL(parent);
    else if (lang == QLatin1String("shell"))
        lexer = new QsciLexerBash(parent);
    else if (lang == QLatin1String("python"))
        lexer = new QsciLexerPython(parent);
    else if (lang == QLatin1String("javascript"))
        lexer = new QsciLexerJavaScript(parent);
    else if (lang == QLatin1String("typescript"))
        lexer = new TypeScriptLexer(parent);
    else if (lang == QLatin1String("json"))
        lexer = new QsciLexerJSON(parent);
    else if (lang == QLatin1String("yaml"))
        lexer = new QsciLexerYAML(parent);
    else if (lang == QLatin1String("markdown"))
        lexer = new QsciLexerMarkdown(parent);
    else if (lang == QLatin1String("cpp"))
        lexer = new QsciLexerCPP(parent);
    else if (lang == QLatin1String("dockerfile"))
        lexer = new DockerfileLexer(parent);
    else if (lang == QLatin1String("diff"))
        lexer = new QsciLexerDiff(parent);
    else if (lang == QLatin1String("makefile"))
        lexer = new QsciLexerMakefile(parent);
    else if (lang == QLatin1String("cmake"))
        lexer = new QsciLexerCMake(parent);
    else if (lang == QLatin1String("html"))
        lexer = new QsciLexerHTML(parent);
    else if (lang == QLatin1String("xml"))
        lexer = new QsciLexerXML(parent);
    else if (lang == QLatin1String("css"))
        lexer = new QsciLexerCSS(parent);
    else if (lang == QLatin1String("java"))
        lexer = new QsciLexerJava(parent);
    else if (lang == QLatin1String("ruby"))
        lexer = new QsciLexerRuby(parent);
    else if (lang == QLatin1String("perl"))
        lexer = new QsciLexerPerl(parent);
    else if (lang == QLatin1String("lua"))
        lexer = new QsciLexerLua(parent);
    else if (lang == QLatin1String("properties"))
        lexer = new QsciLexerProperties(parent);
    else if (lang == QLatin1String("tex"))
        lexer = new QsciLexerTeX(parent);
    else if (lang == QLatin1String("csharp"))
        lexer = new QsciLexerCSharp(parent);
    else if (lang == QLatin1String("batch"))
        lexer = new QsciLexerBatch(parent);
    else if (lang == QLatin1String("go"))
        lexer = new CLikeLexer(
            "break case chan const continue default defer else fallthrough for func go "
            "goto if import interface map package range return select struct switch "
            "type var nil true false iota",
            parent);
    else if (lang == QLatin1String("rust"))
        lexer = new CLikeLexer(
            "as async await break const continue crate dyn else enum extern false fn for "
            "if impl in let loop match mod move mut pub ref return self Self static "
            "struct super trait true type unsafe use where while",
            parent);
    if (!lexer)
        return nullptr;

    // One fixed-pitch font for every style: QScintilla's defaults draw comments and some
    // strings in a proportional (often serif) face. The colours come from the editor's palette
    // (CodeEditor).
    const QFont font = Style::monospaceFont();
    lexer->setDefaultFont(font);
    lexer->setFont(font, -1);
    return lexer;
}

} // namespace LexerFactory

} // namespace Sandbox::Ui
