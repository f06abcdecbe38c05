#include "terminalscreen.h"

#include <QLoggingCategory>

#include <cstring>

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
        self->pushCells(cols, cells);
        return 1;
    }
    static int popLine(int cols, VTermScreenCell *cells, void *user)
    {
        auto *self = static_cast<TerminalScreen *>(user);
        if (self->m_reflowing || self->m_scrollback.size() == 0)
            return 0;
        const Line line = self->m_scrollback.line(self->m_scrollback.size() - 1, self->m_fg,
                                                  self->m_bg);
        self->m_scrollback.removeNewest();
        self->m_scrollbackChanged = true;
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
    resetEmulation();
}

void TerminalScreen::resetEmulation()
{
    // libvterm 0.1 loops for ever on REP (CSI b) before it has printed any character, and
    // repeats one from before a reset: a blank printed and reset away is the one it repeats.
    vterm_screen_reset(m_screen, 1);
    vterm_input_write(m_vt, " ", 1);
    vterm_screen_reset(m_screen, 1);
}

TerminalScreen::~TerminalScreen()
{
    vterm_free(m_vt);
}

void TerminalScreen::setDefaultColors(const QColor &fg, const QColor &bg)
{
    // The scrollback keeps default colours as such: it follows.
    m_fg = fg;
    m_bg = bg;
    VTermColor vfg = toVTerm(fg);
    VTermColor vbg = toVTerm(bg);
    vterm_state_set_default_colors(vterm_obtain_state(m_vt), &vfg, &vbg);
    Q_EMIT damaged(0, m_rows - 1);
}

void TerminalScreen::setScrollbackLimit(int lines)
{
    m_scrollback.setLimit(lines);
    Q_EMIT scrollbackChanged();
}

void TerminalScreen::feed(QByteArrayView bytes)
{
    qsizetype pos = 0;
    while (pos < bytes.size()) {
        // Up to the next line feed as it comes; then, where a long run of plain lines follows, a
        // jump over it (jumpScroll()).
        const void *lf = std::memchr(bytes.data() + pos, '\n', size_t(bytes.size() - pos));
        const qsizetype end = lf ? static_cast<const char *>(lf) - bytes.data() + 1 : bytes.size();
        write(bytes.sliced(pos, end - pos));
        pos = end;
        if (lf)
            pos = jumpScroll(bytes, pos);
    }
    vterm_screen_flush_damage(m_screen);
    if (std::exchange(m_scrollbackChanged, false))
        Q_EMIT scrollbackChanged();
    // Answers to the program's queries (cursor position, device attributes).
    flushInput();
}

void TerminalScreen::write(QByteArrayView bytes)
{
    if (bytes.isEmpty())
        return;
    m_syntax.scan(bytes);
    vterm_input_write(m_vt, bytes.data(), size_t(bytes.size()));
}

