#include "client.h"

#include "localengine.h"
#include "websockettransport.h"

namespace Sandbox {

Client::Client(const ConnectionProfile &profile, QObject *parent)
    : QObject(parent)
    , m_profile(profile)
    , m_rpc(new RpcClient(new WebSocketTransport(profile.rpcUrl(), profile.apiKey), this))
    , m_agents(m_rpc)
    , m_databases(m_rpc)
    , m_sessions(m_rpc)
    , m_sandboxes(m_rpc)
{
    // Stream output as binary frames where the server offers them (docs/protocol.md 2.6).
    m_rpc->setBinaryStreams(true);
    if (profile.isLocal()) {
        m_engine = new LocalEngine(profile, this);
        connect(m_engine, &LocalEngine::ready, this, &Client::connectWith);
        connect(m_engine, &LocalEngine::failed, this, &Client::engineFailed);
    }
}

Client::Client(Transport *transport, QObject *parent)
    : QObject(parent)
    , m_rpc(new RpcClient(transport, this))
    , m_customTransport(true)
    , m_agents(m_rpc)
    , m_databases(m_rpc)
    , m_sessions(m_rpc)
    , m_sandboxes(m_rpc)
{}

Client::~Client() = default;

void Client::open()
{
    if (m_customTransport || !m_profile.isLocal() || !m_profile.apiKey.isEmpty()) {
        connectWith(m_profile);
        return;
    }
    if (m_autoStart) {
        m_engine->ensureRunning();
        return;
    }
    Result<QString> key = m_profile.readLocalKey();
    if (!key) {
        Q_EMIT engineFailed(key.error());
        return;
    }
    ConnectionProfile p = m_profile;
    p.apiKey = key.value();
    connectWith(p);
}

void Client::close()
{
    m_rpc->close();
}

void Client::connectWith(const ConnectionProfile &profile)
{
    m_profile = profile;
    if (auto *ws = qobject_cast<WebSocketTransport *>(m_rpc->transport())) {
        ws->setUrl(profile.rpcUrl());
        ws->setApiKey(profile.apiKey);
    }
    m_rpc->open();
}

} // namespace Sandbox
