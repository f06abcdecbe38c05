#include "workspacearchive.h"

#include "api/methods.h"
#include "protocol/fieldreader.h"
#include "protocol/sandboxenums.h"
#include "sandboxmanager.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPointer>
#include <QProcess>
#include <QTimer>

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <utility>

Q_LOGGING_CATEGORY(lcArchive, "sandboxd.archive")

namespace Sandbox::Engine {

namespace {

const QString kArchiveFile = QStringLiteral("/workspace-archive.tar.gz");
const QString kRestoreFile = QStringLiteral("/workspace-restore.tar.gz");
constexpr int kTarTimeoutMs = 30 * 60 * 1000;

Error busy(const QString &id)
{
    return Error{ErrorCode::AlreadyExists,
                 QStringLiteral("sandbox %1 is already archiving or restoring its workspace").arg(id),
                 QJsonObject{{QStringLiteral("id"), id}}};
}

} // namespace

WorkspaceArchiver::WorkspaceArchiver(Methods *methods, SandboxManager *sandboxes, QObject *parent)
    : QObject(parent)
    , m_methods(methods)
    , m_sandboxes(sandboxes)
{
    using Handler = void (WorkspaceArchiver::*)(const QJsonObject &, const QString &, Done);
    const std::pair<const char *, Handler> handlers[] = {
        {"sandbox.archive", &WorkspaceArchiver::archive},
        {"sandbox.restore", &WorkspaceArchiver::restore},
    };
    for (const auto &method : handlers)
        m_methods->add(QString::fromLatin1(method.first),
                       [this, handler = method.second](const QJsonObject &p, const CallContext &c,
                                                       const Methods::Reply &r) {
                           QPointer<QObject> guard(c.guard ? c.guard.data() : this);
                           (this->*handler)(p, c.keyId, [guard, r](Result<QJsonValue> v) {
                               if (guard)
                                   r(std::move(v));
                           });
                       });
}

WorkspaceArchiver::~WorkspaceArchiver()
{
    for (QProcess *p : std::as_const(m_running)) {
        p->disconnect(this);
        p->kill();
        p->waitForFinished(1000);
    }
}

Result<WorkspaceArchiver::Target> WorkspaceArchiver::idleSandbox(const QString &keyId,
                                                                 const QString &id) const
{
    const auto record = m_sandboxes->record(keyId, id);
    if (!record)
        return record.error();
    const QString status = record->status;
    const SandboxStatus value = fromWire<SandboxStatus>(status);
    if (value != SandboxStatus::Stopped && value != SandboxStatus::Sleeping
        && value != SandboxStatus::Error)
        return Error{ErrorCode::SandboxNotRunning,
                     QStringLiteral("sandbox %1 is %2: stop it before archiving or restoring its "
                                    "workspace")
                         .arg(id, status),
                     QJsonObject{{QStringLiteral("id"), id}, {QStringLiteral("status"), status}}};
    const EngineConfig &config = m_sandboxes->config();
    Target t;
    t.id = id;
    t.stateDir = m_sandboxes->stateDirOf(id);
    t.workspace = m_sandboxes->workspaceOf(id);
    // A workspace in a disk image is mounted only while its sandbox runs.
    if (QFileInfo::exists(t.stateDir + QStringLiteral("/workspace.ext4")))
        return Error{ErrorCode::NotImplemented,
                     QStringLiteral("sandbox %1 keeps its workspace in a disk image; archives are "
                                    "made of plain workspace directories (--no-disk-limit, "
                                    "--isolation container)")
                         .arg(id),
                     {}};
    t.drop = config.dropPrivileges;
    t.uid = config.uidBase + uid_t(record->slot);
    t.gid = t.uid;
    t.maxBytes = SandboxManager::limitsFor(record->size).diskMb * 1024 * 1024;
    if (m_running.contains(id))
        return busy(id);
    return t;
}

void WorkspaceArchiver::archive(const QJsonObject &params, const QString &keyId, Done done)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 offset = p.optionalInteger(QStringLiteral("offset"), 0, 0,
                                            std::numeric_limits<qint64>::max() / 2);
    const qint64 length = p.optionalInteger(QStringLiteral("length"), kDefaultChunk, 1, kMaxChunk);
    if (p.failed())
        return done(p.error());
    const auto target = idleSandbox(keyId, id);
    if (!target)
        return done(target.error());
    const QString file = target->stateDir + kArchiveFile;
    auto answer = [file, offset, length, done] {
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly))
            return done(Error{ErrorCode::NotFound,
                              QStringLiteral("no archive is being read: start at offset 0"),
                              {}});
        const qint64 size = f.size();
        if (offset > size)
            return done(Error{ErrorCode::InvalidParams,
                              QStringLiteral("offset %1 is past the archive's end (%2 bytes)")
                                  .arg(offset)
                                  .arg(size),
                              QJsonObject{{QStringLiteral("field"), QStringLiteral("offset")}}});
        f.seek(offset);
        const QByteArray chunk = f.read(length);
        const bool last = offset + chunk.size() >= size;
        f.close();
        if (last)
            QFile::remove(file);
        done(QJsonValue(QJsonObject{
            {QStringLiteral("size"), double(size)},
            {QStringLiteral("offset"), double(offset)},
            {QStringLiteral("length"), double(chunk.size())},
            {QStringLiteral("contentBase64"), QString::fromLatin1(chunk.toBase64())},
            {QStringLiteral("done"), last},
        }));
    };
    if (offset > 0)
        return answer();
    // Offset 0 makes the archive afresh: the workspace as it is now.
    QFile::remove(file);
    runAsSandbox(*target, QStringLiteral("exec tar --create --gzip --file=- ."), {}, file,
                 [answer, done](Result<bool> made) {
                     if (!made)
                         return done(made.error());
                     answer();
                 });
}

