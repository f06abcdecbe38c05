#pragma once

#include <client/agentsservice.h>
#include <client/agenttypes.h>

#include <QDialog>
#include <QPointer>

class QLabel;
class QProgressBar;
class QPushButton;

namespace Sandbox {
class ExecStream;
}

namespace Sandbox::Ui {

// Installs an agent's CLI on the engine (agents.installCli, docs/protocol.md 4.7.3) and shows
// its progress: what is fetched, how much of it so far, npm's last line; Cancel stops npm.
// Emits installed() or failed() once; the caller continues (creates the agent) on installed().
class CliInstallDialog final : public QDialog
{
    Q_OBJECT

public:
    CliInstallDialog(AgentsService agents, const AgentCliInfo &cli, QWidget *parent = nullptr);
    ~CliInstallDialog() override;

    // Starts the install (the dialog shows itself).
    void start();
    QProgressBar *progressBar() const { return m_bar; }
    QLabel *statusLabel() const { return m_status; }
    // npm's last line.
    QLabel *logLabel() const { return m_log; }

    // "Install Claude Code (npm, ~186 MB)": the offer's button.
    static QString offerText(const AgentCliInfo &cli);

Q_SIGNALS:
    void installed(const QString &type);
    void failed(const QString &message);

protected:
    void reject() override;

private:
    void onEvent(const QJsonObject &event);
    void finish(bool ok, const QString &message);

    AgentsService m_agents;
    AgentCliInfo m_cli;
    QPointer<ExecStream> m_stream;
    QLabel *m_title;
    QLabel *m_status;
    QLabel *m_log;
    QProgressBar *m_bar;
    QPushButton *m_cancel;
    bool m_done = false;
};

} // namespace Sandbox::Ui