qsizetype TerminalScreen::jumpScroll(QByteArrayView bytes, qsizetype pos)
{
    // The plain lines from `pos` ("printable ASCII\r\n"), as the rows they take.
    struct Row
    {
        qsizetype start;
        qsizetype length;
    };
    std::vector<Row> rows;
    qsizetype end = pos;
    qsizetype firstLineEnd = -1;
    const char *d = bytes.data();
    for (qsizetype i = pos, lineStart = pos; i < bytes.size();) {
        const auto c = uchar(d[i]);
        if (c >= 0x20 && c < 0x7f) {
            ++i;
            continue;
        }
        if (c != '\r' || i + 1 >= bytes.size() || d[i + 1] != '\n')
            break;
        const qsizetype length = i - lineStart;
        rows.push_back({lineStart, qMin<qsizetype>(length, m_cols)});
        for (qsizetype s = m_cols; s < length; s += m_cols)
            rows.push_back({lineStart + s, qMin<qsizetype>(length - s, m_cols)});
        i += 2;
        lineStart = end = i;
        if (firstLineEnd < 0)
            firstLineEnd = end;
    }
    qsizetype first = 0; // the rows of the first line
    while (first < qsizetype(rows.size()) && rows[size_t(first)].start < firstLineEnd)
        ++first;
    // Worth it when the run scrolls the screen away twice; and only where the plain lines scroll
    // as they would with no other state in play.
    if (qsizetype(rows.size()) - first < 2 * m_rows || !canJump()) {
        write(bytes.sliced(pos, end - pos));
        return end;
    }
    // The first line as it comes: it scrolls, so that the bottom row is blank in the pen the
    // run is written with.
    write(bytes.sliced(pos, firstLineEnd - pos));
    VTermScreenCell blank;
    vterm_screen_get_cell(m_screen, VTermPos{m_rows - 1, 0}, &blank);
    const TerminalScrollback::Pen pen = penOf(&blank);

    // What scrolling through the run would do: the screen's rows above the cursor, then all but
    // the last rows of the run go to the scrollback; those last rows stay on the screen, with the
    // cursor on a blank row below them.
    std::vector<VTermScreenCell> cells(static_cast<size_t>(m_cols));
    for (int r = 0; r < m_rows - 1; ++r) {
        for (int c = 0; c < m_cols; ++c)
            vterm_screen_get_cell(m_screen, VTermPos{r, c}, &cells[size_t(c)]);
        pushCells(m_cols, cells.data());
    }
    const qsizetype onScreen = qsizetype(rows.size()) - (m_rows - 1);
    for (qsizetype r = first; r < onScreen; ++r) {
        const Row &row = rows[size_t(r)];
        TerminalScrollback::Writer w = m_scrollback.append();
        w.appendLatin1(d + row.start, row.length, pen);
        w.appendBlanks(m_cols - row.length, pen);
    }
    m_scrollbackChanged = true;
    QByteArray screen("\x1b[H\x1b[2J"); // erased in the same pen, as a scroll erases
    for (qsizetype r = onScreen; r < qsizetype(rows.size()); ++r) {
        const Row &row = rows[size_t(r)];
        screen += "\x1b[" + QByteArray::number(r - onScreen + 1) + ";1H";
        screen.append(d + row.start, row.length);
    }
    screen += "\x1b[" + QByteArray::number(m_rows) + ";1H";
    vterm_input_write(m_vt, screen.constData(), size_t(screen.size()));
    return end;
}

bool TerminalScreen::canJump()
{
    if (m_altScreen || m_cols < 2 || !m_syntax.plain() || m_cursor != QPoint(0, m_rows - 1))
        return false;
    // The modes that change where plain text goes: autowrap on, no left/right margins, the
    // scrolling region the whole screen. libvterm answers the queries at once; the answers are
    // not the program's.
    const QByteArray programs = std::exchange(m_pendingInput, {});
    static constexpr char query[] = "\x1b[?7$p\x1b[?69$p\x1bP$qr\x1b\\";
    vterm_input_write(m_vt, query, sizeof query - 1);
    const QByteArray answer = std::exchange(m_pendingInput, programs);
    return answer == "\x1b[?7;1$y\x1b[?69;2$y\x1bP1$r1;" + QByteArray::number(m_rows) + "r\x1b\\";
}

TerminalScrollback::Pen TerminalScreen::penOf(const void *vtermCell) const
{
    const auto &cell = *static_cast<const VTermScreenCell *>(vtermCell);
    TerminalScrollback::Pen pen;
    pen.flags = 0;
    const auto rgb = [this](VTermColor c) {
        vterm_screen_convert_color_to_rgb(m_screen, &c);
        return qRgb(c.rgb.red, c.rgb.green, c.rgb.blue);
    };
    if (VTERM_COLOR_IS_DEFAULT_FG(&cell.fg))
        pen.flags |= TerminalScrollback::Pen::DefaultFg;
    else
        pen.fg = rgb(cell.fg);
    if (VTERM_COLOR_IS_DEFAULT_BG(&cell.bg))
        pen.flags |= TerminalScrollback::Pen::DefaultBg;
    else
        pen.bg = rgb(cell.bg);
    if (cell.attrs.bold)
        pen.flags |= TerminalScrollback::Pen::Bold;
    if (cell.attrs.italic)
        pen.flags |= TerminalScrollback::Pen::Italic;
    if (cell.attrs.underline)
        pen.flags |= TerminalScrollback::Pen::Underline;
    if (cell.attrs.strike)
        pen.flags |= TerminalScrollback::Pen::Strike;
    if (cell.attrs.reverse)
        pen.flags |= TerminalScrollback::Pen::Reverse;
    return pen;
}

