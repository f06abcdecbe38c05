#pragma once

#include "terminalcell.h"

#include <QRgb>

#include <vector>

namespace Sandbox::Ui {

// The lines that scrolled off the top of a terminal's main screen, oldest first, bounded in lines.
// Compact: a line keeps its characters in one string and its looks in runs of cells, and a ring
// reuses the storage of the line it drops for the one it adds, so that output streaming past at
// hundreds of thousands of lines a second costs no allocation per cell (nor, once full, per line).
// Default colours are kept as such: old lines follow the palette the view has now.
class TerminalScrollback final
{
public:
    // The look of a run of cells.
    struct Pen
    {
        enum Flag : quint8 {
            Bold = 1,
            Italic = 2,
            Underline = 4,
            Strike = 8,
            Reverse = 16,
            DefaultFg = 32, // fg is the terminal's default foreground
            DefaultBg = 64, // bg is the terminal's default background
        };
        QRgb fg = 0;
        QRgb bg = 0;
        quint8 flags = DefaultFg | DefaultBg;
        bool operator==(const Pen &other) const = default;
    };

private:
    struct Run
    {
        qint32 cells = 0;
        Pen pen;
    };
    struct StoredLine
    {
        QString text;    // the cells' characters, in order
        QList<Run> runs; // consecutive cells of one look
        qsizetype cells = 0;
        bool complex = false; // a cell that is not one UTF-16 unit of width 1 was added
        // Empty while every cell is one UTF-16 unit of width 1 (the common case); else, per cell,
        // where its text starts (<< 2) and its width (0 for a wide character's right half).
        QList<quint32> layout;
    };

public:
    // Appends cells to the newest line. Trailing blanks on the default background are dropped
    // when the writer goes, as they are from every line kept.
    class Writer final
    {
    public:
        ~Writer();
        Writer(const Writer &) = delete;
        Writer &operator=(const Writer &) = delete;
        // One cell: `text` is empty for the right half of a wide character.
        void append(QStringView text, int width, const Pen &pen);
        // `n` cells of one Latin-1 character each, of width 1 (e.g. printable ASCII).
        void appendLatin1(const char *chars, qsizetype n, const Pen &pen);
        void appendBlanks(qsizetype n, const Pen &pen);
        // `text.size()` cells of one UTF-16 unit each, of width 1.
        void appendNarrow(QStringView text, const Pen &pen);

    private:
        friend class TerminalScrollback;
        explicit Writer(StoredLine &line)
            : m_line(line)
        {}
        void addCells(qsizetype n, const Pen &pen);
        StoredLine &m_line;
    };

    explicit TerminalScrollback(int limit);

    int limit() const { return m_limit; }
    void setLimit(int lines);
    int size() const { return int(m_count); }
    void clear();

    // A new newest line (the oldest goes when the limit is reached), filled through the writer.
    Writer append();
    // Line `index` (0 is the oldest), without its trailing blanks.
    TerminalLine line(int index, const QColor &defaultFg, const QColor &defaultBg) const;
    void removeNewest();

    // A cell's place: a line (0 is the oldest) and a cell in it, possibly past its end (a cursor
    // after a prompt).
    struct Place
    {
        qsizetype line = 0;
        qsizetype cell = 0;
    };
    // Wraps the lines again at `cols` columns, on the stored form (a resize after a flood of
    // output must not stall the window): lines of exactly `oldCols` cells continue on the next
    // one (a line that ends exactly at the edge is taken as wrapped), the newest ends its
    // logical line; each logical line is cut every `cols` cells, and a wide character that would
    // straddle two rows starts the next one (a blank of the default look before it). `place`
    // moves with the cell it names. The newest `limit()` rows are kept.
    void rewrap(int oldCols, int cols, Place *place);

private:
    const StoredLine &at(int index) const;
    static void join(StoredLine &into, const StoredLine &line);
    // Appends `line` cut into rows of `cols` cells; the cell where each row starts.
    QList<qsizetype> cut(const StoredLine &line, int cols);
    void linearize(); // the oldest line first in m_lines

    std::vector<StoredLine> m_lines; // a ring: m_count lines from m_first
    qsizetype m_first = 0;
    qsizetype m_count = 0;
    int m_limit;
    StoredLine m_discard; // written to when the limit is 0
};

} // namespace Sandbox::Ui
