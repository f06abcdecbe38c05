#pragma once

#include <Qsci/qscilexercustom.h>

namespace Sandbox::Ui {

// Dockerfile / Containerfile highlighting (QScintilla has no lexer for it): instructions,
// comments and parser directives, strings, ${VARIABLES}, and line continuations.
class DockerfileLexer final : public QsciLexerCustom
{
    Q_OBJECT

public:
    enum Style { Default = 0, Comment = 1, Instruction = 2, String = 3, Variable = 4, Flag = 5 };

    explicit DockerfileLexer(QObject *parent = nullptr);

    const char *language() const override;
    QString description(int style) const override;
    QColor defaultColor(int style) const override;
    void styleText(int start, int end) override;
};

} // namespace Sandbox::Ui
