#include "consolebuffer.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace Sandbox::Ui {

namespace {
constexpr int kMaxFormats = 4096; // beyond that, new formats fall back to the default
constexpr int kTabWidth = 8;
constexpr qsizetype kBlockBytes = 128 * 1024;
constexpr qsizetype kKeptScratch = 1024 * 1024; // scratch strings above this are not kept

// Where the run of printable ASCII (0x20-0x7e) that starts at `p` ends: sixteen bytes at a time
// (SSE2, on every x86-64), else eight.
const char *plainRunEnd(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7f);
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        // Compared signed, bytes from 0x80 on are negative: below 0x20 too.
        const int bad = _mm_movemask_epi8(
            _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, del)));
        if (bad != 0)
            return p + __builtin_ctz(unsigned(bad));
        p += 16;
    }
#endif
    constexpr quint64 ones = 0x0101010101010101ULL;
    constexpr quint64 highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        quint64 w = 0;
        std::memcpy(&w, p, sizeof w);
        const quint64 below = (w - ones * 0x20) & ~w & highs; // a byte < 0x20
        const quint64 above = ((w + ones) | w) & highs;       // a byte > 0x7e
        if ((below | above) != 0)
            break;
        p += 8;
    }
    while (p < end && uchar(*p) >= 0x20 && uchar(*p) < 0x7f)
        ++p;
    return p;
}

void releaseIfLarge(QString &s)
{
    if (s.capacity() > kKeptScratch)
        s = QString();
    else
        s.resize(0); // keeps its capacity
}
} // namespace

void ConsoleBuffer::Records::grow()
{
    std::vector<Record> ring(qMax<size_t>(1024, 2 * m_ring.size()));
    for (size_t i = 0; i < m_count; ++i)
        ring[i] = (*this)[i];
    m_ring.swap(ring);
    m_head = 0;
}

ConsoleBuffer::ConsoleBuffer(int maxLines, qint64 maxChars)
    : m_maxLines(qMax(1, maxLines))
    , m_maxChars(qMax<qint64>(1024, maxChars))
{
    m_formatIndex.insert(TextFormat{}, 0);
}

ConsoleBuffer::~ConsoleBuffer() = default;

void ConsoleBuffer::setLimits(int maxLines, qint64 maxChars)
{
    m_maxLines = qMax(1, maxLines);
    m_maxChars = qMax<qint64>(1024, maxChars);
    trim();
    ++m_revision;
}

ConsoleBuffer::LineKind ConsoleBuffer::kindOf(Channel channel)
{
    return channel == Channel::Stderr ? LineKind::Stderr : LineKind::Stdout;
}

void ConsoleBuffer::appendOutput(Channel channel, QByteArrayView bytes)
{
    if (bytes.isEmpty())
        return;
    ChannelState &s = state(channel);
    const char *p = bytes.data();
    const char *const end = p + bytes.size();
    while (p < end) {
        if (s.openLine < 0 && s.decoderIdle && s.parser.isIdle()) {
            // Most output: whole lines of printable ASCII, which need no decoding or parsing.
            p = appendPlainLines(channel, p, end);
            if (p == end)
                break;
        }
        // Anything else, up to the end of its line, through the decoder and the parser.
        const auto *nl = static_cast<const char *>(std::memchr(p, '\n', size_t(end - p)));
        const char *const stop = nl ? nl + 1 : end;
        decodeAndFeed(channel, QByteArrayView(p, stop - p));
        // A line feed completes whatever sequence the decoder held.
        s.decoderIdle = nl != nullptr;
        p = stop;
    }
    ++m_revision;
    trim();
}

void ConsoleBuffer::decodeAndFeed(Channel channel, QByteArrayView bytes)
{
    ChannelState &s = state(channel);
    m_decoded.resize(s.decoder.requiredSpace(bytes.size()));
    const QChar *const end = s.decoder.appendToBuffer(m_decoded.data(), bytes);
    feed(channel, QStringView(m_decoded.constData(), end));
    releaseIfLarge(m_decoded);
}

void ConsoleBuffer::feed(Channel channel, QStringView text)
{
    ChannelState &s = state(channel);
    m_tokens.clear();
    s.parser.feed(text, m_tokens);
    for (const AnsiParser::Token &t : std::as_const(m_tokens)) {
        if (s.pendingCr && t.type != AnsiParser::Token::Type::LineFeed)
            clearOpenLine(s); // a lone CR: what follows overwrites the line from its start
        s.pendingCr = false;
        switch (t.type) {
        case AnsiParser::Token::Type::Text:
            appendText(channel, t.text, t.format);
            break;
        case AnsiParser::Token::Type::LineFeed:
            openLine(channel); // an empty line when none is open
            endLine(channel);
            break;
        case AnsiParser::Token::Type::CarriageReturn:
            s.pendingCr = true;
            break;
        case AnsiParser::Token::Type::Backspace:
            if (s.openLine >= 0 && !s.text.isEmpty()) {
                s.text.chop(1);
                --m_chars;
                if (!s.spans.empty()) {
                    Span &last = s.spans.back();
                    if (last.start + last.length > s.text.size()) {
                        last.length = qint32(s.text.size()) - last.start;
                        if (last.length <= 0)
                            s.spans.pop_back();
                    }
                }
            }
            break;
        }
    }
    m_tokens.clear();
}

