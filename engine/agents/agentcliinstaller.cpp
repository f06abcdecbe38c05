#include "agentcliinstaller.h"

#include "runtime/hostfs.h"
#include "runtime/offloop.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QLoggingCategory>
#include <QPointer>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>

#include <csignal>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcCliInstall, "sandboxd.agents.install")

namespace Sandbox::Engine {

namespace {

constexpr qsizetype kKeptOutput = 16 * 1024;
constexpr int kMaxLogEvents = 400;
constexpr qsizetype kMaxLogLine = 300;
constexpr int kTickMs = 1000;

QString defaultRegistry()
{
    for (const char *name : {"npm_config_registry", "NPM_CONFIG_REGISTRY"}) {
        const QString r = qEnvironmentVariable(name);
        if (!r.isEmpty())
            return r;
    }
    return QStringLiteral("https://registry.npmjs.org/");
}

struct Sizes
{
    qint64 downloaded = 0; // npm's cache (tarballs as they come)
    qint64 installed = 0;  // node_modules
};

qint64 treeBytes(const QString &dir)
{
    qint64 total = 0;
    // Links are not followed (no FollowSymlinks): the tree's own bytes.
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        it.next();
        const QFileInfo fi = it.fileInfo();
        if (!fi.isSymLink())
            total += fi.size();
    }
    return total;
}

// Directories 0755, files readable by all (executable by all when by their owner): the CLI is
// mounted read-only into sandboxes that run as other uids. The tree is the engine's by now.
void makeReadableByAll(const QString &dir)
{
    ::chmod(QFile::encodeName(dir).constData(), 0755);
    QDirIterator it(dir, QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QByteArray path = QFile::encodeName(it.next());
        struct stat st;
        if (::lstat(path.constData(), &st) != 0 || S_ISLNK(st.st_mode))
            continue;
        mode_t mode = st.st_mode & 07777 & ~mode_t(S_ISUID | S_ISGID);
        if (S_ISDIR(st.st_mode))
            mode = 0755;
        else
            mode |= 0444 | ((mode & 0100) ? 0111 : 0);
        ::chmod(path.constData(), mode);
    }
}

// What is left of a last, interrupted install.
int removeEntry(const QString &parent, const QString &name)
{
    HostFs::Fd dir(HostFs::openOwnDir(parent));
    if (!dir.isValid())
        return dir.get() == -ENOENT ? 0 : dir.get();
    return HostFs::removeTree(dir.get(), QFile::encodeName(name));
}

QString lastLines(const QByteArray &output, int count)
{
    QStringList lines;
    const QList<QByteArray> all = output.split('\n');
    for (auto it = all.crbegin(); it != all.crend() && lines.size() < count; ++it) {
        QString line = QString::fromUtf8(*it).trimmed();
        for (const char *prefix : {"npm error", "npm ERR!", "npm warn", "npm WARN"}) {
            if (line.startsWith(QLatin1String(prefix)))
                line = line.mid(qsizetype(qstrlen(prefix))).trimmed();
        }
        // npm's boilerplate around the error says nothing about it.
        if (line.isEmpty() || line.startsWith(QLatin1String("npm http"))
            || line.contains(QLatin1String("complete log of this run"))
            || line.contains(QLatin1String("behind a proxy"))
            || line.contains(QLatin1String("npm help config")))
            continue;
        lines.prepend(line);
    }
    return lines.join(QStringLiteral(" | "));
}

} // namespace

struct AgentCliInstaller::Install
{
    AgentCliPin pin;
    QString staging; // DATA_DIR/agents/.install-TYPE
    QString target;  // DATA_DIR/agents/TYPE
    qint64 timeoutMs = 0;
    struct Waiter
    {
        quint64 handle;
        Progress progress;
        Done done;
    };
    QList<Waiter> waiters;
    QProcess *process = nullptr; // owned by the installer
    qint64 pid = 0;
    QTimer *tick = nullptr;
    QTimer *deadline = nullptr;
    QByteArray partialLine;
    QByteArray output; // the last kKeptOutput bytes
    int logEvents = 0;
    bool measuring = false;
    bool ended = false;
    QElapsedTimer clock;
    Sizes sizes;
};

