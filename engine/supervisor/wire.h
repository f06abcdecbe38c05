#pragma once

#include <cstdint>

// The frame format of PROTOCOL.md, shared by the supervisor and the engine's SupervisorChannel:
// u32 LE length (of type + id + payload), u8 type, u32 LE id, payload. Plain C++, no Qt.
namespace SupervisorWire {

enum class FrameType : uint8_t {
    Request = 1,
    Stdin = 2,
    Cancel = 3,
    Response = 16,
    Stdout = 17,
    Stderr = 18,
    Hello = 32,
};

inline constexpr uint32_t HeaderBytes = 5; // type + id, after the length
inline constexpr uint32_t MaxLength = 32u * 1024 * 1024 + HeaderBytes;

} // namespace SupervisorWire
