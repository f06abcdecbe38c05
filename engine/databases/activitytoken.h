#pragma once

#include <functional>
#include <memory>
#include <utility>

namespace Sandbox::Engine {

// Keeps a database awake (SandboxManager's busy count) for as long as it lives: a call from the
// moment its server is found until it answers, a cursor or an interactive transaction until it
// closes. Move-only; end() (or the destructor) ends the activity once.
class ActivityToken
{
public:
    ActivityToken() = default;
    explicit ActivityToken(std::function<void()> end)
        : m_end(std::move(end))
    {}
    ActivityToken(ActivityToken &&other) noexcept
        : m_end(std::exchange(other.m_end, {}))
    {}
    ActivityToken &operator=(ActivityToken &&other) noexcept
    {
        if (this != &other) {
            end();
            m_end = std::exchange(other.m_end, {});
        }
        return *this;
    }
    ActivityToken(const ActivityToken &) = delete;
    ActivityToken &operator=(const ActivityToken &) = delete;
    ~ActivityToken() { end(); }

    void end()
    {
        if (m_end)
            std::exchange(m_end, {})();
    }
    bool active() const { return bool(m_end); }

private:
    std::function<void()> m_end;
};

// A token shared by the callbacks of one asynchronous call (std::function needs copies): the
// answer ends it, or a cursor or a transaction takes it over (std::move(*activity)).
using SharedActivity = std::shared_ptr<ActivityToken>;

inline SharedActivity share(ActivityToken token)
{
    return std::make_shared<ActivityToken>(std::move(token));
}

} // namespace Sandbox::Engine
