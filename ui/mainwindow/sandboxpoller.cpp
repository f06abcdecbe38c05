#include "sandboxpoller.h"

#include <client/client.h>

namespace Sandbox::Ui {

SandboxPoller::SandboxPoller(QObject *parent)
    : QObject(parent)
{
    m_timer.setInterval(DefaultIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, &SandboxPoller::refresh);
}

SandboxPoller::~SandboxPoller() = default;

void SandboxPoller::setClient(Client *client)
{
    m_agentsCall.cancel();
    m_databasesCall.cancel();
    m_outstanding = 0;
    m_again = false;
    m_agents.clear();
    m_databases.clear();
    m_client = client;
}

void SandboxPoller::start()
{
    m_timer.start();
    refresh();
}

void SandboxPoller::stop()
{
    m_timer.stop();
}

void SandboxPoller::refresh()
{
    if (!m_client)
        return;
    if (m_outstanding > 0) {
        m_again = true;
        return;
    }
    m_outstanding = 2;
    m_error.clear();
    m_agentsCall = m_client->agents().list(this, [this](Result<QList<SandboxInfo>> r) {
        m_agentsOk = r.ok();
        if (r)
            m_agents = r.value();
        else
            m_error = r.error().message;
        finishRound();
    });
    m_databasesCall = m_client->databases().list(this, [this](Result<QList<SandboxInfo>> r) {
        // A backend without databases (-32010 / -32601) simply has none.
        m_databasesOk = r.ok() || r.error().code == ErrorCode::NotImplemented
                        || r.error().code == ErrorCode::MethodNotFound;
        if (r)
            m_databases = r.value();
        else if (!m_databasesOk)
            m_error = r.error().message;
        finishRound();
    });
}

void SandboxPoller::finishRound()
{
    if (--m_outstanding > 0)
        return;
    if (!m_error.isEmpty())
        Q_EMIT failed(m_error);
    QStringList failedKinds;
    if (!m_agentsOk)
        failedKinds << QStringLiteral("agent");
    if (!m_databasesOk)
        failedKinds << QStringLiteral("database");
    Q_EMIT listed((m_agentsOk ? m_agents : QList<SandboxInfo>())
                      + (m_databasesOk ? m_databases : QList<SandboxInfo>()),
                  failedKinds);
    if (m_again) {
        m_again = false;
        refresh();
    }
}

} // namespace Sandbox::Ui
