#include "engineprocess.h"

#include "procstat.h"

#include <QDeadlineTimer>
#include <QFile>
#include <QRegularExpression>

#include <csignal>
#include <unistd.h>

EngineProcess::EngineProcess() = default;

EngineProcess::~EngineProcess()
{
    terminate();
}

bool EngineProcess::start(const QStringList &extraArgs, const QString &dataDir)
{
    if (dataDir.isEmpty()) {
        if (!m_tmp) {
            m_tmp = std::make_unique<QTemporaryDir>();
            if (!m_tmp->isValid())
                return false;
        }
        m_dataDir = m_tmp->path();
    } else {
        m_dataDir = dataDir;
    }
    m_process = std::make_unique<QProcess>();
    // SANDBOX_TEST_SANDBOXD runs a suite against another build of the engine (an older one, to
    // see its attacks succeed there).
    const QString other = qEnvironmentVariable("SANDBOX_TEST_SANDBOXD");
    m_process->setProgram(other.isEmpty() ? QStringLiteral(SANDBOXD_BIN) : other);
    QStringList args{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                     QStringLiteral("--data-dir"), m_dataDir};
    if (m_runAsUid != uid_t(-1)) {
        const QByteArray dir = QFile::encodeName(m_dataDir);
        if (::chown(dir.constData(), m_runAsUid, m_runAsUid) != 0)
            return false;
        const QString id = QString::number(m_runAsUid);
        args.prepend(QStringLiteral(SANDBOXD_BIN));
        args = QStringList{QStringLiteral("--reuid"),        id,
                           QStringLiteral("--regid"),        id,
                           QStringLiteral("--clear-groups"), QStringLiteral("--")}
               + args;
        m_process->setProgram(QStringLiteral("/usr/bin/setpriv"));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HOME"), m_dataDir);
        m_process->setProcessEnvironment(env);
    }
    if (!m_extraEnv.isEmpty()) {
        QProcessEnvironment env = m_process->processEnvironment().isEmpty()
                                      ? QProcessEnvironment::systemEnvironment()
                                      : m_process->processEnvironment();
        env.insert(m_extraEnv);
        m_process->setProcessEnvironment(env);
    }
    m_process->setArguments(args + extraArgs);
    m_process->setProcessChannelMode(QProcess::SeparateChannels);
    m_process->start();
    if (!m_process->waitForStarted(5000))
        return false;
    static const QRegularExpression ready(QStringLiteral("listening on (http://\\S+)"));
    // A restart on the same object: only this start's output says where it listens.
    const qsizetype logStart = m_log.size();
    QDeadlineTimer deadline(15000);
    while (!deadline.hasExpired()) {
        m_process->waitForReadyRead(100);
        m_log += m_process->readAllStandardError();
        m_log += m_process->readAllStandardOutput();
        const auto match = ready.match(QString::fromUtf8(m_log.mid(logStart)));
        if (match.hasMatch()) {
            m_url = QUrl(match.captured(1));
            QFile keyFile(m_dataDir + QStringLiteral("/api-key"));
            if (!keyFile.open(QIODevice::ReadOnly))
                return false;
            m_key = QString::fromLatin1(keyFile.readAll().trimmed());
            // Keep draining its output so that it never blocks on a full pipe.
            QObject::connect(m_process.get(), &QProcess::readyReadStandardError, m_process.get(),
                             [this] {
                                 m_log += m_process->readAllStandardError();
                                 m_log = m_log.right(1 << 20);
                             });
            QObject::connect(m_process.get(), &QProcess::readyReadStandardOutput, m_process.get(),
                             [this] {
                                 m_log += m_process->readAllStandardOutput();
                                 m_log = m_log.right(1 << 20);
                             });
            return true;
        }
        if (m_process->state() == QProcess::NotRunning)
            return false;
    }
    return false;
}

QUrl EngineProcess::wsUrl() const
{
    QUrl u = m_url;
    u.setScheme(QStringLiteral("ws"));
    u.setPath(QStringLiteral("/rpc"));
    return u;
}

void EngineProcess::kill9()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        ::kill(pid_t(m_process->processId()), SIGKILL);
        m_process->waitForFinished(5000);
    }
}

void EngineProcess::terminate()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->terminate();
        if (!m_process->waitForFinished(10000))
            kill9();
    }
}

double EngineProcess::cpuMs() const
{
    const double seconds = ProcStat::cpuSeconds(ProcStat::statPath(QString::number(pid())));
    return seconds < 0 ? -1 : seconds * 1000.0;
}

QString EngineProcess::log() const
{
    return QString::fromUtf8(m_log);
}

bool EngineProcess::exitedCleanly() const
{
    return m_process && m_process->state() == QProcess::NotRunning
           && m_process->exitStatus() == QProcess::NormalExit && m_process->exitCode() == 0;
}