void WorkspaceArchiver::restore(const QJsonObject &params, const QString &keyId, Done done)
{
    FieldReader p(params);
    const QString id = p.requiredString(QStringLiteral("id"));
    const qint64 offset = p.optionalInteger(QStringLiteral("offset"), 0, 0,
                                            std::numeric_limits<qint64>::max() / 2);
    const QString content = p.optionalString(QStringLiteral("contentBase64"));
    const bool last = p.optionalBool(QStringLiteral("done"), false);
    if (!p.failed() && content.size() > kMaxChunk / 3 * 4 + 4)
        p.fail(QStringLiteral("contentBase64"),
               QStringLiteral("at most %1 bytes per chunk").arg(kMaxChunk));
    const QByteArray bytes = QByteArray::fromBase64Encoding(content.toLatin1(),
                                                            QByteArray::AbortOnBase64DecodingErrors)
                                 .decoded;
    if (!p.failed() && bytes.isEmpty() && !content.isEmpty())
        p.fail(QStringLiteral("contentBase64"), QStringLiteral("is not valid base64"));
    if (p.failed())
        return done(p.error());
    const auto target = idleSandbox(keyId, id);
    if (!target)
        return done(target.error());
    const QString file = target->stateDir + kRestoreFile;
    QFile f(file);
    const qint64 have = offset == 0 ? 0 : QFileInfo(file).size();
    if (offset != have)
        return done(Error{ErrorCode::InvalidParams,
                          QStringLiteral("offset %1 does not follow the %2 bytes uploaded so far")
                              .arg(offset)
                              .arg(have),
                          QJsonObject{{QStringLiteral("field"), QStringLiteral("offset")}}});
    if (offset + bytes.size() > target->maxBytes) {
        QFile::remove(file);
        return done(Error{ErrorCode::PayloadTooLarge,
                          QStringLiteral("the archive is larger than the sandbox's disk (%1 MiB)")
                              .arg(target->maxBytes / (1024 * 1024)),
                          QJsonObject{{QStringLiteral("limit"), double(target->maxBytes)}}});
    }
    if (!f.open(offset == 0 ? QIODevice::WriteOnly | QIODevice::Truncate
                            : QIODevice::WriteOnly | QIODevice::Append)
        || f.write(bytes) != bytes.size())
        return done(Error{ErrorCode::SandboxError,
                          QStringLiteral("cannot store the upload: %1").arg(f.errorString()),
                          {}});
    const qint64 size = f.size();
    f.close();
    if (!last)
        return done(QJsonValue(QJsonObject{{QStringLiteral("received"), double(size)}}));
    // The workspace's old contents go, then the archive's come in; both as the sandbox's uid.
    runAsSandbox(*target,
                 QStringLiteral(
                     "find . -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + && "
                     "exec tar --extract --gzip --file=- --no-same-owner --preserve-permissions"),
                 file, {}, [file, size, done](Result<bool> restored) {
                     QFile::remove(file);
                     if (!restored)
                         return done(restored.error());
                     done(QJsonValue(QJsonObject{{QStringLiteral("restored"), true},
                                                 {QStringLiteral("size"), double(size)}}));
                 });
}

