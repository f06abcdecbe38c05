#include "timedcall.h"

#include "api/methods.h"
#include "calldeadlines.h"

#include <QPointer>

#include <memory>

namespace Sandbox::Engine {

namespace {

struct Timed
{
    bool answered = false;
    bool timedOut = false;
    CancelFn cancel;
    QPointer<CallDeadlines> deadlines;
    CallDeadlines::Key deadline;
};

} // namespace

void runTimed(CallDeadlines *deadlines, qint64 timeoutMs, qint64 graceMs, const CallContext &ctx,
              const std::function<CancelFn(PageDone)> &start, PageDone done)
{
    auto st = std::make_shared<Timed>();
    auto finish = [st, done, timeoutMs](Result<Page> r) {
        if (st->answered)
            return;
        st->answered = true;
        if (st->deadlines)
            st->deadlines->remove(st->deadline);
        // A backend's cancel function may hold this very callback (PostgreSQL's query does):
        // dropped here, or the call's state would keep itself alive. Whoever runs it holds a copy.
        st->cancel = {};
        if (st->timedOut)
            r = Error{ErrorCode::Timeout,
                      QStringLiteral(
                          "the statement ran past its timeout of %1 ms and was cancelled")
                          .arg(timeoutMs),
                      QJsonObject{{QStringLiteral("timeoutMs"), double(timeoutMs)}}};
        done(std::move(r));
    };
    CancelFn cancel = start(finish);
    if (st->answered)
        return; // answered at once (the server is gone): nothing to time, nothing to cancel
    st->cancel = std::move(cancel);
    st->deadlines = deadlines;
    // The deadlines keep the call's state until it answers or times out.
    st->deadline = deadlines->add(timeoutMs, [st, finish, graceMs] {
        if (st->answered)
            return;
        st->timedOut = true;
        if (const CancelFn cancel = st->cancel)
            cancel();
        if (st->answered || !st->deadlines)
            return; // the cancel answered at once
        // The server's time to give up; then the call answers.
        st->deadline = st->deadlines->add(graceMs, [finish] {
            finish(Error{ErrorCode::Timeout, {}, {}});
        });
    });
    // The connection keeps this until the call answers; it must not keep the call's state.
    *ctx.onCancel = [weak = std::weak_ptr<Timed>(st)] {
        const auto st = weak.lock();
        if (!st || st->answered)
            return;
        if (const CancelFn cancel = st->cancel)
            cancel();
    };
}

} // namespace Sandbox::Engine
