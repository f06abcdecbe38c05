#include "terminalscrollback.h"

#include <algorithm>

namespace Sandbox::Ui {

namespace {
constexpr quint32 kWidthMask = 3;
constexpr int kStartShift = 2;
} // namespace

void TerminalScrollback::Writer::addCells(qsizetype n, const Pen &pen)
{
    if (!m_line.runs.isEmpty() && m_line.runs.last().pen == pen)
        m_line.runs.last().cells += qint32(n);
    else
        m_line.runs.append(Run{qint32(n), pen});
    m_line.cells += n;
}

void TerminalScrollback::Writer::append(QStringView text, int width, const Pen &pen)
{
    const bool simple = width == 1 && text.size() == 1;
    if (!simple && !m_line.complex) {
        m_line.complex = true;
        m_line.layout.reserve(m_line.cells + 1);
        for (qsizetype i = 0; i < m_line.cells; ++i)
            m_line.layout.append(quint32(i) << kStartShift | 1);
    }
    if (m_line.complex)
        m_line.layout.append(quint32(m_line.text.size()) << kStartShift
                             | (quint32(width) & kWidthMask));
    m_line.text.append(text);
    addCells(1, pen);
}

void TerminalScrollback::Writer::appendLatin1(const char *chars, qsizetype n, const Pen &pen)
{
    if (n <= 0)
        return;
    if (m_line.complex) {
        for (qsizetype i = 0; i < n; ++i)
            m_line.layout.append(quint32(m_line.text.size() + i) << kStartShift | 1);
    }
    m_line.text.append(QLatin1String(chars, n));
    addCells(n, pen);
}

void TerminalScrollback::Writer::appendBlanks(qsizetype n, const Pen &pen)
{
    if (n <= 0)
        return;
    if (m_line.complex) {
        for (qsizetype i = 0; i < n; ++i)
            m_line.layout.append(quint32(m_line.text.size() + i) << kStartShift | 1);
    }
    m_line.text.resize(m_line.text.size() + n, u' ');
    addCells(n, pen);
}

void TerminalScrollback::Writer::appendNarrow(QStringView text, const Pen &pen)
{
    if (text.isEmpty())
        return;
    if (m_line.complex) {
        for (qsizetype i = 0; i < text.size(); ++i)
            m_line.layout.append(quint32(m_line.text.size() + i) << kStartShift | 1);
    }
    m_line.text.append(text);
    addCells(text.size(), pen);
}

TerminalScrollback::Writer::~Writer()
{
    // Trailing blanks on the default background (not reversed) are not kept.
    StoredLine &l = m_line;
    const auto cellText = [&l](qsizetype cell) {
        if (!l.complex)
            return QStringView(l.text).mid(cell, 1);
        const qsizetype start = l.layout.at(cell) >> kStartShift;
        const qsizetype end = cell + 1 < l.cells ? l.layout.at(cell + 1) >> kStartShift
                                                 : l.text.size();
        return QStringView(l.text).mid(start, end - start);
    };
    while (!l.runs.isEmpty()) {
        Run &run = l.runs.last();
        if (!(run.pen.flags & Pen::DefaultBg) || (run.pen.flags & Pen::Reverse))
            return;
        qint32 blanks = 0;
        while (blanks < run.cells && cellText(l.cells - 1 - blanks) == u' ')
            ++blanks;
        if (blanks == 0)
            return;
        const qsizetype keep = l.cells - blanks;
        l.text.truncate(l.complex ? qsizetype(l.layout.at(keep) >> kStartShift) : keep);
        if (l.complex)
            l.layout.resize(keep);
        l.cells = keep;
        run.cells -= blanks;
        if (run.cells > 0)
            return;
        l.runs.removeLast();
    }
}

TerminalScrollback::TerminalScrollback(int limit)
    : m_limit(qMax(0, limit))
{}

void TerminalScrollback::setLimit(int lines)
{
    m_limit = qMax(0, lines);
    if (m_count > m_limit) {
        m_first = (m_first + (m_count - m_limit)) % qsizetype(m_lines.size());
        m_count = m_limit;
    }
    linearize();
    if (qsizetype(m_lines.size()) > m_limit)
        m_lines.resize(size_t(m_limit));
}

void TerminalScrollback::clear()
{
    m_lines.clear();
    m_lines.shrink_to_fit();
    m_first = 0;
    m_count = 0;
}

TerminalScrollback::Writer TerminalScrollback::append()
{
    StoredLine *slot = &m_discard;
    const auto capacity = qsizetype(m_lines.size());
    if (m_limit == 0) {
        // Nothing is kept; the writer still needs a line.
    } else if (m_count < capacity) {
        slot = &m_lines[size_t((m_first + m_count) % capacity)];
        ++m_count;
    } else if (capacity < m_limit) {
        linearize();
        slot = &m_lines.emplace_back();
        ++m_count;
    } else {
        slot = &m_lines[size_t(m_first)]; // the oldest makes room
        m_first = (m_first + 1) % capacity;
    }
    // Emptied, keeping the storage for the new line.
    slot->text.resize(0);
    slot->runs.clear();
    slot->layout.clear();
    slot->cells = 0;
    slot->complex = false;
    return Writer(*slot);
}

const TerminalScrollback::StoredLine &TerminalScrollback::at(int index) const
{
    return m_lines[size_t((m_first + index) % qsizetype(m_lines.size()))];
}

TerminalLine TerminalScrollback::line(int index, const QColor &defaultFg,
                                      const QColor &defaultBg) const
{
    TerminalLine out;
    if (index < 0 || index >= m_count)
        return out;
    const StoredLine &l = at(index);
    out.reserve(l.cells);
    qsizetype cell = 0;
    for (const Run &run : l.runs) {
        TerminalCell look;
        look.fg = run.pen.flags & Pen::DefaultFg ? defaultFg : QColor::fromRgb(run.pen.fg);
        look.bg = run.pen.flags & Pen::DefaultBg ? defaultBg : QColor::fromRgb(run.pen.bg);
        look.bold = run.pen.flags & Pen::Bold;
        look.italic = run.pen.flags & Pen::Italic;
        look.underline = run.pen.flags & Pen::Underline;
        look.strike = run.pen.flags & Pen::Strike;
        look.reverse = run.pen.flags & Pen::Reverse;
        for (qint32 k = 0; k < run.cells; ++k, ++cell) {
            TerminalCell c = look;
            if (!l.complex) {
                c.text = QString(l.text.at(cell));
            } else {
                const qsizetype start = l.layout.at(cell) >> kStartShift;
                const qsizetype end = cell + 1 < l.cells ? l.layout.at(cell + 1) >> kStartShift
                                                         : l.text.size();
                c.text = l.text.mid(start, end - start);
                c.width = int(l.layout.at(cell) & kWidthMask);
            }
            out.append(std::move(c));
        }
    }
    return out;
}

void TerminalScrollback::removeNewest()
{
    if (m_count > 0)
        --m_count;
}

void TerminalScrollback::join(StoredLine &into, const StoredLine &line)
{
    if (line.complex && !into.complex) {
        into.complex = true;
        into.layout.reserve(into.cells + line.cells);
        for (qsizetype i = 0; i < into.cells; ++i)
            into.layout.append(quint32(i) << kStartShift | 1);
    }
    const auto base = quint32(into.text.size());
    if (into.complex) {
        for (qsizetype i = 0; i < line.cells; ++i)
            into.layout.append(line.complex ? line.layout.at(i) + (base << kStartShift)
                                            : (base + quint32(i)) << kStartShift | 1);
    }
    into.text.append(line.text);
    for (const Run &run : line.runs) {
        if (!into.runs.isEmpty() && into.runs.last().pen == run.pen)
            into.runs.last().cells += run.cells;
        else
            into.runs.append(run);
    }
    into.cells += line.cells;
}

QList<qsizetype> TerminalScrollback::cut(const StoredLine &line, int cols)
{
    QList<qsizetype> starts{0};
    if (!line.complex) {
        // One UTF-16 unit per cell: rows are slices of the text, each run's part of it at once.
        qsizetype cell = 0;
        qsizetype run = 0;
        qint32 usedOfRun = 0;
        do {
            Writer w = append();
            const qsizetype end = qMin(line.cells, cell + cols);
            while (cell < end) {
                const Run &r = line.runs.at(run);
                const qsizetype n = qMin<qsizetype>(end - cell, r.cells - usedOfRun);
                w.appendNarrow(QStringView(line.text).mid(cell, n), r.pen);
                cell += n;
                usedOfRun += qint32(n);
                if (usedOfRun == r.cells)
                    ++run, usedOfRun = 0;
            }
            if (cell < line.cells)
                starts.append(cell);
        } while (cell < line.cells);
        return starts;
    }
    qsizetype cell = 0;
    qsizetype run = 0;
    qint32 usedOfRun = 0;
    do {
        Writer w = append();
        qsizetype inRow = 0;
        bool carried = cell > 0; // the cell that did not fit the row before starts this one
        while (cell < line.cells) {
            const quint32 width = line.layout.at(cell) & kWidthMask;
            if (!carried) {
                if (width == 2 && inRow == cols - 1) {
                    w.appendBlanks(1, Pen{});
                    ++inRow;
                }
                if (inRow >= cols)
                    break;
            }
            carried = false;
            const qsizetype start = line.layout.at(cell) >> kStartShift;
            const qsizetype end = cell + 1 < line.cells ? line.layout.at(cell + 1) >> kStartShift
                                                        : line.text.size();
            w.append(QStringView(line.text).mid(start, end - start), int(width),
                     line.runs.at(run).pen);
            ++inRow;
            ++cell;
            if (++usedOfRun == line.runs.at(run).cells)
                ++run, usedOfRun = 0;
        }
        if (cell < line.cells)
            starts.append(cell);
    } while (cell < line.cells);
    return starts;
}

void TerminalScrollback::rewrap(int oldCols, int cols, Place *place)
{
    cols = qMax(1, cols);
    linearize();
    std::vector<StoredLine> old = std::move(m_lines);
    const qsizetype count = m_count;
    m_lines = {};
    m_first = 0;
    m_count = 0;
    qsizetype rowsMade = 0; // including those the limit dropped since
    qsizetype placeOffset = -1;
    StoredLine logical;
    for (qsizetype i = 0; i < count; ++i) {
        StoredLine &line = old[size_t(i)];
        if (place && i == place->line)
            placeOffset = logical.cells + place->cell;
        const bool full = line.cells >= oldCols;
        join(logical, line);
        line = {}; // its memory goes as the new rows come
        if (full && i + 1 < count)
            continue;
        const QList<qsizetype> starts = cut(logical, cols);
        if (placeOffset >= 0) {
            qsizetype k = starts.size() - 1;
            while (k > 0 && starts.at(k) > placeOffset)
                --k;
            qsizetype row = rowsMade + k;
            qsizetype cell = placeOffset - starts.at(k);
            if (cell >= cols) { // past the end of a full row: the next one
                row += cell / cols;
                cell %= cols;
            }
            for (qsizetype extra = rowsMade + starts.size(); extra <= row; ++extra) {
                Writer empty = append();
            }
            rowsMade = qMax(rowsMade + starts.size(), row + 1);
            place->line = row;
            place->cell = cell;
            placeOffset = -1;
        } else {
            rowsMade += starts.size();
        }
        logical = {};
    }
    // Rows are counted from the oldest kept.
    if (place)
        place->line -= rowsMade - m_count;
}

void TerminalScrollback::linearize()
{
    if (m_first == 0)
        return;
    std::rotate(m_lines.begin(), m_lines.begin() + m_first, m_lines.end());
    m_first = 0;
}

} // namespace Sandbox::Ui
