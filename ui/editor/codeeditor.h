#pragma once

#include <Qsci/qsciscintilla.h>

#include <QPair>

namespace Sandbox::Ui {

// The one QScintilla set-up of the app, shared by the file editor (EditorPage) and the SQL editor
// (SqlEditor): UTF-8, one fixed-pitch font in the text, the margins and every style of the lexer
// (QScintilla's defaults draw comments in a serif face), a line-number margin as wide as the
// text needs, brace matching, the caret line, spaces for indentation, and a horizontal scroll
// bar only when a line is wider than the view. Every colour comes from the widget's palette: the
// paper, the margins, the caret line, the selection, and the lexer's styles (their hues kept,
// their lightness moved to read on the palette's base), again whenever the palette changes.
// Put it in a CodeEditorView for the find bar.
class CodeEditor : public QsciScintilla
{
    Q_OBJECT

public:
    explicit CodeEditor(QWidget *parent = nullptr);
    ~CodeEditor() override;

    // Sets the lexer (nullptr: plain text) and gives every one of its styles the editor's font.
    void setLexer(QsciLexer *lexer = nullptr) override;

    // The cursor as a UTF-16 offset into text().
    int cursorOffset() const;
    void setCursorOffset(int offset);
    // The selection as UTF-16 offsets into text(); {-1, -1} when nothing is selected.
    QPair<int, int> selectionOffsets() const;
    // UTF-16 offset into text() <-> Scintilla position (bytes of UTF-8).
    int positionFromOffset(int offset) const;
    int offsetFromPosition(int position) const;

Q_SIGNALS:
    // The palette's colours were applied again (subclasses re-colour their markers).
    void colorsChanged();

protected:
    void changeEvent(QEvent *event) override;

private:
    void adaptLexer(QsciLexer *lexer) const;
    void applyColors();
    void applyFonts();
    void updateMarginWidth();

    bool m_applyingColors = false;
};

} // namespace Sandbox::Ui