void ConsoleBuffer::openLine(Channel channel)
{
    ChannelState &s = state(channel);
    if (s.openLine >= 0)
        return;
    Record r;
    r.kind = kindOf(channel);
    r.open = qint8(channel);
    m_lines.push_back(r);
    s.openLine = endLineNumber() - 1;
}

void ConsoleBuffer::clearOpenLine(ChannelState &s)
{
    if (s.openLine < 0)
        return;
    m_chars -= s.text.size();
    s.text.resize(0);
    s.spans.clear();
}

void ConsoleBuffer::appendText(Channel channel, QStringView text, const TextFormat &format)
{
    ChannelState &s = state(channel);
    const quint16 fmt = format.isDefault() ? 0 : formatIndex(format);
    qsizetype pos = 0;
    while (pos < text.size()) {
        openLine(channel);
        const int room = m_maxLineLength - int(s.text.size());
        if (room <= 0) {
            endLine(channel); // break an overlong line
            continue;
        }
        // Take up to the next TAB (expanded here) within the room left.
        qsizetype end = text.indexOf(u'\t', pos);
        if (end < 0)
            end = text.size();
        const qsizetype take = qMin<qsizetype>(end - pos, room);
        const auto start = qint32(s.text.size());
        if (take > 0) {
            s.text.append(text.mid(pos, take));
            pos += take;
        } else if (end == pos) { // a TAB
            const int width = kTabWidth - int(s.text.size() % kTabWidth);
            s.text.resize(s.text.size() + qMin(width, room), u' ');
            ++pos;
        }
        const qint32 added = qint32(s.text.size()) - start;
        m_chars += added;
        if (fmt != 0 && added > 0) {
            if (!s.spans.empty() && s.spans.back().format == fmt
                && s.spans.back().start + s.spans.back().length == start)
                s.spans.back().length += added;
            else
                s.spans.push_back(Span{start, added, fmt});
        }
        m_widest = qMax(m_widest, int(s.text.size()));
    }
}

void ConsoleBuffer::endLine(Channel channel)
{
    ChannelState &s = state(channel);
    if (s.openLine < 0)
        return;
    Record &r = m_lines[size_t(s.openLine - m_firstLine)];
    r.open = -1;
    store(r, QStringView(s.text), s.spans);
    releaseIfLarge(s.text);
    s.spans.clear();
    s.openLine = -1;
}

ConsoleBuffer::Block &ConsoleBuffer::blockFor(qsizetype bytes)
{
    if (!m_blocks.empty()) {
        Block &last = *m_blocks.back();
        if (last.text.capacity() - last.text.size() >= bytes)
            return last;
    }
    std::unique_ptr<Block> block;
    if (!m_spareBlocks.empty() && m_spareBlocks.back()->text.capacity() >= bytes) {
        block = std::move(m_spareBlocks.back());
        m_spareBlocks.pop_back();
    } else {
        block = std::make_unique<Block>();
        block->text.reserve(qMax(kBlockBytes, bytes));
    }
    if (m_blocks.empty())
        m_firstBlock = 0;
    m_blocks.push_back(std::move(block));
    return *m_blocks.back();
}

void ConsoleBuffer::storeSpans(Record &record, Block &block, std::span<const Span> spans)
{
    record.block = m_firstBlock + qint64(m_blocks.size()) - 1;
    record.spanOffset = qint32(block.spans.size());
    record.spanCount = qint32(spans.size());
    block.spans.insert(block.spans.end(), spans.begin(), spans.end());
    ++block.lines;
}

