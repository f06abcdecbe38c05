#include "consolebuffer.h"

namespace Sandbox::Ui {

namespace {
constexpr int kMaxFormats = 4096; // beyond that, new formats fall back to the default
constexpr int kTabWidth = 8;
} // namespace

ConsoleBuffer::ConsoleBuffer(int maxLines, qint64 maxChars)
    : m_maxLines(qMax(1, maxLines))
    , m_maxChars(qMax<qint64>(1024, maxChars))
{
    m_formatIndex.insert(TextFormat{}, 0);
}

void ConsoleBuffer::setLimits(int maxLines, qint64 maxChars)
{
    m_maxLines = qMax(1, maxLines);
    m_maxChars = qMax<qint64>(1024, maxChars);
    trim();
    ++m_revision;
}

void ConsoleBuffer::appendOutput(Channel channel, QByteArrayView bytes)
{
    if (bytes.isEmpty())
        return;
    const QString text = state(channel).decoder.decode(bytes);
    feed(channel, text);
}

void ConsoleBuffer::feed(Channel channel, QStringView text)
{
    ChannelState &s = state(channel);
    m_tokens.clear();
    s.parser.feed(text, m_tokens);
    for (const AnsiParser::Token &t : std::as_const(m_tokens)) {
        if (s.pendingCr && t.type != AnsiParser::Token::Type::LineFeed) {
            // A lone CR: what follows overwrites the line from its start.
            if (Line *l = openLine(channel, false)) {
                m_chars -= l->text.size();
                l->text.clear();
                l->spans.clear();
            }
        }
        s.pendingCr = false;
        switch (t.type) {
        case AnsiParser::Token::Type::Text:
            appendText(channel, t.text, t.format);
            break;
        case AnsiParser::Token::Type::LineFeed:
            if (!openLine(channel, false))
                openLine(channel, true); // an empty line
            endLine(channel);
            break;
        case AnsiParser::Token::Type::CarriageReturn:
            s.pendingCr = true;
            break;
        case AnsiParser::Token::Type::Backspace:
            if (Line *l = openLine(channel, false); l && !l->text.isEmpty()) {
                l->text.chop(1);
                --m_chars;
                if (!l->spans.isEmpty()) {
                    Span &last = l->spans.last();
                    if (last.start + last.length > l->text.size()) {
                        last.length = qint32(l->text.size()) - last.start;
                        if (last.length <= 0)
                            l->spans.removeLast();
                    }
                }
            }
            break;
        }
    }
    m_tokens.clear();
    ++m_revision;
    trim();
}

ConsoleBuffer::Line *ConsoleBuffer::openLine(Channel channel, bool create)
{
    ChannelState &s = state(channel);
    if (s.openLine >= m_firstLine && s.openLine < endLineNumber())
        return &m_lines[size_t(s.openLine - m_firstLine)];
    s.openLine = -1;
    if (!create)
        return nullptr;
    Line line;
    line.kind = channel == Channel::Stderr ? LineKind::Stderr : LineKind::Stdout;
    pushLine(std::move(line));
    s.openLine = endLineNumber() - 1;
    return &m_lines.back();
}

void ConsoleBuffer::appendText(Channel channel, QStringView text, const TextFormat &format)
{
    const quint16 fmt = format.isDefault() ? 0 : formatIndex(format);
    qsizetype pos = 0;
    while (pos < text.size()) {
        Line *l = openLine(channel, true);
        const int room = m_maxLineLength - int(l->text.size());
        if (room <= 0) {
            endLine(channel); // break an overlong line
            continue;
        }
        // Take up to the next TAB (expanded here) within the room left.
        qsizetype end = text.indexOf(u'\t', pos);
        if (end < 0)
            end = text.size();
        const qsizetype take = qMin<qsizetype>(end - pos, room);
        const qint32 start = qint32(l->text.size());
        if (take > 0) {
            l->text.append(text.mid(pos, take));
            pos += take;
        } else if (end == pos) { // a TAB
            const int width = kTabWidth - int(l->text.size() % kTabWidth);
            l->text.append(QString(qMin(width, room), u' '));
            ++pos;
        }
        const qint32 added = qint32(l->text.size()) - start;
        m_chars += added;
        if (fmt != 0 && added > 0) {
            if (!l->spans.isEmpty() && l->spans.last().format == fmt
                && l->spans.last().start + l->spans.last().length == start)
                l->spans.last().length += added;
            else
                l->spans.append(Span{start, added, fmt});
        }
        m_widest = qMax(m_widest, int(l->text.size()));
    }
}

void ConsoleBuffer::endLine(Channel channel)
{
    state(channel).openLine = -1;
}

void ConsoleBuffer::finishOutput()
{
    for (int c = 0; c < 2; ++c) {
        const auto channel = Channel(c);
        ChannelState &s = state(channel);
        s.decoder.resetState(); // drops an incomplete UTF-8 sequence at the very end
        s.parser.reset();
        s.pendingCr = false;
        endLine(channel);
    }
    ++m_revision;
    trim();
}

void ConsoleBuffer::appendLine(LineKind kind, const QString &text)
{
    for (int c = 0; c < 2; ++c)
        endLine(Channel(c)); // our line comes after whatever was unfinished
    Line line;
    line.kind = kind;
    line.text = text.left(m_maxLineLength);
    m_chars += line.text.size();
    m_widest = qMax(m_widest, int(line.text.size()));
    pushLine(std::move(line));
    ++m_revision;
    trim();
}

void ConsoleBuffer::clear()
{
    m_firstLine = endLineNumber();
    m_lines.clear();
    m_chars = 0;
    m_widest = 0;
    for (int c = 0; c < 2; ++c)
        state(Channel(c)).openLine = -1;
    ++m_revision;
}

quint16 ConsoleBuffer::formatIndex(const TextFormat &format)
{
    const auto it = m_formatIndex.constFind(format);
    if (it != m_formatIndex.cend())
        return it.value();
    if (m_formats.size() >= kMaxFormats)
        return 0;
    const auto index = quint16(m_formats.size());
    m_formats.append(format);
    m_formatIndex.insert(format, index);
    return index;
}

void ConsoleBuffer::pushLine(Line &&line)
{
    m_lines.push_back(std::move(line));
}

void ConsoleBuffer::trim()
{
    while (m_lines.size() > 1 && (qint64(m_lines.size()) > m_maxLines || m_chars > m_maxChars)) {
        m_chars -= m_lines.front().text.size();
        m_lines.pop_front();
        ++m_firstLine;
    }
}

QString ConsoleBuffer::text(qint64 from, qint64 to) const
{
    from = qBound<qint64>(0, from, lineCount());
    to = qBound<qint64>(from, to, lineCount());
    QString out;
    for (qint64 i = from; i < to; ++i) {
        if (i > from)
            out += u'\n';
        out += m_lines[size_t(i)].text;
    }
    return out;
}

} // namespace Sandbox::Ui
