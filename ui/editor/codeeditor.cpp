#include "codeeditor.h"

#include "../common/uistyle.h"

#include <Qsci/qscilexer.h>

#include <QEvent>

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
    applyColors();
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
        adaptLexer(lexer);
    }
    QsciScintilla::setLexer(lexer);
    // Setting a lexer resets the margins' style.
    applyFonts();
    applyColors();
    updateMarginWidth();
}

void CodeEditor::changeEvent(QEvent *event)
{
    QsciScintilla::changeEvent(event);
    if ((event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
        && !m_applyingColors) {
        if (QsciLexer *l = lexer())
            adaptLexer(l);
        applyColors();
    }
}

void CodeEditor::adaptLexer(QsciLexer *lexer) const
{
    // The lexer's own colours keep their hue; their lightness is moved so that they read on the
    // palette's base (a dark theme turns navy keywords light blue, black text white). Styles
    // with a paper of their own (here-documents, code blocks) get a shade of the base.
    const QPalette pal = palette();
    const QColor base = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    const QColor shaded = Style::blend(base, text, 0.07);
    lexer->setDefaultPaper(base);
    lexer->setDefaultColor(text);
    for (int style = 0; style <= QsciScintillaBase::STYLE_MAX; ++style) {
        if (lexer->description(style).isEmpty())
            continue;
        // defaultPaper(style) is the lexer's own paper for the style, or defaultPaper().
        const QColor paper = lexer->defaultPaper(style) != lexer->defaultPaper() ? shaded : base;
        const QColor original = lexer->defaultColor(style);
        // Plain black or grey text becomes the palette's text; colours keep their hue.
        const QColor color = original.hslSaturationF() < 0.08 && original.lightnessF() < 0.2
                                 ? text
                                 : Style::readableOn(original, paper);
        lexer->setPaper(paper, style);
        lexer->setColor(color, style);
    }
}

void CodeEditor::applyColors()
{
    m_applyingColors = true;
    const QPalette pal = palette();
    const QColor base = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    if (!lexer()) {
        setPaper(base);
        setColor(text);
    }
    const QColor margin = Style::blend(base, text, Style::isDark(pal) ? 0.06 : 0.04);
    setMarginsBackgroundColor(margin);
    setMarginsForegroundColor(Style::color(Style::Tone::Muted, pal));
    setFoldMarginColors(margin, margin);
    setCaretForegroundColor(text);
    setCaretLineBackgroundColor(Style::blend(base, pal.color(QPalette::Highlight), 0.10));
    setSelectionBackgroundColor(pal.color(QPalette::Highlight));
    setSelectionForegroundColor(pal.color(QPalette::HighlightedText));
    setMatchedBraceBackgroundColor(Style::blend(base, pal.color(QPalette::Highlight), 0.30));
    setMatchedBraceForegroundColor(text);
    setUnmatchedBraceForegroundColor(Style::color(Style::Tone::Error, pal));
    setIndentationGuidesForegroundColor(Style::blend(base, text, 0.25));
    setIndentationGuidesBackgroundColor(base);
    setEdgeColor(Style::blend(base, text, 0.15));
    // Scintilla's "default" style also paints the area below the last line and the call tips.
    SendScintilla(SCI_STYLESETBACK, STYLE_DEFAULT, base);
    SendScintilla(SCI_STYLESETBACK, STYLE_BRACELIGHT,
                  Style::blend(base, pal.color(QPalette::Highlight), 0.30));
    setCallTipsBackgroundColor(pal.color(QPalette::ToolTipBase));
    setCallTipsForegroundColor(pal.color(QPalette::ToolTipText));
    m_applyingColors = false;
    Q_EMIT colorsChanged();
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

void CodeEditor::setCursorOffset(int offset)
{
    SendScintilla(SCI_GOTOPOS, positionFromOffset(offset));
}

QPair<int, int> CodeEditor::selectionOffsets() const
{
    if (!hasSelectedText())
        return {-1, -1};
    return {offsetFromPosition(int(SendScintilla(SCI_GETSELECTIONSTART))),
            offsetFromPosition(int(SendScintilla(SCI_GETSELECTIONEND)))};
}

} // namespace Sandbox::Ui
