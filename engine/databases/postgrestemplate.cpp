#include "postgrestemplate.h"

#include "postgresbackend.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QLoggingCategory>
#include <QProcess>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcTemplate, "sandboxd.databases.template")

namespace Sandbox::Engine {

namespace {

QString building(const QString &dir)
{
    return dir + QStringLiteral(".new");
}

// Runs as the builder uid between fork and exec.
void dropTo(QProcess *p, uid_t uid)
{
    p->setChildProcessModifier([uid] {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0
            || ::setresuid(uid, uid, uid) != 0)
            ::_exit(125);
    });
}

bool chownTree(const QString &dir, uid_t uid)
{
    if (::chown(QFile::encodeName(dir).constData(), uid, uid) != 0)
        return false;
    QDirIterator it(dir, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        if (::lchown(QFile::encodeName(it.next()).constData(), uid, uid) != 0)
            return false;
    return true;
}

// Readable by every sandbox uid (they copy it); nobody but its owner writes.
void openForReading(const QString &dir)
{
    ::chmod(QFile::encodeName(dir).constData(), 0755);
    QDirIterator it(dir, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        ::chmod(QFile::encodeName(path).constData(), it.fileInfo().isDir() ? 0755 : 0644);
    }
}

} // namespace

PostgresTemplate::PostgresTemplate(QString dir, uid_t builderUid, bool dropPrivileges,
                                   QObject *parent)
    : QObject(parent)
    , m_dir(std::move(dir))
    , m_uid(builderUid)
    , m_drop(dropPrivileges)
{
    // initdb looks its user up in /etc/passwd: build as `nobody` when there is one.
    if (const passwd *pw = ::getpwnam("nobody"))
        m_uid = pw->pw_uid;
}

bool PostgresTemplate::isReady() const
{
    return QFile::exists(m_dir + QStringLiteral("/PG_VERSION"))
           && QFile::exists(m_dir + QStringLiteral("/.sandbox-template-ready"));
}

void PostgresTemplate::ensure(QObject *context, std::function<void(Result<bool>)> done)
{
    if (isReady())
        return done(true);
    m_waiters.append({context, std::move(done)});
    if (m_building)
        return;
    m_building = true;
    qCInfo(lcTemplate) << "building the PostgreSQL template cluster in" << m_dir;
    QDir(building(m_dir)).removeRecursively();
    QDir(m_dir).removeRecursively();
    QDir().mkpath(QFileInfo(m_dir).path());
    ::chmod(QFile::encodeName(QFileInfo(m_dir).path()).constData(), 0711);
    if (!QDir().mkpath(building(m_dir)) || (m_drop && !chownTree(building(m_dir), m_uid)))
        return finish(Error{ErrorCode::SandboxError,
                            QStringLiteral("cannot create %1").arg(building(m_dir)),
                            {}});
    runStep(0);
}

void PostgresTemplate::runStep(int step)
{
    const QString data = building(m_dir);
    auto *p = new QProcess(this);
    p->setProcessChannelMode(QProcess::MergedChannels);
    p->setWorkingDirectory(data);
    if (m_drop)
        dropTo(p, m_uid);
    QByteArray input;
    if (step == 0) {
        p->setProgram(PostgresBackend::binDir() + QStringLiteral("/initdb"));
        p->setArguments({QStringLiteral("-D"), data, QStringLiteral("-U"),
                         QLatin1String(PostgresBackend::kAdminRole), QStringLiteral("-A"),
                         QStringLiteral("trust"), QStringLiteral("-E"), QStringLiteral("UTF8"),
                         QStringLiteral("--locale=C.UTF-8"), QStringLiteral("--wal-segsize=1")});
    } else {
        // Single-user mode: no socket, no other connection; one statement per line.
        p->setProgram(PostgresBackend::binDir() + QStringLiteral("/postgres"));
        p->setArguments({QStringLiteral("--single"), QStringLiteral("-D"), data,
                         QStringLiteral("-c"), QStringLiteral("min_wal_size=2MB"),
                         QStringLiteral("template1")});
        input = QByteArrayLiteral(
            "CREATE ROLE sandbox LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION\n"
            "ALTER DATABASE postgres OWNER TO sandbox\n"
            "CHECKPOINT\n");
    }
    connect(p, &QProcess::finished, this, [this, p, step](int code, QProcess::ExitStatus status) {
        const QString out = QString::fromUtf8(p->readAll());
        p->deleteLater();
        if (status != QProcess::NormalExit || code != 0 || out.contains(QLatin1String("ERROR:")))
            return finish(
                Error{ErrorCode::SandboxError,
                      QStringLiteral("preparing the PostgreSQL template failed (%1): %2")
                          .arg(step == 0 ? QStringLiteral("initdb") : QStringLiteral("set-up"),
                               out.trimmed().right(600)),
                      {}});
        if (step == 0)
            return runStep(1);
        const QString data = building(m_dir);
        QFile hba(data + QStringLiteral("/pg_hba.conf"));
        // The socket lives in a directory only the engine and the sandbox itself can reach.
        if (!hba.open(QIODevice::WriteOnly | QIODevice::Truncate)
            || hba.write("# Sandbox Desktop: unix socket only, reachable by the engine and the "
                         "sandbox itself.\n"
                         "local all all trust\n")
                   < 0)
            return finish(
                Error{ErrorCode::SandboxError, QStringLiteral("cannot write pg_hba.conf"), {}});
        hba.close();
        QFile ready(data + QStringLiteral("/.sandbox-template-ready"));
        ready.open(QIODevice::WriteOnly);
        ready.close();
        // Owned by root from now on (when the engine is root), so that its builder cannot change it.
        if (m_drop)
            chownTree(data, 0);
        openForReading(data); // (initdb has synced the cluster itself)
        if (!QDir().rename(data, m_dir))
            return finish(Error{ErrorCode::SandboxError,
                                QStringLiteral("cannot move the template into place"),
                                {}});
        finish(true);
    });
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            p->deleteLater();
            finish(
                Error{ErrorCode::SandboxError,
                      QStringLiteral(
                          "cannot run %1: is PostgreSQL 15 installed (apt-get install postgresql)?")
                          .arg(p->program()),
                      {}});
        }
    });
    p->start();
    if (!input.isEmpty()) {
        p->write(input);
        p->closeWriteChannel();
    }
}

void PostgresTemplate::finish(const Result<bool> &result)
{
    m_building = false;
    if (!result)
        qCWarning(lcTemplate) << result.error().message;
    else
        qCInfo(lcTemplate) << "PostgreSQL template ready";
    const auto waiters = std::exchange(m_waiters, {});
    for (const auto &[context, done] : waiters)
        if (context)
            done(result);
}

} // namespace Sandbox::Engine
