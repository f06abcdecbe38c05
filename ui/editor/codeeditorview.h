#pragma once

#include <QWidget>

namespace Sandbox::Ui {

class CodeEditor;
class FindBar;

// A CodeEditor with its find bar below it: Ctrl+F finds, Ctrl+H replaces, F3 / Shift+F3 find
// the next / previous match. The keys belong to the view (Qt::WidgetWithChildrenShortcut): they
// act only while the focus is in it, and never reach the window's global actions.
class CodeEditorView final : public QWidget
{
    Q_OBJECT

public:
    // Takes `editor` as its child.
    explicit CodeEditorView(CodeEditor *editor, QWidget *parent = nullptr);
    ~CodeEditorView() override;

    CodeEditor *editor() const { return m_editor; }
    FindBar *findBar() const { return m_findBar; }
    // Whether Ctrl+F / Ctrl+H open the bar (e.g. not while the file is still loading).
    void setFindEnabled(bool enabled) { m_findEnabled = enabled; }

private:
    CodeEditor *m_editor; // owned (child)
    FindBar *m_findBar;   // owned (child)
    bool m_findEnabled = true;
};

} // namespace Sandbox::Ui
