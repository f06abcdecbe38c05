#pragma once

#include "error.h"

#include <utility>
#include <variant>

namespace Sandbox {

// A value or an Error: the return type of every fallible call (cf. Qt Creator's Utils::Result).
template<typename T>
class [[nodiscard]] Result
{
public:
    Result(const T &value)
        : m_v(std::in_place_index<0>, value)
    {}
    Result(T &&value)
        : m_v(std::in_place_index<0>, std::move(value))
    {}
    Result(const Error &error)
        : m_v(std::in_place_index<1>, error)
    {}
    Result(Error &&error)
        : m_v(std::in_place_index<1>, std::move(error))
    {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    const T &value() const & { return std::get<0>(m_v); }
    T &value() & { return std::get<0>(m_v); }
    T &&value() && { return std::get<0>(std::move(m_v)); }
    const T *operator->() const { return &value(); }
    const T &operator*() const { return value(); }

    const Error &error() const { return std::get<1>(m_v); }

private:
    std::variant<T, Error> m_v;
};

} // namespace Sandbox
