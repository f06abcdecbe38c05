#include "terminalview.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QFontDatabase>
#include <QInputMethodEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QtMath>

namespace Sandbox::Ui {

namespace {

constexpr int kRepaintMs = 16;
constexpr qsizetype kMaxPendingOutput = 1024 * 1024;
constexpr int kResizeSettleMs = 60;
constexpr int kMargin = 2;

std::optional<TerminalScreen::Key> keyOf(int qtKey)
{
    using K = TerminalScreen::Key;
    switch (qtKey) {
    case Qt::Key_Return:
    case Qt::Key_Enter:
        return K::Enter;
    case Qt::Key_Tab:
    case Qt::Key_Backtab:
        return K::Tab;
    case Qt::Key_Backspace:
        return K::Backspace;
    case Qt::Key_Escape:
        return K::Escape;
    case Qt::Key_Up:
        return K::Up;
    case Qt::Key_Down:
        return K::Down;
    case Qt::Key_Left:
        return K::Left;
    case Qt::Key_Right:
        return K::Right;
    case Qt::Key_Insert:
        return K::Insert;
    case Qt::Key_Delete:
        return K::Delete;
    case Qt::Key_Home:
        return K::Home;
    case Qt::Key_End:
        return K::End;
    case Qt::Key_PageUp:
        return K::PageUp;
    case Qt::Key_PageDown:
        return K::PageDown;
    default:
        break;
    }
    if (qtKey >= Qt::Key_F1 && qtKey <= Qt::Key_F12)
        return TerminalScreen::Key(int(K::F1) + (qtKey - Qt::Key_F1));
    return std::nullopt;
}

} // namespace

TerminalView::TerminalView(QWidget *parent)
    : QAbstractScrollArea(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_InputMethodEnabled);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    viewport()->setCursor(Qt::IBeamCursor);
    viewport()->setAutoFillBackground(false);
    m_font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    m_font.setStyleHint(QFont::TypeWriter);
    m_font.setKerning(false);

    m_repaint.setSingleShot(true);
    m_repaint.setInterval(kRepaintMs);
    connect(&m_repaint, &QTimer::timeout, this, [this] {
        updateScrollRange();
        viewport()->update();
    });
    m_resize.setSingleShot(true);
    m_resize.setInterval(kResizeSettleMs);
    connect(&m_resize, &QTimer::timeout, this, &TerminalView::applySize);

    connect(&m_screen, &TerminalScreen::input, this, &TerminalView::input);
    connect(&m_screen, &TerminalScreen::damaged, this, &TerminalView::scheduleRepaint);
    connect(&m_screen, &TerminalScreen::cursorMoved, this, &TerminalView::scheduleRepaint);
    connect(&m_screen, &TerminalScreen::scrollbackChanged, this, &TerminalView::scheduleRepaint);
    connect(&m_screen, &TerminalScreen::modesChanged, this, &TerminalView::scheduleRepaint);
    connect(&m_screen, &TerminalScreen::titleChanged, this, &TerminalView::titleChanged);
    connect(verticalScrollBar(), &QScrollBar::valueChanged, viewport(),
            qOverload<>(&QWidget::update));

    updateMetrics();
    updateColors();
}

TerminalView::~TerminalView() = default;

void TerminalView::updateMetrics()
{
    m_font.setPointSizeF(font().pointSizeF() > 0 ? font().pointSizeF() : m_font.pointSizeF());
    // Whole-pixel cells; the letter spacing makes a run of text advance exactly one cell a
    // character, so that runs drawn in one call stay on the grid.
    m_font.setLetterSpacing(QFont::AbsoluteSpacing, 0);
    const QFontMetricsF fm(m_font, viewport());
    const qreal advance = fm.horizontalAdvance(QLatin1Char('M'));
    m_cell = QSize(qMax(1, qCeil(advance)), qMax(1, qCeil(fm.height())));
    m_font.setLetterSpacing(QFont::AbsoluteSpacing, m_cell.width() - advance);
    m_ascent = qCeil(fm.ascent());
    verticalScrollBar()->setSingleStep(1);
}

void TerminalView::updateColors()
{
    // The terminal follows the application's palette: light text on dark, or dark on light.
    m_screen.setDefaultColors(palette().color(QPalette::Text), palette().color(QPalette::Base));
    viewport()->update();
}