AgentCliInstaller::AgentCliInstaller(Config config, QObject *parent)
    : QObject(parent)
    , m_config(std::move(config))
{}

AgentCliInstaller::~AgentCliInstaller()
{
    for (const auto &in : std::as_const(m_installs)) {
        in->ended = true;
        if (in->pid > 0)
            ::kill(pid_t(-in->pid), SIGKILL);
        if (in->process) {
            in->process->disconnect(this);
            in->process->kill();
            in->process->waitForFinished(2000);
        }
    }
}

quint64 AgentCliInstaller::install(const AgentCliPin &pin, qint64 timeoutMs, Progress progress,
                                   Done done)
{
    const quint64 handle = m_nextHandle++;
    if (const auto running = m_installs.value(pin.type)) {
        running->waiters.append({handle, std::move(progress), std::move(done)});
        return handle;
    }
    auto in = std::make_shared<Install>();
    in->pin = pin;
    in->staging = m_config.installDir + QStringLiteral("/.install-") + pin.type;
    in->target = m_config.installDir + u'/' + pin.type;
    in->timeoutMs = timeoutMs;
    in->waiters.append({handle, std::move(progress), std::move(done)});
    in->clock.start();
    m_installs.insert(pin.type, in);
    start(in);
    return handle;
}

void AgentCliInstaller::cancel(quint64 handle)
{
    for (const auto &in : std::as_const(m_installs)) {
        for (qsizetype i = 0; i < in->waiters.size(); ++i) {
            if (in->waiters.at(i).handle != handle)
                continue;
            const Done done = in->waiters.takeAt(i).done;
            if (in->waiters.isEmpty())
                fail(in,
                     Error{ErrorCode::Cancelled, QStringLiteral("the install was cancelled"), {}});
            done(Error{ErrorCode::Cancelled, QStringLiteral("the install was cancelled"), {}});
            return;
        }
    }
}

void AgentCliInstaller::emitEvent(const std::shared_ptr<Install> &in, const QJsonObject &event)
{
    const auto waiters = in->waiters;
    for (const auto &w : waiters) {
        if (w.progress)
            w.progress(event);
    }
}

void AgentCliInstaller::start(const std::shared_ptr<Install> &in)
{
    const Config config = m_config;
    const QString staging = in->staging;
    runOffLoop<QString>(
        this,
        [config, staging]() -> QString {
            if (!QDir().mkpath(config.installDir))
                return QStringLiteral("cannot create %1").arg(config.installDir);
            ::chmod(QFile::encodeName(config.installDir).constData(), 0755);
            const QString name = staging.section(u'/', -1);
            if (const int r = removeEntry(config.installDir, name); r < 0)
                return QStringLiteral("cannot remove %1: %2").arg(staging, HostFs::errorText(r));
            QDir dir(config.installDir);
            if (!dir.mkdir(name) || !dir.mkpath(name + QStringLiteral("/.home"))
                || !dir.mkpath(name + QStringLiteral("/.npm-cache")))
                return QStringLiteral("cannot create %1").arg(staging);
            QFile manifest(staging + QStringLiteral("/package.json"));
            if (!manifest.open(QIODevice::WriteOnly) || manifest.write("{\"private\": true}\n") < 0)
                return QStringLiteral("cannot write %1").arg(manifest.fileName());
            manifest.close();
            const QStringList handed{staging, staging + QStringLiteral("/.home"),
                                     staging + QStringLiteral("/.npm-cache"), manifest.fileName()};
            for (const QString &p : handed) {
                const QByteArray path = QFile::encodeName(p);
                ::chmod(path.constData(), p == manifest.fileName() ? 0644 : 0755);
                if (config.dropPrivileges && ::lchown(path.constData(), config.uid, config.gid) != 0)
                    return QStringLiteral("cannot hand %1 to uid %2").arg(p).arg(config.uid);
            }
            return {};
        },
        [this, in](QString error) {
            if (in->ended)
                return;
            if (!error.isEmpty())
                return fail(in, Error{ErrorCode::SandboxError, error, {}});
            runNpm(in);
        });
}