void WorkspaceArchiver::runAsSandbox(const Target &target, const QString &script,
                                     const QString &input, const QString &output,
                                     std::function<void(Result<bool>)> done)
{
    auto *p = new QProcess(this);
    m_running.insert(target.id, p);
    p->setProgram(QStringLiteral("/bin/sh"));
    p->setArguments({QStringLiteral("-c"), script});
    QProcessEnvironment env;
    env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/bin:/bin"));
    env.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
    p->setProcessEnvironment(env);
    p->setStandardInputFile(input.isEmpty() ? QProcess::nullDevice() : input);
    if (!output.isEmpty())
        p->setStandardOutputFile(output, QIODevice::Truncate);
    else
        p->setStandardOutputFile(QProcess::nullDevice());
    // Between fork and exec: become the sandbox's uid first, then enter its workspace, so that no
    // path of the sandbox's is followed with the engine's privileges. The output's size is
    // bounded by RLIMIT_FSIZE (SIGXFSZ past the sandbox's disk size).
    const QByteArray dir = QFile::encodeName(target.workspace);
    const bool drop = target.drop;
    const uid_t uid = target.uid;
    const gid_t gid = target.gid;
    const rlim_t maxBytes = rlim_t(target.maxBytes);
    p->setChildProcessModifier([dir, drop, uid, gid, maxBytes] {
        if (drop
            && (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0
                || ::setresuid(uid, uid, uid) != 0))
            ::_exit(125);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        const struct rlimit fsize = {maxBytes, maxBytes};
        ::setrlimit(RLIMIT_FSIZE, &fsize);
        if (::chdir(dir.constData()) != 0)
            ::_exit(126);
        ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    });
    const QString id = target.id;
    auto *timer = new QTimer(p);
    timer->setSingleShot(true);
    connect(timer, &QTimer::timeout, p, [p] { p->kill(); });
    timer->start(kTarTimeoutMs);
    connect(p, &QProcess::finished, this,
            [this, p, id, output, done](int code, QProcess::ExitStatus status) {
                m_running.remove(id);
                p->deleteLater();
                const QString err = QString::fromUtf8(p->readAllStandardError()).trimmed();
                if (status == QProcess::NormalExit && code == 0)
                    return done(true);
                if (!output.isEmpty())
                    QFile::remove(output);
                qCWarning(lcArchive) << id << "tar failed:" << code << err.right(400);
                const bool tooBig = status == QProcess::CrashExit || code == 128 + SIGXFSZ;
                done(Error{tooBig ? ErrorCode::PayloadTooLarge : ErrorCode::SandboxError,
                           tooBig ? QStringLiteral("the workspace archive failed: it was killed "
                                                   "(larger than the sandbox's disk, or too slow)")
                                  : QStringLiteral("the workspace archive failed (tar exited "
                                                   "with %1): %2")
                                        .arg(code)
                                        .arg(err.right(400)),
                           {}});
            });
    connect(p, &QProcess::errorOccurred, this, [this, p, id, done](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart)
            return;
        m_running.remove(id);
        p->deleteLater();
        done(Error{ErrorCode::SandboxError,
                   QStringLiteral("cannot run tar: %1").arg(p->errorString()),
                   {}});
    });
    p->start(QIODevice::ReadOnly);
}

} // namespace Sandbox::Engine