void TerminalView::feed(QByteArrayView bytes)
{
    // The screen takes a batch at once (a long run of lines jumps instead of scrolling line by
    // line): what arrives until the event loop comes round goes in together.
    m_pendingOutput.append(bytes.data(), bytes.size());
    if (m_pendingOutput.size() >= kMaxPendingOutput) {
        flushOutput();
    } else if (!m_flushQueued) {
        m_flushQueued = true;
        QMetaObject::invokeMethod(this, &TerminalView::flushOutput, Qt::QueuedConnection);
    }
}

void TerminalView::flushOutput()
{
    m_flushQueued = false;
    if (!m_pendingOutput.isEmpty())
        m_screen.feed(std::exchange(m_pendingOutput, {}));
}

void TerminalView::reset(const QByteArray &modes)
{
    m_pendingOutput.clear(); // before the loss
    m_screen.reset();
    m_selStart = m_selEnd = {};
    m_selecting = false;
    if (!modes.isEmpty())
        m_screen.feed(modes);
    updateScrollRange();
    viewport()->update();
}

void TerminalView::scheduleRepaint()
{
    if (!m_repaint.isActive())
        m_repaint.start();
}

int TerminalView::scrolledBack() const
{
    return verticalScrollBar()->maximum() - verticalScrollBar()->value();
}

void TerminalView::scrollToBottom()
{
    verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

void TerminalView::updateScrollRange()
{
    QScrollBar *bar = verticalScrollBar();
    const int lines = m_screen.altScreen() ? 0 : m_screen.scrollbackLines();
    const int back = scrolledBack();
    const int grown = lines - m_lastScrollback;
    m_lastScrollback = lines;
    bar->setRange(0, lines);
    bar->setPageStep(m_screen.rows());
    // At the bottom: follow the output. Scrolled back: keep the same lines in view.
    bar->setValue(back == 0 ? lines : qBound(0, lines - back - qMax(0, grown), lines));
}

void TerminalView::resizeEvent(QResizeEvent *event)
{
    QAbstractScrollArea::resizeEvent(event);
    m_resize.start();
}

void TerminalView::applySize()
{
    flushOutput();
    const int cols = qMax(2, (viewport()->width() - 2 * kMargin) / m_cell.width());
    const int rows = qMax(1, (viewport()->height() - 2 * kMargin) / m_cell.height());
    if (cols == m_screen.cols() && rows == m_screen.rows())
        return;
    m_screen.resize(cols, rows);
    updateScrollRange();
    viewport()->update();
    Q_EMIT sizeChanged(cols, rows);
}

void TerminalView::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange)
        updateColors();
    if (event->type() == QEvent::FontChange) {
        updateMetrics();
        m_resize.start();
    }
    QAbstractScrollArea::changeEvent(event);
}

bool TerminalView::focusNextPrevChild(bool)
{
    return false; // Tab belongs to the program (completion)
}

bool TerminalView::event(QEvent *event)
{
    // Shortcuts of the window must not take keys the program needs (Ctrl+W, Ctrl+R, ...).
    if (event->type() == QEvent::ShortcutOverride) {
        auto *key = static_cast<QKeyEvent *>(event);
        const bool copyPaste = key->modifiers() == (Qt::ControlModifier | Qt::ShiftModifier)
                               && (key->key() == Qt::Key_C || key->key() == Qt::Key_V);
        if (!copyPaste && (key->modifiers() & (Qt::ControlModifier | Qt::AltModifier))) {
            event->accept();
            return true;
        }
    }
    return QAbstractScrollArea::event(event);
}

QPoint TerminalView::cellAt(const QPoint &pos) const
{
    const int col = qBound(0, (pos.x() - kMargin) / m_cell.width(), m_screen.cols() - 1);
    const int row = qBound(0, (pos.y() - kMargin) / m_cell.height(), m_screen.rows() - 1);
    return QPoint(col, row - scrolledBack());
}

bool TerminalView::isSelected(int line, int col) const
{
    QPoint a = m_selStart, b = m_selEnd;
    if (b.y() < a.y() || (b.y() == a.y() && b.x() < a.x()))
        std::swap(a, b);
    if (a == b)
        return false;
    if (line < a.y() || line > b.y())
        return false;
    if (line == a.y() && col < a.x())
        return false;
    if (line == b.y() && col >= b.x())
        return false;
    return true;
}

