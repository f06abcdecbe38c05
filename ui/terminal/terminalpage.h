#pragma once

#include "../workspace/sandboxpage.h"

#include <client/terminalsession.h>

#include <QPointer>

class QLabel;
class QToolButton;

namespace Sandbox::Ui {

class TerminalView;

// A sandbox's terminal: a login shell on a pseudo-terminal in the sandbox (docs/protocol.md 4.8),
// shown by a TerminalView. It rides on core's resumable streams: a dropped connection resumes
// the screen (the missed output, or — when too much was missed — the terminal's modes and a
// redraw by the program). When the shell exits the page says so and Enter starts a new one.
class TerminalPage final : public SandboxPage
{
    Q_OBJECT

public:
    explicit TerminalPage(const SandboxPageContext &context, QWidget *parent = nullptr);
    ~TerminalPage() override;

    QString title() const override;
    TerminalView *view() const { return m_view; }
    TerminalSession *session() const { return m_session; }
    bool isRunning() const;

    // Starts the shell (again). The page does it itself when first shown.
    void start();
    // Hangs up (kills the shell's process tree).
    void hangUp();

Q_SIGNALS:
    void runningChanged(bool running);

protected:
    void showEvent(QShowEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void onFinished(const ExecResult &result);
    void onFailed(const Error &error);
    void setStatus(const QString &text);

    TerminalView *m_view;
    QLabel *m_status;
    QToolButton *m_restartButton;
    QPointer<TerminalSession> m_session;
    QString m_programTitle;
    bool m_started = false;
};

} // namespace Sandbox::Ui
