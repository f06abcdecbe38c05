#include "connectionmanager.h"

#include "../common/uistyle.h"

#include <client/localengine.h>

#include <QLoggingCategory>

Q_LOGGING_CATEGORY(lcConnection, "sandbox.ui.connection", QtInfoMsg)

namespace Sandbox::Ui {

ConnectionManager::ConnectionManager(QObject *parent)
    : QObject(parent)
{}

ConnectionManager::~ConnectionManager()
{
    if (m_client)
        m_client->close();
}

void ConnectionManager::connectTo(const ConnectionProfile &profile)
{
    disconnectFromServer();
    m_profile = profile;
    m_hasProfile = true;
    m_error.clear();

    auto *client = new Client(profile, this);
    m_client = client;
    if (m_policy)
        client->rpc()->setReconnectPolicy(*m_policy);
    if (LocalEngine *engine = client->localEngine()) {
        if (!m_engineProgram.isEmpty())
            engine->setProgram(m_engineProgram);
        connect(engine, &LocalEngine::engineStarted, this, [this, client](qint64 pid) {
            if (client != m_client)
                return;
            qCInfo(lcConnection) << "started the local engine, pid" << pid;
            setState(State::StartingEngine);
        });
    }
    connect(client, &Client::engineFailed, this, [this, client](const Error &error) {
        if (client != m_client)
            return;
        m_error = error.message;
        qCWarning(lcConnection) << "local engine:" << error.message;
        setState(error.code == ErrorCode::Unauthorized ? State::Unauthorized : State::Failed);
    });
    connect(client->rpc(), &RpcClient::stateChanged, this, [this, client](RpcClient::State s) {
        if (client == m_client)
            onRpcState(s);
    });
    connect(client->rpc(), &RpcClient::reconnectScheduled, this, [this, client](int ms) {
        if (client == m_client)
            Q_EMIT reconnectScheduled(ms);
    });
    Q_EMIT clientChanged(client);
    setState(State::Connecting);
    client->open();
}

void ConnectionManager::disconnectFromServer()
{
    m_sessionCall.cancel();
    m_quotaCall.cancel();
    m_session.reset();
    m_quota.reset();
    if (Client *old = m_client) {
        m_client = nullptr;
        old->disconnect(this);
        old->rpc()->disconnect(this);
        Q_EMIT clientChanged(nullptr);
        old->close();
        old->deleteLater();
    }
    setState(State::Disconnected);
}

void ConnectionManager::retry()
{
    if (m_hasProfile)
        connectTo(m_profile);
}

void ConnectionManager::onRpcState(RpcClient::State s)
{
    switch (s) {
    case RpcClient::State::Connecting:
        if (m_state != State::StartingEngine)
            setState(State::Connecting);
        break;
    case RpcClient::State::Reconnecting:
        setState(State::Reconnecting);
        break;
    case RpcClient::State::Unauthorized:
        m_error = tr("the server refused the API key");
        setState(State::Unauthorized);
        break;
    case RpcClient::State::Disconnected:
        if (m_state != State::Failed && m_state != State::Unauthorized)
            setState(State::Disconnected);
        break;
    case RpcClient::State::Connected:
        m_error.clear();
        setState(State::Connected);
        m_sessionCall = m_client->sessions().current(this, [this](Result<SessionInfo> r) {
            if (r) {
                m_session = r.value();
                Q_EMIT sessionChanged();
            } else {
                qCInfo(lcConnection) << "sessions.current:" << r.error().message;
            }
        });
        refreshQuota();
        Q_EMIT connected();
        break;
    }
}

void ConnectionManager::refreshQuota()
{
    if (!m_client || m_state != State::Connected || m_quotaCall.isPending())
        return;
    m_quotaCall = m_client->sessions().quota(this, [this](Result<Quota> r) {
        if (r) {
            m_quota = r.value();
            Q_EMIT quotaChanged();
        }
    });
}

void ConnectionManager::setState(State state)
{
    if (state == m_state)
        return;
    m_state = state;
    Q_EMIT stateChanged(state);
}

int ConnectionManager::msUntilReconnect() const
{
    return m_client ? m_client->rpc()->msUntilReconnect() : -1;
}

QString ConnectionManager::stateText() const
{
    const QString where = m_profile.isLocal() ? tr("the local engine") : m_profile.url.host();
    switch (m_state) {
    case State::Disconnected:
        return tr("Disconnected");
    case State::StartingEngine:
        return tr("Starting the local engine…");
    case State::Connecting:
        return tr("Connecting to %1…").arg(where);
    case State::Connected:
        return tr("Connected to %1").arg(where);
    case State::Reconnecting: {
        const int ms = msUntilReconnect();
        if (ms < 0)
            return tr("Connection lost: reconnecting…");
        return tr("Connection lost: reconnecting in %1 s").arg((ms + 999) / 1000);
    }
    case State::Unauthorized:
        return tr("Not authorized by %1: %2").arg(where, m_error);
    case State::Failed:
        return tr("Cannot connect: %1").arg(m_error);
    }
    return {};
}

} // namespace Sandbox::Ui
