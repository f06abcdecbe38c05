#pragma once

#include "agentsservice.h"
#include "connectionprofile.h"
#include "databasesservice.h"
#include "rpcclient.h"
#include "sandboxservice.h"
#include "sessionsservice.h"

#include <QObject>

namespace Sandbox {

class LocalEngine;
class Transport;

// The client for one profile: an RpcClient over a WebSocketTransport and the typed services on
// it. For sandboxctl and the desktop app.
//
//   auto *client = new Client(ConnectionProfile::local(), this);
//   client->open(); // local: starts sandboxd if needed, reads the key, connects
//   client->agents().list(this, [](Result<QList<SandboxInfo>> r) { ... }).detach();
//
// Calls made before the connection is up wait in RpcClient's queue (see RpcClient).
class Client final : public QObject
{
    Q_OBJECT

public:
    explicit Client(const ConnectionProfile &profile, QObject *parent = nullptr);
    // Over any transport (tests, an in-memory fake server); open() then only opens the RpcClient.
    explicit Client(Transport *transport, QObject *parent = nullptr);
    ~Client() override;

    const ConnectionProfile &profile() const { return m_profile; }

    // Local profile without a key: ensures the engine runs (when autoStartEngine) and reads its
    // key first; failure is reported by engineFailed() and the RpcClient stays Disconnected.
    void open();
    void close();

    void setAutoStartEngine(bool on) { m_autoStart = on; }
    // The helper used by open() for local profiles (e.g. to set its program or timeout).
    LocalEngine *localEngine() const { return m_engine; }

    RpcClient *rpc() const { return m_rpc; }
    AgentsService &agents() { return m_agents; }
    DatabasesService &databases() { return m_databases; }
    SessionsService &sessions() { return m_sessions; }
    SandboxService &sandboxes() { return m_sandboxes; }

Q_SIGNALS:
    void engineFailed(const Sandbox::Error &error);

private:
    void connectWith(const ConnectionProfile &profile);

    ConnectionProfile m_profile;
    RpcClient *m_rpc;                // owned (child)
    LocalEngine *m_engine = nullptr; // owned (child), local profiles only
    bool m_autoStart = true;
    bool m_customTransport = false;
    AgentsService m_agents;
    DatabasesService m_databases;
    SessionsService m_sessions;
    SandboxService m_sandboxes;
};

} // namespace Sandbox