void TerminalScreen::pushCells(int cols, const void *vtermCells)
{
    const auto *cells = static_cast<const VTermScreenCell *>(vtermCells);
    TerminalScrollback::Writer w = m_scrollback.append();
    TerminalScrollback::Pen pen;
    const VTermScreenCell *previous = nullptr;
    for (int c = 0; c < cols; ++c) {
        const VTermScreenCell &cell = cells[c];
        // Neighbours mostly share a look: converted once.
        if (!previous || std::memcmp(&previous->fg, &cell.fg, sizeof cell.fg) != 0
            || std::memcmp(&previous->bg, &cell.bg, sizeof cell.bg) != 0
            || previous->attrs.bold != cell.attrs.bold
            || previous->attrs.italic != cell.attrs.italic
            || previous->attrs.underline != cell.attrs.underline
            || previous->attrs.strike != cell.attrs.strike
            || previous->attrs.reverse != cell.attrs.reverse)
            pen = penOf(&cell);
        previous = &cell;
        const uint32_t first = cell.chars[0];
        if (first == uint32_t(-1)) { // the right half of a wide character
            w.append({}, 0, pen);
        } else if (first == 0) {
            w.append(u" ", 1, pen);
        } else if (first < 0xd800 && cell.chars[1] == 0) {
            const QChar ch{char16_t(first)};
            w.append(QStringView(&ch, 1), qMax(1, int(cell.width)), pen);
        } else {
            char32_t chars[VTERM_MAX_CHARS_PER_CELL];
            int n = 0;
            while (n < VTERM_MAX_CHARS_PER_CELL && cell.chars[n])
                chars[n] = char32_t(cell.chars[n]), ++n;
            w.append(QString::fromUcs4(chars, n), qMax(1, int(cell.width)), pen);
        }
    }
    m_scrollbackChanged = true;
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
    if (std::exchange(m_scrollbackChanged, false))
        Q_EMIT scrollbackChanged();
    Q_EMIT damaged(0, m_rows - 1);
}

void TerminalScreen::appendToScrollback(const Line &line)
{
    TerminalScrollback::Writer w = m_scrollback.append();
    for (const Cell &cell : line) {
        TerminalScrollback::Pen pen;
        pen.flags = 0;
        if (cell.fg == m_fg)
            pen.flags |= TerminalScrollback::Pen::DefaultFg;
        else
            pen.fg = cell.fg.rgb();
        if (cell.bg == m_bg)
            pen.flags |= TerminalScrollback::Pen::DefaultBg;
        else
            pen.bg = cell.bg.rgb();
        if (cell.bold)
            pen.flags |= TerminalScrollback::Pen::Bold;
        if (cell.italic)
            pen.flags |= TerminalScrollback::Pen::Italic;
        if (cell.underline)
            pen.flags |= TerminalScrollback::Pen::Underline;
        if (cell.strike)
            pen.flags |= TerminalScrollback::Pen::Strike;
        if (cell.reverse)
            pen.flags |= TerminalScrollback::Pen::Reverse;
        w.append(cell.text, cell.width, pen);
    }
}

void TerminalScreen::SyntaxTracker::scan(QByteArrayView bytes)
{
    for (const char byte : bytes) {
        const auto c = uchar(byte);
        if (state == State::Ground && c >= 0x20) {
            if (singleShift && c < 0x7f)
                singleShift = false; // it applied to this character
            continue;
        }
        if (c == 0x18 || c == 0x1a) { // CAN, SUB: the sequence is abandoned
            state = State::Ground;
            continue;
        }
        switch (state) {
        case State::Ground:
            if (c == 0x1b)
                state = State::Escape;
            else if (c == 0x0e) // SO
                gl = 1;
            else if (c == 0x0f) // SI
                gl = 0;
            break;
        case State::StringEscape:
            if (c == '\\') {
                state = State::Ground;
                break;
            }
            state = State::Escape;
            [[fallthrough]];
        case State::Escape:
            if (c < 0x20) // ESC again, or a control done meanwhile
                break;
            state = State::Ground;
            if (c == '[') {
                state = State::Csi;
            } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
                state = State::String;
            } else if (c >= '(' && c <= '/' && c != ',') { // G0-G3 designated
                designating = quint8(c >= '-' ? c - '-' + 1 : c - '(');
                state = State::Designate;
            } else if (c >= 0x20 && c < 0x30) {
                state = State::Intermediate;
            } else if (c == 'n' || c == 'o') { // LS2, LS3
                gl = quint8(c == 'n' ? 2 : 3);
            } else if (c == 'N' || c == 'O') { // SS2, SS3
                singleShift = true;
            } else if (c == 'c') { // RIS
                *this = {};
            }
            break;
        case State::Designate:
            if (c >= 0x20 && c < 0x30) {
                ascii[designating & 3] = false; // a set of more than one byte
            } else if (c == 0x1b) {
                state = State::Escape;
            } else if (c >= 0x30) {
                ascii[designating & 3] = c == 'B';
                state = State::Ground;
            }
            break;
        case State::Intermediate:
            if (c == 0x1b)
                state = State::Escape;
            else if (c >= 0x30)
                state = State::Ground;
            break;
        case State::Csi:
            if (c == 0x1b)
                state = State::Escape;
            else if (c >= 0x40 && c <= 0x7e)
                state = State::Ground;
            break;
        case State::String:
            if (c == 0x1b)
                state = State::StringEscape;
            else if (c == 0x07)
                state = State::Ground;
            break;
        }
    }
}

