#pragma once

// Following an exec's stream to its end the way a program does (header-only, for suites that
// link the core client).

#include "eventwait.h"

#include <client/execstream.h>

#include <QtCore/QDebug>

namespace StreamFollow {

// Follows `stream` with a real event loop (EventWait::runUntil) until it finished or failed, or
// the timeout: the bytes of output it delivered. A failure is logged (qWarning).
inline qint64 receivedUntilEnd(Sandbox::ExecStream *stream, int timeoutMs)
{
    qint64 received = 0;
    bool ended = false;
    QObject::connect(stream, &Sandbox::ExecStream::output, stream,
                     [&](const QString &, const QByteArray &data) { received += data.size(); });
    QObject::connect(stream, &Sandbox::ExecStream::finished, stream,
                     [&](const Sandbox::ExecResult &) { ended = true; });
    QObject::connect(stream, &Sandbox::ExecStream::failed, stream, [&](const Sandbox::Error &e) {
        qWarning() << e.message;
        ended = true;
    });
    EventWait::runUntil(ended, timeoutMs, stream, &Sandbox::ExecStream::finished,
                        &Sandbox::ExecStream::failed);
    return received;
}

} // namespace StreamFollow
