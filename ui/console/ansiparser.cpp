#include "ansiparser.h"

#include <QHashFunctions>
#include <QVarLengthArray>

namespace Sandbox::Ui {

namespace {
constexpr qsizetype kMaxCsi = 64;
constexpr qsizetype kMaxOsc = 4096;
constexpr char16_t kEsc = 0x1b;

// Printable characters and TAB: what a text run is made of.
bool isRunCharacter(char16_t c)
{
    return (c >= 0x20 && c != 0x7f) || c == u'\t';
}

quint32 rgb(int r, int g, int b)
{
    return 0xff000000u | (quint32(r) << 16) | (quint32(g) << 8) | quint32(b);
}
} // namespace

size_t qHash(const TextFormat &f, size_t seed)
{
    return qHashMulti(seed, f.foreground, f.background, f.flags);
}

quint32 AnsiParser::paletteColor(int index)
{
    // A palette that reads well on the console's dark background (close to VS Code's).
    static constexpr quint32 basic[16] = {
        0xff000000, 0xffcd3131, 0xff0dbc79, 0xffe5e510, 0xff2472c8, 0xffbc3fbc,
        0xff11a8cd, 0xffe5e5e5, 0xff666666, 0xfff14c4c, 0xff23d18b, 0xfff5f543,
        0xff3b8eea, 0xffd670d6, 0xff29b8db, 0xffffffff,
    };
    if (index < 0 || index > 255)
        return 0;
    if (index < 16)
        return basic[index];
    if (index < 232) {
        const int i = index - 16;
        const auto level = [](int v) { return v == 0 ? 0 : 55 + v * 40; };
        return rgb(level(i / 36), level((i / 6) % 6), level(i % 6));
    }
    const int grey = 8 + (index - 232) * 10;
    return rgb(grey, grey, grey);
}

void AnsiParser::reset()
{
    m_state = State::Text;
    m_format = {};
    m_sequence.clear();
}

void AnsiParser::feed(QStringView input, QList<Token> &out)
{
    qsizetype runStart = -1;
    const auto flushRun = [&](qsizetype end) {
        if (runStart >= 0 && end > runStart)
            out.append(Token{Token::Type::Text, input.mid(runStart, end - runStart), m_format});
        runStart = -1;
    };

    const qsizetype n = input.size();
    for (qsizetype i = 0; i < n; ++i) {
        const char16_t c = input[i].unicode();
        switch (m_state) {
        case State::Text:
            if (isRunCharacter(c)) {
                if (runStart < 0)
                    runStart = i;
                // The rest of the run at once: most output is plain text.
                while (i + 1 < n && isRunCharacter(input[i + 1].unicode()))
                    ++i;
                continue;
            }
            flushRun(i);
            if (c == u'\n')
                out.append(Token{Token::Type::LineFeed, {}, {}});
            else if (c == u'\r')
                out.append(Token{Token::Type::CarriageReturn, {}, {}});
            else if (c == u'\b')
                out.append(Token{Token::Type::Backspace, {}, {}});
            else if (c == kEsc)
                m_state = State::Escape;
            // Any other control character (BEL, NUL, ...) is dropped.
            break;
        case State::Escape:
            if (c == u'[') {
                m_state = State::Csi;
                m_sequence.clear();
            } else if (c == u']') {
                m_state = State::Osc;
                m_sequence.clear();
            } else if (c == kEsc) {
                // ESC ESC: stay in Escape.
            } else {
                m_state = State::Text; // a two-character escape (ESC =, ESC 7, ...): dropped
            }
            break;
        case State::Csi:
            if (c >= 0x40 && c <= 0x7e) { // the final byte
                if (c == u'm')
                    applySgr(m_sequence);
                m_state = State::Text;
            } else if (c == kEsc) {
                m_state = State::Escape;
            } else if (c < 0x20 || m_sequence.size() >= kMaxCsi) {
                m_state = State::Text; // malformed: abandon it
            } else {
                m_sequence.append(QChar(c));
            }
            break;
        case State::Osc:
            if (c == 0x07) {
                m_state = State::Text;
            } else if (c == kEsc) {
                m_state = State::OscEscape;
            } else if (m_sequence.size() >= kMaxOsc) {
                m_state = State::Text;
            } else {
                m_sequence.append(QChar(c));
            }
            break;
        case State::OscEscape:
            // ESC \ ends the string; ESC anything else starts a new escape.
            m_state = c == u'\\' ? State::Text : State::Escape;
            if (c == u'[') {
                m_state = State::Csi;
                m_sequence.clear();
            }
            break;
        }
    }
    flushRun(n);
}

void AnsiParser::applySgr(QStringView params)
{
    QVarLengthArray<int, 16> codes;
    if (params.isEmpty()) {
        codes.append(0);
    } else {
        // Private sequences (ESC [ ? ... m) are not SGR.
        if (params.front() == u'?' || params.front() == u'>' || params.front() == u'<')
            return;
        int value = 0;
        bool any = false;
        for (const QChar ch : params) {
            if (ch == u';' || ch == u':') {
                codes.append(any ? value : 0);
                value = 0;
                any = false;
            } else if (ch.isDigit()) {
                value = qMin(value * 10 + ch.digitValue(), 1 << 20);
                any = true;
            } else {
                return; // not a well-formed SGR
            }
        }
        codes.append(any ? value : 0);
    }

    TextFormat &f = m_format;
    for (qsizetype i = 0; i < codes.size(); ++i) {
        const int code = codes[i];
        switch (code) {
        case 0:
            f = {};
            break;
        case 1:
            f.flags |= TextFormat::Bold;
            break;
        case 2:
            f.flags |= TextFormat::Dim;
            break;
        case 3:
            f.flags |= TextFormat::Italic;
            break;
        case 4:
            f.flags |= TextFormat::Underline;
            break;
        case 7:
            f.flags |= TextFormat::Inverse;
            break;
        case 9:
            f.flags |= TextFormat::Strike;
            break;
        case 21:
        case 22:
            f.flags &= quint8(~(TextFormat::Bold | TextFormat::Dim));
            break;
        case 23:
            f.flags &= quint8(~TextFormat::Italic);
            break;
        case 24:
            f.flags &= quint8(~TextFormat::Underline);
            break;
        case 27:
            f.flags &= quint8(~TextFormat::Inverse);
            break;
        case 29:
            f.flags &= quint8(~TextFormat::Strike);
            break;
        case 39:
            f.foreground = 0;
            break;
        case 49:
            f.background = 0;
            break;
        case 38:
        case 48: {
            quint32 colour = 0;
            if (i + 2 < codes.size() && codes[i + 1] == 5) {
                colour = paletteColor(codes[i + 2]);
                i += 2;
            } else if (i + 4 < codes.size() && codes[i + 1] == 2) {
                colour = rgb(qBound(0, codes[i + 2], 255), qBound(0, codes[i + 3], 255),
                             qBound(0, codes[i + 4], 255));
                i += 4;
            } else {
                i = codes.size(); // malformed extended colour: ignore the rest
                break;
            }
            (code == 38 ? f.foreground : f.background) = colour;
            break;
        }
        default:
            if (code >= 30 && code <= 37)
                f.foreground = paletteColor(code - 30);
            else if (code >= 40 && code <= 47)
                f.background = paletteColor(code - 40);
            else if (code >= 90 && code <= 97)
                f.foreground = paletteColor(code - 90 + 8);
            else if (code >= 100 && code <= 107)
                f.background = paletteColor(code - 100 + 8);
            break; // anything else (blink, fonts, ...) is ignored
        }
    }
}

} // namespace Sandbox::Ui