QString TerminalView::selectedText() const
{
    QPoint a = m_selStart, b = m_selEnd;
    if (b.y() < a.y() || (b.y() == a.y() && b.x() < a.x()))
        std::swap(a, b);
    if (a == b)
        return {};
    return m_screen.text(a, QPoint(b.x() - 1, b.y()));
}

void TerminalView::copy()
{
    const QString text = selectedText();
    if (!text.isEmpty())
        QGuiApplication::clipboard()->setText(text);
}

void TerminalView::paste()
{
    flushOutput();
    const QString text = QGuiApplication::clipboard()->text();
    if (text.isEmpty())
        return;
    scrollToBottom();
    m_screen.paste(text);
}

void TerminalView::paintEvent(QPaintEvent *)
{
    flushOutput();
    QPainter p(viewport());
    const QColor defaultBg = m_screen.defaultBackground();
    p.fillRect(viewport()->rect(), defaultBg);
    const QColor selectionBg = palette().color(QPalette::Highlight);
    const QColor selectionFg = palette().color(QPalette::HighlightedText);
    const int back = scrolledBack();
    QFont bold = m_font;
    bold.setBold(true);

    for (int row = 0; row < m_screen.rows(); ++row) {
        const int line = row - back;
        const TerminalScreen::Line cells = m_screen.line(line);
        const int y = kMargin + row * m_cell.height();
        // Backgrounds, then text in runs of the same look.
        int col = 0;
        while (col < cells.size()) {
            const auto &cell = cells.at(col);
            QColor fg = cell.reverse ? cell.bg : cell.fg;
            QColor bg = cell.reverse ? cell.fg : cell.bg;
            if (isSelected(line, col)) {
                fg = selectionFg;
                bg = selectionBg;
            }
            int end = col + 1;
            QString text = cell.text;
            while (end < cells.size()) {
                const auto &next = cells.at(end);
                const bool selected = isSelected(line, end);
                if (selected != isSelected(line, col) || next.fg != cell.fg || next.bg != cell.bg
                    || next.bold != cell.bold || next.italic != cell.italic
                    || next.underline != cell.underline || next.strike != cell.strike
                    || next.reverse != cell.reverse || next.width != 1 || cell.width != 1)
                    break;
                text += next.text;
                ++end;
            }
            // A wide character covers the cell after it too.
            if (cell.width == 2 && end < cells.size() && cells.at(end).width == 0)
                ++end;
            const QRect rect(kMargin + col * m_cell.width(), y, (end - col) * m_cell.width(),
                             m_cell.height());
            if (bg != defaultBg)
                p.fillRect(rect, bg);
            if (!text.trimmed().isEmpty()) {
                QFont f = cell.bold ? bold : m_font;
                f.setItalic(cell.italic);
                f.setUnderline(cell.underline);
                f.setStrikeOut(cell.strike);
                p.setFont(f);
                p.setPen(fg);
                if (cell.width == 1 && end - col == text.size()) {
                    p.drawText(QPoint(rect.x(), y + m_ascent), text);
                } else {
                    // Keep the grid: one cell at a time when a run holds wide characters.
                    p.drawText(QPoint(rect.x(), y + m_ascent), cell.text);
                }
            }
            col = end;
        }
    }

    // The cursor: a block when focused, an outline otherwise.
    const QPoint cursor = m_screen.cursor();
    const int cursorRow = cursor.y() + back;
    if (m_screen.cursorVisible() && cursorRow >= 0 && cursorRow < m_screen.rows()) {
        const QRect r(kMargin + cursor.x() * m_cell.width(), kMargin + cursorRow * m_cell.height(),
                      m_cell.width(), m_cell.height());
        const QColor c = m_screen.defaultForeground();
        if (m_focused) {
            p.fillRect(r, c);
            const auto cells = m_screen.line(cursor.y());
            if (cursor.x() < cells.size() && !cells.at(cursor.x()).text.trimmed().isEmpty()) {
                p.setFont(m_font);
                p.setPen(defaultBg);
                p.drawText(QPoint(r.x(), r.y() + m_ascent), cells.at(cursor.x()).text);
            }
        } else {
            p.setPen(c);
            p.drawRect(r.adjusted(0, 0, -1, -1));
        }
    }
}

