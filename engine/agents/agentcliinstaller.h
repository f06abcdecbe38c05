#pragma once

#include "doctor/agentclis.h"

#include <protocol/result.h>

#include <QHash>
#include <QJsonObject>
#include <QObject>

#include <functional>
#include <memory>
#include <sys/types.h>

namespace Sandbox::Engine {

// Installs an agent CLI at its pinned version from npm into DATA_DIR/agents/TYPE
// (agents.installCli, docs/protocol.md 4.7.3). npm runs as a process of its own (QProcess, never
// in the event loop), in a session of its own, as an unprivileged uid when the engine is root,
// into a staging directory; the engine checks what it made, makes it its own (a copy that follows
// no link, when npm ran as another uid) and puts it in place in one rename. Bounded in time and
// in bytes; one install per type at a time (a second caller waits for the same one).
class AgentCliInstaller final : public QObject
{
    Q_OBJECT

public:
    struct Config
    {
        QString installDir; // DATA_DIR/agents
        // As root, npm runs as this uid/gid (the engine's own otherwise).
        bool dropPrivileges = false;
        uid_t uid = 0;
        gid_t gid = 0;
        qint64 maxBytes = 2LL * 1024 * 1024 * 1024; // staging tree, npm's cache included
        QString npm;                                // empty: `npm` on PATH
    };
    // `event` is a stream event: {type:"progress", ...} or {type:"log", line}.
    using Progress = std::function<void(const QJsonObject &event)>;
    using Done = std::function<void(Result<QJsonObject>)>;

    explicit AgentCliInstaller(Config config, QObject *parent = nullptr);
    ~AgentCliInstaller() override;

    // Starts (or joins) the install of `pin`; `done` is called once, in this object's thread.
    // Answers a handle for cancel().
    quint64 install(const AgentCliPin &pin, qint64 timeoutMs, Progress progress, Done done);
    // Drops one caller; the install stops when it had no other.
    void cancel(quint64 handle);
    bool isInstalling(const QString &type) const { return m_installs.contains(type); }

private:
    struct Install;
    void start(const std::shared_ptr<Install> &in);
    void runNpm(const std::shared_ptr<Install> &in);
    void measure(const std::shared_ptr<Install> &in);
    void finishNpm(const std::shared_ptr<Install> &in, int exitCode, bool crashed);
    void fail(const std::shared_ptr<Install> &in, const Error &error);
    void succeed(const std::shared_ptr<Install> &in, const QJsonObject &answer);
    void emitEvent(const std::shared_ptr<Install> &in, const QJsonObject &event);
    Error npmError(const Install &in, int exitCode) const;

    Config m_config;
    QHash<QString, std::shared_ptr<Install>> m_installs; // by type
    quint64 m_nextHandle = 1;
};

} // namespace Sandbox::Engine
