#include "terminalscreen.h"

#include <QLoggingCategory>

extern "C" {
#include <vterm.h>
}

namespace Sandbox::Ui {

namespace {

QColor toQColor(const VTermScreen *screen, VTermColor c)
{
    vterm_screen_convert_color_to_rgb(screen, &c);
    return QColor(c.rgb.red, c.rgb.green, c.rgb.blue);
}

VTermColor toVTerm(const QColor &c)
{
    VTermColor v;
    vterm_color_rgb(&v, uint8_t(c.red()), uint8_t(c.green()), uint8_t(c.blue()));
    return v;
}

VTermModifier toVTerm(int modifiers)
{
    int m = VTERM_MOD_NONE;
    if (modifiers & TerminalScreen::Shift)
        m |= VTERM_MOD_SHIFT;
    if (modifiers & TerminalScreen::Alt)
        m |= VTERM_MOD_ALT;
    if (modifiers & TerminalScreen::Control)
        m |= VTERM_MOD_CTRL;
    return VTermModifier(m);
}

} // namespace

struct TerminalScreen::Callbacks
{
    static int damage(VTermRect rect, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        Q_EMIT self->damaged(rect.start_row, rect.end_row - 1);
        return 1;
    }
    static int moveRect(VTermRect dest, VTermRect, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        Q_EMIT self->damaged(dest.start_row, dest.end_row - 1);
        return 1;
    }
    static int moveCursor(VTermPos pos, VTermPos, int visible, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        self->m_cursor = QPoint(pos.col, pos.row);
        self->m_cursorVisible = visible;
        Q_EMIT self->cursorMoved();
        return 1;
    }
    static int setTermProp(VTermProp prop, VTermValue *val, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        switch (prop) {
        case VTERM_PROP_CURSORVISIBLE:
            self->m_cursorVisible = val->boolean;
            Q_EMIT self->cursorMoved();
            break;
        case VTERM_PROP_ALTSCREEN:
            self->m_altScreen = val->boolean;
            Q_EMIT self->modesChanged();
            break;
        case VTERM_PROP_MOUSE:
            self->m_mouseMode = val->number == VTERM_PROP_MOUSE_CLICK  ? MouseMode::Click
                                : val->number == VTERM_PROP_MOUSE_DRAG ? MouseMode::Drag
                                : val->number == VTERM_PROP_MOUSE_MOVE ? MouseMode::Move
                                                                       : MouseMode::None;
            Q_EMIT self->modesChanged();
            break;
        case VTERM_PROP_TITLE:
            // A program sets the title; bounded, no control characters.
            self->m_title = QString::fromUtf8(val->string).left(256);
            self->m_title.removeIf([](QChar c) { return c.category() == QChar::Other_Control; });
            Q_EMIT self->titleChanged(self->m_title);
            break;
        default:
            break;
        }
        return 1;
    }
    static int bell(void *user)
    {
        Q_EMIT static_cast<TerminalScreen *>(user)->bell();
        return 1;
    }
    static int pushLine(int cols, const VTermScreenCell *cells, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        if (self->m_reflowing)
            return 1;
        Line line;
        line.reserve(cols);
        for (int c = 0; c < cols; ++c)
            line.append(self->convert(&cells[c]));
        // Trailing blanks with the default background are not kept.
        while (!line.isEmpty() && line.last().text == QLatin1String(" ")
               && line.last().bg == self->m_bg && !line.last().reverse)
            line.removeLast();
        self->m_scrollback.push_back(std::move(line));
        while (int(self->m_scrollback.size()) > self->m_scrollbackLimit)
            self->m_scrollback.pop_front();
        Q_EMIT self->scrollbackChanged();
        return 1;
    }
    static int popLine(int cols, VTermScreenCell *cells, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        if (self->m_reflowing || self->m_scrollback.empty())
            return 0;
        const Line line = std::move(self->m_scrollback.back());
        self->m_scrollback.pop_back();
        for (int c = 0; c < cols; ++c) {
            VTermScreenCell &cell = cells[c];
            cell = {};
            cell.width = 1;
            cell.fg = toVTerm(self->m_fg);
            cell.bg = toVTerm(self->m_bg);
            if (c < line.size()) {
                const Cell &from = line.at(c);
                const QList<uint> ucs = from.text.toUcs4();
                for (int i = 0; i < ucs.size() && i < VTERM_MAX_CHARS_PER_CELL; ++i)
                    cell.chars[i] = ucs.at(i) == ' ' && ucs.size() == 1 ? 0 : ucs.at(i);
                cell.width = char(from.width);
                cell.fg = toVTerm(from.fg);
                cell.bg = toVTerm(from.bg);
                cell.attrs.bold = from.bold;
                cell.attrs.italic = from.italic;
                cell.attrs.underline = from.underline;
                cell.attrs.strike = from.strike;
                cell.attrs.reverse = from.reverse;
            }
        }
        Q_EMIT self->scrollbackChanged();
        return 1;
    }
    static void output(const char *s, size_t len, void *user)
    {
        static_cast<TerminalScreen *>(user)->m_pendingInput.append(s, qsizetype(len));
    }
    static const VTermScreenCallbacks *table()
    {
        static const VTermScreenCallbacks callbacks = {
            &damage, &moveRect, &moveCursor, &setTermProp, &bell, nullptr, &pushLine, &popLine,
        };
        return &callbacks;
    }
};

TerminalScreen::TerminalScreen(int cols, int rows, QObject *parent)
    : QObject(parent)
    , m_cols(qBound(1, cols, 1000))
    , m_rows(qBound(1, rows, 500))
    , m_fg(0xd0, 0xd0, 0xd0)
    , m_bg(0x1e, 0x1e, 0x1e)
{
    m_vt = vterm_new(m_rows, m_cols);
    vterm_set_utf8(m_vt, 1);
    vterm_output_set_callback(m_vt, &Callbacks::output, this);
    m_screen = vterm_obtain_screen(m_vt);
    vterm_screen_set_callbacks(m_screen, Callbacks::table(), this);
    vterm_screen_set_damage_merge(m_screen, VTERM_DAMAGE_SCROLL);
    vterm_screen_enable_altscreen(m_screen, 1);
    setDefaultColors(m_fg, m_bg);
    vterm_screen_reset(m_screen, 1);
}

TerminalScreen::~TerminalScreen()
{
    vterm_free(m_vt);
}

void TerminalScreen::setDefaultColors(const QColor &fg, const QColor &bg)
{
    const QColor oldBg = m_bg;
    m_fg = fg;
    m_bg = bg;
    VTermColor vfg = toVTerm(fg);
    VTermColor vbg = toVTerm(bg);
    vterm_state_set_default_colors(vterm_obtain_state(m_vt), &vfg, &vbg);
    for (Line &line : m_scrollback) {
        for (Cell &cell : line) {
            if (cell.bg == oldBg)
                cell.bg = bg;
        }
    }
    Q_EMIT damaged(0, m_rows - 1);
}

void TerminalScreen::setScrollbackLimit(int lines)
{
    m_scrollbackLimit = qMax(0, lines);
    while (int(m_scrollback.size()) > m_scrollbackLimit)
        m_scrollback.pop_front();
}

void TerminalScreen::feed(QByteArrayView bytes)
{
    if (bytes.isEmpty())
        return;
    vterm_input_write(m_vt, bytes.data(), size_t(bytes.size()));
    vterm_screen_flush_damage(m_screen);
    // Answers to the program's queries (cursor position, device attributes).
    flushInput();
}

void TerminalScreen::resize(int cols, int rows)
{
    cols = qBound(1, cols, 1000);
    rows = qBound(1, rows, 500);
    if (cols == m_cols && rows == m_rows)
        return;
    if (cols != m_cols && !m_altScreen) {
        reflow(cols, rows);
        return;
    }
    m_cols = cols;
    m_rows = rows;
    vterm_set_size(m_vt, rows, cols);
    vterm_screen_flush_damage(m_screen);
    Q_EMIT damaged(0, m_rows - 1);
}

void TerminalScreen::reflow(int cols, int rows)
{
    // The logical lines: scrollback and screen rows joined where a row was full (wrapped).
    const auto trimmed = [this](Line l) {
        while (!l.isEmpty() && l.last().text == QLatin1String(" ") && l.last().bg == m_bg
               && !l.last().reverse)
            l.removeLast();
        return l;
    };
    QList<Line> logical;
    Line current;
    int cursorLine = -1;
    qsizetype cursorOffset = 0;
    const auto take = [&](const Line &row, bool last) {
        current += row;
        if (row.size() < m_cols || last) {
            logical.append(std::move(current));
            current = Line();
        }
    };
    for (const Line &l : m_scrollback)
        take(l, false);
    int lastRow = m_cursor.y();
    for (int r = m_rows - 1; r > lastRow; --r) {
        if (!trimmed(line(r)).isEmpty()) {
            lastRow = r;
            break;
        }
    }
    for (int r = 0; r <= lastRow && r < m_rows; ++r) {
        if (r == m_cursor.y()) {
            cursorLine = int(logical.size());
            cursorOffset = current.size() + m_cursor.x();
        }
        take(trimmed(line(r)), r == lastRow);
    }

    // Wrapped again at the new width (a wide character does not straddle two rows).
    Cell blank;
    blank.text = QStringLiteral(" ");
    blank.fg = m_fg;
    blank.bg = m_bg;
    QList<Line> rowsOut;
    int cursorRow = 0;
    int cursorCol = 0;
    for (int i = 0; i < logical.size(); ++i) {
        const Line &l = logical.at(i);
        const int first = int(rowsOut.size());
        Line row;
        QList<qsizetype> rowStarts{0};
        for (qsizetype c = 0; c < l.size(); ++c) {
            const Cell &cell = l.at(c);
            if (cell.width == 2 && row.size() == cols - 1)
                row.append(blank);
            if (row.size() >= cols) {
                rowsOut.append(std::move(row));
                row = Line();
                rowStarts.append(c);
            }
            row.append(cell);
        }
        rowsOut.append(std::move(row));
        if (i == cursorLine) {
            int k = int(rowStarts.size()) - 1;
            while (k > 0 && rowStarts.at(k) > cursorOffset)
                --k;
            cursorRow = first + k;
            cursorCol = int(cursorOffset - rowStarts.at(k));
            if (cursorCol >= cols) { // past the end of a full row: the next one
                cursorRow += cursorCol / cols;
                cursorCol %= cols;
                while (rowsOut.size() <= cursorRow)
                    rowsOut.append(Line());
            }
        }
    }

    // The last rows (with the cursor) on the screen, the rest in the scrollback.
    int top = qMax(0, int(rowsOut.size()) - rows);
    if (cursorRow < top)
        top = cursorRow;
    m_scrollback.clear();
    for (int r = 0; r < top; ++r)
        m_scrollback.push_back(trimmed(rowsOut.at(r)));
    while (int(m_scrollback.size()) > m_scrollbackLimit)
        m_scrollback.pop_front();
    m_cols = cols;
    m_rows = rows;
    m_reflowing = true;
    vterm_set_size(m_vt, rows, cols);
    m_reflowing = false;
    QByteArray out("[0m[H[2J");
    for (int r = top; r < rowsOut.size() && r - top < rows; ++r) {
        out += "[" + QByteArray::number(r - top + 1) + ";1H";
        QByteArray pen;
        for (const Cell &cell : rowsOut.at(r)) {
            if (cell.text.isEmpty())
                continue; // the right half of a wide character
            const QByteArray p = penOf(cell);
            if (p != pen) {
                out += p;
                pen = p;
            }
            out += cell.text.toUtf8();
        }
        out += "[0m";
    }
    out += "[" + QByteArray::number(cursorRow - top + 1) + ';' + QByteArray::number(cursorCol + 1)
           + 'H';
    vterm_input_write(m_vt, out.constData(), size_t(out.size()));
    vterm_screen_flush_damage(m_screen);
    Q_EMIT scrollbackChanged();
    Q_EMIT damaged(0, m_rows - 1);
}

QByteArray TerminalScreen::penOf(const Cell &cell) const
{
    QByteArray p("[0");
    if (cell.bold)
        p += ";1";
    if (cell.italic)
        p += ";3";
    if (cell.underline)
        p += ";4";
    if (cell.reverse)
        p += ";7";
    if (cell.strike)
        p += ";9";
    const auto rgb = [](const QColor &c) -> QByteArray {
        return QByteArray::number(c.red()) + ';' + QByteArray::number(c.green()) + ';'
               + QByteArray::number(c.blue());
    };
    if (cell.fg != m_fg)
        p += ";38;2;" + rgb(cell.fg);
    if (cell.bg != m_bg)
        p += ";48;2;" + rgb(cell.bg);
    return p + 'm';
}

void TerminalScreen::reset()
{
    m_scrollback.clear();
    vterm_screen_reset(m_screen, 1);
    m_title.clear();
    m_altScreen = false;
    m_mouseMode = MouseMode::None;
    m_cursorVisible = true;
    Q_EMIT scrollbackChanged();
    Q_EMIT modesChanged();
    Q_EMIT damaged(0, m_rows - 1);
}

TerminalScreen::Cell TerminalScreen::convert(const void *vtermCell) const
{
    const auto *c = static_cast<const VTermScreenCell *>(vtermCell);
    Cell cell;
    if (c->chars[0] == uint32_t(-1)) { // the right half of a wide character
        cell.width = 0;
    } else if (c->chars[0] == 0) {
        cell.text = QStringLiteral(" ");
    } else {
        char32_t chars[VTERM_MAX_CHARS_PER_CELL];
        int n = 0;
        while (n < VTERM_MAX_CHARS_PER_CELL && c->chars[n])
            chars[n] = char32_t(c->chars[n]), ++n;
        cell.text = QString::fromUcs4(chars, n);
        cell.width = qMax(1, int(c->width));
    }
    const VTermColor fg = c->fg;
    const VTermColor bg = c->bg;
    cell.fg = VTERM_COLOR_IS_DEFAULT_FG(&fg) ? m_fg : toQColor(m_screen, fg);
    cell.bg = VTERM_COLOR_IS_DEFAULT_BG(&bg) ? m_bg : toQColor(m_screen, bg);
    cell.bold = c->attrs.bold;
    cell.italic = c->attrs.italic;
    cell.underline = c->attrs.underline;
    cell.strike = c->attrs.strike;
    cell.reverse = c->attrs.reverse;
    return cell;
}

TerminalScreen::Line TerminalScreen::line(int row) const
{
    Line result;
    if (row < 0) {
        const int index = int(m_scrollback.size()) + row;
        if (index < 0)
            return result;
        result = m_scrollback.at(size_t(index));
        Cell blank;
        blank.text = QStringLiteral(" ");
        blank.fg = m_fg;
        blank.bg = m_bg;
        while (result.size() < m_cols)
            result.append(blank);
        return result;
    }
    if (row >= m_rows)
        return result;
    result.reserve(m_cols);
    for (int col = 0; col < m_cols; ++col) {
        VTermScreenCell cell;
        if (!vterm_screen_get_cell(m_screen, VTermPos{row, col}, &cell)) {
            Cell blank;
            blank.text = QStringLiteral(" ");
            blank.fg = m_fg;
            blank.bg = m_bg;
            result.append(blank);
            continue;
        }
        result.append(convert(&cell));
    }
    return result;
}

QString TerminalScreen::lineText(int row) const
{
    QString text;
    for (const Cell &cell : line(row))
        text += cell.text;
    while (text.endsWith(QLatin1Char(' ')))
        text.chop(1);
    return text;
}

QString TerminalScreen::screenText() const
{
    QStringList lines;
    for (int row = 0; row < m_rows; ++row)
        lines.append(lineText(row));
    return lines.join(QLatin1Char('\n'));
}

QString TerminalScreen::text(QPoint from, QPoint to) const
{
    if (to.y() < from.y() || (to.y() == from.y() && to.x() < from.x()))
        std::swap(from, to);
    QStringList lines;
    for (int row = from.y(); row <= to.y(); ++row) {
        const Line l = line(row);
        const int first = row == from.y() ? from.x() : 0;
        const int last = row == to.y() ? qMin(to.x(), int(l.size()) - 1) : int(l.size()) - 1;
        QString text;
        for (int col = qMax(0, first); col <= last; ++col)
            text += l.at(col).text;
        if (row != to.y() || last == int(l.size()) - 1) {
            while (text.endsWith(QLatin1Char(' ')))
                text.chop(1);
        }
        lines.append(text);
    }
    return lines.join(QLatin1Char('\n'));
}

void TerminalScreen::typeText(const QString &text, int modifiers)
{
    for (const uint ucs : text.toUcs4())
        vterm_keyboard_unichar(m_vt, ucs, toVTerm(modifiers));
    flushInput();
}

void TerminalScreen::typeKey(Key key, int modifiers)
{
    VTermKey k = VTERM_KEY_NONE;
    switch (key) {
    case Key::Enter:
        k = VTERM_KEY_ENTER;
        break;
    case Key::Tab:
        k = VTERM_KEY_TAB;
        break;
    case Key::Backspace:
        k = VTERM_KEY_BACKSPACE;
        break;
    case Key::Escape:
        k = VTERM_KEY_ESCAPE;
        break;
    case Key::Up:
        k = VTERM_KEY_UP;
        break;
    case Key::Down:
        k = VTERM_KEY_DOWN;
        break;
    case Key::Left:
        k = VTERM_KEY_LEFT;
        break;
    case Key::Right:
        k = VTERM_KEY_RIGHT;
        break;
    case Key::Insert:
        k = VTERM_KEY_INS;
        break;
    case Key::Delete:
        k = VTERM_KEY_DEL;
        break;
    case Key::Home:
        k = VTERM_KEY_HOME;
        break;
    case Key::End:
        k = VTERM_KEY_END;
        break;
    case Key::PageUp:
        k = VTERM_KEY_PAGEUP;
        break;
    case Key::PageDown:
        k = VTERM_KEY_PAGEDOWN;
        break;
    default:
        k = VTermKey(VTERM_KEY_FUNCTION(int(key) - int(Key::F1) + 1));
        break;
    }
    vterm_keyboard_key(m_vt, k, toVTerm(modifiers));
    flushInput();
}

void TerminalScreen::paste(const QString &text)
{
    // A terminal sends a paste's newlines as Enter (CR); bracketed when the program asked.
    QString normalised = text;
    normalised.replace(QLatin1String("\r\n"), QLatin1String("\r"));
    normalised.replace(QLatin1Char('\n'), QLatin1Char('\r'));
    // A paste cannot end the bracket early.
    normalised.remove(QLatin1String("\x1b[201~"));
    vterm_keyboard_start_paste(m_vt);
    flushInput();
    Q_EMIT input(normalised.toUtf8());
    vterm_keyboard_end_paste(m_vt);
    flushInput();
}

void TerminalScreen::mouseMove(int row, int col, int modifiers)
{
    vterm_mouse_move(m_vt, qBound(0, row, m_rows - 1), qBound(0, col, m_cols - 1),
                     toVTerm(modifiers));
    flushInput();
}

void TerminalScreen::mouseButton(int button, bool pressed, int modifiers)
{
    vterm_mouse_button(m_vt, button, pressed, toVTerm(modifiers));
    flushInput();
}

void TerminalScreen::flushInput()
{
    if (!m_pendingInput.isEmpty())
        Q_EMIT input(std::exchange(m_pendingInput, {}));
}

} // namespace Sandbox::Ui
