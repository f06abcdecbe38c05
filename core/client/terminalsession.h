#pragma once

#include "rpccall.h"
#include "types.h"

#include <QObject>
#include <QPointer>

namespace Sandbox {

class ExecStream;
class RpcClient;

// What a terminal is opened with (docs/protocol.md 4.8).
struct TerminalOptions
{
    int cols = 80;
    int rows = 24;
    QString term = QStringLiteral("xterm-256color");
    QString cwd;                     // default /workspace
    QMap<QString, QString> env;      // added to the sandbox's environment
    std::optional<qint64> timeoutMs; // default: none (an unfollowed terminal is hung up)
};

// One terminal in a sandbox: an exec with a pty whose output arrives as output() and which takes
// input() and resize(). Made by SandboxMethods::openTerminal(); owned by the parent given there.
// It rides on RpcClient's streams, so a dropped connection resumes it: output comes on without a
// hole, or — when the engine's backlog no longer holds what was missed — reset() tells the view
// to start over from what follows (the engine's replay), after which the program is asked to
// redraw (a resize to the same size).
class TerminalSession final : public QObject
{
    Q_OBJECT

public:
    ~TerminalSession() override;

    QString streamId() const;
    bool isDone() const { return m_done; }
    int cols() const { return m_cols; }
    int rows() const { return m_rows; }

    // Keystrokes, pastes: sent as they are (text when UTF-8, else base64).
    void input(const QByteArray &bytes);
    // The window size; the same size again asks the program to redraw.
    void resize(int cols, int rows);
    // Hangs up: kills the command's process tree (the session then fails with Cancelled).
    void close();

    // Bytes of input sent and not yet answered.
    qint64 inputInFlight() const { return m_inputInFlight; }

Q_SIGNALS:
    void started(const QString &streamId);
    void output(const QByteArray &bytes);
    // Output was lost: clear the screen and scrollback, feed `modes` (escape sequences that
    // restore the terminal's modes), then what follows.
    void reset(const QByteArray &modes);
    void finished(const Sandbox::ExecResult &result);
    void failed(const Sandbox::Error &error);
    // A stream.input or stream.resize was refused (e.g. input too fast).
    void controlFailed(const Sandbox::Error &error);

private:
    friend class SandboxMethods;
    TerminalSession(RpcClient *client, const QString &method, const QJsonObject &params, int cols,
                    int rows, QObject *parent);
    void onGap();

    QPointer<RpcClient> m_client;
    ExecStream *m_stream = nullptr; // owned (child)
    int m_cols;
    int m_rows;
    bool m_done = false;
    qint64 m_inputInFlight = 0;
    QByteArray m_pendingInput; // typed before the stream id is known
};

} // namespace Sandbox
