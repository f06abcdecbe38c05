#pragma once

#include "ansiparser.h"

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringDecoder>

#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace Sandbox::Ui {

// The console's scrollback: lines of text with their formats, capped in lines and characters so
// that endless output neither grows memory without bound nor slows appends (the oldest lines go
// first). Lines are numbered from the first ever appended; lineNumber - firstLineNumber() is a
// line's index in the buffer.
//
// Output comes per channel (stdout, stderr) as raw bytes: each channel has its own UTF-8 decoder,
// ANSI parser and open line, so that a line cut between chunks is continued in place and the two
// channels never mix within a line. CR LF ends a line; a lone CR starts the line again (progress
// bars); TAB is expanded to the next multiple of 8; a line longer than maxLineLength() is broken.
//
// Built for floods: whole lines of printable ASCII are stored as they come, without decoding or
// parsing (a chunk's run of them copied into a block in one piece), and finished lines keep their
// characters (as UTF-8: one byte a character for ASCII) and formats in large blocks that many
// lines share (reused once all their lines are dropped), so that a line costs no allocation and
// the lines kept touch as little memory as they can.
class ConsoleBuffer final
{
public:
    enum class LineKind : quint8 { Stdout, Stderr, Command, Info, Error };
    enum class Channel : quint8 { Stdout, Stderr };

    struct Span
    {
        qint32 start = 0;
        qint32 length = 0;
        quint16 format = 0; // index into format(); 0 is the line's default
        bool operator==(const Span &other) const = default;
    };
    // A line as the buffer holds it.
    struct Line
    {
        QString text;
        // Only the runs with a non-default format, in order; valid until the buffer next changes.
        std::span<const Span> spans;
        LineKind kind = LineKind::Stdout;
    };

    static constexpr int DefaultMaxLines = 100000;
    static constexpr qint64 DefaultMaxChars = 16 * 1024 * 1024;
    static constexpr int DefaultMaxLineLength = 16384;

    explicit ConsoleBuffer(int maxLines = DefaultMaxLines, qint64 maxChars = DefaultMaxChars);
    ~ConsoleBuffer();

    void setLimits(int maxLines, qint64 maxChars);
    int maxLines() const { return m_maxLines; }
    qint64 maxChars() const { return m_maxChars; }
    int maxLineLength() const { return m_maxLineLength; }
    void setMaxLineLength(int chars) { m_maxLineLength = qMax(80, chars); }

    void appendOutput(Channel channel, QByteArrayView bytes);
    // Ends the open lines of both channels and flushes their decoders (end of a command).
    void finishOutput();
    // A whole line of our own (the echoed command, an exit code, a notice).
    void appendLine(LineKind kind, const QString &text);
    void clear();

    qint64 firstLineNumber() const { return m_firstLine; }
    qint64 lineCount() const { return qint64(m_lines.size()); }
    qint64 endLineNumber() const { return m_firstLine + lineCount(); }
    // Every line ever appended, including the ones dropped since.
    qint64 totalLines() const { return endLineNumber(); }
    qint64 droppedLines() const { return m_firstLine; }
    qint64 charCount() const { return m_chars; }
    // The longest line seen since the last clear() (for the horizontal scroll range).
    int widestLine() const { return m_widest; }
    Line line(qint64 index) const;
    const TextFormat &format(quint16 index) const { return m_formats[index]; }
    // Bumped by every change (for views that repaint lazily).
    quint64 revision() const { return m_revision; }

