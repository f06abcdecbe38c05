#include "consoleview.h"

#include "../common/uistyle.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QMenu>
#include <QPainter>
#include <QScrollBar>

namespace Sandbox::Ui {

namespace {
constexpr int kRefreshMs = 16; // a frame at 60 Hz
const QColor kBackground(0x1e, 0x1f, 0x22);
const QColor kSelection(0x26, 0x4f, 0x78);
} // namespace

ConsoleView::ConsoleView(QWidget *parent)
    : QAbstractScrollArea(parent)
{
    setFont(Style::monospaceFont());
    QPalette pal = viewport()->palette();
    pal.setColor(QPalette::Base, kBackground);
    pal.setColor(QPalette::Window, kBackground);
    viewport()->setPalette(pal);
    viewport()->setAutoFillBackground(true);
    viewport()->setCursor(Qt::IBeamCursor);
    setFocusPolicy(Qt::StrongFocus);
    setFrameShape(QFrame::NoFrame);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kRefreshMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &ConsoleView::refresh);
    updateMetrics();
}

ConsoleView::~ConsoleView() = default;

void ConsoleView::appendOutput(ConsoleBuffer::Channel channel, QByteArrayView bytes)
{
    m_buffer.appendOutput(channel, bytes);
    changed();
}

void ConsoleView::finishOutput()
{
    m_buffer.finishOutput();
    changed();
}

void ConsoleView::appendLine(ConsoleBuffer::LineKind kind, const QString &text)
{
    m_buffer.appendLine(kind, text);
    changed();
}

void ConsoleView::clear()
{
    m_buffer.clear();
    m_anchor = m_cursor = Pos{};
    m_topLine = m_buffer.firstLineNumber();
    m_follow = true;
    Q_EMIT copyAvailable(false);
    refresh();
}

void ConsoleView::changed()
{
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();
}

void ConsoleView::flushPendingUpdate()
{
    m_refreshTimer.stop();
    refresh();
}

void ConsoleView::refresh()
{
    updateScrollBars();
    if (m_follow)
        scrollToEnd();
    if (m_paintedRevision != m_buffer.revision())
        viewport()->update();
}

int ConsoleView::visibleLineCount() const
{
    return qMax(1, (viewport()->height() - m_margin) / m_lineHeight);
}

qint64 ConsoleView::firstVisibleLine() const
{
    return qMax<qint64>(0, m_topLine - m_buffer.firstLineNumber());
}

void ConsoleView::updateMetrics()
{
    for (QRawFont &raw : m_rawFonts)
        raw = QRawFont();
    const QFontMetrics fm(font());
    m_lineHeight = qMax(1, fm.height());
    m_ascent = fm.ascent();
    m_charWidth = qMax(1, fm.horizontalAdvance(u'M'));
    updateScrollBars();
}

void ConsoleView::updateScrollBars()
{
    m_adjusting = true;
    const qint64 first = m_buffer.firstLineNumber();
    if (m_topLine < first)
        m_topLine = first;
    const qint64 maxTop = qMax<qint64>(0, m_buffer.lineCount() - visibleLineCount());
    QScrollBar *v = verticalScrollBar();
    v->setRange(0, int(qMin<qint64>(maxTop, std::numeric_limits<int>::max())));
    v->setPageStep(visibleLineCount());
    v->setSingleStep(1);
    v->setValue(int(qMin<qint64>(m_topLine - first, maxTop)));
    m_topLine = first + v->value();

    QScrollBar *h = horizontalScrollBar();
    const int contentWidth = m_buffer.widestLine() * m_charWidth + 2 * m_margin;
    h->setRange(0, qMax(0, contentWidth - viewport()->width()));
    h->setPageStep(viewport()->width());
    h->setSingleStep(m_charWidth * 4);
    m_adjusting = false;
}

void ConsoleView::scrollToEnd()
{
    m_follow = true;
    const qint64 maxTop = qMax<qint64>(0, m_buffer.lineCount() - visibleLineCount());
    const qint64 top = m_buffer.firstLineNumber() + maxTop;
    if (top != m_topLine) {
        m_topLine = top;
        m_adjusting = true;
        verticalScrollBar()->setValue(int(maxTop));
        m_adjusting = false;
        viewport()->update();
    }
}

