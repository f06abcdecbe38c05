#pragma once

#include <QFrame>

class QLabel;
class QPushButton;
class QToolButton;

namespace Sandbox::Ui {

// An error card in an agent's transcript: what happened in the user's terms (a title and a
// sentence or two), the fix in place (set the model key, allow a host, turn the network on) and,
// behind "Details", the agent's or the engine's own words, selectable and copyable.
class ProblemCard final : public QFrame
{
    Q_OBJECT

public:
    explicit ProblemCard(QWidget *parent = nullptr);

    // `raw` "": no Details (the text is already the raw words); `fix` "": no button.
    void setProblem(const QString &title, const QString &text, const QString &raw,
                    const QString &fix);

    QLabel *titleLabel() const { return m_title; }
    QLabel *textLabel() const { return m_text; }
    QLabel *detailsLabel() const { return m_raw; }
    QPushButton *fixButton() const { return m_fix; }
    QToolButton *detailsButton() const { return m_details; }
    QPushButton *copyButton() const { return m_copy; }

Q_SIGNALS:
    void fixClicked();
    // The card's height for a width changed (Details opened or closed).
    void heightChanged();

private:
    void showDetails(bool on);

    QLabel *m_title;        // owned (child)
    QLabel *m_text;         // owned (child)
    QPushButton *m_fix;     // owned (child)
    QToolButton *m_details; // owned (child)
    QPushButton *m_copy;    // owned (child)
    QLabel *m_raw;          // owned (child)
};

} // namespace Sandbox::Ui