    // The text of lines [from, to) (buffer indexes), joined by '\n'.
    QString text(qint64 from, qint64 to) const;

private:
    struct ChannelState
    {
        QStringDecoder decoder{QStringDecoder::Utf8};
        AnsiParser parser;
        QString text;            // the open line's characters
        std::vector<Span> spans; // and its formats
        qint64 openLine = -1;    // line number of this channel's unfinished line, -1 for none
        bool pendingCr = false;
        bool decoderIdle = true; // the decoder holds no part of a UTF-8 sequence
    };
    // Characters and spans of finished lines, filled in order.
    struct Block
    {
        QByteArray text; // UTF-8, reserved at its size: appending never moves it
        std::vector<Span> spans;
        qint64 lines = 0; // lines kept here that are still in the buffer
    };
    struct Record
    {
        qint64 block = -1; // the block (its number) holding a finished line's text; -1 for none
        qint32 offset = 0; // in the block's bytes
        qint32 bytes = 0;
        qint32 length = 0; // in UTF-16 units, as the caps count
        qint32 spanOffset = 0;
        qint32 spanCount = 0;
        LineKind kind = LineKind::Stdout;
        qint8 open = -1; // the channel whose open line this is (its text is there), -1 for none
    };

    // The lines' records, oldest first: a ring that grows by doubling and never shrinks until
    // clear(), so that a flood that adds lines at one end and drops them at the other allocates
    // nothing (a std::deque allocates and frees a node every dozen lines: a tenth of a flood).
    class Records final
    {
    public:
        size_t size() const { return m_count; }
        Record &operator[](size_t i) { return m_ring[(m_head + i) & (m_ring.size() - 1)]; }
        const Record &operator[](size_t i) const
        {
            return m_ring[(m_head + i) & (m_ring.size() - 1)];
        }
        const Record &front() const { return m_ring[m_head]; }
        void push_back(const Record &r)
        {
            if (m_count == m_ring.size())
                grow();
            m_ring[(m_head + m_count) & (m_ring.size() - 1)] = r;
            ++m_count;
        }
        void pop_front()
        {
            m_head = (m_head + 1) & (m_ring.size() - 1);
            --m_count;
        }
        void clear()
        {
            m_ring = std::vector<Record>();
            m_head = m_count = 0;
        }

    private:
        void grow();
        std::vector<Record> m_ring; // its size a power of two (or 0)
        size_t m_head = 0;
        size_t m_count = 0;
    };

    ChannelState &state(Channel channel) { return m_channels[int(channel)]; }
    static LineKind kindOf(Channel channel);
    void decodeAndFeed(Channel channel, QByteArrayView bytes);
    void feed(Channel channel, QStringView text);
    void openLine(Channel channel);
    void appendText(Channel channel, QStringView text, const TextFormat &format);
    void clearOpenLine(ChannelState &s);
    void endLine(Channel channel);
    // Put a finished line's text and spans in a block.
    void store(Record &record, QStringView text, std::span<const Span> spans);
    // Stores the whole lines of printable ASCII that start at `p`; returns where they stop.
    const char *appendPlainLines(Channel channel, const char *p, const char *end);
    void storeSpans(Record &record, Block &block, std::span<const Span> spans);
    void releaseBlocks();
    Block &blockFor(qsizetype bytes);
    quint16 formatIndex(const TextFormat &format);
    void trim();

    Records m_lines;
    std::deque<std::unique_ptr<Block>> m_blocks; // the newest last; m_firstBlock is the front's
    std::vector<std::unique_ptr<Block>> m_spareBlocks; // freed, for the next ones
    qint64 m_firstBlock = 0;
    qint64 m_firstLine = 0;
    qint64 m_chars = 0;
    int m_maxLines;
    qint64 m_maxChars;
    int m_maxLineLength = DefaultMaxLineLength;
    int m_widest = 0;
    quint64 m_revision = 0;
    ChannelState m_channels[2];
    QList<TextFormat> m_formats{TextFormat{}};
    QHash<TextFormat, quint16> m_formatIndex;
    QList<AnsiParser::Token> m_tokens; // reused between feeds
    QString m_decoded;                 // reused between feeds
    QStringEncoder m_encoder{QStringEncoder::Utf8, QStringEncoder::Flag::Stateless};
};

} // namespace Sandbox::Ui
