#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <sys/uio.h>
#include <vector>

#include "wire.h"

using SupervisorWire::FrameType;

struct Frame
{
    uint8_t type = 0;
    uint32_t id = 0;
    std::string payload;
};

// Frames over the engine's socket (one AF_UNIX stream socket, PROTOCOL.md): u32 LE length
// (type + id + payload), u8 type, u32 LE id, payload. Reading is incremental (one recvmsg() per
// readAvailable(), after poll()); writing blocks until the whole frame is out, which is the
// supervisor's back-pressure. A frame may carry file descriptors (SCM_RIGHTS on its first byte)
// where PROTOCOL.md allows them.
class FrameChannel
{
public:
    static constexpr uint32_t kHeaderSize = SupervisorWire::HeaderBytes;
    static constexpr uint32_t kMaxLength = SupervisorWire::MaxLength;

    explicit FrameChannel(int fd);

    int fd() const { return m_fd; }

    enum class ReadResult { Data, Eof, Error };
    ReadResult readAvailable();
    // The next complete frame, if any. A frame with an invalid length sets protocolError().
    std::optional<Frame> next();

    bool protocolError() const { return !m_protocolError.empty(); }
    const std::string &protocolErrorMessage() const { return m_protocolError; }

    // Writes one frame whose payload is the concatenation of parts; `fdsToPass` (at most two)
    // travel with its first byte. False once the peer is gone.
    bool send(FrameType type, uint32_t id, std::initializer_list<std::string_view> parts,
              std::initializer_list<int> fdsToPass = {});
    // Two frames of request `id` in one write, without descriptors: the engine reads both at
    // one wake-up.
    bool sendPair(uint32_t id, FrameType firstType, std::string_view first, FrameType secondType,
                  std::string_view second);
    bool broken() const { return m_broken; }

private:
    static constexpr size_t kMaxFds = 2;
    // Writes all of `iov`, the descriptors with its first byte.
    bool write(std::vector<iovec> &iov, const int *fds, size_t fdCount);

    int m_fd;
    std::string m_buffer;
    size_t m_consumed = 0;
    std::string m_protocolError;
    bool m_broken = false;
};
