#pragma once

#include <protocol/result.h>

#include <QByteArray>
#include <QJsonValue>

#include <functional>
#include <memory>

namespace Sandbox {

namespace Internal {
// Shared between a handle and the client that runs the call. The client sets `finished` when
// the call is over (callback run, failed or cancelled) and drops `cancel`.
struct CallState
{
    std::function<void()> cancel;
    bool finished = false;
};
} // namespace Internal

// Options of one call.
struct CallOptions
{
    // -1: the client's default timeout; 0: no timeout; > 0: fail with ErrorCode::Timeout after
    // this many milliseconds (and ask the server to cancel the request).
    int timeoutMs = -1;
    // Set: a result's "rows" that is an array of arrays (a page of rows, docs/protocol.md 4.3.3)
    // is left out of the result, and its JSON text (UTF-8, checked) is put here just before the
    // callback runs, for a reader made for it (SqlRows), instead of a tree of values. A caller
    // that cannot take it leaves it unset; a result whose rows are not such text (REST, another
    // shape) keeps them as "rows" and leaves this as it was.
    std::shared_ptr<QByteArray> rowsText = nullptr;
};

using JsonCallback = std::function<void(Result<QJsonValue>)>;
template<typename T>
using Callback = std::function<void(Result<T>)>;

namespace Internal {
// Adapts a typed callback to a JSON one: `parse` turns the JSON result into Result<T>.
template<typename T, typename Parse>
JsonCallback typedCallback(Callback<T> callback, Parse parse)
{
    return [callback = std::move(callback), parse = std::move(parse)](Result<QJsonValue> r) {
        if (!r)
            callback(r.error());
        else
            callback(parse(r.value()));
    };
}
} // namespace Internal

// The handle of one call to the server (RPC or REST). Move-only.
// Destroying the handle or calling cancel() while the call is pending cancels it: its callback
// never runs, and the server is told (`rpc.cancel`, or the HTTP request is aborted).
// detach() lets the call run on without the handle; it is then bound only to its context object.
class [[nodiscard]] RpcCall final
{
public:
    RpcCall() = default;
    explicit RpcCall(std::shared_ptr<Internal::CallState> state)
        : m_state(std::move(state))
    {}
    ~RpcCall() { cancel(); }

    RpcCall(RpcCall &&other) noexcept = default;
    RpcCall &operator=(RpcCall &&other) noexcept
    {
        if (this != &other) {
            cancel();
            m_state = std::move(other.m_state);
        }
        return *this;
    }
    RpcCall(const RpcCall &) = delete;
    RpcCall &operator=(const RpcCall &) = delete;

    // True until the callback ran or the call was cancelled.
    bool isPending() const { return m_state && !m_state->finished; }

    void cancel()
    {
        const auto state = std::move(m_state);
        if (state && !state->finished && state->cancel) {
            const auto cancelFn = std::move(state->cancel);
            state->finished = true;
            cancelFn();
        }
    }

    void detach() { m_state.reset(); }

private:
    std::shared_ptr<Internal::CallState> m_state;
};

} // namespace Sandbox