void AgentCliInstaller::runNpm(const std::shared_ptr<Install> &in)
{
    const QString npm = m_config.npm.isEmpty()
                            ? QStandardPaths::findExecutable(QStringLiteral("npm"))
                            : m_config.npm;
    if (npm.isEmpty() || !QFileInfo(npm).isExecutable())
        return fail(in, Error{ErrorCode::SandboxError,
                              QStringLiteral("npm is not installed on the engine's computer; it "
                                             "installs %1 (sudo apt-get install npm)")
                                  .arg(in->pin.name),
                              QJsonObject{{QStringLiteral("reason"), QStringLiteral("npmMissing")},
                                          {QStringLiteral("type"), in->pin.type}}});
    auto *process = new QProcess(this);
    in->process = process;
    process->setProgram(npm);
    process->setArguments(
        {QStringLiteral("install"), QStringLiteral("--no-audit"), QStringLiteral("--no-fund"),
         QStringLiteral("--save-exact"), QStringLiteral("--loglevel=http"),
         // Retried (a platform package that fails to come is an optional
         // dependency npm would skip without a word), but within seconds.
         QStringLiteral("--fetch-retries=3"), QStringLiteral("--fetch-retry-mintimeout=2000"),
         QStringLiteral("--fetch-retry-maxtimeout=10000"), in->pin.spec()});
    process->setWorkingDirectory(in->staging);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // Its home and every per-user directory are the staging tree's: npm and the packages' own
    // install steps may run as another uid, which cannot use the engine's.
    const QString home = in->staging + QStringLiteral("/.home");
    env.insert(QStringLiteral("HOME"), home);
    for (const char *name : {"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"})
        env.insert(QLatin1String(name),
                   home + u'/' + QString::fromLatin1(name + 4).toLower().section(u'_', 0, 0));
    env.remove(QStringLiteral("XDG_RUNTIME_DIR"));
    env.insert(QStringLiteral("npm_config_cache"), in->staging + QStringLiteral("/.npm-cache"));
    env.insert(QStringLiteral("npm_config_update_notifier"), QStringLiteral("false"));
    env.insert(QStringLiteral("NO_COLOR"), QStringLiteral("1"));
    env.remove(QStringLiteral("SANDBOXD_API_KEY"));
    process->setProcessEnvironment(env);
    process->setProcessChannelMode(QProcess::MergedChannels);
    process->setStandardInputFile(QProcess::nullDevice());
    const bool drop = m_config.dropPrivileges;
    const uid_t uid = m_config.uid;
    const gid_t gid = m_config.gid;
    // In the child, between fork and exec: a session of its own (so that the whole tree can be
    // killed), files readable by sandboxes, the unprivileged uid, and death with the engine.
    process->setChildProcessModifier([drop, uid, gid] {
        ::setsid();
        ::umask(022);
        if (drop && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
            ::_exit(126);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    });
    std::weak_ptr<Install> weak = in;
    connect(process, &QProcess::readyRead, this, [this, weak] {
        const auto in = weak.lock();
        if (!in || !in->process)
            return;
        const QByteArray bytes = in->process->readAll();
        in->output.append(bytes);
        if (in->output.size() > 2 * kKeptOutput)
            in->output = in->output.right(kKeptOutput);
        in->partialLine.append(bytes);
        qsizetype nl;
        while ((nl = in->partialLine.indexOf('\n')) >= 0) {
            QString line = QString::fromUtf8(in->partialLine.left(nl)).trimmed();
            in->partialLine.remove(0, nl + 1);
            if (line.isEmpty() || in->logEvents >= kMaxLogEvents)
                continue;
            ++in->logEvents;
            emitEvent(in, {{QStringLiteral("type"), QStringLiteral("log")},
                           {QStringLiteral("line"), line.left(kMaxLogLine)}});
        }
        if (in->partialLine.size() > kKeptOutput)
            in->partialLine.clear();
    });
    connect(process, &QProcess::errorOccurred, this, [this, weak](QProcess::ProcessError e) {
        const auto in = weak.lock();
        if (!in || e != QProcess::FailedToStart)
            return;
        fail(in,
             Error{ErrorCode::SandboxError,
                   QStringLiteral("npm could not be started: %1").arg(in->process->errorString()),
                   QJsonObject{{QStringLiteral("reason"), QStringLiteral("npmMissing")},
                               {QStringLiteral("type"), in->pin.type}}});
    });
    connect(process, &QProcess::finished, this,
            [this, weak](int exitCode, QProcess::ExitStatus status) {
                if (const auto in = weak.lock())
                    finishNpm(in, exitCode, status == QProcess::CrashExit);
            });
    in->tick = new QTimer(this);
    in->tick->setInterval(kTickMs);
    connect(in->tick, &QTimer::timeout, this, [this, weak] {
        if (const auto in = weak.lock())
            measure(in);
    });
    in->deadline = new QTimer(this);
    in->deadline->setSingleShot(true);
    connect(in->deadline, &QTimer::timeout, this, [this, weak] {
        if (const auto in = weak.lock())
            fail(in, Error{ErrorCode::Timeout,
                           QStringLiteral("installing %1 took longer than %2 s; npm was stopped")
                               .arg(in->pin.name)
                               .arg(in->timeoutMs / 1000),
                           QJsonObject{{QStringLiteral("reason"), QStringLiteral("timeout")},
                                       {QStringLiteral("type"), in->pin.type}}});
    });
    qCInfo(lcCliInstall).noquote()
        << "installing" << in->pin.spec() << "into" << in->target
        << (drop ? QStringLiteral("(npm as uid %1)").arg(uid) : QString());
    emitEvent(in, {{QStringLiteral("type"), QStringLiteral("progress")},
                   {QStringLiteral("phase"), QStringLiteral("download")},
                   {QStringLiteral("downloadedBytes"), 0},
                   {QStringLiteral("expectedBytes"), double(in->pin.downloadMb) * 1e6},
                   {QStringLiteral("installedBytes"), 0}});
    process->start();
    in->pid = process->processId();
    in->tick->start();
    in->deadline->start(int(qMin<qint64>(in->timeoutMs, std::numeric_limits<int>::max())));
}

void AgentCliInstaller::measure(const std::shared_ptr<Install> &in)
{
    if (in->measuring || in->ended)
        return;
    in->measuring = true;
    const QString staging = in->staging;
    runOffLoop<Sizes>(
        this,
        [staging]() {
            Sizes s;
            s.downloaded = treeBytes(staging + QStringLiteral("/.npm-cache"));
            s.installed = treeBytes(staging + QStringLiteral("/node_modules"));
            return s;
        },
        [this, in](Sizes s) {
            in->measuring = false;
            if (in->ended)
                return;
            in->sizes = s;
            if (s.downloaded + s.installed > m_config.maxBytes)
                return fail(in, Error{ErrorCode::PayloadTooLarge,
                                      QStringLiteral("installing %1 took more than %2 MiB; npm "
                                                     "was stopped")
                                          .arg(in->pin.name)
                                          .arg(m_config.maxBytes / (1024 * 1024)),
                                      QJsonObject{{QStringLiteral("reason"),
                                                   QStringLiteral("tooLarge")},
                                                  {QStringLiteral("type"), in->pin.type}}});
            emitEvent(in, {{QStringLiteral("type"), QStringLiteral("progress")},
                           {QStringLiteral("phase"), QStringLiteral("download")},
                           {QStringLiteral("downloadedBytes"), double(s.downloaded)},
                           {QStringLiteral("expectedBytes"), double(in->pin.downloadMb) * 1e6},
                           {QStringLiteral("installedBytes"), double(s.installed)}});
        });
}

Error AgentCliInstaller::npmError(const Install &in, int exitCode) const
{
    static const QRegularExpression network(QStringLiteral(
        "ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ECONNRESET|"
        "network request|request to .* failed"));
    const QString out = QString::fromUtf8(in.output);
    const QString lines = lastLines(in.output, 3).left(1000);
    if (network.match(out).hasMatch()) {
        const QString registry = defaultRegistry();
        // npm's own line that names the failed request says it best.
        static const QRegularExpression request(
            QStringLiteral("(?:request to \\S+ failed[^\\n]*|connect E[A-Z]+ [^\\n]*|getaddrinfo "
                           "E[A-Z_]+ [^\\n]*)"));
        const auto m = request.match(out);
        const QString why = m.hasMatch() ? m.captured(0).trimmed().left(500) : lines;
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot reach the npm registry (%1) to install %2: check this "
                                    "computer's network connection or proxy (npm: %3)")
                         .arg(registry, in.pin.name, why),
                     QJsonObject{{QStringLiteral("reason"), QStringLiteral("registryUnreachable")},
                                 {QStringLiteral("registry"), registry},
                                 {QStringLiteral("type"), in.pin.type}}};
    }
    return Error{ErrorCode::SandboxError,
                 QStringLiteral("npm could not install %1 (exit %2): %3")
                     .arg(in.pin.spec())
                     .arg(exitCode)
                     .arg(lines),
                 QJsonObject{{QStringLiteral("reason"), QStringLiteral("npmFailed")},
                             {QStringLiteral("exitCode"), exitCode},
                             {QStringLiteral("type"), in.pin.type}}};
}

