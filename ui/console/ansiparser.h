#pragma once

#include <QList>
#include <QString>
#include <QStringView>

namespace Sandbox::Ui {

// A character format from ANSI SGR escapes. Colours are 0xAARRGGBB with alpha 0xff, or 0 for
// "the default colour of the line".
struct TextFormat
{
    enum Flag : quint8 {
        Bold = 1,
        Dim = 2,
        Italic = 4,
        Underline = 8,
        Inverse = 16,
        Strike = 32,
    };
    quint32 foreground = 0;
    quint32 background = 0;
    quint8 flags = 0;

    bool isDefault() const { return foreground == 0 && background == 0 && flags == 0; }
    bool operator==(const TextFormat &other) const = default;
};

size_t qHash(const TextFormat &format, size_t seed = 0);

// Splits terminal output into text runs with their format, line feeds, carriage returns and
// backspaces. Understands SGR (ESC [ ... m: 16, 256 and 24-bit colours, bold, dim, italic,
// underline, inverse, strike-through and their resets); every other CSI sequence, OSC strings
// (ESC ] ... BEL or ESC \) and two-character escapes are consumed and dropped. A sequence cut
// between two feed() calls is completed by the next one. Other control characters but TAB are
// dropped. Bounded: a CSI longer than 64 characters or an OSC longer than 4096 is abandoned.
class AnsiParser final
{
public:
    struct Token
    {
        enum class Type : quint8 { Text, LineFeed, CarriageReturn, Backspace };
        Type type = Type::Text;
        QStringView text;  // Text only; points into the input given to feed()
        TextFormat format; // Text only
    };

    // Appends the tokens of `input` to `out` (not cleared). Text views stay valid while
    // `input` does.
    void feed(QStringView input, QList<Token> &out);
    void reset();
    const TextFormat &currentFormat() const { return m_format; }
    // No escape sequence is being read: what comes next is text or a control character.
    bool isIdle() const { return m_state == State::Text; }

    // The 16 basic colours (0-7 normal, 8-15 bright) and the xterm 256-colour table.
    static quint32 paletteColor(int index);

private:
    enum class State : quint8 { Text, Escape, Csi, Osc, OscEscape };
    void applySgr(QStringView params);

    State m_state = State::Text;
    TextFormat m_format;
    QString m_sequence; // parameters of the CSI / OSC being read
};

} // namespace Sandbox::Ui
