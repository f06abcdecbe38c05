#pragma once

#include "databasebackend.h"

#include <functional>

namespace Sandbox::Engine {

class CallDeadlines;
struct CallContext;

// The statement timeouts of the databases.* methods (the caller's `timeout`, in ms).
constexpr qint64 kDefaultTimeoutMs = 60000;
constexpr qint64 kMaxTimeoutMs = 3600000;
// After a timeout's cancel, the server's time to give up before the call answers anyway.
constexpr qint64 kCancelGraceMs = 5000;

// A backend call with the statement timeout and rpc.cancel wired in: at `timeoutMs` the call is
// cancelled and answers Timeout once the backend gives up, or after `graceMs` whatever the
// backend does. rpc.cancel (ctx.onCancel) cancels it the same way. `done` runs once. Its deadline
// is one of `deadlines` (no timer per call); a call still running when they go is not timed.
void runTimed(CallDeadlines *deadlines, qint64 timeoutMs, qint64 graceMs, const CallContext &ctx,
              const std::function<CancelFn(PageDone)> &start, PageDone done);

} // namespace Sandbox::Engine
