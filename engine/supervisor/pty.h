#pragma once

#include "wire.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

// Pseudo-terminals for execs with `pty` (PROTOCOL.md): the master stays with the supervisor
// (non-blocking: its reads are the exec's STDOUT frames, STDIN frames are written to it, RESIZE
// sets its window size); the slave becomes the command's stdin, stdout, stderr and controlling
// terminal. Plain POSIX, no Qt.
namespace Pty {

inline constexpr uint16_t kMaxCols = 1000;
inline constexpr uint16_t kMaxRows = 500;
// Unacknowledged output bytes per PTY exec (WINDOW frames acknowledge): beyond it the master is
// not read until the engine has passed output on, so a slow reader stalls the writer.
inline constexpr uint64_t kWindowBytes = SupervisorWire::PtyWindowBytes;

struct Spec
{
    uint16_t cols = 80;
    uint16_t rows = 24;
    std::string term = "xterm-256color";
};

// Reads `pty: {cols, rows, term}` of an exec request; throws RequestError on a bad value.
Spec parse(const nlohmann::json &value);

struct Pair
{
    int master = -1; // non-blocking, close-on-exec
    int slave = -1;  // close-on-exec (the reaper moves it to 0, 1, 2)
};

// Opens a new pseudo-terminal with the spec's window size; throws RequestError on failure.
Pair open(const Spec &spec);

// Sets the window size. The kernel signals SIGWINCH to the terminal's foreground process group
// when the size changes; when it does not (a client that reattached asks for a redraw), SIGWINCH
// is sent here.
void resize(int master, uint16_t cols, uint16_t rows);

// Decodes a RESIZE payload (u16 LE cols, u16 LE rows); false when malformed or out of range.
bool decodeResize(std::string_view payload, uint16_t *cols, uint16_t *rows);
// Decodes a WINDOW payload (u32 LE bytes acknowledged); false when malformed.
bool decodeWindow(std::string_view payload, uint32_t *bytes);

// In the command's process, before exec: a new session with the slave (already on fd 0) as its
// controlling terminal. Async-signal-safe.
void becomeControllingTerminal();

} // namespace Pty