void TerminalScreen::reflow(int cols, int rows)
{
    // The screen's rows (down to the cursor or the last one with text) join the scrollback, all
    // of it is wrapped again at the new width on its stored form, and the last rows (with the
    // cursor) come back to the screen. The scrollback may hold a bigger screenful meanwhile.
    const auto trimmed = [this](Line l) {
        while (!l.isEmpty() && l.last().text == QLatin1String(" ") && l.last().bg == m_bg
               && !l.last().reverse)
            l.removeLast();
        return l;
    };
    int lastRow = m_cursor.y();
    for (int r = m_rows - 1; r > lastRow; --r) {
        if (!trimmed(line(r)).isEmpty()) {
            lastRow = r;
            break;
        }
    }
    const int limit = m_scrollback.limit();
    // Room for every cell of the screen on a row of its own (a width of 1), and a pad each.
    m_scrollback.setLimit(limit + (lastRow + 1) * (m_cols + 1) * 2);
    TerminalScrollback::Place cursor{m_scrollback.size() + m_cursor.y(), m_cursor.x()};
    for (int r = 0; r <= lastRow && r < m_rows; ++r)
        appendToScrollback(line(r));
    m_scrollback.rewrap(m_cols, cols, &cursor);

    // The last rows (with the cursor) on the screen, the rest in the scrollback.
    const int made = m_scrollback.size();
    int top = qMax(0, made - rows);
    if (cursor.line < top)
        top = int(cursor.line);
    QList<Line> onScreen;
    for (int r = top; r < made && r - top < rows; ++r)
        onScreen.append(m_scrollback.line(r, m_fg, m_bg));
    for (int r = top; r < made; ++r)
        m_scrollback.removeNewest();
    m_scrollback.setLimit(limit);
    const int cursorRow = int(cursor.line) - top;
    const int cursorCol = int(cursor.cell);
    m_cols = cols;
    m_rows = rows;
    m_reflowing = true;
    vterm_set_size(m_vt, rows, cols);
    m_reflowing = false;
    QByteArray out("[0m[H[2J");
    for (int r = 0; r < onScreen.size(); ++r) {
        out += "[" + QByteArray::number(r + 1) + ";1H";
        QByteArray pen;
        for (const Cell &cell : std::as_const(onScreen.at(r))) {
            if (cell.text.isEmpty())
                continue; // the right half of a wide character
            const QByteArray p = sgrOf(cell);
            if (p != pen) {
                out += p;
                pen = p;
            }
            out += cell.text.toUtf8();
        }
        out += "[0m";
    }
    out += "[" + QByteArray::number(cursorRow + 1) + ';' + QByteArray::number(cursorCol + 1) + 'H';
    vterm_input_write(m_vt, out.constData(), size_t(out.size()));
    vterm_screen_flush_damage(m_screen);
    m_scrollbackChanged = false;
    Q_EMIT scrollbackChanged();
    Q_EMIT damaged(0, m_rows - 1);
}

QByteArray TerminalScreen::sgrOf(const Cell &cell) const
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
    m_scrollbackChanged = false;
    m_syntax = {};
    resetEmulation();
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
        const int index = m_scrollback.size() + row;
        if (index < 0)
            return result;
        result = m_scrollback.line(index, m_fg, m_bg);
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
