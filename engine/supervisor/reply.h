#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// One RESPONSE: a JSON object, optionally followed by 0x00 and raw bytes (readFile).
struct Reply
{
    nlohmann::json body = nlohmann::json::object();
    std::string data;
    bool hasData = false;

    // {"error":{"code","message","errno"?}}; errno is named (ENOENT) when err != 0.
    static Reply error(std::string_view code, const std::string &message, int err = 0);
    // The error code for a failed system call: not_found, already_exists, too_large or file_error.
    static std::string_view codeForErrno(int err);
};

// Thrown while handling one request; the event loop turns it into that request's RESPONSE.
class RequestError : public std::exception
{
public:
    RequestError(std::string_view code, const std::string &message, int err = 0)
        : m_reply(Reply::error(code, message, err))
    {}
    const Reply &reply() const { return m_reply; }
    const char *what() const noexcept override { return "request error"; }

private:
    Reply m_reply;
};

// "ENOENT" for ENOENT, "E<number>" if glibc has no name for it.
std::string errnoName(int err);
// "SIGKILL" for SIGKILL.
std::string signalName(int sig);
// Throws the error for a failed system call on `what` (a request path): "<what>: <strerror>".
[[noreturn]] void throwErrno(int err, const std::string &what);

// Optional request members, type-checked (RequestError bad_request on a wrong type).
bool optionalBool(const nlohmann::json &req, const char *key);
std::optional<uint64_t> optionalUnsigned(const nlohmann::json &req, const char *key);
// A string without NUL bytes (RequestError bad_request naming `what` otherwise).
std::string checkedString(const nlohmann::json &value, const std::string &what);
// The request's optional "env" object, appended to `env`: names without '=' or NUL, values
// checked by checkedString (RequestError bad_request otherwise).
void appendEnv(const nlohmann::json &req, std::vector<std::pair<std::string, std::string>> &env);