int TerminalView::modifiersOf(Qt::KeyboardModifiers modifiers) const
{
    int m = TerminalScreen::NoModifier;
    if (modifiers & Qt::ShiftModifier)
        m |= TerminalScreen::Shift;
    if (modifiers & Qt::AltModifier)
        m |= TerminalScreen::Alt;
    if (modifiers & Qt::ControlModifier)
        m |= TerminalScreen::Control;
    return m;
}

void TerminalView::keyPressEvent(QKeyEvent *event)
{
    flushOutput();
    const Qt::KeyboardModifiers mods = event->modifiers() & ~Qt::KeypadModifier;
    const int key = event->key();
    if (mods == (Qt::ControlModifier | Qt::ShiftModifier) && key == Qt::Key_C)
        return copy();
    if (mods == (Qt::ControlModifier | Qt::ShiftModifier) && key == Qt::Key_V)
        return paste();
    if (mods == Qt::ShiftModifier && key == Qt::Key_Insert)
        return paste();
    if (mods == Qt::ShiftModifier && (key == Qt::Key_PageUp || key == Qt::Key_PageDown)) {
        QScrollBar *bar = verticalScrollBar();
        bar->setValue(bar->value() + (key == Qt::Key_PageUp ? -1 : 1) * m_screen.rows());
        return;
    }
    scrollToBottom();
    int m = modifiersOf(mods);
    if (const auto k = keyOf(key)) {
        if (key == Qt::Key_Backtab)
            m |= TerminalScreen::Shift;
        m_screen.typeKey(*k, m);
        return;
    }
    // Ctrl+letter (and Ctrl+@[\]^_): libvterm makes the control character.
    if ((mods & Qt::ControlModifier) && key >= Qt::Key_A && key <= Qt::Key_Z) {
        m_screen.typeText(QString(QChar(u'a' + (key - Qt::Key_A))), m);
        return;
    }
    const QString text = event->text();
    if (text.isEmpty())
        return;
    if (text.size() == 1 && text.at(0).unicode() < 0x20) { // Ctrl+[, Ctrl+Space, ...
        Q_EMIT input(text.toLatin1());
        return;
    }
    // Shift is in the text already.
    m_screen.typeText(text, m & ~TerminalScreen::Shift & ~TerminalScreen::Control);
}

void TerminalView::inputMethodEvent(QInputMethodEvent *event)
{
    flushOutput();
    if (!event->commitString().isEmpty())
        m_screen.typeText(event->commitString());
    event->accept();
}

bool TerminalView::programTakesMouse(const QMouseEvent *event) const
{
    return m_screen.mouseMode() != TerminalScreen::MouseMode::None
           && !(event->modifiers() & Qt::ShiftModifier) && scrolledBack() == 0;
}

int TerminalView::mouseButtonOf(Qt::MouseButton button) const
{
    switch (button) {
    case Qt::LeftButton:
        return 1;
    case Qt::MiddleButton:
        return 2;
    case Qt::RightButton:
        return 3;
    default:
        return 0;
    }
}

void TerminalView::mousePressEvent(QMouseEvent *event)
{
    flushOutput();
    if (programTakesMouse(event)) {
        const QPoint c = cellAt(event->position().toPoint());
        if (const int b = mouseButtonOf(event->button())) {
            m_screen.mouseMove(c.y() + scrolledBack(), c.x(), modifiersOf(event->modifiers()));
            m_screen.mouseButton(b, true, modifiersOf(event->modifiers()));
            m_pressedButton = b;
        }
        return;
    }
    if (event->button() == Qt::LeftButton) {
        m_selStart = m_selEnd = cellAt(event->position().toPoint());
        m_selecting = true;
        viewport()->update();
    } else if (event->button() == Qt::MiddleButton) {
        const QString text = QGuiApplication::clipboard()->text(QClipboard::Selection);
        if (!text.isEmpty())
            m_screen.paste(text);
    }
}

