#pragma once

// Waiting for a stream to end the way the desktop does (header-only, for suites that link no
// engine).

#include <QtCore/QEventLoop>
#include <QtCore/QObject>
#include <QtCore/QTimer>

namespace EventWait {

// Runs a real event loop, as the desktop's, until `done` (checked whenever `sender` emits one
// of its signals) or the timeout: the client reads its socket as soon as bytes come. QTRY_*
// and QTest::qWaitFor process events only every 10 ms (they sleep between their rounds), which
// paces the very stream a benchmark measures. Connect what sets `done` before calling this.
template<typename Sender, typename... Signals>
bool runUntil(const bool &done, int timeoutMs, Sender *sender, Signals... endings)
{
    QEventLoop loop;
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    (QObject::connect(sender, endings, &loop,
                      [&] {
                          if (done)
                              loop.quit();
                      }),
     ...);
    if (!done)
        loop.exec();
    return done;
}

} // namespace EventWait
