#include "localengine.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QProcess>
#include <QStandardPaths>

Q_LOGGING_CATEGORY(lcLocalEngine, "sandbox.core.localengine", QtInfoMsg)

namespace Sandbox {

namespace {
constexpr int ProbeTimeoutMs = 1000;
}

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
    if (!m_program.isEmpty())
        return m_program;
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
        const QString prog = program();
        if (prog.isEmpty()) {
            finish(
                Error{ErrorCode::ConnectionError,
                      QStringLiteral("no engine answers at %1 and sandboxd was not found next to "
                                     "%2 or on PATH")
                          .arg(m_profile.url.toDisplayString(),
                               QCoreApplication::applicationDirPath()),
                      {}});
            return;
        }
        const QString dataDir = m_profile.effectiveDataDir();
        QDir().mkpath(dataDir);
        qint64 pid = 0;
        const QUrl url = m_profile.url.isEmpty() ? ConnectionProfile::defaultLocalUrl()
                                                 : m_profile.url;
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
            finish(Error{ErrorCode::ConnectionError,
                         QStringLiteral("could not start %1").arg(prog),
                         {}});
            return;
        }
        qCInfo(lcLocalEngine) << "started" << prog << args << "pid" << pid;
        m_started = true;
        m_sinceStart.start();
        Q_EMIT engineStarted(pid);
    }
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
