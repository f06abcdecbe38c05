#pragma once

#include <client/client.h>
#include <client/rpcclient.h>

#include <QObject>
#include <QPointer>

#include <optional>

namespace Sandbox::Ui {

// The app's one connection: makes a Client for a profile (a local profile finds or starts
// sandboxd through core's LocalEngine), follows its state for the status bar (connected,
// reconnecting in N s, refused, failed), and keeps the session (engine version, backend) and
// the quota. Switching profiles replaces the Client: clientChanged() tells the views to drop
// what belonged to the old one.
class ConnectionManager final : public QObject
{
    Q_OBJECT

public:
    enum class State {
        Disconnected,
        StartingEngine, // local: waiting for sandboxd to answer
        Connecting,
        Connected,
        Reconnecting, // see msUntilReconnect()
        Unauthorized, // the key was refused; no retry
        Failed,       // e.g. the local engine could not be started: see errorMessage()
    };
    Q_ENUM(State)

    explicit ConnectionManager(QObject *parent = nullptr);
    ~ConnectionManager() override;

    // Drops the current connection (if any) and connects with `profile`.
    void connectTo(const ConnectionProfile &profile);
    void disconnectFromServer();
    // Tries again after Failed/Unauthorized/Disconnected with the same profile.
    void retry();

    Client *client() const { return m_client; }
    const ConnectionProfile &profile() const { return m_profile; }
    State state() const { return m_state; }
    QString errorMessage() const { return m_error; }
    int msUntilReconnect() const;
    std::optional<SessionInfo> session() const { return m_session; }
    std::optional<Quota> quota() const { return m_quota; }
    // A one-line description for the status bar.
    QString stateText() const;

    void refreshQuota();
    // Used for every Client made from now on (tests shorten the backoff).
    void setReconnectPolicy(const RpcClient::ReconnectPolicy &policy) { m_policy = policy; }
    // For the local engine: the sandboxd to start (default: next to the app, then PATH).
    void setEngineProgram(const QString &path) { m_engineProgram = path; }
    QString engineProgram() const { return m_engineProgram; }

Q_SIGNALS:
    // The Client was replaced (or is gone: nullptr). Everything made with the old one is stale.
    void clientChanged(Sandbox::Client *client);
    void stateChanged(Sandbox::Ui::ConnectionManager::State state);
    void reconnectScheduled(int msUntilNextAttempt);
    void sessionChanged();
    void quotaChanged();
    // Connected (again): a good moment to reload lists.
    void connected();

private:
    void setState(State state);
    void onRpcState(RpcClient::State state);

    QPointer<Client> m_client; // owned (child)
    ConnectionProfile m_profile;
    State m_state = State::Disconnected;
    QString m_error;
    std::optional<SessionInfo> m_session;
    std::optional<Quota> m_quota;
    std::optional<RpcClient::ReconnectPolicy> m_policy;
    QString m_engineProgram;
    bool m_hasProfile = false;
    RpcCall m_sessionCall;
    RpcCall m_quotaCall;
};

} // namespace Sandbox::Ui
