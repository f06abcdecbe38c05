#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "wire.h"

using SupervisorWire::FrameType;

struct Frame
{
    uint8_t type = 0;
    uint32_t id = 0;
    std::string payload;
};

// Frames over a pair of file descriptors: u32 LE length (type + id + payload), u8 type,
// u32 LE id, payload. Reading is incremental (one read() per readAvailable(), after poll());
// writing blocks until the whole frame is out, which is the supervisor's back-pressure.
class FrameChannel
{
public:
    static constexpr uint32_t kHeaderSize = SupervisorWire::HeaderBytes;
    static constexpr uint32_t kMaxLength = SupervisorWire::MaxLength;

    FrameChannel(int inFd, int outFd);

    enum class ReadResult { Data, Eof, Error };
    ReadResult readAvailable();
    // The next complete frame, if any. A frame with an invalid length sets protocolError().
    std::optional<Frame> next();

    bool protocolError() const { return !m_protocolError.empty(); }
    const std::string &protocolErrorMessage() const { return m_protocolError; }

    // Writes one frame whose payload is the concatenation of parts. False once the peer is gone.
    bool send(FrameType type, uint32_t id, std::initializer_list<std::string_view> parts);
    bool broken() const { return m_broken; }

private:
    int m_in;
    int m_out;
    std::string m_buffer;
    size_t m_consumed = 0;
    std::string m_protocolError;
    bool m_broken = false;
};