const char *ConsoleBuffer::appendPlainLines(Channel channel, const char *p, const char *end)
{
    // In the colours an earlier line may have left on.
    const TextFormat &format = state(channel).parser.currentFormat();
    const quint16 fmt = format.isDefault() ? 0 : formatIndex(format);
    // The lines go into the newest block as they lie in `bytes`, line feeds and all, copied in one
    // piece per block: [run, copied) is what the records point at, from `base` in the block.
    Block *block = nullptr;
    qint64 blockNumber = -1;
    const char *run = p;
    const char *copied = p;
    qsizetype base = 0;
    qsizetype room = 0; // in the block from `base` on
    while (p < end) {
        const char *const q = plainRunEnd(p, end);
        if (q == end || *q != '\n' || q - p > m_maxLineLength)
            break; // not a whole plain line: the caller takes it
        Record r;
        r.kind = kindOf(channel);
        r.length = r.bytes = qint32(q - p);
        if (q > p) {
            if (!block || q - run > room) {
                if (block)
                    block->text.append(QByteArrayView(run, copied - run));
                block = &blockFor(q - p);
                blockNumber = m_firstBlock + qint64(m_blocks.size()) - 1;
                run = p;
                base = block->text.size();
                room = block->text.capacity() - base;
            }
            r.offset = qint32(base + (p - run));
            r.block = blockNumber;
            r.spanOffset = qint32(block->spans.size());
            if (fmt != 0) { // as storeSpans(), without its calls: this is per line of a flood
                block->spans.push_back(Span{0, r.length, fmt});
                r.spanCount = 1;
            }
            ++block->lines;
            copied = q;
        }
        m_chars += r.length;
        m_widest = qMax(m_widest, r.length);
        m_lines.push_back(r);
        p = q + 1;
    }
    if (block)
        block->text.append(QByteArrayView(run, copied - run)); // within its capacity
    return p;
}

void ConsoleBuffer::store(Record &record, QStringView text, std::span<const Span> spans)
{
    record.length = qint32(text.size());
    if (text.isEmpty())
        return;
    const qsizetype most = m_encoder.requiredSpace(text.size());
    Block &b = blockFor(most);
    record.offset = qint32(b.text.size());
    b.text.resize(record.offset + most); // within its capacity
    const char *const end = m_encoder.appendToBuffer(b.text.data() + record.offset, text);
    b.text.resize(end - b.text.constData());
    record.bytes = qint32(b.text.size()) - record.offset;
    storeSpans(record, b, spans);
}

void ConsoleBuffer::finishOutput()
{
    for (int c = 0; c < 2; ++c) {
        const auto channel = Channel(c);
        ChannelState &s = state(channel);
        s.decoder.resetState(); // drops an incomplete UTF-8 sequence at the very end
        s.decoderIdle = true;
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
    Record r;
    r.kind = kind;
    store(r, QStringView(text).left(m_maxLineLength), {});
    m_chars += r.length;
    m_widest = qMax(m_widest, r.length);
    m_lines.push_back(r);
    ++m_revision;
    trim();
}

void ConsoleBuffer::clear()
{
    m_firstLine = endLineNumber();
    m_lines.clear();
    m_blocks.clear();
    m_chars = 0;
    m_widest = 0;
    for (ChannelState &s : m_channels) {
        releaseIfLarge(s.text);
        s.spans.clear();
        s.openLine = -1;
    }
    ++m_revision;
}

ConsoleBuffer::Line ConsoleBuffer::line(qint64 index) const
{
    const Record &r = m_lines[size_t(index)];
    Line l;
    l.kind = r.kind;
    if (r.open >= 0) {
        const ChannelState &s = m_channels[r.open];
        l.text = s.text;
        l.spans = s.spans;
    } else if (r.block >= 0) {
        const Block &b = *m_blocks[size_t(r.block - m_firstBlock)];
        l.text = QString::fromUtf8(b.text.constData() + r.offset, r.bytes);
        l.spans = std::span<const Span>(b.spans).subspan(size_t(r.spanOffset), size_t(r.spanCount));
    }
    return l;
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

void ConsoleBuffer::trim()
{
    while (m_lines.size() > 1 && (qint64(m_lines.size()) > m_maxLines || m_chars > m_maxChars)) {
        const Record &r = m_lines.front();
        if (r.open >= 0) {
            ChannelState &s = m_channels[r.open];
            clearOpenLine(s); // what the channel writes next starts a new line
            s.openLine = -1;
        } else {
            m_chars -= r.length;
            if (r.block >= 0)
                --m_blocks[size_t(r.block - m_firstBlock)]->lines;
        }
        m_lines.pop_front();
        ++m_firstLine;
    }
    releaseBlocks();
}

void ConsoleBuffer::releaseBlocks()
{
    // Blocks whose lines are all gone, oldest first (a line finished late may keep one a while);
    // a few are kept for the lines to come, so that a flood reuses memory it already touched.
    constexpr size_t kSpares = 8;
    while (m_blocks.size() > 1 && m_blocks.front()->lines == 0) {
        if (m_spareBlocks.size() < kSpares && m_blocks.front()->text.capacity() <= 2 * kBlockBytes) {
            m_blocks.front()->text.resize(0); // keeps its capacity
            m_blocks.front()->spans.clear();
            m_spareBlocks.push_back(std::move(m_blocks.front()));
        }
        m_blocks.pop_front();
        ++m_firstBlock;
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
        out += line(i).text;
    }
    return out;
}

} // namespace Sandbox::Ui
