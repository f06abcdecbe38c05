#include "commandline.h"

#include "../common/uistyle.h"

#include <QKeyEvent>

namespace Sandbox::Ui {

CommandLine::CommandLine(QWidget *parent)
    : QLineEdit(parent)
{
    setFont(Style::monospaceFont());
    setPlaceholderText(tr("Command to run in the sandbox (Enter runs it, Up/Down for history)"));
    setClearButtonEnabled(false);
}

void CommandLine::setHistory(const QStringList &history)
{
    m_history = history.mid(qMax<qsizetype>(0, history.size() - m_maxHistory));
    m_index = -1;
}

void CommandLine::addToHistory(const QString &command)
{
    if (command.trimmed().isEmpty())
        return;
    if (m_history.isEmpty() || m_history.last() != command)
        m_history.append(command);
    while (m_history.size() > m_maxHistory)
        m_history.removeFirst();
    m_index = -1;
}

void CommandLine::walk(int delta)
{
    if (m_history.isEmpty())
        return;
    if (m_index < 0) {
        if (delta > 0)
            return;
        m_draft = text();
        m_index = int(m_history.size());
    }
    const int next = m_index + delta;
    if (next < 0)
        return;
    if (next >= m_history.size()) {
        m_index = -1;
        setText(m_draft);
        return;
    }
    m_index = next;
    setText(m_history.at(m_index));
}

void CommandLine::keyPressEvent(QKeyEvent *event)
{
    switch (event->key()) {
    case Qt::Key_Up:
        walk(-1);
        return;
    case Qt::Key_Down:
        walk(+1);
        return;
    case Qt::Key_Return:
    case Qt::Key_Enter:
        if (event->modifiers() & ~(Qt::KeypadModifier | Qt::ControlModifier))
            break;
        {
            const QString command = text();
            if (command.trimmed().isEmpty())
                return;
            m_index = -1;
            Q_EMIT submitted(command);
        }
        return;
    default:
        break;
    }
    QLineEdit::keyPressEvent(event);
}

} // namespace Sandbox::Ui
