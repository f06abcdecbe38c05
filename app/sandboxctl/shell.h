#pragma once

#include <client/types.h>

#include <QObject>

#include <termios.h>

class QSocketNotifier;

namespace Sandbox {
class TerminalSession;
}

// `sandboxctl shell ID`: the sandbox's terminal in the user's own terminal. Puts the local
// terminal in raw mode (restored on every way out), relays keystrokes and output, and passes
// window-size changes (SIGWINCH) on. Ends with the remote command's exit code.
class Shell final : public QObject
{
    Q_OBJECT

public:
    explicit Shell(QObject *parent = nullptr);
    ~Shell() override;

    // Starts relaying `session`, which must not have produced output yet.
    void attach(Sandbox::TerminalSession *session);
    // The local window size (80x24 when stdout is not a terminal).
    static void localSize(int *cols, int *rows);

Q_SIGNALS:
    void done(int exitCode);

private:
    void restore();
    void onStdin();
    void onWinch();

    Sandbox::TerminalSession *m_session = nullptr; // not owned
    QSocketNotifier *m_stdin = nullptr;            // owned (child)
    QSocketNotifier *m_winch = nullptr;            // owned (child)
    bool m_raw = false;
    struct termios m_saved = {};
};
