#pragma once

#include "protocol/result.h"
#include "protocol/sandboxenums.h"
#include "runtime/cgroup.h"
#include "sparepool.h"
#include "state/registry.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include <functional>
#include <memory>
#include <set>
#include <utility>

namespace Sandbox::Engine {

class FdPoller;
class SandboxNetwork;
class SandboxProcess;
class SupervisorChannel;
struct SandboxSpec;

// What a kind of sandbox adds to the generic lifecycle (a database server to start, an agent
// CLI to mount). Registered per sandbox type, e.g. "postgres"; every member is optional.
struct SandboxTypeHooks
{
    // Adjusts the bubblewrap spec before each start (extra mounts, environment).
    std::function<void(SandboxSpec &spec, const SandboxRecord &record)> prepare;
    // Runs once the supervisor answers, before the sandbox counts as running; an error fails the start.
    std::function<void(const SandboxRecord &record, SupervisorChannel *channel,
                       std::function<void(Result<bool>)> done)>
        afterStart;
    // Runs before the sandbox is stopped (a clean database shutdown); must call done.
    std::function<void(const SandboxRecord &record, SupervisorChannel *channel,
                       std::function<void()> done)>
        beforeStop;
    // Runs when the sandbox is deleted, after it stopped (a warm spare's too, when it is dropped).
    std::function<void(const SandboxRecord &record)> removed;
    // Starts a warm spare's server ahead of its owner (SandboxManager::keepWarm): runs once the
    // spare is up, with no owner and no network; `afterStart` then hands that server to the create
    // that takes the spare. An error drops the spare.
    std::function<void(const SandboxRecord &record, SupervisorChannel *channel,
                       std::function<void(Result<bool>)> done)>
        warmUp;
    // Whether spares of this type may be started ahead of demand (docs/protocol.md 6): true only
    // when `prepare` depends on nothing but the type and the sandbox's own directories. A
    // `created` step (CreateSandbox) still runs for a spare, before `afterStart`.
    bool poolable = false;
};

struct EngineConfig
{
    QString dataDir;
    QString supervisorPath;
    QString bwrapPath = QStringLiteral("/usr/bin/bwrap");
    bool dropPrivileges = false; // true when sandboxd runs as root
    uid_t uidBase = 200000;      // sandbox N runs as uidBase + N
    bool useCgroups = true;
    // Where sandbox cgroups go and which limits hold (CgroupHost::prepare() at start-up); null:
    // no cgroups, and every Sandbox object says so.
    std::shared_ptr<const CgroupHost> cgroups;
    bool bubblewrap = true;  // false: --isolation container
    bool diskImages = false; // workspaces as size-capped ext4 images (needs root and loop devices)
    int maxRunningPerKey = 8;
    qint64 maxMemoryMbPerKey = 16384;
    int maxSandboxesPerKey = 64;
    qint64 defaultSleepAfterMs = 10 * 60 * 1000;
    // Spare sandboxes started ahead of demand (docs/protocol.md 6): at most this many in all,
    // none while the host's available memory is below sparesMinAvailableMb.
    int spares = 2;
    qint64 sparesMinAvailableMb = 2048;
    // Databases kept started ahead of demand, by type (warm spares, docs/protocol.md 6.4); a type
    // missing or 0: none.
    QHash<QString, int> databasePool{{QStringLiteral("postgres"), 1},
                                     {QStringLiteral("sqlite"), 1},
                                     {QStringLiteral("duckdb"), 1}};
};

struct CreateSandbox
{
    QString keyId;
    QString kind; // agent | database
    QString type;
    QString size = QStringLiteral("standard-1");
    QString name;
    QMap<QString, QString> env;
    QJsonValue network = false; // a validated policy (docs/protocol.md 3.5), canonical
    bool gateway = false;       // agents: model calls through the engine (4.7)
    qint64 sleepAfterMs = -1;   // -1: the engine's default
    // Runs once the sandbox has its id, before its first start (its type's prepare hook): where
    // a type keeps what it was created with (a database's settings).
    std::function<void(const SandboxRecord &record)> created;
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

    void setTypeHooks(const QString &type, SandboxTypeHooks hooks);
    // What a type's start makes changed (its agent CLI was installed): spares made before are
    // replaced by ones made now, so that a create takes a spare again.
    void refreshSpares();
    // Keeps `count` spares of `shape` whose type's server is started too (its `warmUp` hook), as
    // long as the host has the spares' memory; made in the background now and again after each
    // is taken. 0: none. A shape kept warm has no cold spare (one up to HELLO) besides.
    void keepWarm(const SparePool::Shape &shape, int count);
    // Every sandbox's network (its listeners, rules and environment); null: none at all.
    void setNetwork(SandboxNetwork *network) { m_network = network; }
    // The host directory of a sandbox's own files (the engine's; the sandbox never writes there).
    QString stateDirOf(const QString &id) const;
    // The host directory of the trees the sandbox writes: workspace/, home/, run/ (see
    // WorkspaceVolume), on its disk image when it has one.
    QString volumeDirOf(const QString &id) const;
    // The host directory that is its /workspace (in volumeDirOf(), mounted from the disk image
    // while the sandbox runs, when it has one).
    QString workspaceOf(const QString &id) const;
    const EngineConfig &config() const { return m_config; }

