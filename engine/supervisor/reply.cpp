#include "reply.h"

#include <cerrno>
#include <cstring>

Reply Reply::error(std::string_view code, const std::string &message, int err)
{
    Reply r;
    nlohmann::json e = {{"code", code}, {"message", message}};
    if (err != 0)
        e["errno"] = errnoName(err);
    r.body = {{"error", std::move(e)}};
    return r;
}

std::string_view Reply::codeForErrno(int err)
{
    switch (err) {
    case ENOENT:
        return "not_found";
    case EEXIST:
        return "already_exists";
    case EFBIG:
        return "too_large";
    default:
        return "file_error";
    }
}

std::string errnoName(int err)
{
    const char *name = strerrorname_np(err);
    return name ? std::string(name) : "E" + std::to_string(err);
}

std::string signalName(int sig)
{
    const char *name = sigabbrev_np(sig);
    return name ? "SIG" + std::string(name) : "SIG" + std::to_string(sig);
}

void throwErrno(int err, const std::string &what)
{
    throw RequestError(Reply::codeForErrno(err), what + ": " + std::strerror(err), err);
}

bool optionalBool(const nlohmann::json &req, const char *key)
{
    if (!req.contains(key) || req[key].is_null())
        return false;
    if (!req[key].is_boolean())
        throw RequestError("bad_request", std::string("'") + key + "' must be a boolean");
    return req[key].get<bool>();
}

std::optional<uint64_t> optionalUnsigned(const nlohmann::json &req, const char *key)
{
    if (!req.contains(key) || req[key].is_null())
        return std::nullopt;
    const auto &v = req[key];
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
        throw RequestError("bad_request",
                           std::string("'") + key + "' must be a non-negative integer");
    return req[key].get<uint64_t>();
}

std::string checkedString(const nlohmann::json &value, const std::string &what)
{
    if (!value.is_string())
        throw RequestError("bad_request", what + " must be a string");
    std::string s = value.get<std::string>();
    if (s.find('\0') != std::string::npos)
        throw RequestError("bad_request", what + " must not contain NUL bytes");
    return s;
}

void appendEnv(const nlohmann::json &req, std::vector<std::pair<std::string, std::string>> &env)
{
    if (!req.contains("env") || req["env"].is_null())
        return;
    if (!req["env"].is_object())
        throw RequestError("bad_request", "'env' must be an object of strings");
    for (const auto &[key, value] : req["env"].items()) {
        if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos)
            throw RequestError("bad_request", "invalid environment variable name '" + key + "'");
        env.emplace_back(key, checkedString(value, "env '" + key + "'"));
    }
}
