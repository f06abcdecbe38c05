#pragma once

#include "protocol/result.h"

#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>

namespace Sandbox::Engine {

class KeyStore;
class NetworkPolicy;
class SandboxManager;
class SandboxNetwork;
class StreamHub;
class SupervisorChannel;
class TerminalHub;

// Who calls, and how to reach them while the call runs.
struct CallContext
{
    QString keyId;
    QJsonValue requestId = QJsonValue::Null;
    // Set for calls over /rpc: where stream notifications go. Empty for REST (no streaming).
    std::function<void(const QByteArray &)> notify;
    const void *connection = nullptr; // identifies the connection for stream ownership
    // The handler may store a function here that cancels the work (rpc.cancel).
    std::shared_ptr<std::function<void()>> onCancel = std::make_shared<std::function<void()>>();
    // Lifetime guard: replies for a context that is gone are dropped.
    QPointer<QObject> guard;
    // Set for calls over /rpc and REST (answers in JSON): answers with a result that is already
    // JSON text (an object the handler built or checked), instead of `reply`: the text of the
    // parts one after another (a big one, a page of rows, is not copied on its way to the
    // socket). Empty otherwise.
    using RawReply = std::function<void(const QList<QByteArray> &resultJson)>;
    RawReply replyRaw;
};

// Every method of docs/protocol.md section 4, shared by /rpc and REST. A method answers once,
// through `reply`, with a result or an Error.
class Methods final : public QObject
{
    Q_OBJECT

public:
    using Reply = std::function<void(Result<QJsonValue>)>;

    Methods(SandboxManager *sandboxes, StreamHub *streams, KeyStore *keys,
            QObject *parent = nullptr);

    using Handler
        = std::function<void(const QJsonObject &params, const CallContext &, const Reply &)>;

    bool has(const QString &method) const { return m_handlers.contains(method); }
    // Whether the key may act on the engine itself (keys, spares, agent CLIs).
    bool isAdmin(const QString &keyId) const;
    // Where sandbox.networkLog reads (docs/protocol.md 4.5); without it the log is empty.
    void setNetwork(SandboxNetwork *network) { m_network = network; }
    // Adds or replaces a method: the agents and databases adapters register theirs here.
    void add(const QString &name, Handler handler);
    void call(const QString &method, const QJsonObject &params, const CallContext &context,
              Reply reply);
    // Whether the caller's key may give a sandbox this network policy (docs/protocol.md 3.5:
    // loopback and non-public entries need an admin key): for every create and setNetwork.
    Result<bool> admitPolicy(const NetworkPolicy &policy, const CallContext &context) const;

Q_SIGNALS:
    void keyRevoked(const QString &keyId);

private:
    // The methods of one area each (docs/protocol.md section 4).
    void addAgentMethods();
    void addAnySandboxMethods();
    void addSessionMethods();
    void addKeyMethods();
    void addStreamMethods();
    // get/status, stop, start, delete, setName, exec and the file methods under `prefix`.
    void addSandboxMethods(const QString &prefix, const QString &kind);
    // agents.setName / sandbox.setName (and databases.setName through the adapter).
    Result<QJsonObject> setName(const QString &kind, const QJsonObject &params,
                                const CallContext &ctx);

    // sandbox.exec / agents.exec (docs/protocol.md 4.3): the parameters read, then the command
    // run through the sandbox's supervisor (or a terminal's through TerminalHub).
    struct ExecCall;
    static Result<ExecCall> readExec(const QJsonObject &params, const CallContext &ctx);
    void exec(const QString &kind, const QJsonObject &params, const CallContext &ctx,
              const Reply &reply);
    void runExec(SupervisorChannel *channel, const ExecCall &call, const CallContext &ctx,
                 const Reply &reply);
    void fileOp(const QString &kind, const QString &op, const QJsonObject &params,
                const CallContext &ctx, const Reply &reply);
    void cloneRepo(const QJsonObject &params, const CallContext &ctx, const Reply &reply);

    SandboxManager *m_sandboxes;         // not owned
    StreamHub *m_streams;                // not owned
    KeyStore *m_keys;                    // not owned
    bool m_pipedStreams;                 // streamed output read from its pipes (OutputPipe)
    TerminalHub *m_terminals = nullptr;  // owned (child): execs with a pty
    SandboxNetwork *m_network = nullptr; // not owned
    QHash<QString, Handler> m_handlers;
};

} // namespace Sandbox::Engine
