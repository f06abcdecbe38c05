#pragma once

#include <cstdint>

// The frame format of PROTOCOL.md, shared by the supervisor and the engine's SupervisorChannel:
// u32 LE length (of type + id + payload), u8 type, u32 LE id, payload. Plain C++, no Qt.
namespace SupervisorWire {

inline constexpr const char *Version = "2";

enum class FrameType : uint8_t {
    Request = 1,
    Stdin = 2,
    Cancel = 3,
    Resize = 4, // PTY exec: u16 LE cols, u16 LE rows
    Window = 5, // PTY exec: u32 LE output bytes the engine has passed on
    Response = 16,
    Stdout = 17,
    Stderr = 18,
    Event = 19,
    Hello = 32,
};

inline constexpr uint32_t HeaderBytes = 5; // type + id, after the length
inline constexpr uint32_t MaxLength = 32u * 1024 * 1024 + HeaderBytes;
// The largest payload of an output (STDOUT/STDERR) frame: one read of a command's pipe.
inline constexpr uint32_t MaxChunk = 256u * 1024;
// The largest payload of an EVENT frame.
inline constexpr uint32_t MaxEvent = 64u * 1024;
// A PTY exec's output sent and not yet acknowledged by WINDOW frames: the supervisor stops
// reading the terminal there; more is a protocol violation.
inline constexpr uint32_t PtyWindowBytes = 1024u * 1024;
// The largest HELLO payload.
inline constexpr uint32_t MaxHello = 4096;

// The channel's descriptor in the supervisor (its argument `--channel-fd 3`).
inline constexpr int ChannelFd = 3;

} // namespace SupervisorWire