void AgentCliInstaller::finishNpm(const std::shared_ptr<Install> &in, int exitCode, bool crashed)
{
    // Whatever npm left running in its session goes with it.
    if (in->pid > 0)
        ::kill(pid_t(-in->pid), SIGKILL);
    in->pid = 0;
    if (in->ended)
        return;
    in->tick->stop();
    in->deadline->stop();
    if (crashed || exitCode != 0)
        return fail(in, npmError(*in, crashed ? -1 : exitCode));
    emitEvent(in, {{QStringLiteral("type"), QStringLiteral("progress")},
                   {QStringLiteral("phase"), QStringLiteral("finishing")},
                   {QStringLiteral("downloadedBytes"), double(in->sizes.downloaded)},
                   {QStringLiteral("expectedBytes"), double(in->pin.downloadMb) * 1e6},
                   {QStringLiteral("installedBytes"), double(in->sizes.installed)}});
    struct Finished
    {
        QString error;
        qint64 bytes = 0;
    };
    const Config config = m_config;
    const AgentCliPin pin = in->pin;
    const QString staging = in->staging;
    const QString target = in->target;
    runOffLoop<Finished>(
        this,
        [config, pin, staging, target]() -> Finished {
            const QString type = pin.type;
            const QString fresh = config.installDir + QStringLiteral("/.new-") + type;
            const QString stagingName = staging.section(u'/', -1);
            const QString freshName = fresh.section(u'/', -1);
            if (const int r = removeEntry(config.installDir, freshName); r < 0)
                return {QStringLiteral("cannot remove %1: %2").arg(fresh, HostFs::errorText(r))};
            if (config.dropPrivileges) {
                // npm ran as another uid: the engine's own copy, made fd by fd without
                // following a link, is what sandboxes get; npm's tree goes.
                HostFs::Fd parent(HostFs::openOwnDir(config.installDir));
                if (!parent.isValid()
                    || !QDir(config.installDir).mkpath(freshName + QStringLiteral("/node_modules")))
                    return {QStringLiteral("cannot create %1").arg(fresh)};
                HostFs::Fd src(HostFs::openBeneath(parent.get(), QFile::encodeName(stagingName),
                                                   O_RDONLY | O_DIRECTORY));
                HostFs::Fd dst(HostFs::openBeneath(parent.get(),
                                                   QFile::encodeName(
                                                       freshName + QStringLiteral("/node_modules")),
                                                   O_RDONLY | O_DIRECTORY));
                if (!src.isValid() || !dst.isValid())
                    return {QStringLiteral("cannot open %1").arg(staging)};
                if (const int r = HostFs::copyTreeInto(src.get(), "node_modules", dst.get(),
                                                       ::geteuid(), ::getegid());
                    r < 0)
                    return {QStringLiteral("cannot copy what npm installed: %1")
                                .arg(HostFs::errorText(r))};
                removeEntry(config.installDir, stagingName);
            } else {
                removeEntry(staging, QStringLiteral(".home"));
                removeEntry(staging, QStringLiteral(".npm-cache"));
                if (!QDir(config.installDir).rename(stagingName, freshName))
                    return {QStringLiteral("cannot rename %1").arg(staging)};
            }
            makeReadableByAll(fresh);
            if (!QFileInfo::exists(fresh + u'/' + pin.executable())) {
                removeEntry(config.installDir, freshName);
                return {QStringLiteral("npm installed %1 but it has no %2")
                            .arg(pin.spec(), pin.executable())};
            }
            QFile marker(fresh + u'/' + AgentClis::markerName());
            if (!marker.open(QIODevice::WriteOnly) || marker.write(pin.spec().toUtf8() + '\n') < 0)
                return {QStringLiteral("cannot write %1").arg(marker.fileName())};
            marker.close();
            ::chmod(QFile::encodeName(marker.fileName()).constData(), 0644);
            const qint64 bytes = treeBytes(fresh);
            // In place in one rename; a previous install (another version) goes after.
            const QString oldName = QStringLiteral(".old-") + type;
            removeEntry(config.installDir, oldName);
            QDir dir(config.installDir);
            if (QFileInfo::exists(target) && !dir.rename(type, oldName))
                return {QStringLiteral("cannot move the previous %1 aside").arg(target)};
            if (!dir.rename(freshName, type))
                return {QStringLiteral("cannot rename %1 to %2").arg(fresh, target)};
            removeEntry(config.installDir, oldName);
            return {{}, bytes};
        },
        [this, in](Finished f) {
            if (in->ended)
                return;
            if (!f.error.isEmpty())
                return fail(in, Error{ErrorCode::SandboxError, f.error,
                                      QJsonObject{{QStringLiteral("reason"),
                                                   QStringLiteral("installFailed")},
                                                  {QStringLiteral("type"), in->pin.type}}});
            qCInfo(lcCliInstall).noquote() << "installed" << in->pin.spec() << "in" << in->target
                                           << "in" << in->clock.elapsed() << "ms";
            succeed(in, {{QStringLiteral("type"), in->pin.type},
                         {QStringLiteral("name"), in->pin.name},
                         {QStringLiteral("package"), in->pin.package},
                         {QStringLiteral("version"), in->pin.version},
                         {QStringLiteral("dir"), in->target},
                         {QStringLiteral("alreadyInstalled"), false},
                         {QStringLiteral("downloadedBytes"), double(in->sizes.downloaded)},
                         {QStringLiteral("installedBytes"), double(f.bytes)},
                         {QStringLiteral("durationMs"), double(in->clock.elapsed())}});
        });
}