void TerminalView::mouseMoveEvent(QMouseEvent *event)
{
    if (m_pressedButton
        || (programTakesMouse(event) && m_screen.mouseMode() == TerminalScreen::MouseMode::Move)) {
        const QPoint c = cellAt(event->position().toPoint());
        m_screen.mouseMove(c.y() + scrolledBack(), c.x(), modifiersOf(event->modifiers()));
        return;
    }
    if (m_selecting) {
        QPoint c = cellAt(event->position().toPoint());
        c.rx() += 1; // the cell under the mouse is in
        m_selEnd = c;
        viewport()->update();
    }
}

void TerminalView::mouseReleaseEvent(QMouseEvent *event)
{
    if (m_pressedButton) {
        m_screen.mouseButton(m_pressedButton, false, modifiersOf(event->modifiers()));
        m_pressedButton = 0;
        return;
    }
    if (m_selecting) {
        m_selecting = false;
        const QString text = selectedText();
        if (!text.isEmpty() && QGuiApplication::clipboard()->supportsSelection())
            QGuiApplication::clipboard()->setText(text, QClipboard::Selection);
        viewport()->update();
    }
}

void TerminalView::mouseDoubleClickEvent(QMouseEvent *event)
{
    if (programTakesMouse(event))
        return mousePressEvent(event);
    // A word: the run of non-blank characters under the mouse.
    const QPoint c = cellAt(event->position().toPoint());
    const TerminalScreen::Line cells = m_screen.line(c.y());
    const auto isWord = [&cells](int col) {
        return col >= 0 && col < cells.size() && !cells.at(col).text.trimmed().isEmpty();
    };
    if (!isWord(c.x()))
        return;
    int first = c.x(), last = c.x();
    while (isWord(first - 1))
        --first;
    while (isWord(last + 1))
        ++last;
    m_selStart = QPoint(first, c.y());
    m_selEnd = QPoint(last + 1, c.y());
    m_selecting = false;
    if (QGuiApplication::clipboard()->supportsSelection())
        QGuiApplication::clipboard()->setText(selectedText(), QClipboard::Selection);
    viewport()->update();
}

void TerminalView::wheelEvent(QWheelEvent *event)
{
    flushOutput();
    const int steps = event->angleDelta().y() / 120;
    if (steps == 0)
        return;
    if (m_screen.mouseMode() != TerminalScreen::MouseMode::None
        && !(event->modifiers() & Qt::ShiftModifier)) {
        const QPoint c = cellAt(event->position().toPoint());
        m_screen.mouseMove(c.y() + scrolledBack(), c.x());
        for (int i = 0; i < qAbs(steps); ++i) {
            m_screen.mouseButton(steps > 0 ? 4 : 5, true);
            m_screen.mouseButton(steps > 0 ? 4 : 5, false);
        }
        return;
    }
    if (m_screen.altScreen()) {
        // A full-screen program without the mouse (less, man): the wheel moves by lines.
        for (int i = 0; i < 3 * qAbs(steps); ++i)
            m_screen.typeKey(steps > 0 ? TerminalScreen::Key::Up : TerminalScreen::Key::Down);
        return;
    }
    QAbstractScrollArea::wheelEvent(event);
}

void TerminalView::focusInEvent(QFocusEvent *event)
{
    m_focused = true;
    viewport()->update();
    QAbstractScrollArea::focusInEvent(event);
}

void TerminalView::focusOutEvent(QFocusEvent *event)
{
    m_focused = false;
    viewport()->update();
    QAbstractScrollArea::focusOutEvent(event);
}

void TerminalView::contextMenuEvent(QContextMenuEvent *event)
{
    if (m_screen.mouseMode() != TerminalScreen::MouseMode::None
        && !(event->modifiers() & Qt::ShiftModifier))
        return;
    QMenu menu(this);
    QAction *copyAction = menu.addAction(tr("Copy"), this, &TerminalView::copy);
    copyAction->setShortcut(QKeySequence(tr("Ctrl+Shift+C")));
    copyAction->setEnabled(hasSelection());
    QAction *pasteAction = menu.addAction(tr("Paste"), this, &TerminalView::paste);
    pasteAction->setShortcut(QKeySequence(tr("Ctrl+Shift+V")));
    pasteAction->setEnabled(!QGuiApplication::clipboard()->text().isEmpty());
    menu.exec(event->globalPos());
}

} // namespace Sandbox::Ui
