#pragma once

#include "protocol/result.h"
#include "runtime/cgroup.h"
#include "state/registry.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

#include <functional>

namespace Sandbox::Engine {

class SandboxProcess;
class SupervisorChannel;

struct EngineConfig
{
    QString dataDir;
    QString supervisorPath;
    QString bwrapPath = QStringLiteral("/usr/bin/bwrap");
    bool dropPrivileges = false; // true when sandboxd runs as root
    uid_t uidBase = 200000;      // sandbox N runs as uidBase + N
    bool useCgroups = true;
    int maxRunningPerKey = 8;
    qint64 maxMemoryMbPerKey = 16384;
    int maxSandboxesPerKey = 64;
    qint64 defaultSleepAfterMs = 10 * 60 * 1000;
};

struct CreateSandbox
{
    QString keyId;
    QString kind; // agent | database
    QString type;
    QString size = QStringLiteral("standard-1");
    QString name;
    QMap<QString, QString> env;
    bool network = false;
    qint64 sleepAfterMs = -1; // -1: the engine's default
};

// The lifecycle of every sandbox: create, wake on demand, sleep when idle, stop, delete,
// quota, and recovery after a restart (docs/protocol.md, 3.1 and 6). Owns the SandboxProcesses.
class SandboxManager final : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(Result<QJsonObject>)>;
    using WithChannel = std::function<void(Result<SupervisorChannel *>)>;

    SandboxManager(EngineConfig config, Registry *registry, QObject *parent = nullptr);
    ~SandboxManager() override;

    // Makes the registry true again after a restart: sandboxes that were running are gone
    // (they die with the engine); kill any leftovers through their cgroups, mark them sleeping.
    void recover();

    static bool isValidSize(const QString &size);
    static ResourceLimits limitsFor(const QString &size);
    static QStringList sizes();

    void create(const CreateSandbox &request, QObject *context, Done done);
    // kind: "" for any kind. Another key's sandbox is NotFound.
    Result<QJsonObject> info(const QString &keyId, const QString &id, const QString &kind = {}) const;
    QJsonArray list(const QString &keyId, const QString &kind) const;
    void stop(const QString &keyId, const QString &id, const QString &kind, QObject *context, Done done);
    void start(const QString &keyId, const QString &id, const QString &kind, QObject *context, Done done);
    void remove(const QString &keyId, const QString &id, const QString &kind, QObject *context, Done done);
    // Stops and deletes every sandbox of a key (the key was revoked).
    void removeAllOf(const QString &keyId);

    // Hands a ready supervisor channel to `then`, waking a sleeping sandbox first. The sandbox
    // counts as busy until endActivity(id) (so that it does not go to sleep under a command).
    void withSupervisor(const QString &keyId, const QString &id, const QString &kind,
                        QObject *context, WithChannel then);
    void endActivity(const QString &id);

    QJsonObject quota(const QString &keyId) const;
    QJsonObject counts(const QString &keyId) const;

    static QJsonObject toJson(const SandboxRecord &record);

Q_SIGNALS:
    void statusChanged(const QString &id, const QString &status);

private:
    struct Entry;
    Entry *find(const QString &keyId, const QString &id, const QString &kind) const;
    void launch(Entry *e);
    void setStatus(Entry *e, const QString &status, const QString &error = {});
    void touch(Entry *e);
    void armIdleTimer(Entry *e);
    void teardown(Entry *e, std::function<void()> then);
    Result<bool> checkQuota(const QString &keyId, const QString &size, const QString &exceptId) const;
    QString workspaceOf(const QString &id) const;
    QString stateDirOf(const QString &id) const;

    EngineConfig m_config;
    Registry *m_registry; // not owned
    QHash<QString, Entry *> m_entries; // owned
};

} // namespace Sandbox::Engine
