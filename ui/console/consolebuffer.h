#pragma once

#include "ansiparser.h"

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringDecoder>

#include <deque>

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
    };
    struct Line
    {
        QString text;
        QList<Span> spans; // only the runs with a non-default format, in order
        LineKind kind = LineKind::Stdout;
    };

    static constexpr int DefaultMaxLines = 100000;
    static constexpr qint64 DefaultMaxChars = 16 * 1024 * 1024;
    static constexpr int DefaultMaxLineLength = 16384;

    explicit ConsoleBuffer(int maxLines = DefaultMaxLines, qint64 maxChars = DefaultMaxChars);

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
    const Line &line(qint64 index) const { return m_lines[size_t(index)]; }
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
        qint64 openLine = -1; // line number of this channel's unfinished line, -1 for none
        bool pendingCr = false;
    };

    ChannelState &state(Channel channel) { return m_channels[int(channel)]; }
    void feed(Channel channel, QStringView text);
    Line *openLine(Channel channel, bool create);
    void appendText(Channel channel, QStringView text, const TextFormat &format);
    void endLine(Channel channel);
    quint16 formatIndex(const TextFormat &format);
    void pushLine(Line &&line);
    void trim();

    std::deque<Line> m_lines;
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
};

} // namespace Sandbox::Ui
