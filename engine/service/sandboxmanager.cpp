#include "sandboxmanager.h"

#include "egress/fdpoller.h"
#include "protocol/sandboxenums.h"
#include "runtime/sandboxprocess.h"
#include "runtime/supervisorchannel.h"
#include "runtime/workspacevolume.h"
#include "sandboxnetwork.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLoggingCategory>
#include <QRandomGenerator>
#include <QTimer>

#include <algorithm>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcManager, "sandboxd.sandboxes")

namespace Sandbox::Engine {

namespace {

struct SizeRow
{
    const char *name;
    ResourceLimits limits;
};

// How long after a create took a spare its replacement starts. Started at once, the replacement
// (a bubblewrap, a supervisor, a database host) took the cores from the new sandbox's first
// requests: a SQLite create->first result went from 15 to 61 ms at load 6 (bench_databases).
constexpr int kSpareRefillDelayMs = 500;

// docs/protocol.md, 3.1 (Cloudflare's instance types).
const SizeRow kSizes[] = {
    {"lite", {256, 128, 0.0625, 2048, 64}},      {"basic", {1024, 256, 0.25, 4096, 128}},
    {"standard-1", {4096, 512, 0.5, 8192, 256}}, {"standard-2", {6144, 1024, 1, 12288, 512}},
    {"standard-3", {8192, 1024, 2, 16384, 512}}, {"standard-4", {12288, 2048, 4, 20480, 1024}},
};

QString isoTime(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(Qt::ISODateWithMs) : QString();
}

SandboxStatus statusOf(const SandboxRecord &record)
{
    return fromWire<SandboxStatus>(record.status);
}

bool isLive(const SandboxRecord &record)
{
    const SandboxStatus status = statusOf(record);
    return status == SandboxStatus::Running || status == SandboxStatus::Creating
           || status == SandboxStatus::Starting;
}

QString spanOf(const QElapsedTimer &t)
{
    return QString::number(double(t.nsecsElapsed()) / 1e6, 'f', 2) + QStringLiteral(" ms");
}

// A spare's state directory holds this file until the spare is claimed: what a crash leaves of
// unclaimed spares is found by it (recover()).
const QString kSpareMarker = QStringLiteral("spare");

SparePool::Shape shapeOf(const SandboxRecord &r)
{
    return {r.kind, r.type, r.size};
}

QString newSandboxId()
{
    quint32 r[2];
    QRandomGenerator::system()->fillRange(r, 2);
    return QStringLiteral("sb_")
           + QString::fromLatin1(
               QByteArray(reinterpret_cast<const char *>(r), sizeof r).toHex().left(12));
}

} // namespace

struct SandboxManager::Entry
{
    SandboxRecord rec;
    ResourceLimits limits;
    SandboxProcess *proc = nullptr; // owned by the manager (QObject child)
    QList<QPair<QPointer<QObject>, WithChannel>> waiters;
    int busy = 0;
    qint64 idleDue = 0; // when it sleeps (SandboxManager::m_clock, ms; in m_idle); 0: never
    bool tearingDown = false;
    QList<std::function<void()>> afterTeardown;
    // Decided at each start: whether the sandbox's writes were all inside its disk image.
    std::optional<LimitEnforcement> disk;
    QElapsedTimer sinceLaunch; // the start's steps are logged against it (lcStartup)
    bool spare = false;        // started ahead of demand, owned by no key yet (m_spares)
    bool warm = false;         // a spare whose type's server starts ahead too (keepWarm)
    bool warmed = false;       // a warm spare's server is up: a create can take it
};

SandboxManager::SandboxManager(EngineConfig config, Registry *registry, QObject *parent)
    : QObject(parent)
    , m_config(std::move(config))
    , m_registry(registry)
    , m_pool(m_config.bubblewrap ? m_config.spares : 0, m_config.sparesMinAvailableMb)
    , m_poller(new FdPoller(this))
{
    m_clock.start();
    m_idleTimer.setSingleShot(true);
    connect(&m_idleTimer, &QTimer::timeout, this, &SandboxManager::sleepIdleSandboxes);
    for (const SandboxRecord &r : m_registry->sandboxes()) {
        auto *e = new Entry;
        e->rec = r;
        e->limits = limitsFor(r.size);
        m_entries.insert(r.id, e);
    }
}

SandboxManager::~SandboxManager()
{
    // Spares die with their processes; their files go at the next start (recover()).
    for (Entry *e : std::as_const(m_spares)) {
        if (e->proc) {
            e->proc->disconnect(this);
            delete e->proc;
        }
        delete e;
    }
    for (Entry *e : std::as_const(m_entries)) {
        if (e->proc) {
            e->proc->disconnect(this);
            delete e->proc; // kills bwrap; the sandbox's processes die with it
            e->rec.status = toWire(SandboxStatus::Sleeping);
            (void)m_registry->upsertSandbox(e->rec);
        }
        delete e;
    }
}

void SandboxManager::recover()
{
    // What deletions left half done when the engine stopped goes, in the background.
    WorkspaceVolume::emptyTrash(trashDir(), this);
    if (m_config.diskImages) {
        // Spares for the common sizes, made in the background while the engine starts serving;
        // half-made ones from before a crash, and ones of sizes no longer made, go first.
        const QString pool = m_config.dataDir + QStringLiteral("/volumes");
        QList<qint64> sizes;
        for (const SizeRow &row : kSizes)
            sizes.append(WorkspaceVolume::imageMb(row.limits));
        WorkspaceVolume::prunePool(pool, sizes);
        for (const QString &size :
             {QStringLiteral("lite"), QStringLiteral("basic"), QStringLiteral("standard-1")})
            WorkspaceVolume::refillPool(pool, WorkspaceVolume::imageMb(limitsFor(size)), this);
    }
    // Spares the engine had when it stopped: never claimed, so nobody's; they go.
    const QDir sandboxes(m_config.dataDir + QStringLiteral("/sandboxes"));
    for (const QString &id : sandboxes.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        if (!QFile::exists(stateDirOf(id) + u'/' + kSpareMarker))
            continue;
        if (m_entries.contains(id)) { // claimed and registered just before the stop
            QFile::remove(stateDirOf(id) + u'/' + kSpareMarker);
            continue;
        }
        SandboxProcess::cleanUpOrphan(m_config.cgroups.get(), id, volumeDirOf(id));
        discardFiles(id);
    }
    for (Entry *e : std::as_const(m_entries)) {
        if (!isLive(e->rec))
            continue;
        SandboxProcess::cleanUpOrphan(m_config.cgroups.get(), e->rec.id, volumeDirOf(e->rec.id));
        qCInfo(lcManager) << "sandbox" << e->rec.id << "was" << e->rec.status
                          << "when the engine stopped; now sleeping";
        e->rec.status = toWire(SandboxStatus::Sleeping);
        (void)m_registry->upsertSandbox(e->rec);
    }
}

bool SandboxManager::isValidSize(const QString &size)
{
    return sizes().contains(size);
}

QStringList SandboxManager::sizes()
{
    QStringList out;
    for (const SizeRow &row : kSizes)
        out.append(QLatin1String(row.name));
    return out;
}

ResourceLimits SandboxManager::limitsFor(const QString &size)
{
    for (const SizeRow &row : kSizes) {
        if (size == QLatin1String(row.name))
            return row.limits;
    }
    return kSizes[2].limits;
}

LimitEnforcement SandboxManager::diskEnforcement(const Entry *e) const
{
    if (e->disk)
        return *e->disk;
    if (!m_config.bubblewrap) // --isolation container: one sandbox, no loop devices
        return LimitEnforcement::no(
            QStringLiteral("in a container the container's own disk is the cap (its instance "
                           "type); the workspace is a plain directory"));
    if (!m_config.diskImages)
        return LimitEnforcement::no(
            ::geteuid() == 0
                ? QStringLiteral("workspaces are plain directories (no loop devices or mkfs.ext4, "
                                 "or --no-disk-limit)")
                : QStringLiteral("workspaces are plain directories: disk caps need sandboxd to "
                                 "run as root (loop devices)"));
    return LimitEnforcement::no(QStringLiteral("decided when the sandbox starts"));
}

LimitsEnforcement SandboxManager::enforcementOf(const Entry *e) const
{
    LimitsEnforcement out;
    auto cgroup = [&](const QString &controller) {
        const CgroupHost *host = m_config.cgroups.get();
        if (host && (m_config.useCgroups || !host->isUsable()))
            return host->enforcement(controller); // with the reason the engine was given
        return LimitEnforcement::no(QStringLiteral("sandboxd runs without cgroups"));
    };
    out.memory = cgroup(QStringLiteral("memory"));
    out.pids = cgroup(QStringLiteral("pids"));
    out.cpu = cgroup(QStringLiteral("cpu"));
    out.disk = diskEnforcement(e);
    return out;
}

QJsonObject SandboxManager::toJson(const Entry *e) const
{
    const SandboxRecord &r = e->rec;
    const ResourceLimits l = limitsFor(r.size);
    QJsonArray envNames;
    for (auto it = r.env.cbegin(); it != r.env.cend(); ++it)
        envNames.append(it.key());
    QJsonObject o{
        {QStringLiteral("id"), r.id},
        {QStringLiteral("kind"), r.kind},
        {QStringLiteral("type"), r.type},
        {QStringLiteral("size"), r.size},
        {QStringLiteral("name"), r.name},
        {QStringLiteral("status"), r.status},
        {QStringLiteral("createdAt"), isoTime(r.createdAt)},
        {QStringLiteral("lastActiveAt"), isoTime(r.lastActiveAt)},
        {QStringLiteral("sleepAfter"), double(r.sleepAfterMs)},
        {QStringLiteral("network"), r.network},
        {QStringLiteral("env"), envNames},
    };
    QJsonObject limits{{QStringLiteral("memoryMb"), double(l.memoryMb)},
                       {QStringLiteral("pids"), l.pids},
                       {QStringLiteral("cpus"), l.cpus},
                       {QStringLiteral("diskMb"), double(l.diskMb)}};
    enforcementOf(e).addTo(limits);
    o.insert(QStringLiteral("limits"), limits);
    if (!r.error.isEmpty())
        o.insert(QStringLiteral("error"), r.error);
    if (fromWire<SandboxKind>(r.kind) == SandboxKind::Agent)
        o.insert(QStringLiteral("gateway"), r.gateway);
    return o;
}

SandboxManager::Entry *SandboxManager::find(const QString &keyId, const QString &id,
                                            const QString &kind) const
{
    Entry *e = m_entries.value(id);
    if (!e || e->rec.keyId != keyId || (!kind.isEmpty() && e->rec.kind != kind))
        return nullptr;
    return e;
}

QString SandboxManager::volumeDirOf(const QString &id) const
{
    return stateDirOf(id) + QStringLiteral("/volume");
}

QString SandboxManager::workspaceOf(const QString &id) const
{
    return WorkspaceVolume::treePath(volumeDirOf(id), WorkspaceVolume::Tree::Workspace);
}

QString SandboxManager::trashDir() const
{
    return m_config.dataDir + QStringLiteral("/trash");
}

QString SandboxManager::stateDirOf(const QString &id) const
{
    return m_config.dataDir + QStringLiteral("/sandboxes/") + id;
}

SandboxManager::Usage SandboxManager::usageOf(const QString &keyId, const QString &exceptId) const
{
    Usage u;
    for (const Entry *e : m_entries) {
        if (e->rec.keyId != keyId || e->rec.id == exceptId)
            continue;
        ++u.total;
        if (isLive(e->rec)) {
            ++u.running;
            u.memoryMb += e->limits.memoryMb;
        }
    }
    return u;
}

Result<bool> SandboxManager::checkQuota(const QString &keyId, const QString &size,
                                        const QString &exceptId) const
{
    if (!m_config.bubblewrap) {
        // --isolation container: the container is the sandbox (its paths, its uid's processes,
        // its instance type's limits), so only one of its sandboxes runs at a time.
        for (const Entry *other : m_entries) {
            if (other->rec.id != exceptId && (other->proc || isLive(other->rec)))
                return Error{ErrorCode::QuotaExceeded,
                             QStringLiteral("this container runs one sandbox at a time, and %1 "
                                            "is running: stop it first")
                                 .arg(other->rec.keyId == keyId ? other->rec.id
                                                                : QStringLiteral("another")),
                             QJsonObject{{QStringLiteral("limit"), QStringLiteral("running")}}};
        }
    }
    const Usage u = usageOf(keyId, exceptId);
    const int running = u.running, total = u.total;
    const qint64 memory = u.memoryMb;
    const qint64 wanted = limitsFor(size).memoryMb;
    if (exceptId.isEmpty() && total + 1 > m_config.maxSandboxesPerKey)
        return Error{ErrorCode::QuotaExceeded,
                     QStringLiteral("quota exceeded: at most %1 sandboxes per key")
                         .arg(m_config.maxSandboxesPerKey),
                     QJsonObject{{QStringLiteral("limit"), QStringLiteral("sandboxes")}}};
    if (running + 1 > m_config.maxRunningPerKey)
        return Error{ErrorCode::QuotaExceeded,
                     QStringLiteral("quota exceeded: at most %1 running sandboxes per key")
                         .arg(m_config.maxRunningPerKey),
                     QJsonObject{{QStringLiteral("limit"), QStringLiteral("running")}}};
    if (memory + wanted > m_config.maxMemoryMbPerKey)
        return Error{ErrorCode::QuotaExceeded,
                     QStringLiteral("quota exceeded: %1 MiB of sandbox memory in use, %2 more "
                                    "would pass the limit of %3 MiB")
                         .arg(memory)
                         .arg(wanted)
                         .arg(m_config.maxMemoryMbPerKey),
                     QJsonObject{{QStringLiteral("limit"), QStringLiteral("memoryMb")}}};
    return true;
}

QJsonObject SandboxManager::quota(const QString &keyId) const
{
    const Usage u = usageOf(keyId);
    auto pair = [](qint64 used, qint64 limit) {
        return QJsonObject{{QStringLiteral("used"), double(used)},
                           {QStringLiteral("limit"), double(limit)}};
    };
    return {{QStringLiteral("running"), pair(u.running, m_config.maxRunningPerKey)},
            {QStringLiteral("memoryMb"), pair(u.memoryMb, m_config.maxMemoryMbPerKey)},
            {QStringLiteral("sandboxes"), pair(u.total, m_config.maxSandboxesPerKey)}};
}

QJsonObject SandboxManager::counts(const QString &keyId) const
{
    const Usage u = usageOf(keyId);
    return {{QStringLiteral("total"), u.total}, {QStringLiteral("running"), u.running}};
}

void SandboxManager::setStatus(Entry *e, SandboxStatus value, const QString &error)
{
    const QString status = toWire(value);
    if (e->rec.status == status && e->rec.error == error)
        return;
    e->rec.status = status;
    e->rec.error = error;
    if (const auto saved = m_registry->upsertSandbox(e->rec); !saved)
        qCWarning(lcManager) << saved.error().message;
    Q_EMIT statusChanged(e->rec.id, status);
}

void SandboxManager::touch(Entry *e)
{
    e->rec.lastActiveAt = QDateTime::currentDateTimeUtc();
}

void SandboxManager::armIdleTimer(Entry *e)
{
    disarmIdleTimer(e);
    if (e->rec.sleepAfterMs <= 0)
        return;
    e->idleDue = m_clock.elapsed() + e->rec.sleepAfterMs;
    const bool first = m_idle.empty() || e->idleDue < m_idle.begin()->first;
    m_idle.emplace(e->idleDue, e->rec.id);
    if (first)
        scheduleIdleTimer();
}

void SandboxManager::disarmIdleTimer(Entry *e)
{
    if (e->idleDue == 0)
        return;
    m_idle.erase({e->idleDue, e->rec.id});
    e->idleDue = 0;
}

void SandboxManager::scheduleIdleTimer()
{
    if (m_idle.empty())
        return m_idleTimer.stop();
    const qint64 wait = m_idle.begin()->first - m_clock.elapsed();
    m_idleTimer.start(int(qBound(qint64(0), wait, qint64(std::numeric_limits<int>::max()))));
}

void SandboxManager::sleepIdleSandboxes()
{
    const qint64 now = m_clock.elapsed();
    while (!m_idle.empty() && m_idle.begin()->first <= now) {
        const auto [due, id] = *m_idle.begin();
        m_idle.erase(m_idle.begin());
        Entry *e = m_entries.value(id);
        if (!e || e->idleDue != due)
            continue;
        e->idleDue = 0;
        if (e->busy > 0 || statusOf(e->rec) != SandboxStatus::Running)
            continue;
        qCInfo(lcManager) << "sandbox" << id << "idle for" << e->rec.sleepAfterMs << "ms: sleeping";
        teardown(e, [this, e] { setStatus(e, SandboxStatus::Sleeping); });
    }
    scheduleIdleTimer();
}

void SandboxManager::fillSpec(const Entry *e, SandboxSpec &spec) const
{
    spec.id = e->rec.id;
    spec.stateDir = stateDirOf(e->rec.id);
    spec.volumeDir = volumeDirOf(e->rec.id);
    spec.workspaceDir = workspaceOf(e->rec.id);
    spec.supervisorPath = m_config.supervisorPath;
    spec.bwrapPath = m_config.bwrapPath;
    spec.dropPrivileges = m_config.dropPrivileges;
    spec.uid = m_config.uidBase + uid_t(e->rec.slot);
    spec.gid = spec.uid;
    spec.useCgroups = m_config.useCgroups;
    spec.cgroups = m_config.cgroups;
    spec.bubblewrap = m_config.bubblewrap;
    // A new sandbox gets a disk image; one made before images existed keeps its directories.
    if (m_config.diskImages && WorkspaceVolume::usesImage(spec.stateDir))
        spec.diskImage = WorkspaceVolume::imagePath(spec.stateDir);
    if (!spec.diskImage.isEmpty())
        spec.volumePool = m_config.dataDir + QStringLiteral("/volumes");
    spec.env = e->rec.env;
    spec.limits = e->limits;
    // A warm spare starts as far as any sandbox does (no owner's environment to wait for).
    spec.spare = e->spare && !e->warm;

    const SandboxTypeHooks hooks = m_hooks.value(e->rec.type);
    if (hooks.prepare)
        hooks.prepare(spec, e->rec);
    if (m_network)
        m_network->prepare(spec, e->rec);
}

void SandboxManager::launch(Entry *e)
{
    e->sinceLaunch.start();
    SandboxSpec spec;
    fillSpec(e, spec);
    if (!spec.diskImage.isEmpty()) {
        // The next sandbox of this size finds its image formatted already.
        QTimer::singleShot(0, this,
                           [this, pool = spec.volumePool,
                            size = WorkspaceVolume::imageMb(e->limits)] {
                               WorkspaceVolume::refillPool(pool, size, this);
                           });
    }

    // The agent's home and the database's run directory live on the image too (WorkspaceVolume);
    // any other writable mount would be a plain host directory. (A QString, not the
    // QStringBuilder that `auto` would capture: it compared as the wrong prefix.)
    const auto outside = [volume = QString(spec.volumeDir + u'/')](const SandboxSpec::Mount &m) {
        return m.writable && !m.hostPath.startsWith(volume);
    };
    const bool writesOutside = std::any_of(spec.extraMounts.cbegin(), spec.extraMounts.cend(),
                                           outside);
    if (spec.diskImage.isEmpty() && !m_config.diskImages)
        e->disk.reset(); // the engine's reason
    else if (spec.diskImage.isEmpty())
        e->disk = LimitEnforcement::no(
            QStringLiteral("this sandbox's workspace predates disk images: a plain directory"));
    else if (writesOutside)
        e->disk = LimitEnforcement::no(
            QStringLiteral("the workspace is a %1 MiB image, but %2 is a plain host directory")
                .arg(e->limits.diskMb)
                .arg(std::find_if(spec.extraMounts.cbegin(), spec.extraMounts.cend(), outside)
                         ->sandboxPath));
    else
        e->disk = LimitEnforcement::yes(
            QStringLiteral("an ext4 image of %1 MiB on a loop device").arg(e->limits.diskMb));

    auto *proc = new SandboxProcess(spec, m_poller, this);
    e->proc = proc;
    const QString id = e->rec.id;
    connect(proc, &SandboxProcess::ready, this, [this, id] {
        if (Entry *spare = spareById(id); spare && spare->warm && spare->proc)
            return warmUp(spare);
        Entry *e = m_entries.value(id);
        if (!e || !e->proc)
            return;
        qCDebug(lcStartup).noquote() << id << "process ready" << spanOf(e->sinceLaunch);
        attachAndStart(e);
    });
    connect(proc, &SandboxProcess::failed, this, [this, id](const Error &error) {
        Entry *e = m_entries.value(id);
        if (!e)
            return;
        qCWarning(lcManager) << "sandbox" << id << "failed:" << error.message;
        if (m_network)
            m_network->detach(id);
        e->proc->deleteLater();
        e->proc = nullptr;
        setStatus(e, SandboxStatus::Error, error.message);
        const auto waiters = std::exchange(e->waiters, {});
        for (const auto &[context, then] : waiters) {
            if (context)
                then(error);
        }
    });
    connect(proc, &SandboxProcess::exited, this, [this, id](const QString &reason) {
        Entry *e = m_entries.value(id);
        if (!e)
            return;
        if (m_network)
            m_network->detach(id);
        e->proc->deleteLater();
        e->proc = nullptr;
        e->busy = 0;
        if (e->tearingDown) {
            e->tearingDown = false;
            const auto after = std::exchange(e->afterTeardown, {});
            for (const auto &f : after)
                f();
            return;
        }
        qCWarning(lcManager) << "sandbox" << id << "ended unexpectedly:" << reason;
        setStatus(e, SandboxStatus::Error, reason);
    });
    proc->start();
}

void SandboxManager::attachAndStart(Entry *e)
{
    const QString id = e->rec.id;
    QPointer<SandboxProcess> proc = e->proc;
    // The network first (its listeners), then the type's own start (a database server).
    const auto afterStart = [this, id, proc](Result<bool> r) {
        Entry *e = m_entries.value(id);
        if (!e || !proc || e->proc != proc)
            return;
        qCDebug(lcStartup).noquote() << id << "network" << spanOf(e->sinceLaunch);
        const SandboxTypeHooks hooks = m_hooks.value(e->rec.type);
        if (!r || !hooks.afterStart)
            return startDone(e, std::move(r));
        hooks.afterStart(e->rec, e->proc->channel(), [this, id, proc](Result<bool> r) {
            Entry *e = m_entries.value(id);
            if (e && proc && e->proc == proc)
                startDone(e, std::move(r));
        });
    };
    if (m_network)
        m_network->attach(e->rec, e->proc->channel(), afterStart);
    else
        afterStart(true);
}

void SandboxManager::warmUp(Entry *e)
{
    const QString id = e->rec.id;
    qCDebug(lcStartup).noquote() << id << "warm spare up" << spanOf(e->sinceLaunch);
    const SandboxTypeHooks hooks = m_hooks.value(e->rec.type);
    if (!hooks.warmUp) {
        e->warmed = true;
        return;
    }
    QPointer<SandboxProcess> proc = e->proc;
    hooks.warmUp(e->rec, proc->channel(), [this, id, proc](Result<bool> r) {
        Entry *e = spareById(id);
        if (!e || !proc || e->proc != proc)
            return;
        if (!r) {
            qCWarning(lcManager).noquote()
                << "warm spare" << id << "did not start its server:" << r.error().message;
            return dropSpare(e);
        }
        e->warmed = true;
        qCDebug(lcStartup).noquote() << id << "warm spare ready" << spanOf(e->sinceLaunch);
    });
}

SandboxManager::Entry *SandboxManager::spareById(const QString &id) const
{
    for (Entry *e : m_spares) {
        if (e->rec.id == id)
            return e;
    }
    return nullptr;
}

void SandboxManager::startDone(Entry *e, Result<bool> r)
{
    if (r)
        return becameReady(e);
    // Stop what started, then report the failure to everyone waiting.
    qCWarning(lcManager) << "sandbox" << e->rec.id << "failed to start:" << r.error().message;
    const Error &error = r.error(); // r is this function's own
    // Taken first: teardown() would tell them "stopping" instead of why it failed.
    const auto waiters = std::exchange(e->waiters, {});
    teardown(e, [this, e, error, waiters] {
        setStatus(e, SandboxStatus::Error, error.message);
        for (const auto &[context, then] : waiters) {
            if (context)
                then(error);
        }
    });
}

void SandboxManager::becameReady(Entry *e)
{
    setStatus(e, SandboxStatus::Running);
    qCDebug(lcStartup).noquote() << e->rec.id << "running" << spanOf(e->sinceLaunch);
    touch(e);
    const auto waiters = std::exchange(e->waiters, {});
    for (const auto &[context, then] : waiters) {
        if (context) {
            ++e->busy;
            then(e->proc->channel());
        }
    }
    if (e->busy == 0)
        armIdleTimer(e);
}

void SandboxManager::setTypeHooks(const QString &type, SandboxTypeHooks hooks)
{
    m_hooks.emplace(type, std::move(hooks));
}

void SandboxManager::teardown(Entry *e, std::function<void()> then)
{
    disarmIdleTimer(e);
    if (!e->proc) {
        then();
        return;
    }
    e->afterTeardown.append(std::move(then));
    if (!e->tearingDown) {
        e->tearingDown = true;
        const auto waiters = std::exchange(e->waiters, {});
        for (const auto &[context, w] : waiters) {
            if (context)
                w(Error{ErrorCode::SandboxNotRunning,
                        QStringLiteral("the sandbox is stopping"),
                        {}});
        }
        const SandboxTypeHooks hooks = m_hooks.value(e->rec.type);
        QPointer<SandboxProcess> proc = e->proc;
        if (hooks.beforeStop && proc->isReady())
            hooks.beforeStop(e->rec, proc->channel(), [proc] {
                if (proc)
                    proc->stop();
            });
        else
            proc->stop();
    }
}

void SandboxManager::create(const CreateSandbox &request, QObject *context, Done done)
{
    if (const auto q = checkQuota(request.keyId, request.size, {}); !q)
        return done(q.error());
    SandboxRecord wanted;
    wanted.keyId = request.keyId;
    wanted.kind = request.kind;
    wanted.type = request.type;
    wanted.size = request.size;
    wanted.env = request.env;
    wanted.network = request.network;
    wanted.gateway = request.gateway && m_config.bubblewrap;
    // A spare only for a type whose start up to HELLO depends on nothing of the create's (its
    // `created` step runs below, before the type's afterStart reads what it wrote).
    const bool poolable = m_hooks.value(request.type).poolable;
    Entry *e = poolable ? takeSpare(wanted) : nullptr;
    const bool claimed = e != nullptr;
    if (!e) {
        e = new Entry;
        e->rec.id = newSandboxId();
        e->rec.slot = allocateSlot();
    }
    e->rec.keyId = request.keyId;
    e->rec.kind = request.kind;
    e->rec.type = request.type;
    e->rec.size = request.size;
    e->rec.name = request.name;
    e->rec.env = request.env;
    e->rec.network = request.network;
    // The gateway needs the sandbox's own network namespace (bubblewrap): in container mode the
    // keys go in as environment, as before.
    e->rec.gateway = request.gateway && m_config.bubblewrap;
    e->rec.sleepAfterMs = request.sleepAfterMs >= 0 ? request.sleepAfterMs
                                                    : m_config.defaultSleepAfterMs;
    e->rec.createdAt = QDateTime::currentDateTimeUtc();
    e->rec.lastActiveAt = e->rec.createdAt;
    e->rec.status = toWire(SandboxStatus::Creating);
    e->limits = limitsFor(request.size);
    QElapsedTimer saving;
    saving.start();
    if (const auto saved = m_registry->upsertSandbox(e->rec); !saved) {
        if (claimed)
            dropSpare(e);
        else
            delete e;
        return done(saved.error());
    }
    qCDebug(lcStartup).noquote() << e->rec.id << "registered" << spanOf(saving)
                                 << (claimed ? "(a spare)" : "");
    m_entries.insert(e->rec.id, e);
    if (request.created)
        request.created(e->rec);
    const QString id = e->rec.id;
    e->waiters.append({context, [this, id, done, poolable](Result<SupervisorChannel *> r) {
                           // The next spare starts once this sandbox's first requests had the
                           // cores to themselves.
                           if (poolable)
                               QTimer::singleShot(kSpareRefillDelayMs, this,
                                                  [this] { refillSpares(); });
                           if (!r)
                               return done(r.error());
                           endActivity(id);
                           Entry *e = m_entries.value(id);
                           done(toJson(e));
                       }});
    if (poolable)
        m_pool.noteCreated(shapeOf(e->rec));
    if (!claimed)
        return launch(e);
    QFile::remove(stateDirOf(id) + u'/' + kSpareMarker);
    e->sinceLaunch.start();
    if (std::exchange(e->warm, false)) {
        // Up, and its server too: the owner's network, then the type hands the server over
        // with the owner's settings (its afterStart).
        return attachAndStart(e);
    }
    // The spare's process goes on from HELLO with its owner's environment; the network (the
    // owner's policy) and the type's start follow as for any start (launch()'s ready()).
    SandboxSpec spec;
    fillSpec(e, spec);
    e->proc->claim(spec.env);
}

int SandboxManager::allocateSlot()
{
    // Spares hold slots (uids) the registry does not know yet.
    m_nextSlot = qMax(m_nextSlot, m_registry->nextSlot());
    return m_nextSlot++;
}

namespace {

// Whether a spare started with `had` is what a start with `spec` would make: the same mounts,
// /tmp, limits and uid.
bool sameStart(const SandboxSpec &spec, const SandboxSpec &had)
{
    return SandboxProcess::bwrapArguments(spec) == SandboxProcess::bwrapArguments(had)
           && spec.uid == had.uid && spec.limits.memoryMb == had.limits.memoryMb
           && spec.limits.pids == had.limits.pids && spec.limits.cpus == had.limits.cpus
           && spec.diskImage == had.diskImage;
}

} // namespace

SandboxManager::Entry *SandboxManager::takeSpare(const SandboxRecord &wanted)
{
    for (Entry *e : std::as_const(m_spares)) {
        if (!e->proc || shapeOf(e->rec) != shapeOf(wanted))
            continue;
        // A warm one is configured already (an empty environment) and its server must be up.
        if (e->warm && (!e->warmed || !wanted.env.isEmpty()))
            continue;
        // The spare must be what a new start for this owner would make: the same mounts, /tmp,
        // limits and uid (a type's prepare that read the owner's record would differ here).
        Entry candidate;
        candidate.rec = wanted;
        candidate.rec.id = e->rec.id;
        candidate.rec.slot = e->rec.slot;
        candidate.limits = limitsFor(wanted.size);
        SandboxSpec spec;
        fillSpec(&candidate, spec);
        if (!sameStart(spec, e->proc->spec()))
            continue;
        m_spares.removeOne(e);
        e->spare = false;
        return e;
    }
    return nullptr;
}

bool SandboxManager::spareIsCurrent(const Entry *e) const
{
    if (!e->proc)
        return true; // not started yet: it gets what a start makes now
    Entry candidate;
    candidate.rec.kind = e->rec.kind;
    candidate.rec.type = e->rec.type;
    candidate.rec.size = e->rec.size;
    candidate.rec.id = e->rec.id;
    candidate.rec.slot = e->rec.slot;
    candidate.limits = limitsFor(e->rec.size);
    SandboxSpec spec;
    fillSpec(&candidate, spec);
    return sameStart(spec, e->proc->spec());
}

void SandboxManager::refreshSpares()
{
    if (!m_spares.isEmpty())
        refillSpares();
}

void SandboxManager::keepWarm(const SparePool::Shape &shape, int count)
{
    if (!m_config.bubblewrap)
        count = 0; // --isolation container: one sandbox at a time, no spares
    for (auto &[s, n] : m_warm) {
        if (s == shape) {
            if (std::exchange(n, count) != count)
                QTimer::singleShot(0, this, [this] { refillSpares(); });
            return;
        }
    }
    m_warm.append({shape, count});
    QTimer::singleShot(0, this, [this] { refillSpares(); });
}

void SandboxManager::refillSpares()
{
    const bool memoryIsShort = m_pool.memoryIsShort();
    // Warm spares: as many of each shape as kept (none while memory is short).
    QList<SparePool::Shape> warmShapes;
    for (const auto &[shape, count] : std::as_const(m_warm)) {
        if (count > 0)
            warmShapes.append(shape);
        int have = 0;
        const QList<Entry *> spares = m_spares;
        for (Entry *e : spares) {
            if (!e->warm || shapeOf(e->rec) != shape)
                continue;
            if (memoryIsShort || have >= count || !spareIsCurrent(e))
                dropSpare(e);
            else
                ++have;
        }
        for (; !memoryIsShort && have < count; ++have)
            spawnSpare(shape, true);
    }
    // Cold ones (up to HELLO) for the shapes created recently that are not kept warm.
    QList<SparePool::Shape> wanted = m_pool.wanted();
    wanted.removeIf([&warmShapes](const SparePool::Shape &s) { return warmShapes.contains(s); });
    QList<SparePool::Shape> have;
    const QList<Entry *> spares = m_spares;
    for (Entry *e : spares) {
        if (e->warm)
            continue;
        const SparePool::Shape shape = shapeOf(e->rec);
        // A spare no create could take any more (its type's start changed since: an agent CLI
        // installed after it started) is replaced, else it would hold its place for nothing.
        if (!wanted.contains(shape) || have.contains(shape) || !spareIsCurrent(e))
            dropSpare(e);
        else
            have.append(shape);
    }
    for (const SparePool::Shape &shape : wanted) {
        if (!have.contains(shape))
            spawnSpare(shape, false);
    }
}

void SandboxManager::spawnSpare(const SparePool::Shape &shape, bool warm)
{
    auto *e = new Entry;
    e->spare = true;
    e->warm = warm;
    e->rec.id = newSandboxId();
    e->rec.kind = shape.kind;
    e->rec.type = shape.type;
    e->rec.size = shape.size;
    e->rec.slot = allocateSlot();
    e->rec.status = toWire(SandboxStatus::Creating);
    e->limits = limitsFor(shape.size);
    const QString id = e->rec.id;
    QFile marker(stateDirOf(id) + u'/' + kSpareMarker);
    if (!QDir().mkpath(stateDirOf(id)) || !marker.open(QIODevice::WriteOnly)) {
        qCWarning(lcManager) << "cannot make a spare sandbox in" << stateDirOf(id);
        delete e;
        return discardFiles(id);
    }
    marker.close();
    m_spares.append(e);
    qCDebug(lcManager) << "starting a" << (warm ? "warm spare" : "spare") << shape.kind
                       << shape.type << shape.size << id;
    launch(e);
    // Until it is claimed, a spare that ends is forgotten (launch()'s handlers know only the
    // registered sandboxes).
    const auto ended = [this, e] {
        if (m_spares.contains(e)) {
            qCWarning(lcManager) << "spare sandbox" << e->rec.id << "ended before it was used";
            dropSpare(e);
        }
    };
    connect(e->proc, &SandboxProcess::failed, this, ended);
    connect(e->proc, &SandboxProcess::exited, this, ended);
}

void SandboxManager::dropSpare(Entry *e)
{
    m_spares.removeOne(e);
    const QString id = e->rec.id;
    if (const SandboxTypeHooks hooks = m_hooks.value(e->rec.type); e->warm && hooks.removed)
        hooks.removed(e->rec); // its server's bookkeeping
    SandboxProcess *proc = std::exchange(e->proc, nullptr);
    delete e;
    if (!proc)
        return discardFiles(id);
    proc->disconnect(this);
    auto gone = std::make_shared<bool>(false);
    const auto after = [this, proc, id, gone] {
        if (std::exchange(*gone, true))
            return;
        proc->deleteLater();
        discardFiles(id);
    };
    connect(proc, &SandboxProcess::exited, this, after);
    connect(proc, &SandboxProcess::failed, this, after);
    proc->stop();
}

void SandboxManager::discardFiles(const QString &id)
{
    // Out of sight at once, deleted off the event loop, fd-relative.
    WorkspaceVolume::discard(stateDirOf(id), trashDir(), this, [id](Result<bool> r) {
        if (!r)
            qCWarning(lcManager).noquote() << "sandbox" << id << r.error().message;
    });
}

QJsonObject SandboxManager::pool() const
{
    QJsonArray spares;
    for (const Entry *e : m_spares)
        spares.append(QJsonObject{{QStringLiteral("id"), e->rec.id},
                                  {QStringLiteral("kind"), e->rec.kind},
                                  {QStringLiteral("type"), e->rec.type},
                                  {QStringLiteral("size"), e->rec.size},
                                  {QStringLiteral("ready"),
                                   e->warm ? e->warmed : e->proc && e->proc->isWaiting()},
                                  {QStringLiteral("warm"), e->warm}});
    return {{QStringLiteral("capacity"), m_pool.capacity()},
            {QStringLiteral("minAvailableMb"), double(m_pool.minAvailableMb())},
            {QStringLiteral("availableMb"), double(m_pool.availableMb())},
            {QStringLiteral("spares"), spares}};
}

Result<QJsonObject> SandboxManager::info(const QString &keyId, const QString &id,
                                         const QString &kind) const
{
    const Entry *e = find(keyId, id, kind);
    if (!e)
        return Error::notFound(QStringLiteral("sandbox %1").arg(id));
    return toJson(e);
}

Result<QJsonObject> SandboxManager::setName(const QString &keyId, const QString &id,
                                            const QString &kind, const QString &name)
{
    Entry *e = find(keyId, id, kind);
    if (!e)
        return Error::notFound(QStringLiteral("sandbox %1").arg(id));
    SandboxRecord renamed = e->rec;
    renamed.name = name;
    if (const auto saved = m_registry->upsertSandbox(renamed); !saved)
        return saved.error();
    e->rec.name = name;
    return toJson(e);
}

Result<SandboxRecord> SandboxManager::record(const QString &keyId, const QString &id,
                                             const QString &kind) const
{
    const Entry *e = find(keyId, id, kind);
    if (!e)
        return Error::notFound(QStringLiteral("sandbox %1").arg(id));
    return e->rec;
}

QJsonArray SandboxManager::list(const QString &keyId, const QString &kind) const
{
    QList<const Entry *> mine;
    for (const Entry *e : m_entries) {
        if (e->rec.keyId == keyId && (kind.isEmpty() || e->rec.kind == kind))
            mine.append(e);
    }
    std::sort(mine.begin(), mine.end(),
              [](const Entry *a, const Entry *b) { return a->rec.createdAt < b->rec.createdAt; });
    QJsonArray out;
    for (const Entry *e : mine)
        out.append(toJson(e));
    return out;
}

void SandboxManager::withSupervisor(const QString &keyId, const QString &id, const QString &kind,
                                    QObject *context, WithChannel then)
{
    Entry *e = find(keyId, id, kind);
    if (!e)
        return then(Error::notFound(QStringLiteral("sandbox %1").arg(id)));
    touch(e);
    disarmIdleTimer(e);
    const QString &status = e->rec.status;
    const SandboxStatus value = statusOf(e->rec);
    if (e->tearingDown || value == SandboxStatus::Stopped)
        return then(Error{ErrorCode::SandboxNotRunning,
                          QStringLiteral("sandbox %1 is %2")
                              .arg(id, e->tearingDown ? QStringLiteral("stopping") : status),
                          QJsonObject{{QStringLiteral("status"), status}}});
    if (value == SandboxStatus::Running && e->proc && e->proc->isReady()) {
        ++e->busy;
        return then(e->proc->channel());
    }
    e->waiters.append({context, std::move(then)});
    if (value == SandboxStatus::Creating || value == SandboxStatus::Starting)
        return;
    // Sleeping, or failed earlier: start it again.
    if (const auto q = checkQuota(keyId, e->rec.size, id); !q) {
        const auto waiters = std::exchange(e->waiters, {});
        for (const auto &[ctx, w] : waiters) {
            if (ctx)
                w(q.error());
        }
        return;
    }
    setStatus(e, SandboxStatus::Starting);
    launch(e);
}

void SandboxManager::endActivity(const QString &id)
{
    Entry *e = m_entries.value(id);
    if (!e)
        return;
    touch(e);
    if (e->busy > 0)
        --e->busy;
    if (e->busy == 0 && statusOf(e->rec) == SandboxStatus::Running)
        armIdleTimer(e);
}

void SandboxManager::stop(const QString &keyId, const QString &id, const QString &kind,
                          QObject *context, Done done)
{
    Entry *e = find(keyId, id, kind);
    if (!e)
        return done(Error::notFound(QStringLiteral("sandbox %1").arg(id)));
    QPointer<QObject> guard(context);
    teardown(e, [this, e, guard, done] {
        setStatus(e, SandboxStatus::Stopped);
        if (guard)
            done(toJson(e));
    });
}

void SandboxManager::start(const QString &keyId, const QString &id, const QString &kind,
                           QObject *context, Done done)
{
    Entry *e = find(keyId, id, kind);
    if (!e)
        return done(Error::notFound(QStringLiteral("sandbox %1").arg(id)));
    if (statusOf(e->rec) == SandboxStatus::Stopped && !e->tearingDown)
        setStatus(e, SandboxStatus::Sleeping);
    withSupervisor(keyId, id, kind, context, [this, id, done](Result<SupervisorChannel *> r) {
        if (!r)
            return done(r.error());
        endActivity(id);
        done(toJson(m_entries.value(id)));
    });
}

void SandboxManager::remove(const QString &keyId, const QString &id, const QString &kind,
                            QObject *context, Done done)
{
    Entry *e = find(keyId, id, kind);
    if (!e)
        return done(Error::notFound(QStringLiteral("sandbox %1").arg(id)));
    QPointer<QObject> guard(context);
    teardown(e, [this, id, guard, done] {
        Entry *e = m_entries.take(id);
        if (!e)
            return;
        disarmIdleTimer(e);
        if (const SandboxTypeHooks hooks = m_hooks.value(e->rec.type); hooks.removed)
            hooks.removed(e->rec);
        if (m_network)
            m_network->remove(id);
        const auto removed = m_registry->removeSandbox(id);
        // Its files go with it.
        discardFiles(id);
        Q_EMIT statusChanged(id, QStringLiteral("deleted"));
        delete e;
        if (!guard)
            return;
        if (!removed)
            return done(removed.error());
        done(QJsonObject{{QStringLiteral("id"), id}, {QStringLiteral("deleted"), true}});
    });
}

void SandboxManager::removeAllOf(const QString &keyId)
{
    const auto entries = m_entries;
    for (const Entry *e : entries) {
        if (e->rec.keyId == keyId)
            remove(keyId, e->rec.id, {}, this, [](const Result<QJsonObject> &) {});
    }
}

void SandboxManager::setPolicy(const QString &keyId, const QString &id, const QJsonValue &network,
                               Done done)
{
    Entry *e = find(keyId, id, {});
    if (!e)
        return done(Error::notFound(QStringLiteral("sandbox %1").arg(id)));
    e->rec.network = network;
    if (const auto saved = m_registry->upsertSandbox(e->rec); !saved)
        return done(saved.error());
    if (m_network)
        m_network->update(e->rec, e->proc && e->proc->isReady() ? e->proc->channel() : nullptr);
    done(toJson(e));
}

QString SandboxManager::keyOf(const QString &id) const
{
    const Entry *e = m_entries.value(id);
    return e ? e->rec.keyId : QString();
}

} // namespace Sandbox::Engine
