#pragma once

#include "engineprocess.h"
#include "testclient.h"

#include <QJsonObject>
#include <QStringList>

// The set-up of the suites that drive a real sandboxd over /rpc: the engine, a client opened with
// its key, and the sandboxes made through create(), which cleanup() deletes again before it stops
// the engine. Blocking, like RpcTestClient: for tests only.
class EngineFixture final
{
public:
    EngineFixture() = default;
    ~EngineFixture();
    EngineFixture(const EngineFixture &) = delete;
    EngineFixture &operator=(const EngineFixture &) = delete;

    // Starts the engine (arguments as EngineProcess::start) and opens rpc() with its key; false
    // when either fails (process().log() says why).
    bool start(const QStringList &extraArgs = {}, const QString &dataDir = {});
    // Deletes the sandboxes create() made that are still there, then stops the engine.
    void cleanup();

    EngineProcess &process() { return m_engine; }
    const EngineProcess &process() const { return m_engine; }
    RpcTestClient &rpc() { return m_rpc; }
    const RpcTestClient &rpc() const { return m_rpc; }

    // `method` (agents.create or databases.create) with `params`: the new Sandbox object, or an
    // empty one with the error in rpc().lastError().
    QJsonObject create(const QString &method, const QJsonObject &params, int timeoutMs = 120000);
    // An agent sandbox of `type` and `size` (empty: the engine's default), with `extra` params:
    // its id, or empty.
    QString createAgent(const QString &type, const QString &size, const QJsonObject &extra = {});
    // sandbox.exec: its result ({exitCode, stdout, stderr, ...}), or empty.
    QJsonObject exec(const QString &id, const QJsonValue &command, const QJsonObject &options = {},
                     int timeoutMs = 60000);
    // The text of sandbox `id`'s file at `path` (sandbox.readFile), or a null string.
    QString readFile(const QString &id, const QString &path);
    // The code of the error `method` answers with; 0 when it succeeds.
    int errorCode(const QString &method, const QJsonObject &params);
    // cleanup() deletes sandbox `id` too: one made another way (e.g. through a core Client).
    void deleteAtCleanup(const QString &id) { m_created.append(id); }

private:
    EngineProcess m_engine;
    RpcTestClient m_rpc;
    QStringList m_created;
};

// `value` as compact JSON, for failure messages.
QByteArray dump(const QJsonValue &value);
