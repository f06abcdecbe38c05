#pragma once

#include <QByteArray>

#include <sys/socket.h>

namespace Sandbox::Engine {

// Writes `data` to the connected stream socket under `device` (a QTcpSocket or QLocalSocket of
// the engine's, no TLS) at once when nothing waits in the device's buffer: through the buffer it
// would leave on the next turn of the event loop, a wake-up for the socket's writability and two
// system calls more. What the socket does not take now goes through the buffer, and so does all
// of it behind bytes that already wait there, so the order of writes holds. The device emits no
// bytesWritten() for what left at once (nothing waited for it).
template<typename Socket>
void writeNow(Socket *device, QByteArray data)
{
    if (device->bytesToWrite() == 0 && device->socketDescriptor() >= 0) {
        const ssize_t n = ::send(int(device->socketDescriptor()), data.constData(),
                                 size_t(data.size()), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == data.size())
            return;
        if (n > 0)
            data.remove(0, n);
    }
    device->write(data);
}

} // namespace Sandbox::Engine