void ConsoleView::scrollContentsBy(int, int)
{
    if (m_adjusting)
        return;
    QScrollBar *v = verticalScrollBar();
    m_topLine = m_buffer.firstLineNumber() + v->value();
    m_follow = v->value() >= v->maximum();
    viewport()->update();
}

void ConsoleView::resizeEvent(QResizeEvent *event)
{
    QAbstractScrollArea::resizeEvent(event);
    updateScrollBars();
    if (m_follow)
        scrollToEnd();
}

void ConsoleView::changeEvent(QEvent *event)
{
    QAbstractScrollArea::changeEvent(event);
    if (event->type() == QEvent::FontChange)
        updateMetrics();
}

QColor ConsoleView::kindColor(ConsoleBuffer::LineKind kind) const
{
    switch (kind) {
    case ConsoleBuffer::LineKind::Stdout:
        return QColor(0xd4, 0xd4, 0xd4);
    case ConsoleBuffer::LineKind::Stderr:
        return QColor(0xf4, 0x87, 0x71);
    case ConsoleBuffer::LineKind::Command:
        return QColor(0x6c, 0xc6, 0xff);
    case ConsoleBuffer::LineKind::Info:
        return QColor(0x9d, 0xa5, 0xb4);
    case ConsoleBuffer::LineKind::Error:
        return QColor(0xff, 0x5f, 0x5f);
    }
    return Qt::white;
}

void ConsoleView::paintEvent(QPaintEvent *)
{
    QPainter p(viewport());
    p.fillRect(viewport()->rect(), kBackground);
    p.setFont(font());
    m_paintedRevision = m_buffer.revision();
    const qint64 firstIndex = firstVisibleLine();
    const qint64 end = qMin<qint64>(m_buffer.lineCount(), firstIndex + visibleLineCount() + 1);
    int y = m_margin / 2;
    for (qint64 i = firstIndex; i < end; ++i, y += m_lineHeight)
        drawLine(p, m_buffer.line(i), m_buffer.firstLineNumber() + i, y);
}

void ConsoleView::drawLine(QPainter &p, const ConsoleBuffer::Line &line, qint64 number, int y) const
{
    const int x0 = m_margin - horizontalScrollBar()->value();
    const QColor base = kindColor(line.kind);
    const QFontMetrics fm(p.font());
    const QString &text = line.text;

    // A thin marker on the left tells stderr and our own lines apart even without colour.
    if (line.kind != ConsoleBuffer::LineKind::Stdout) {
        QColor mark = base;
        mark.setAlpha(line.kind == ConsoleBuffer::LineKind::Stderr ? 200 : 120);
        p.fillRect(QRect(0, y, 3, m_lineHeight), mark);
    }

    // The selection behind the text.
    if (m_anchor.line >= 0 && !(m_anchor == m_cursor)) {
        const Pos a = qMin(m_anchor, m_cursor);
        const Pos b = qMax(m_anchor, m_cursor);
        if (number >= a.line && number <= b.line) {
            const int from = number == a.line ? a.column : 0;
            const int to = number == b.line ? b.column : int(text.size()) + 1;
            const int xa = x0 + fm.horizontalAdvance(text.left(from));
            const int xb = x0 + fm.horizontalAdvance(text.left(qMin<qsizetype>(to, text.size())))
                           + (to > text.size() ? m_charWidth / 2 : 0);
            p.fillRect(QRect(xa, y, qMax(1, xb - xa), m_lineHeight), kSelection);
        }
    }

    if (text.isEmpty())
        return;
    const bool bold = line.kind == ConsoleBuffer::LineKind::Command;
    QFont f = p.font();
    // `last`: nothing is drawn after this run, so that its width is needed only for a background
    // (measuring is shaping the text a second time: a third of painting a flood).
    const auto drawRun = [&](int start, int length, const TextFormat &fmt, int &x, bool last) {
        if (length <= 0)
            return;
        const QString run = text.mid(start, length);
        QColor fg = fmt.foreground ? QColor::fromRgba(fmt.foreground) : base;
        QColor bg = fmt.background ? QColor::fromRgba(fmt.background) : QColor();
        if (fmt.flags & TextFormat::Inverse) {
            const QColor oldFg = fg;
            fg = bg.isValid() ? bg : kBackground;
            bg = oldFg;
        }
        if (fmt.flags & TextFormat::Dim)
            fg.setAlpha(150);
        QFont runFont = f;
        runFont.setBold(bold || (fmt.flags & TextFormat::Bold));
        runFont.setItalic(fmt.flags & TextFormat::Italic);
        runFont.setUnderline(fmt.flags & TextFormat::Underline);
        runFont.setStrikeOut(fmt.flags & TextFormat::Strike);
        // Most runs are plain ASCII: drawn as glyphs, without shaping them (most of painting).
        QGlyphRun glyphs;
        qreal advance = 0;
        const bool ascii = asciiGlyphs(runFont, run, glyphs, advance);
        const int width = ascii                   ? qRound(advance)
                          : last && !bg.isValid() ? 0 // not needed: nothing comes after it
                                                  : fm.horizontalAdvance(run);
        if (bg.isValid())
            p.fillRect(QRect(x, y, width, m_lineHeight), bg);
        p.setPen(fg);
        if (ascii) {
            p.drawGlyphRun(QPointF(x, y + m_ascent), glyphs);
        } else {
            p.setFont(runFont);
            p.drawText(x, y + m_ascent, run);
        }
        x += width;
    };

    int x = x0;
    int pos = 0;
    const TextFormat plain;
    for (const ConsoleBuffer::Span &s : line.spans) {
        drawRun(pos, s.start - pos, plain, x, false);
        pos = s.start + s.length;
        drawRun(s.start, s.length, m_buffer.format(s.format), x, pos >= text.size());
        if (x > viewport()->width())
            break;
    }
    if (x <= viewport()->width())
        drawRun(pos, int(text.size()) - pos, plain, x, true);
    p.setFont(f);
}

