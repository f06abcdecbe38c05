#pragma once

#include "terminalscreen.h"

#include <QAbstractScrollArea>
#include <QTimer>

namespace Sandbox::Ui {

// A terminal: paints a TerminalScreen (colours, bold/italic/underline, wide characters, the
// cursor), keeps its scrollback behind the scroll bar, turns keys, pastes, the mouse and its size
// into input() and sizeChanged() for the program. Selection with the mouse (with Shift while the
// program takes the mouse), Ctrl+Shift+C / Ctrl+Shift+V (and Shift+Insert) copy and paste;
// pastes are bracketed when the program asked for it. However fast output comes, it is taken in
// batches (what arrived by the time the event loop comes round, at most 1 MiB) and painted at
// most every 16 ms: rows that scrolled past in between are never laid out or painted.
class TerminalView final : public QAbstractScrollArea
{
    Q_OBJECT

public:
    explicit TerminalView(QWidget *parent = nullptr);
    ~TerminalView() override;

    TerminalScreen &screen()
    {
        flushOutput();
        return m_screen;
    }
    const TerminalScreen &screen() const { return m_screen; }

    // The program's output; on the screen once the event loop comes round (or now, with
    // flushOutput()).
    void feed(QByteArrayView bytes);
    void flushOutput();
    // The output was lost: start over in the given modes (escape sequences).
    void reset(const QByteArray &modes = {});

    QSize cellSize() const { return m_cell; }
    // Lines scrolled back from the bottom (0: following the output).
    int scrolledBack() const;
    void scrollToBottom();

    bool hasSelection() const { return m_selecting || m_selStart != m_selEnd; }
    QString selectedText() const;
    void copy();
    void paste();

Q_SIGNALS:
    void input(const QByteArray &bytes);
    // The window size in cells changed (after the widget's size settled).
    void sizeChanged(int cols, int rows);
    void titleChanged(const QString &title);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void inputMethodEvent(QInputMethodEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void focusInEvent(QFocusEvent *event) override;
    void focusOutEvent(QFocusEvent *event) override;
    void changeEvent(QEvent *event) override;
    bool focusNextPrevChild(bool next) override;
    bool event(QEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    void updateMetrics();
    void updateColors();
    void updateScrollRange();
    void scheduleRepaint();
    void applySize();
    // A point of the viewport as a cell: x = column, y = line (< 0: scrollback).
    QPoint cellAt(const QPoint &pos) const;
    bool programTakesMouse(const QMouseEvent *event) const;
    int mouseButtonOf(Qt::MouseButton button) const;
    int modifiersOf(Qt::KeyboardModifiers modifiers) const;
    bool isSelected(int line, int col) const;

    TerminalScreen m_screen;
    QFont m_font;
    QSize m_cell{8, 16};
    int m_ascent = 12;
    QTimer m_repaint;           // coalesces repaints
    QTimer m_resize;            // sizeChanged once the size settled
    QByteArray m_pendingOutput; // fed, not yet on the screen
    bool m_flushQueued = false;
    bool m_dirty = false;
    bool m_focused = false;
    int m_lastScrollback = 0;
    // Selection, in lines (< 0: scrollback) and columns; end exclusive of nothing (inclusive).
    QPoint m_selStart;
    QPoint m_selEnd;
    bool m_selecting = false;
    int m_pressedButton = 0; // forwarded to the program
};

} // namespace Sandbox::Ui
