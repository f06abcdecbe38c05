#pragma once

#include <client/rpccall.h>
#include <client/types.h>

#include <QObject>
#include <QPointer>
#include <QTimer>

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

// Keeps the sidebar live: lists agents and databases every interval() ms while connected (the
// protocol has no push for sandbox status) and on demand (after a create, stop, delete). One
// round at a time; a listing that fails keeps that kind's last known sandboxes.
class SandboxPoller final : public QObject
{
    Q_OBJECT

public:
    static constexpr int DefaultIntervalMs = 2000;

    explicit SandboxPoller(QObject *parent = nullptr);
    ~SandboxPoller() override;

    void setClient(Client *client);
    void setInterval(int ms) { m_timer.setInterval(ms); }
    int interval() const { return m_timer.interval(); }
    // Starts the periodic listing (and lists now).
    void start();
    void stop();
    // Lists now (or right after the round under way).
    void refresh();

Q_SIGNALS:
    // Every sandbox of the key; `failedKinds` names the kinds ("agent", "database") whose
    // listing failed this time (their sandboxes are missing from `sandboxes`).
    void listed(const QList<Sandbox::SandboxInfo> &sandboxes, const QStringList &failedKinds);
    void failed(const QString &message);

private:
    void finishRound();

    QPointer<Client> m_client;
    QTimer m_timer;
    RpcCall m_agentsCall;
    RpcCall m_databasesCall;
    int m_outstanding = 0;
    bool m_again = false;
    QList<SandboxInfo> m_agents;
    QList<SandboxInfo> m_databases;
    bool m_agentsOk = true;
    bool m_databasesOk = true;
    QString m_error;
};

} // namespace Sandbox::Ui
