#include "terminalmodes.h"

#include <cstring>

namespace Sandbox::Engine {

namespace {

// The DEC private modes that are followed; any other is ignored.
constexpr int kFollowed[] = {
    1,    // DECCKM: application cursor keys
    6,    // DECOM: origin mode
    7,    // DECAWM: autowrap (default on)
    25,   // DECTCEM: cursor visible (default on)
    47,   // alternate screen (old)
    1047, // alternate screen
    1049, // alternate screen, saving the cursor
    1000, // mouse: press and release
    1002, // mouse: button motion
    1003, // mouse: any motion
    1004, // focus in/out
    1005, // mouse: UTF-8 coordinates
    1006, // mouse: SGR coordinates
    1015, // mouse: urxvt coordinates
    2004, // bracketed paste
};

bool followed(int mode)
{
    for (int m : kFollowed) {
        if (m == mode)
            return true;
    }
    return false;
}

constexpr qsizetype kMaxParams = 64;

} // namespace

bool TerminalModes::defaultOf(int mode)
{
    return mode == 7 || mode == 25;
}

void TerminalModes::feed(QByteArrayView bytes)
{
    const char *p = bytes.data();
    const char *end = p + bytes.size();
    while (p < end) {
        switch (m_state) {
        case State::Text: {
            const void *esc = std::memchr(p, 0x1b, size_t(end - p));
            if (!esc)
                return;
            p = static_cast<const char *>(esc) + 1;
            m_state = State::Escape;
            break;
        }
        case State::Escape: {
            const char c = *p++;
            if (c == '[') {
                m_state = State::Csi;
                m_params.clear();
            } else {
                if (c == '=')
                    m_keypadApplication = true;
                else if (c == '>')
                    m_keypadApplication = false;
                else if (c == 'c') { // RIS: everything back to its default
                    m_modes.clear();
                    m_keypadApplication = false;
                }
                m_state = c == 0x1b ? State::Escape : State::Text;
            }
            break;
        }
        case State::Csi: {
            const char c = *p++;
            if (c >= 0x40 && c <= 0x7e) {
                finishCsi(c);
                m_state = State::Text;
            } else if (c == 0x1b) {
                m_state = State::Escape;
            } else if (m_params.size() < kMaxParams) {
                m_params.append(c);
            }
            break;
        }
        }
    }
}

void TerminalModes::finishCsi(char final)
{
    if ((final != 'h' && final != 'l') || !m_params.startsWith('?'))
        return;
    for (const QByteArray &part : m_params.mid(1).split(';')) {
        bool ok = false;
        const int mode = part.toInt(&ok);
        if (ok && followed(mode))
            m_modes.insert(mode, final == 'h');
    }
}

QByteArray TerminalModes::restoreSequence() const
{
    QByteArray out;
    for (auto it = m_modes.cbegin(); it != m_modes.cend(); ++it) {
        if (it.value() == defaultOf(it.key()))
            continue;
        out += "\x1b[?" + QByteArray::number(it.key()) + (it.value() ? 'h' : 'l');
    }
    if (m_keypadApplication)
        out += "\x1b=";
    return out;
}

} // namespace Sandbox::Engine
