#pragma once

#include "terminalscrollback.h"

#include <QByteArray>
#include <QObject>
#include <QPoint>

struct VTerm;
struct VTermScreen;

namespace Sandbox::Ui {

// One terminal's screen, emulated by libvterm (xterm-256color): the program's output goes in with
// feed(), keys, pastes and mouse events come out as input() bytes for the program. Keeps a bounded
// scrollback of the lines that scrolled off the top of the main screen. No widget: TerminalView
// paints it, tests read it.
class TerminalScreen final : public QObject
{
    Q_OBJECT

public:
    using Cell = TerminalCell;
    using Line = TerminalLine;

    enum class MouseMode { None, Click, Drag, Move };
    enum class Key {
        Enter,
        Tab,
        Backspace,
        Escape,
        Up,
        Down,
        Left,
        Right,
        Insert,
        Delete,
        Home,
        End,
        PageUp,
        PageDown,
        F1,
        F2,
        F3,
        F4,
        F5,
        F6,
        F7,
        F8,
        F9,
        F10,
        F11,
        F12
    };
    enum Modifier { NoModifier = 0, Shift = 1, Alt = 2, Control = 4 };

    static constexpr int kDefaultScrollback = 10000;

    explicit TerminalScreen(int cols = 80, int rows = 24, QObject *parent = nullptr);
    ~TerminalScreen() override;

    void setDefaultColors(const QColor &fg, const QColor &bg);
    void setScrollbackLimit(int lines);

    // The program's output.
    void feed(QByteArrayView bytes);
    // A new size; on the main screen a new width reflows the text: lines the width wrapped are
    // joined and wrapped again (libvterm 0.1 does not, so it is done here). A line that fills
    // every column is taken as wrapped into the next one. The alternate screen is not reflowed:
    // its program redraws it.
    void resize(int cols, int rows);
    // Clears the screen, the scrollback and every mode (the output was lost).
    void reset();

    int cols() const { return m_cols; }
    int rows() const { return m_rows; }
    // Line `row` of the visible screen (0 .. rows-1), or of the scrollback (-1 is the newest).
    Line line(int row) const;
    // The text of a line, trailing blanks removed.
    QString lineText(int row) const;
    // The whole visible screen as text, one line per row.
    QString screenText() const;
    int scrollbackLines() const { return m_scrollback.size(); }
    QPoint cursor() const { return m_cursor; }
    bool cursorVisible() const { return m_cursorVisible; }
    bool altScreen() const { return m_altScreen; }
    MouseMode mouseMode() const { return m_mouseMode; }
    QString title() const { return m_title; }
    QColor defaultForeground() const { return m_fg; }
    QColor defaultBackground() const { return m_bg; }

    // Input for the program, as a terminal sends it (the modes the program set apply: cursor
    // keys, keypad, bracketed paste, mouse encoding).
    void typeText(const QString &text, int modifiers = NoModifier);
    void typeKey(Key key, int modifiers = NoModifier);
    void paste(const QString &text);
    // Mouse at a cell (0-based); button 1-3, 4/5 wheel.
    void mouseMove(int row, int col, int modifiers = NoModifier);
    void mouseButton(int button, bool pressed, int modifiers = NoModifier);

    // The text between two cells (inclusive, in reading order; rows < 0 are scrollback).
    QString text(QPoint from, QPoint to) const;

Q_SIGNALS:
    // Bytes for the program.
    void input(const QByteArray &bytes);
    // Rows (of the visible screen) to repaint; the scrollback grew or shrank.
    void damaged(int firstRow, int lastRow);
    void scrollbackChanged();
    void cursorMoved();
    void titleChanged(const QString &title);
    void modesChanged();
    void bell();

private:
    struct Callbacks;
    Cell convert(const void *vtermCell) const;
    // libvterm's hard reset (RIS), with nothing for a REP to repeat but a blank.
    void resetEmulation();
    void flushInput();
    // A new width on the main screen: lines that wrapped are joined and wrapped again at `cols`
    // (the scrollback too), the cursor stays on its character.
    void reflow(int cols, int rows);
    // The SGR sequence that sets `cell`'s colours and attributes (default colours as defaults).
    QByteArray sgrOf(const Cell &cell) const;
    TerminalScrollback::Pen penOf(const void *vtermCell) const;
    // A row that scrolled off the top, as libvterm gives it (VTermScreenCell[cols]).
    void pushCells(int cols, const void *vtermCells);
    void appendToScrollback(const Line &line);
    // Output into libvterm, followed by m_syntax.
    void write(QByteArrayView bytes);
    // At `pos` (after a line feed): a long run of plain lines ("printable ASCII\r\n") is not
    // scrolled through line by line (libvterm moves its whole screen for each) but put where
    // scrolling would leave it: its rows in the scrollback, its last rows on the screen. The
    // result is the same, cell for cell. Returns where the output goes on.
    qsizetype jumpScroll(QByteArrayView bytes, qsizetype pos);
    // Whether plain text at the cursor now scrolls the whole screen, line by line, in ASCII.
    bool canJump();

    // Follows the escape sequences of the output far enough to tell when plain text is printed
    // as it is (no sequence under way, ASCII the character set in use).
    struct SyntaxTracker
    {
        enum class State : quint8 {
            Ground,
            Escape,
            Intermediate,
            Designate,
            Csi,
            String,
            StringEscape
        };
        State state = State::Ground;
        quint8 designating = 0; // the G set being designated
        quint8 gl = 0;          // the G set in use
        bool ascii[4] = {true, true, true, true};
        bool singleShift = false;
        void scan(QByteArrayView bytes);
        bool plain() const { return state == State::Ground && ascii[gl & 3] && !singleShift; }
    };

    VTerm *m_vt = nullptr;           // owned
    VTermScreen *m_screen = nullptr; // owned by m_vt
    int m_cols;
    int m_rows;
    TerminalScrollback m_scrollback{kDefaultScrollback};
    bool m_scrollbackChanged = false; // signalled once per feed
    QPoint m_cursor;                  // x = col, y = row
    bool m_cursorVisible = true;
    bool m_altScreen = false;
    MouseMode m_mouseMode = MouseMode::None;
    QString m_title;
    QColor m_fg;
    QColor m_bg;
    QByteArray m_pendingInput;
    SyntaxTracker m_syntax;
    bool m_reflowing = false; // libvterm's own resize must not touch the scrollback meanwhile
};

} // namespace Sandbox::Ui
