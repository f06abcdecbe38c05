#include "pty.h"

#include "reply.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace Pty {

namespace {

uint16_t dimension(const nlohmann::json &pty, const char *key, uint16_t fallback, uint16_t max)
{
    if (!pty.contains(key) || pty[key].is_null())
        return fallback;
    const auto &v = pty[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > max)
        throw RequestError("bad_request", std::string("'pty.") + key
                                              + "' must be an integer from 1 to "
                                              + std::to_string(max));
    return uint16_t(v.get<int64_t>());
}

} // namespace

Spec parse(const nlohmann::json &value)
{
    if (!value.is_object())
        throw RequestError("bad_request", "'pty' must be an object {cols, rows, term}");
    Spec spec;
    spec.cols = dimension(value, "cols", spec.cols, kMaxCols);
    spec.rows = dimension(value, "rows", spec.rows, kMaxRows);
    if (value.contains("term") && !value["term"].is_null()) {
        if (!value["term"].is_string())
            throw RequestError("bad_request", "'pty.term' must be a string");
        spec.term = value["term"].get<std::string>();
        const bool ok = !spec.term.empty() && spec.term.size() <= 64
                        && spec.term.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")
                               == std::string::npos;
        if (!ok)
            throw RequestError("bad_request",
                               "'pty.term' must be a terminal name such as xterm-256color");
    }
    return spec;
}

Pair open(const Spec &spec)
{
    Pair p;
    p.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p.master < 0)
        throwErrno(errno, "/dev/ptmx");
    const auto fail = [&p](const char *what) {
        const int e = errno;
        ::close(p.master);
        if (p.slave >= 0)
            ::close(p.slave);
        throw RequestError("exec_failed",
                           std::string("cannot open a terminal: ") + what + ": " + std::strerror(e),
                           e);
    };
    if (::grantpt(p.master) < 0)
        fail("grantpt");
    if (::unlockpt(p.master) < 0)
        fail("unlockpt");
    // TIOCGPTPEER opens the slave through the master, not by a path in /dev/pts that a process
    // of the sandbox could have replaced.
    p.slave = ::ioctl(p.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p.slave < 0) {
        char name[64];
        if (::ptsname_r(p.master, name, sizeof name) != 0)
            fail("ptsname");
        p.slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
        if (p.slave < 0)
            fail(name);
    }
    struct winsize ws = {};
    ws.ws_col = spec.cols;
    ws.ws_row = spec.rows;
    if (::ioctl(p.master, TIOCSWINSZ, &ws) < 0)
        fail("TIOCSWINSZ");
    // UTF-8 input processing (erase deletes a whole character), as terminals set it.
    struct termios t = {};
    if (::tcgetattr(p.slave, &t) == 0) {
        t.c_iflag |= IUTF8;
        ::tcsetattr(p.slave, TCSANOW, &t);
    }
    ::fcntl(p.master, F_SETFL, ::fcntl(p.master, F_GETFL) | O_NONBLOCK);
    return p;
}

void resize(int master, uint16_t cols, uint16_t rows)
{
    struct winsize old = {};
    const bool same = ::ioctl(master, TIOCGWINSZ, &old) == 0 && old.ws_col == cols
                      && old.ws_row == rows;
    struct winsize ws = {};
    ws.ws_col = cols;
    ws.ws_row = rows;
    ::ioctl(master, TIOCSWINSZ, &ws);
    if (same) {
        pid_t group = 0;
        if (::ioctl(master, TIOCGPGRP, &group) == 0 && group > 1)
            ::kill(-group, SIGWINCH);
    }
}

bool decodeResize(std::string_view payload, uint16_t *cols, uint16_t *rows)
{
    if (payload.size() != 4)
        return false;
    const auto *b = reinterpret_cast<const unsigned char *>(payload.data());
    *cols = uint16_t(b[0] | (b[1] << 8));
    *rows = uint16_t(b[2] | (b[3] << 8));
    return *cols >= 1 && *cols <= kMaxCols && *rows >= 1 && *rows <= kMaxRows;
}

bool decodeWindow(std::string_view payload, uint32_t *bytes)
{
    if (payload.size() != 4)
        return false;
    const auto *b = reinterpret_cast<const unsigned char *>(payload.data());
    *bytes = uint32_t(b[0]) | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16)
             | (uint32_t(b[3]) << 24);
    return true;
}

void becomeControllingTerminal()
{
    ::setsid();
    ::ioctl(STDIN_FILENO, TIOCSCTTY, 0);
}

} // namespace Pty
