#include "codeeditor.h"

#include "../common/uistyle.h"

#include <Qsci/qscilexer.h>

namespace Sandbox::Ui {

CodeEditor::CodeEditor(QWidget *parent)
    : QsciScintilla(parent)
{
    setUtf8(true);
    setMarginType(0, QsciScintilla::NumberMargin);
    setMarginLineNumbers(0, true);
    setBraceMatching(QsciScintilla::SloppyBraceMatch);
    setCaretLineVisible(true);
    setAutoIndent(true);
    setIndentationsUseTabs(false);
    setTabWidth(4);
    setIndentationGuides(true);
    setWrapMode(QsciScintilla::WrapNone);
    // A horizontal scroll bar only when a line is wider than the view (Scintilla's default
    // reserves 2000 pixels).
    SendScintilla(SCI_SETSCROLLWIDTH, 1);
    SendScintilla(SCI_SETSCROLLWIDTHTRACKING, 1);
    applyFonts();
    setMarginsBackgroundColor(QColor(0xf3, 0xf4, 0xf6));
    setMarginsForegroundColor(QColor(0x6e, 0x77, 0x81));
    setCaretLineBackgroundColor(QColor(0xf2, 0xf6, 0xff));
    updateMarginWidth();
    connect(this, &QsciScintilla::linesChanged, this, &CodeEditor::updateMarginWidth);
}

CodeEditor::~CodeEditor() = default;

void CodeEditor::setLexer(QsciLexer *lexer)
{
    if (lexer) {
        // One fixed-pitch font for every style: QScintilla's defaults draw comments and some
        // strings in a proportional (often serif) face.
        const QFont font = Style::monospaceFont();
        lexer->setDefaultFont(font);
        lexer->setFont(font, -1);
    }
    QsciScintilla::setLexer(lexer);
    // Setting a lexer resets the margins' style: fixed-pitch again.
    applyFonts();
    setMarginsBackgroundColor(QColor(0xf3, 0xf4, 0xf6));
    setMarginsForegroundColor(QColor(0x6e, 0x77, 0x81));
    updateMarginWidth();
}

void CodeEditor::applyFonts()
{
    const QFont font = Style::monospaceFont();
    if (!lexer())
        setFont(font);
    setMarginsFont(font);
}

void CodeEditor::updateMarginWidth()
{
    const int digits = qMax(3, int(QString::number(lines()).size()));
    setMarginWidth(0, QString(digits + 1, u'9'));
}

int CodeEditor::positionFromOffset(int offset) const
{
    return int(text().left(offset).toUtf8().size());
}

int CodeEditor::offsetFromPosition(int position) const
{
    return int(QString::fromUtf8(text().toUtf8().left(position)).size());
}

int CodeEditor::cursorOffset() const
{
    return offsetFromPosition(int(SendScintilla(SCI_GETCURRENTPOS)));
}

QPair<int, int> CodeEditor::selectionOffsets() const
{
    if (!hasSelectedText())
        return {-1, -1};
    return {offsetFromPosition(int(SendScintilla(SCI_GETSELECTIONSTART))),
            offsetFromPosition(int(SendScintilla(SCI_GETSELECTIONEND)))};
}

} // namespace Sandbox::Ui
