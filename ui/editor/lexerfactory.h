#pragma once

#include <QString>

class QObject;
class QsciLexer;

namespace Sandbox::Ui {

// Picks a QScintilla lexer by file name: SQL, shell, Python, JavaScript/TypeScript, JSON, YAML,
// Markdown, C/C++, Dockerfile, diff, Makefile, CMake, HTML, XML, CSS, Java, Ruby, Perl, Lua,
// INI/TOML/properties, TeX, C#, batch, Go and Rust (through the C++ lexer). Every style of the
// lexer gets the editor's fixed-pitch font (QScintilla's defaults use serif faces for
// comments).
namespace LexerFactory {

// A stable name for the language ("python", "dockerfile", ...), or an empty string for plain text.
QString languageFor(const QString &fileName);
// The lexer for `fileName`, owned by `parent`; nullptr for plain text.
QsciLexer *create(const QString &fileName, QObject *parent);

} // namespace LexerFactory

} // namespace Sandbox::Ui
