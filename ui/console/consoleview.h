#pragma once

#include "consolebuffer.h"

#include <QAbstractScrollArea>
#include <QGlyphRun>
#include <QRawFont>
#include <QTimer>

namespace Sandbox::Ui {

// Shows a ConsoleBuffer: paints only the visible lines, so that its cost does not depend on how
// much output there is; repaints at most every 16 ms however fast output comes; follows the end
// while the view is scrolled to the bottom and keeps the lines in view still otherwise (also
// while old lines are dropped from the top). Mouse selection, Ctrl+C, Ctrl+A.
class ConsoleView final : public QAbstractScrollArea
{
    Q_OBJECT

public:
    explicit ConsoleView(QWidget *parent = nullptr);
    ~ConsoleView() override;

    ConsoleBuffer &buffer() { return m_buffer; }
    const ConsoleBuffer &buffer() const { return m_buffer; }

    void appendOutput(ConsoleBuffer::Channel channel, QByteArrayView bytes);
    void finishOutput();
    void appendLine(ConsoleBuffer::LineKind kind, const QString &text);
    void clear();

    // Whether new output scrolls into view (true while the view is at the bottom).
    bool isFollowing() const { return m_follow; }
    void scrollToEnd();
    // The buffer index of the first line shown.
    qint64 firstVisibleLine() const;
    int visibleLineCount() const;

    QString selectedText() const;
    bool hasSelection() const;
    void selectAll();
    void copy() const;

    // Applies pending changes now (scroll range, following) instead of at the next refresh.
    void flushPendingUpdate();

Q_SIGNALS:
    void copyAvailable(bool available);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    struct Pos
    {
        qint64 line = -1; // line number (not buffer index)
        int column = 0;
        bool operator<(const Pos &o) const
        {
            return line < o.line || (line == o.line && column < o.column);
        }
        bool operator==(const Pos &o) const = default;
    };

    void changed();
    void refresh();
    void updateMetrics();
    void updateScrollBars();
    Pos posAt(const QPoint &point) const;
    int columnAt(const QString &text, int x) const;
    QColor kindColor(ConsoleBuffer::LineKind kind) const;
    void drawLine(QPainter &p, const ConsoleBuffer::Line &line, qint64 number, int y) const;
    // The glyphs of a run of printable ASCII in `font`, placed by their advances, without
    // shaping (none is needed: each character is one glyph); false if the font lacks one.
    bool asciiGlyphs(const QFont &font, const QString &text, QGlyphRun &glyphs, qreal &width) const;

    ConsoleBuffer m_buffer;
    mutable QRawFont m_rawFonts[4]; // by bold | italic << 1, made when first drawn in
    QTimer m_refreshTimer;
    quint64 m_paintedRevision = 0;
    qint64 m_topLine = 0; // line number of the first visible line
    bool m_follow = true;
    bool m_adjusting = false;
    int m_lineHeight = 16;
    int m_ascent = 12;
    int m_charWidth = 8;
    int m_margin = 6;
    Pos m_anchor;
    Pos m_cursor;
    bool m_selecting = false;
};

} // namespace Sandbox::Ui
