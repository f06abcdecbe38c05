#pragma once

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QsciScintilla;
class QWidget;

namespace Sandbox::Ui {

// Find and replace for a QsciScintilla: Enter finds the next match, Shift+Enter the previous
// one, Escape closes; options for case, whole words and regular expressions; "Replace all" is
// one undo step.
class FindBar final : public QWidget
{
    Q_OBJECT

public:
    explicit FindBar(QsciScintilla *editor, QWidget *parent = nullptr);

    // Shows the bar with the selection (if any, on one line) as the text to find.
    void showFind();
    void showReplace();
    bool findNext(bool forward = true);
    bool replaceOne();
    int replaceAll();

    void setFindText(const QString &text);
    void setReplaceText(const QString &text);
    void setOptions(bool caseSensitive, bool wholeWords, bool regex);

Q_SIGNALS:
    void closed();

protected:
    void keyPressEvent(QKeyEvent *event) override;

private:
    void setReplaceVisible(bool visible);
    void report(const QString &text, bool bad = false);

    QsciScintilla *m_editor; // not owned
    QLineEdit *m_find;
    QLineEdit *m_replace;
    QCheckBox *m_case;
    QCheckBox *m_words;
    QCheckBox *m_regex;
    QLabel *m_result;
    QWidget *m_replaceRow;
    bool m_searchStarted = false;
    bool m_lastForward = true;
};

} // namespace Sandbox::Ui