bool ConsoleView::asciiGlyphs(const QFont &font, const QString &text, QGlyphRun &glyphs,
                              qreal &width) const
{
    for (const QChar c : text) {
        if (c.unicode() < 0x20 || c.unicode() > 0x7e)
            return false;
    }
    QRawFont &raw = m_rawFonts[(font.bold() ? 1 : 0) | (font.italic() ? 2 : 0)];
    if (!raw.isValid())
        raw = QRawFont::fromFont(font);
    if (!raw.isValid())
        return false;
    const QList<quint32> indexes = raw.glyphIndexesForString(text);
    if (indexes.size() != text.size() || indexes.contains(0))
        return false; // a character the font lacks: drawText() finds a fallback
    const QList<QPointF> advances = raw.advancesForGlyphIndexes(indexes);
    QList<QPointF> positions(indexes.size());
    qreal x = 0;
    for (qsizetype i = 0; i < indexes.size(); ++i) {
        positions[i] = QPointF(x, 0);
        x += advances[i].x();
    }
    glyphs.setRawFont(raw);
    glyphs.setGlyphIndexes(indexes);
    glyphs.setPositions(positions);
    glyphs.setUnderline(font.underline());
    glyphs.setStrikeOut(font.strikeOut());
    width = x;
    return true;
}

int ConsoleView::columnAt(const QString &text, int x) const
{
    const QFontMetrics fm(font());
    // Monospace: a good first guess, corrected for wide glyphs.
    int col = qBound(0, (x + m_charWidth / 2) / m_charWidth, int(text.size()));
    while (col > 0 && fm.horizontalAdvance(text.left(col)) - m_charWidth / 2 > x)
        --col;
    while (col < text.size() && fm.horizontalAdvance(text.left(col + 1)) - m_charWidth / 2 <= x)
        ++col;
    return col;
}

ConsoleView::Pos ConsoleView::posAt(const QPoint &point) const
{
    if (m_buffer.lineCount() == 0)
        return {};
    const qint64 index = qBound<qint64>(0,
                                        firstVisibleLine()
                                            + (point.y() - m_margin / 2) / m_lineHeight,
                                        m_buffer.lineCount() - 1);
    const QString text = m_buffer.line(index).text;
    const int x = point.x() - m_margin + horizontalScrollBar()->value();
    return Pos{m_buffer.firstLineNumber() + index, columnAt(text, x)};
}

void ConsoleView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton)
        return QAbstractScrollArea::mousePressEvent(event);
    m_anchor = m_cursor = posAt(event->position().toPoint());
    m_selecting = true;
    viewport()->update();
}

