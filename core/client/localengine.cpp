#include "localengine.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QProcess>
#include <QStandardPaths>

Q_LOGGING_CATEGORY(lcLocalEngine, "sandbox.core.localengine", QtInfoMsg)

namespace Sandbox {

namespace {
constexpr int ProbeTimeoutMs = 1000;
constexpr int ServiceStartTimeoutMs = 10000;
} // namespace

LocalEngine::LocalEngine(const ConnectionProfile &profile, QObject *parent)
    : QObject(parent)
    , m_profile(profile)
    , m_rest(new RestClient(profile.restUrl(), {}, this))
{
    m_pollTimer.setSingleShot(true);
    connect(&m_pollTimer, &QTimer::timeout, this, &LocalEngine::probe);
}

LocalEngine::~LocalEngine() = default;

QString LocalEngine::program() const
{
    return m_program.isEmpty() ? findProgram() : m_program;
}

QString LocalEngine::findProgram()
{
    const QString sibling = QCoreApplication::applicationDirPath() + QStringLiteral("/sandboxd");
    const QFileInfo info(sibling);
    if (info.isFile() && info.isExecutable())
        return sibling;
    return QStandardPaths::findExecutable(QStringLiteral("sandboxd"));
}

void LocalEngine::ensureRunning()
{
    if (m_busy)
        return;
    m_busy = true;
    m_started = false;
    m_triedService = false;
    probe();
}

void LocalEngine::probe()
{
    CallOptions options;
    options.timeoutMs = ProbeTimeoutMs;
    m_probe = m_rest->health(
        this, [this](Result<QJsonValue> r) { onHealth(r); }, options);
}

void LocalEngine::onHealth(const Result<QJsonValue> &health)
{
    if (health) {
        if (health->toObject().value(QStringLiteral("status")).toString() != QStringLiteral("ok")) {
            finish(Error{ErrorCode::ConnectionError,
                         QStringLiteral("%1 answers, but not as a sandbox engine")
                             .arg(m_profile.url.toDisplayString()),
                         {}});
            return;
        }
        Result<QString> key = m_profile.readLocalKey();
        if (key) {
            ConnectionProfile p = m_profile;
            p.apiKey = key.value();
            finish(p);
            return;
        }
        if (!m_started) {
            // An engine that answers but whose key we cannot find: it runs with another data dir.
            finish(Error{ErrorCode::Unauthorized,
                         QStringLiteral("the engine at %1 runs, but %2")
                             .arg(m_profile.url.toDisplayString(), key.error().message),
                         {}});
            return;
        }
    } else if (health.error().code != ErrorCode::ConnectionError
               && health.error().code != ErrorCode::Timeout) {
        finish(Error{ErrorCode::ConnectionError,
                     QStringLiteral("%1/health: %2")
                         .arg(m_profile.url.toDisplayString(), health.error().message),
                     {}});
        return;
    }

    if (!m_started) {
        if (!m_triedService) {
            if (const QString unit = userServiceUnit(); !unit.isEmpty())
                return startService(unit);
        }
        return startOwnEngine();
    }
    waitForEngine();
}

void LocalEngine::waitForEngine()
{
    if (m_sinceStart.elapsed() >= m_startTimeoutMs) {
        finish(Error{ErrorCode::Timeout,
                     QStringLiteral("sandboxd did not answer at %1 with a key in %2 within %3 ms")
                         .arg(m_profile.url.toDisplayString(), m_profile.keyFilePath())
                         .arg(m_startTimeoutMs),
                     {}});
        return;
    }
    m_pollTimer.start(m_pollIntervalMs);
}

QString LocalEngine::userServiceUnit() const
{
    QStringList dirs = m_unitDirs;
    if (dirs.isEmpty()) {
        const QString config = qEnvironmentVariableIsEmpty("XDG_CONFIG_HOME")
                                   ? QDir::homePath() + QStringLiteral("/.config")
                                   : qEnvironmentVariable("XDG_CONFIG_HOME");
        dirs = {config + QStringLiteral("/systemd/user"), QStringLiteral("/etc/systemd/user"),
                QStringLiteral("/usr/local/lib/systemd/user"),
                QStringLiteral("/usr/lib/systemd/user"), QStringLiteral("/lib/systemd/user")};
    }
    QString unit;
    for (const QString &dir : std::as_const(dirs)) {
        const QFileInfo candidate(dir + QStringLiteral("/sandboxd.service"));
        if (candidate.exists() || candidate.isSymLink()) {
            unit = candidate.filePath();
            break;
        }
    }
    if (unit.isEmpty() || QFileInfo(unit).symLinkTarget() == QLatin1String("/dev/null"))
        return {}; // none, or masked by the user
    const QString systemctl = QFileInfo(m_systemctl).isAbsolute()
                                  ? m_systemctl
                                  : QStandardPaths::findExecutable(m_systemctl);
    if (systemctl.isEmpty() || !QFileInfo(systemctl).isExecutable())
        return {};

    // The address and data dir it serves: its ExecStart's, or sandboxd's defaults.
    QFile file(unit);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QStringList args;
    for (const QByteArray &line : file.read(64 * 1024).split('\n')) {
        const QString l = QString::fromUtf8(line).trimmed();
        if (l.startsWith(QLatin1String("ExecStart=")))
            args = QProcess::splitCommand(l.mid(10));
    }
    QString listen = QStringLiteral("127.0.0.1:7465");
    QString dataDir = ConnectionProfile::defaultDataDir();
    for (qsizetype i = 1; i + 1 < args.size(); ++i) {
        if (args[i] == QLatin1String("--listen"))
            listen = args[i + 1];
        else if (args[i] == QLatin1String("--data-dir"))
            dataDir = QString(args[i + 1]).replace(QLatin1String("%h"), QDir::homePath());
    }
    const QUrl url = m_profile.url.isEmpty() ? ConnectionProfile::defaultLocalUrl() : m_profile.url;
    if (listen != url.host() + u':' + QString::number(url.port(7465))
        || QDir::cleanPath(dataDir) != QDir::cleanPath(m_profile.effectiveDataDir()))
        return {};
    return unit;
}

void LocalEngine::startService(const QString &unit)
{
    m_triedService = true;
    const QString name = QFileInfo(unit).fileName();
    m_systemctlRun = new QProcess(this);
    m_systemctlRun->setStandardInputFile(QProcess::nullDevice());
    auto done = [this, name](bool ok) {
        if (!m_systemctlRun)
            return;
        const QString err = QString::fromUtf8(m_systemctlRun->readAllStandardError()).trimmed();
        m_systemctlRun->deleteLater();
        m_systemctlRun = nullptr;
        if (!ok) {
            qCWarning(lcLocalEngine).noquote()
                << "systemctl --user start" << name << "failed:" << err
                << "- starting sandboxd directly (without delegated cgroups)";
            return startOwnEngine();
        }
        qCInfo(lcLocalEngine) << "started the user service" << name;
        m_started = true;
        m_sinceStart.start();
        Q_EMIT serviceStarted();
        waitForEngine();
    };
    connect(m_systemctlRun, &QProcess::finished, this,
            [this, done](int code, QProcess::ExitStatus status) {
                done(status == QProcess::NormalExit && code == 0);
            });
    connect(m_systemctlRun, &QProcess::errorOccurred, this, [done](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart)
            done(false);
    });
    // systemctl waits for the start job; bounded like every call.
    QTimer::singleShot(ServiceStartTimeoutMs, m_systemctlRun, [this] {
        if (m_systemctlRun)
            m_systemctlRun->kill();
    });
    m_systemctlRun->start(m_systemctl, {QStringLiteral("--user"), QStringLiteral("start"), name});
}

