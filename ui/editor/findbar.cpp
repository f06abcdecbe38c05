#include "findbar.h"

#include "../common/uistyle.h"

#include <Qsci/qsciscintilla.h>

#include <QCheckBox>
#include <QGridLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QToolButton>

namespace Sandbox::Ui {

FindBar::FindBar(QsciScintilla *editor, QWidget *parent)
    : QWidget(parent)
    , m_editor(editor)
    , m_find(new QLineEdit(this))
    , m_replace(new QLineEdit(this))
    , m_case(new QCheckBox(tr("Match case"), this))
    , m_words(new QCheckBox(tr("Whole words"), this))
    , m_regex(new QCheckBox(tr("Regex"), this))
    , m_result(new QLabel(this))
    , m_replaceRow(new QWidget(this))
{
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(6, 4, 6, 4);
    grid->setVerticalSpacing(4);

    m_find->setPlaceholderText(tr("Find"));
    m_find->setClearButtonEnabled(true);
    auto *prev = new QPushButton(tr("Previous"), this);
    auto *next = new QPushButton(tr("Next"), this);
    auto *close = new QToolButton(this);
    close->setAutoRaise(true);
    close->setIcon(Style::icon("window-close", QStyle::SP_TitleBarCloseButton, this));
    close->setToolTip(tr("Close (Esc)"));
    grid->addWidget(m_find, 0, 0);
    grid->addWidget(prev, 0, 1);
    grid->addWidget(next, 0, 2);
    grid->addWidget(m_case, 0, 3);
    grid->addWidget(m_words, 0, 4);
    grid->addWidget(m_regex, 0, 5);
    grid->addWidget(m_result, 0, 6);
    grid->addWidget(close, 0, 7);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(6, 1);

    auto *row = new QHBoxLayout(m_replaceRow);
    row->setContentsMargins(0, 0, 0, 0);
    m_replace->setPlaceholderText(tr("Replace with"));
    auto *replace = new QPushButton(tr("Replace"), this);
    auto *all = new QPushButton(tr("Replace All"), this);
    row->addWidget(m_replace, 1);
    row->addWidget(replace);
    row->addWidget(all);
    grid->addWidget(m_replaceRow, 1, 0, 1, 3);

    connect(next, &QPushButton::clicked, this, [this] { findNext(true); });
    connect(prev, &QPushButton::clicked, this, [this] { findNext(false); });
    connect(replace, &QPushButton::clicked, this, &FindBar::replaceOne);
    connect(all, &QPushButton::clicked, this, &FindBar::replaceAll);
    connect(close, &QToolButton::clicked, this, [this] {
        hide();
        Q_EMIT closed();
    });
    connect(m_find, &QLineEdit::textEdited, this, [this] { m_searchStarted = false; });
    for (QCheckBox *box : {m_case, m_words, m_regex})
        connect(box, &QCheckBox::toggled, this, [this] { m_searchStarted = false; });
    connect(m_replace, &QLineEdit::returnPressed, this, &FindBar::replaceOne);
    setReplaceVisible(false);
}

void FindBar::setReplaceVisible(bool visible)
{
    m_replaceRow->setVisible(visible);
}

void FindBar::showFind()
{
    if (m_editor->hasSelectedText() && !m_editor->selectedText().contains(u'\n'))
        m_find->setText(m_editor->selectedText());
    m_searchStarted = false;
    show();
    m_find->setFocus();
    m_find->selectAll();
}

void FindBar::showReplace()
{
    showFind();
    setReplaceVisible(true);
}

void FindBar::setFindText(const QString &text)
{
    m_find->setText(text);
    m_searchStarted = false;
}

void FindBar::setReplaceText(const QString &text)
{
    m_replace->setText(text);
}

void FindBar::setOptions(bool caseSensitive, bool wholeWords, bool regex)
{
    m_case->setChecked(caseSensitive);
    m_words->setChecked(wholeWords);
    m_regex->setChecked(regex);
    m_searchStarted = false;
}

void FindBar::report(const QString &text, bool bad)
{
    m_result->setText(text);
    Style::setTextTone(m_result, bad ? Style::Tone::Error : Style::Tone::Normal);
}

bool FindBar::findNext(bool forward)
{
    const QString expr = m_find->text();
    if (expr.isEmpty())
        return false;
    bool found = false;
    if (!m_searchStarted || forward != m_lastForward) {
        int line = -1;
        int index = -1;
        if (!forward && m_editor->hasSelectedText()) {
            // Search backwards from the start of the current match.
            int l2 = 0;
            int i2 = 0;
            m_editor->getSelection(&line, &index, &l2, &i2);
        }
        found = m_editor->findFirst(expr, m_regex->isChecked(), m_case->isChecked(),
                                    m_words->isChecked(), true, forward, line, index, true);
        m_searchStarted = found;
        m_lastForward = forward;
    } else {
        found = m_editor->findNext();
    }
    report(found ? QString() : tr("Not found"), !found);
    return found;
}

bool FindBar::replaceOne()
{
    if (!m_editor->hasSelectedText() || !m_searchStarted) {
        if (!findNext(true))
            return false;
    }
    if (m_editor->isReadOnly())
        return false;
    m_editor->replace(m_replace->text());
    findNext(true);
    return true;
}

int FindBar::replaceAll()
{
    const QString expr = m_find->text();
    if (expr.isEmpty() || m_editor->isReadOnly())
        return 0;
    int count = 0;
    m_editor->beginUndoAction();
    bool found = m_editor->findFirst(expr, m_regex->isChecked(), m_case->isChecked(),
                                     m_words->isChecked(), false, true, 0, 0, false);
    while (found && count < 1000000) {
        m_editor->replace(m_replace->text());
        ++count;
        found = m_editor->findNext();
    }
    m_editor->endUndoAction();
    m_searchStarted = false;
    report(tr("%n replaced", nullptr, count), count == 0);
    return count;
}

void FindBar::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Escape) {
        hide();
        m_editor->setFocus();
        Q_EMIT closed();
        return;
    }
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) && m_find->hasFocus()) {
        findNext(!(event->modifiers() & Qt::ShiftModifier));
        return;
    }
    QWidget::keyPressEvent(event);
}

} // namespace Sandbox::Ui