    void create(const CreateSandbox &request, QObject *context, Done done);
    // kind: "" for any kind. Another key's sandbox is NotFound.
    Result<QJsonObject> info(const QString &keyId, const QString &id,
                             const QString &kind = {}) const;
    // Gives the sandbox a new name ("" clears it), kept across restarts; its Sandbox object.
    Result<QJsonObject> setName(const QString &keyId, const QString &id, const QString &kind,
                                const QString &name);
    QJsonArray list(const QString &keyId, const QString &kind) const;
    // The whole record, environment values included: for the engine's adapters, never for replies.
    Result<SandboxRecord> record(const QString &keyId, const QString &id,
                                 const QString &kind = {}) const;
    void stop(const QString &keyId, const QString &id, const QString &kind, QObject *context,
              Done done);
    void start(const QString &keyId, const QString &id, const QString &kind, QObject *context,
               Done done);
    void remove(const QString &keyId, const QString &id, const QString &kind, QObject *context,
                Done done);
    // Stops and deletes every sandbox of a key (the key was revoked).
    void removeAllOf(const QString &keyId);
    // Replaces a sandbox's network policy (already validated): saved, and applied from the next
    // connection on, running or not (docs/protocol.md 4.5).
    void setPolicy(const QString &keyId, const QString &id, const QJsonValue &network, Done done);
    // The key that owns a sandbox (empty if there is none).
    QString keyOf(const QString &id) const;

    // Hands a ready supervisor channel to `then`, waking a sleeping sandbox first. The sandbox
    // counts as busy until endActivity(id) (so that it does not go to sleep under a command).
    void withSupervisor(const QString &keyId, const QString &id, const QString &kind,
                        QObject *context, WithChannel then);
    void endActivity(const QString &id);

    QJsonObject quota(const QString &keyId) const;
    QJsonObject counts(const QString &keyId) const;
    // The spares (engine.pool, docs/protocol.md 6): {capacity, minAvailableMb, availableMb,
    // spares:[{id, kind, type, size, ready, warm}]}.
    QJsonObject pool() const;

Q_SIGNALS:
    void statusChanged(const QString &id, const QString &status);

private:
    struct Entry;
    struct Usage
    {
        int total = 0;
        int running = 0;
        qint64 memoryMb = 0;
    };
    Usage usageOf(const QString &keyId, const QString &exceptId = {}) const;
    Entry *find(const QString &keyId, const QString &id, const QString &kind) const;
    void launch(Entry *e);
    void setStatus(Entry *e, SandboxStatus status, const QString &error = {});
    void touch(Entry *e);
    // Idle sandboxes sleep by one timer for all of them (m_idle), not one timer each.
    void armIdleTimer(Entry *e);
    void disarmIdleTimer(Entry *e);
    void scheduleIdleTimer();
    void sleepIdleSandboxes();
    void teardown(Entry *e, std::function<void()> then);
    Result<bool> checkQuota(const QString &keyId, const QString &size,
                            const QString &exceptId) const;
    void becameReady(Entry *e);
    // After the supervisor's `configure`: the network (its listeners), then the type's start.
    void attachAndStart(Entry *e);
    // A warm spare is up: its type's server starts (SandboxTypeHooks::warmUp).
    void warmUp(Entry *e);
    Entry *spareById(const QString &id) const;
    QJsonObject toJson(const Entry *e) const;
    // Which of a sandbox's limits hold (docs/protocol.md 3.1, `limits.enforcement`).
    LimitsEnforcement enforcementOf(const Entry *e) const;
    LimitEnforcement diskEnforcement(const Entry *e) const;
    QString trashDir() const;
    void startDone(Entry *e, Result<bool> result);
    // Everything a start of `e` needs but its process (the type's and the network's parts too).
    void fillSpec(const Entry *e, SandboxSpec &spec) const;
    int allocateSlot();
    // A started spare that can become `request`'s sandbox exactly as a new start would make it,
    // taken out of the pool; null if there is none.
    Entry *takeSpare(const SandboxRecord &wanted);
    void refillSpares();
    // Whether `e` (a spare) is still what a new start of its shape would make (false: a type's
    // mounts changed since it started, e.g. its agent CLI was installed).
    bool spareIsCurrent(const Entry *e) const;
    void spawnSpare(const SparePool::Shape &shape, bool warm);
    // Stops a spare (or an entry taken from the pool that could not be registered) and deletes
    // its files; `e` is gone at once.
    void dropSpare(Entry *e);
    void discardFiles(const QString &id);

    EngineConfig m_config;
    Registry *m_registry;              // not owned
    QHash<QString, Entry *> m_entries; // owned
    QHash<QString, SandboxTypeHooks> m_hooks;
    SandboxNetwork *m_network = nullptr; // not owned
    SparePool m_pool;
    QList<Entry *> m_spares;                        // owned; not in m_entries until claimed
    QList<std::pair<SparePool::Shape, int>> m_warm; // how many warm spares of each shape
    // Watches every sandbox's supervisor channel and log: one descriptor in the event loop
    // however many sandboxes run.
    FdPoller *m_poller = nullptr; // owned (child)
    int m_nextSlot = 0;
    // When each idle sandbox sleeps (m_clock, ms), the soonest first; m_idleTimer for the first.
    std::set<std::pair<qint64, QString>> m_idle;
    QTimer m_idleTimer;
    QElapsedTimer m_clock;
};

} // namespace Sandbox::Engine
