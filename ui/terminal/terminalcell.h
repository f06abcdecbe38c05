#pragma once

#include <QColor>
#include <QList>
#include <QString>

namespace Sandbox::Ui {

// One cell of a terminal's screen or scrollback, as the view paints it.
struct TerminalCell
{
    QString text; // empty for the right half of a wide character; " " for a blank
    QColor fg;
    QColor bg;
    bool bold = false;
    bool italic = false;
    bool underline = false;
    bool strike = false;
    bool reverse = false;
    int width = 1;
};
using TerminalLine = QList<TerminalCell>;

} // namespace Sandbox::Ui
