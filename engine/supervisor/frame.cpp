#include "frame.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

uint32_t readLe32(const char *p)
{
    const auto *u = reinterpret_cast<const unsigned char *>(p);
    return uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
}

void writeLe32(char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = char((v >> (8 * i)) & 0xff);
}

// The engine never sends descriptors; any that arrive are closed at once.
void closeReceivedFds(msghdr &msg)
{
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (fd >= 0)
                ::close(fd);
        }
    }
}

} // namespace

FrameChannel::FrameChannel(int fd)
    : m_fd(fd)
{}

FrameChannel::ReadResult FrameChannel::readAvailable()
{
    if (m_consumed > 0 && m_consumed * 2 >= m_buffer.size()) {
        m_buffer.erase(0, m_consumed);
        m_consumed = 0;
    }
    char chunk[65536];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
    iovec iov{chunk, sizeof chunk};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(m_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n >= 0)
        closeReceivedFds(msg);
    if (n > 0) {
        m_buffer.append(chunk, size_t(n));
        return ReadResult::Data;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return ReadResult::Data;
    return n == 0 ? ReadResult::Eof : ReadResult::Error;
}

std::optional<Frame> FrameChannel::next()
{
    if (protocolError())
        return std::nullopt;
    const size_t available = m_buffer.size() - m_consumed;
    if (available < 4)
        return std::nullopt;
    const char *p = m_buffer.data() + m_consumed;
    const uint32_t length = readLe32(p);
    if (length < kHeaderSize || length > kMaxLength) {
        m_protocolError = "invalid frame length " + std::to_string(length) + " (must be "
                          + std::to_string(kHeaderSize) + ".." + std::to_string(kMaxLength) + ")";
        return std::nullopt;
    }
    if (available < 4 + size_t(length))
        return std::nullopt;
    Frame f;
    f.type = uint8_t(p[4]);
    f.id = readLe32(p + 5);
    f.payload.assign(p + 4 + kHeaderSize, length - kHeaderSize);
    m_consumed += 4 + size_t(length);
    return f;
}

bool FrameChannel::send(FrameType type, uint32_t id, std::initializer_list<std::string_view> parts,
                        std::initializer_list<int> fdsToPass)
{
    if (m_broken)
        return false;
    size_t total = kHeaderSize;
    for (auto part : parts)
        total += part.size();
    char header[4 + kHeaderSize];
    writeLe32(header, uint32_t(total));
    header[4] = char(type);
    writeLe32(header + 5, id);

    std::vector<iovec> iov;
    iov.push_back({header, sizeof header});
    for (auto part : parts)
        if (!part.empty())
            iov.push_back({const_cast<char *>(part.data()), part.size()});

    int fds[kMaxFds];
    size_t fdCount = 0;
    for (int fd : fdsToPass)
        if (fd >= 0 && fdCount < kMaxFds)
            fds[fdCount++] = fd;
    return write(iov, fds, fdCount);
}

bool FrameChannel::sendPair(uint32_t id, FrameType firstType, std::string_view first,
                            FrameType secondType, std::string_view second)
{
    if (m_broken)
        return false;
    char headers[2][4 + kHeaderSize];
    const std::pair<FrameType, std::string_view> frames[2] = {{firstType, first},
                                                              {secondType, second}};
    std::vector<iovec> iov;
    for (size_t i = 0; i < 2; ++i) {
        writeLe32(headers[i], uint32_t(kHeaderSize + frames[i].second.size()));
        headers[i][4] = char(frames[i].first);
        writeLe32(headers[i] + 5, id);
        iov.push_back({headers[i], sizeof headers[i]});
        if (!frames[i].second.empty())
            iov.push_back({const_cast<char *>(frames[i].second.data()), frames[i].second.size()});
    }
    return write(iov, nullptr, 0);
}

bool FrameChannel::write(std::vector<iovec> &iov, const int *fds, size_t fdCount)
{
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    bool fdPending = fdCount > 0;
    size_t index = 0;
    while (index < iov.size()) {
        msghdr msg{};
        msg.msg_iov = iov.data() + index;
        msg.msg_iovlen = iov.size() - index;
        if (fdPending) {
            std::memset(control, 0, sizeof control);
            msg.msg_control = control;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * fdCount);
            cmsghdr *c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * fdCount);
            std::memcpy(CMSG_DATA(c), fds, sizeof(int) * fdCount);
        }
        const ssize_t n = ::sendmsg(m_fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                pollfd pfd{m_fd, POLLOUT, 0};
                ::poll(&pfd, 1, -1);
                continue;
            }
            m_broken = true;
            return false;
        }
        fdPending = false; // the descriptors went with the first bytes
        size_t written = size_t(n);
        while (index < iov.size() && written >= iov[index].iov_len)
            written -= iov[index++].iov_len;
        if (index < iov.size()) {
            iov[index].iov_base = static_cast<char *>(iov[index].iov_base) + written;
            iov[index].iov_len -= written;
        }
    }
    return true;
}
