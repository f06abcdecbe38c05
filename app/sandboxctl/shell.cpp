#include "shell.h"

#include <client/terminalsession.h>

#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <unistd.h>

using namespace Sandbox;

namespace {

// The write end of the self-pipe SIGWINCH writes to (the handler may only do async-safe work).
int g_winchPipe = -1;
// The terminal state to put back if a signal ends the process while in raw mode.
struct termios g_saved;
bool g_rawActive = false;

void onSigwinch(int)
{
    const int saved = errno;
    if (g_winchPipe >= 0) [[maybe_unused]]
        auto n = ::write(g_winchPipe, "w", 1);
    errno = saved;
}

void onFatal(int sig)
{
    if (g_rawActive)
        ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

void writeAll(const QByteArray &bytes)
{
    const char *p = bytes.constData();
    qsizetype left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(STDOUT_FILENO, p, size_t(left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            fd_set w;
            FD_ZERO(&w);
            FD_SET(STDOUT_FILENO, &w);
            ::select(STDOUT_FILENO + 1, nullptr, &w, nullptr, nullptr);
            continue;
        }
        if (n <= 0)
            return;
        p += n;
        left -= n;
    }
}

} // namespace

Shell::Shell(QObject *parent)
    : QObject(parent)
{}

Shell::~Shell()
{
    restore();
    if (g_winchPipe >= 0) {
        ::signal(SIGWINCH, SIG_DFL);
        ::close(g_winchPipe);
        g_winchPipe = -1;
    }
}

void Shell::localSize(int *cols, int *rows)
{
    struct winsize ws = {};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    } else {
        *cols = 80;
        *rows = 24;
    }
}

void Shell::attach(TerminalSession *session)
{
    m_session = session;
    if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &m_saved) == 0) {
        struct termios raw = m_saved;
        ::cfmakeraw(&raw);
        g_saved = m_saved;
        g_rawActive = true;
        for (int sig : {SIGTERM, SIGHUP, SIGQUIT})
            ::signal(sig, onFatal);
        if (::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
            m_raw = true;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
        g_winchPipe = fds[1];
        m_winch = new QSocketNotifier(fds[0], QSocketNotifier::Read, this);
        connect(m_winch, &QSocketNotifier::activated, this, &Shell::onWinch);
        struct sigaction sa = {};
        sa.sa_handler = onSigwinch;
        sa.sa_flags = SA_RESTART;
        ::sigaction(SIGWINCH, &sa, nullptr);
    }
    m_stdin = new QSocketNotifier(STDIN_FILENO, QSocketNotifier::Read, this);
    connect(m_stdin, &QSocketNotifier::activated, this, &Shell::onStdin);

    connect(session, &TerminalSession::output, this, &writeAll);
    connect(session, &TerminalSession::reset, this, [](const QByteArray &modes) {
        // Lost output: clear the screen, restore the modes; the program redraws.
        writeAll("\x1b[H\x1b[2J" + modes);
    });
    connect(session, &TerminalSession::finished, this, [this](const ExecResult &r) {
        restore();
        Q_EMIT done(r.exitCode);
    });
    connect(session, &TerminalSession::failed, this, [this](const Error &e) {
        restore();
        std::fprintf(stderr, "sandboxctl: %s: %s\n", qPrintable(errorCodeName(e.code)),
                     qPrintable(e.message));
        Q_EMIT done(e.code == ErrorCode::Unauthorized ? 3 : 1);
    });
    connect(session, &TerminalSession::controlFailed, this, [](const Error &e) {
        std::fprintf(stderr, "\r\nsandboxctl: %s\r\n", qPrintable(e.message));
    });
}

void Shell::onStdin()
{
    char buf[16384];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n > 0) {
        m_session->input(QByteArray(buf, n));
        return;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    // End of our input (a pipe, not a terminal): the remote program goes on until it exits.
    m_stdin->setEnabled(false);
}

void Shell::onWinch()
{
    char drain[64];
    while (::read(int(m_winch->socket()), drain, sizeof drain) > 0) {
    }
    int cols = 80, rows = 24;
    localSize(&cols, &rows);
    if (cols != m_session->cols() || rows != m_session->rows())
        m_session->resize(cols, rows);
}

void Shell::restore()
{
    if (m_raw) {
        ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &m_saved);
        m_raw = false;
        g_rawActive = false;
    }
}