void AgentCliInstaller::fail(const std::shared_ptr<Install> &in, const Error &error)
{
    if (in->ended)
        return;
    in->ended = true;
    if (m_installs.value(in->pin.type) == in)
        m_installs.remove(in->pin.type);
    if (in->pid > 0)
        ::kill(pid_t(-in->pid), SIGKILL);
    if (in->process) {
        in->process->disconnect(this);
        in->process->kill();
        // Reaped by QProcess once it is gone; deleted then.
        connect(in->process, &QProcess::finished, in->process, &QObject::deleteLater);
        if (in->process->state() == QProcess::NotRunning)
            in->process->deleteLater();
        in->process = nullptr;
    }
    delete in->tick;
    delete in->deadline;
    in->tick = in->deadline = nullptr;
    qCWarning(lcCliInstall).noquote()
        << "installing" << in->pin.spec() << "failed:" << error.message;
    // npm's leftovers go, off the event loop.
    const QString installDir = m_config.installDir;
    const QString stagingName = in->staging.section(u'/', -1);
    runOffLoop<int>(
        this, [installDir, stagingName] { return removeEntry(installDir, stagingName); },
        [](int) {});
    const auto waiters = std::exchange(in->waiters, {});
    for (const auto &w : waiters)
        w.done(error);
}

void AgentCliInstaller::succeed(const std::shared_ptr<Install> &in, const QJsonObject &answer)
{
    in->ended = true;
    if (m_installs.value(in->pin.type) == in)
        m_installs.remove(in->pin.type);
    if (in->process) {
        in->process->deleteLater();
        in->process = nullptr;
    }
    delete in->tick;
    delete in->deadline;
    in->tick = in->deadline = nullptr;
    const auto waiters = std::exchange(in->waiters, {});
    for (const auto &w : waiters)
        w.done(answer);
}

} // namespace Sandbox::Engine
