#pragma once

#include "../workspace/sandboxpage.h"

#include <client/types.h>

#include <QElapsedTimer>
#include <QPointer>
#include <QTime>
#include <QTimer>

class QLabel;
class QToolButton;

namespace Sandbox {
class ExecStream;
}

namespace Sandbox::Ui {

class ElidedLabel;

class CommandLine;
class ConsoleView;

// A sandbox's console: runs one command at a time with a streamed exec (docs/protocol.md 2.3),
// shows stdout and stderr as they come (apart, ANSI colours rendered), then the exit code and
// duration. The stream survives dropped connections (core resumes it), so the output stays
// whole. `cd DIR` is remembered and used as the working directory of the next commands.
// Closing the page stops the command that runs (as closing a terminal does).
class ConsolePage final : public SandboxPage
{
    Q_OBJECT

public:
    static constexpr qint64 CommandTimeoutMs = 3600000;          // the protocol's maximum
    static constexpr qint64 MaxOutputBytes = 64LL * 1024 * 1024; // per channel, ditto
    static constexpr int MaxStoredHistory = 1000;

    explicit ConsolePage(const SandboxPageContext &context, QWidget *parent = nullptr);
    ~ConsolePage() override;

    QString title() const override;
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject &state) override;
    void connectionChanged(bool connected) override;

    ConsoleView *view() const { return m_view; }
    CommandLine *commandLine() const { return m_commandLine; }
    QString workingDirectory() const { return m_cwd; }
    bool isRunning() const { return m_stream != nullptr || m_cdPending; }

    // Runs `command` (as the command line's Enter does); ignored while one runs.
    void run(const QString &command);
    // Stops the running command (its whole process tree).
    void stop();
    void focusCommandLine();
    QString commandLineText() const;
    // The text right of the command line: "running · 3.2 s", "exit 0 · 12 ms", "connection lost".
    QString statusText() const;

Q_SIGNALS:
    void runningChanged(bool running);
    void commandFinished(const Sandbox::ExecResult &result);
    void commandFailed(const Sandbox::Error &error);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void onFinished(const ExecResult &result);
    void onFailed(const Error &error);
    void endCommand();
    void changeDirectory(const QString &command, const QString &target);
    void updateUi();
    void storeHistory(const QString &command);

    ConsoleView *m_view;
    CommandLine *m_commandLine;
    QLabel *m_prompt;
    ElidedLabel *m_status;
    QToolButton *m_runButton;
    QToolButton *m_stopButton;
    QList<QToolButton *> m_buttons; // run, stop, clear
    QPointer<ExecStream> m_stream;
    RpcCall m_cdCall;
    bool m_cdPending = false;
    bool m_stopRequested = false;
    QString m_cwd = QStringLiteral("/workspace");
    QElapsedTimer m_elapsed;
    QTime m_lostAt; // when the connection went while a command ran (invalid: it did not)
    QTimer m_ticker;
};

} // namespace Sandbox::Ui