void ConsoleView::mouseMoveEvent(QMouseEvent *event)
{
    if (!m_selecting)
        return;
    m_cursor = posAt(event->position().toPoint());
    if (event->position().y() < 0)
        verticalScrollBar()->triggerAction(QAbstractSlider::SliderSingleStepSub);
    else if (event->position().y() > viewport()->height())
        verticalScrollBar()->triggerAction(QAbstractSlider::SliderSingleStepAdd);
    viewport()->update();
}

void ConsoleView::mouseReleaseEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton && m_selecting) {
        m_selecting = false;
        Q_EMIT copyAvailable(hasSelection());
        if (hasSelection() && QApplication::clipboard()->supportsSelection())
            QApplication::clipboard()->setText(selectedText(), QClipboard::Selection);
    }
}

void ConsoleView::mouseDoubleClickEvent(QMouseEvent *event)
{
    const Pos p = posAt(event->position().toPoint());
    if (p.line < m_buffer.firstLineNumber())
        return;
    const QString text = m_buffer.line(p.line - m_buffer.firstLineNumber()).text;
    const auto isWord = [](QChar c) {
        return c.isLetterOrNumber() || c == u'_' || c == u'-' || c == u'.' || c == u'/';
    };
    int a = qMin(p.column, int(text.size()));
    int b = a;
    while (a > 0 && isWord(text.at(a - 1)))
        --a;
    while (b < text.size() && isWord(text.at(b)))
        ++b;
    m_anchor = Pos{p.line, a};
    m_cursor = Pos{p.line, b};
    viewport()->update();
    Q_EMIT copyAvailable(hasSelection());
}

bool ConsoleView::hasSelection() const
{
    return m_anchor.line >= 0 && !(m_anchor == m_cursor);
}

QString ConsoleView::selectedText() const
{
    if (!hasSelection())
        return {};
    Pos a = qMin(m_anchor, m_cursor);
    const Pos b = qMax(m_anchor, m_cursor);
    const qint64 first = m_buffer.firstLineNumber();
    if (b.line < first)
        return {};
    if (a.line < first)
        a = Pos{first, 0};
    QString out;
    for (qint64 n = a.line; n <= b.line && n < m_buffer.endLineNumber(); ++n) {
        const QString text = m_buffer.line(n - first).text;
        const int from = n == a.line ? qMin(a.column, int(text.size())) : 0;
        const int to = n == b.line ? qMin(b.column, int(text.size())) : int(text.size());
        out += QStringView(text).mid(from, to - from);
        if (n != b.line)
            out += u'\n';
    }
    return out;
}

void ConsoleView::selectAll()
{
    if (m_buffer.lineCount() == 0)
        return;
    m_anchor = Pos{m_buffer.firstLineNumber(), 0};
    m_cursor = Pos{m_buffer.endLineNumber() - 1,
                   int(m_buffer.line(m_buffer.lineCount() - 1).text.size())};
    viewport()->update();
    Q_EMIT copyAvailable(hasSelection());
}

void ConsoleView::copy() const
{
    if (hasSelection())
        QApplication::clipboard()->setText(selectedText());
}

void ConsoleView::keyPressEvent(QKeyEvent *event)
{
    if (event->matches(QKeySequence::Copy)) {
        copy();
        return;
    }
    if (event->matches(QKeySequence::SelectAll)) {
        selectAll();
        return;
    }
    switch (event->key()) {
    case Qt::Key_Home:
        verticalScrollBar()->setValue(0);
        return;
    case Qt::Key_End:
        scrollToEnd();
        return;
    default:
        break;
    }
    QAbstractScrollArea::keyPressEvent(event);
}

void ConsoleView::contextMenuEvent(QContextMenuEvent *event)
{
    QMenu menu(this);
    QAction *copyAction = menu.addAction(tr("&Copy"), this, &ConsoleView::copy);
    copyAction->setShortcut(QKeySequence::Copy);
    copyAction->setEnabled(hasSelection());
    menu.addAction(tr("Select &All"), this, &ConsoleView::selectAll)
        ->setShortcut(QKeySequence::SelectAll);
    menu.addSeparator();
    menu.addAction(tr("C&lear"), this, &ConsoleView::clear);
    menu.addAction(tr("Scroll to &End"), this, &ConsoleView::scrollToEnd);
    menu.exec(event->globalPos());
}

} // namespace Sandbox::Ui
