#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QMap>

namespace Sandbox::Engine {

// Follows the modes a terminal's output switches (DEC private modes `CSI ? n h` / `CSI ? n l`:
// cursor keys, alternate screen, mouse reporting, bracketed paste, ...; and the keypad mode
// `ESC =` / `ESC >`), so that a client that lost part of a terminal's output can be put back in
// the same modes before the program redraws (docs/protocol.md 4.8). Cheap: it looks only at
// escape sequences and keeps no screen.
class TerminalModes final
{
public:
    void feed(QByteArrayView bytes);
    // The escape sequences that set every followed mode that is not at its default.
    QByteArray restoreSequence() const;
    bool isSet(int mode) const { return m_modes.value(mode, defaultOf(mode)); }

private:
    static bool defaultOf(int mode);
    void finishCsi(char final);

    enum class State { Text, Escape, Csi };
    State m_state = State::Text;
    QByteArray m_params; // of the CSI sequence being read (bounded)
    QMap<int, bool> m_modes;
    bool m_keypadApplication = false;
};

} // namespace Sandbox::Engine