void LocalEngine::startOwnEngine()
{
    const QString prog = program();
    if (prog.isEmpty()) {
        finish(
            Error{ErrorCode::ConnectionError,
                  QStringLiteral("no engine answers at %1 and sandboxd was not found next to "
                                 "%2 or on PATH")
                      .arg(m_profile.url.toDisplayString(), QCoreApplication::applicationDirPath()),
                  {}});
        return;
    }
    const QString dataDir = m_profile.effectiveDataDir();
    QDir().mkpath(dataDir);
    qint64 pid = 0;
    const QUrl url = m_profile.url.isEmpty() ? ConnectionProfile::defaultLocalUrl() : m_profile.url;
    const QStringList args{QStringLiteral("--data-dir"), dataDir, QStringLiteral("--listen"),
                           url.host() + u':' + QString::number(url.port(7465))};
    // Detached, with its output in DATA_DIR/sandboxd.log rather than in our terminal (it
    // outlives us, and would otherwise hold our stdout open for whoever reads it).
    QProcess process;
    process.setProgram(prog);
    process.setArguments(args);
    process.setStandardInputFile(QProcess::nullDevice());
    process.setStandardOutputFile(dataDir + QStringLiteral("/sandboxd.log"), QIODevice::Append);
    process.setStandardErrorFile(dataDir + QStringLiteral("/sandboxd.log"), QIODevice::Append);
    if (!process.startDetached(&pid)) {
        finish(
            Error{ErrorCode::ConnectionError, QStringLiteral("could not start %1").arg(prog), {}});
        return;
    }
    qCInfo(lcLocalEngine) << "started" << prog << args << "pid" << pid;
    m_started = true;
    m_sinceStart.start();
    Q_EMIT engineStarted(pid);
    waitForEngine();
}

void LocalEngine::finish(const Result<ConnectionProfile> &result)
{
    m_busy = false;
    m_pollTimer.stop();
    if (result)
        Q_EMIT ready(result.value());
    else
        Q_EMIT failed(result.error());
}

} // namespace Sandbox
