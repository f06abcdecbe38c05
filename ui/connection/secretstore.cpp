#include "secretstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QStandardPaths>
#include <QTemporaryFile>
#include <QTimer>

#ifdef SANDBOX_HAVE_QTKEYCHAIN
#include <qt6keychain/keychain.h>
#endif

#include <sys/stat.h>

Q_LOGGING_CATEGORY(lcSecrets, "sandbox.ui.secrets", QtInfoMsg)

namespace Sandbox::Ui {

namespace {
const QString kService = QStringLiteral("sandbox-desktop");
constexpr qint64 kMaxFileBytes = 1024 * 1024;

// Runs `fn` on the next turn of the event loop, unless `context` is gone.
void later(QObject *context, std::function<void()> fn)
{
    QPointer<QObject> guard(context);
    const bool hadContext = context != nullptr;
    QTimer::singleShot(0, context ? context : QCoreApplication::instance(),
                       [guard, hadContext, fn = std::move(fn)] {
                           if (hadContext && !guard)
                               return;
                           fn();
                       });
}
} // namespace

SecretStore::SecretStore(Backend backend, const QString &filePath, QObject *parent)
    : QObject(parent)
    , m_backend(backend)
    , m_filePath(filePath.isEmpty() ? defaultFilePath() : filePath)
{
#ifndef SANDBOX_HAVE_QTKEYCHAIN
    if (m_backend == Backend::Keyring)
        m_keyringFailed = true;
#endif
}

SecretStore::~SecretStore() = default;

QString SecretStore::defaultFilePath()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation)
           + QStringLiteral("/sandbox-desktop/api-keys.json");
}

bool SecretStore::keyringAvailable() const
{
#ifdef SANDBOX_HAVE_QTKEYCHAIN
    return !m_keyringFailed;
#else
    return false;
#endif
}

bool SecretStore::useKeyring() const
{
    return m_backend != Backend::File && keyringAvailable();
}

Result<QString> SecretStore::readFile(const QString &name) const
{
    QFile f(m_filePath);
    if (!f.exists())
        return Error::notFound(QStringLiteral("secret %1").arg(name));
    if (!f.open(QIODevice::ReadOnly))
        return Error{ErrorCode::InternalError,
                     QStringLiteral("cannot read %1: %2").arg(m_filePath, f.errorString()),
                     {}};
    const QJsonObject o = QJsonDocument::fromJson(f.read(kMaxFileBytes)).object();
    const QJsonValue v = o.value(name);
    if (!v.isString())
        return Error::notFound(QStringLiteral("secret %1").arg(name));
    return v.toString();
}

std::optional<Error> SecretStore::writeFile(const QString &name, const QString *secret)
{
    const QFileInfo info(m_filePath);
    const QString dir = info.absolutePath();
    if (!QDir().mkpath(dir))
        return Error{ErrorCode::InternalError, QStringLiteral("cannot create %1").arg(dir), {}};
    ::chmod(QFile::encodeName(dir).constData(), 0700);

    QJsonObject o;
    {
        QFile f(m_filePath);
        if (f.open(QIODevice::ReadOnly))
            o = QJsonDocument::fromJson(f.read(kMaxFileBytes)).object();
    }
    if (secret)
        o.insert(name, *secret);
    else
        o.remove(name);

    // QTemporaryFile creates the file with mode 0600 from the start; the rename is atomic.
    QTemporaryFile tmp(dir + QStringLiteral("/.api-keys-XXXXXX"));
    if (!tmp.open())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("cannot write in %1: %2").arg(dir, tmp.errorString()),
                     {}};
    ::fchmod(tmp.handle(), 0600);
    const QByteArray data = QJsonDocument(o).toJson(QJsonDocument::Indented);
    if (tmp.write(data) != data.size() || !tmp.flush())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("cannot write %1: %2").arg(tmp.fileName(), tmp.errorString()),
                     {}};
    if (QFile::exists(m_filePath) && !QFile::remove(m_filePath))
        return Error{ErrorCode::InternalError,
                     QStringLiteral("cannot replace %1").arg(m_filePath),
                     {}};
    if (!tmp.rename(m_filePath))
        return Error{ErrorCode::InternalError,
                     QStringLiteral("cannot write %1: %2").arg(m_filePath, tmp.errorString()),
                     {}};
    tmp.setAutoRemove(false);
    ::chmod(QFile::encodeName(m_filePath).constData(), 0600);
    return std::nullopt;
}

void SecretStore::read(const QString &name, QObject *context, ReadCallback callback)
{
    if (useKeyring()) {
        keyringRead(name, context, std::move(callback));
        return;
    }
    later(context, [this, name, callback = std::move(callback)] { callback(readFile(name)); });
}

void SecretStore::write(const QString &name, const QString &secret, QObject *context,
                        DoneCallback callback)
{
    if (useKeyring()) {
        keyringWrite(name, secret, context, std::move(callback));
        return;
    }
    later(context, [this, name, secret, callback = std::move(callback)] {
        const auto error = writeFile(name, &secret);
        if (!error)
            m_lastWrite = Backend::File;
        callback(error);
    });
}

void SecretStore::remove(const QString &name, QObject *context, DoneCallback callback)
{
    // Remove from both: a key may have gone to the file while the keyring was away.
    const auto fileError = writeFile(name, nullptr);
    if (useKeyring()) {
        keyringRemove(name, context, std::move(callback));
        return;
    }
    later(context, [fileError, callback = std::move(callback)] { callback(fileError); });
}

#ifdef SANDBOX_HAVE_QTKEYCHAIN
namespace {
bool keyringUnusable(QKeychain::Error e)
{
    return e == QKeychain::NoBackendAvailable || e == QKeychain::NotImplemented
           || e == QKeychain::OtherError || e == QKeychain::AccessDenied;
}
} // namespace

void SecretStore::keyringRead(const QString &name, QObject *context, ReadCallback callback)
{
    auto *job = new QKeychain::ReadPasswordJob(kService, this);
    job->setKey(name);
    job->setInsecureFallback(false); // never plain-text settings
    QPointer<QObject> guard(context);
    const bool hadContext = context != nullptr;
    connect(job, &QKeychain::Job::finished, this,
            [this, name, guard, hadContext, callback](QKeychain::Job *j) {
                if (hadContext && !guard)
                    return;
                auto *job = static_cast<QKeychain::ReadPasswordJob *>(j);
                if (job->error() == QKeychain::NoError) {
                    callback(job->textData());
                    return;
                }
                if (keyringUnusable(job->error())) {
                    qCInfo(lcSecrets) << "keyring unavailable (" << job->errorString() << "): using"
                                      << m_filePath;
                    m_keyringFailed = m_backend == Backend::Automatic || m_keyringFailed;
                }
                if (m_backend == Backend::Keyring && job->error() != QKeychain::EntryNotFound) {
                    callback(Error{ErrorCode::InternalError, job->errorString(), {}});
                    return;
                }
                callback(readFile(name)); // not in the keyring: perhaps in the file
            });
    job->start();
}

void SecretStore::keyringWrite(const QString &name, const QString &secret, QObject *context,
                               DoneCallback callback)
{
    auto *job = new QKeychain::WritePasswordJob(kService, this);
    job->setKey(name);
    job->setInsecureFallback(false);
    job->setTextData(secret);
    QPointer<QObject> guard(context);
    const bool hadContext = context != nullptr;
    connect(job, &QKeychain::Job::finished, this,
            [this, name, secret, guard, hadContext, callback](QKeychain::Job *j) {
                if (hadContext && !guard)
                    return;
                if (j->error() == QKeychain::NoError) {
                    m_lastWrite = Backend::Keyring;
                    writeFile(name, nullptr); // an older copy in the file is no longer needed
                    callback(std::nullopt);
                    return;
                }
                if (m_backend == Backend::Keyring) {
                    callback(Error{ErrorCode::InternalError, j->errorString(), {}});
                    return;
                }
                qCInfo(lcSecrets) << "keyring unavailable (" << j->errorString() << "): using"
                                  << m_filePath;
                m_keyringFailed = true;
                const auto error = writeFile(name, &secret);
                if (!error)
                    m_lastWrite = Backend::File;
                callback(error);
            });
    job->start();
}

void SecretStore::keyringRemove(const QString &name, QObject *context, DoneCallback callback)
{
    auto *job = new QKeychain::DeletePasswordJob(kService, this);
    job->setKey(name);
    job->setInsecureFallback(false);
    QPointer<QObject> guard(context);
    const bool hadContext = context != nullptr;
    connect(job, &QKeychain::Job::finished, this, [guard, hadContext, callback](QKeychain::Job *j) {
        if (hadContext && !guard)
            return;
        if (j->error() == QKeychain::NoError || j->error() == QKeychain::EntryNotFound
            || keyringUnusable(j->error()))
            callback(std::nullopt);
        else
            callback(Error{ErrorCode::InternalError, j->errorString(), {}});
    });
    job->start();
}
#else
void SecretStore::keyringRead(const QString &name, QObject *context, ReadCallback callback)
{
    later(context, [this, name, callback = std::move(callback)] { callback(readFile(name)); });
}
void SecretStore::keyringWrite(const QString &name, const QString &secret, QObject *context,
                               DoneCallback callback)
{
    later(context, [this, name, secret, callback = std::move(callback)] {
        callback(writeFile(name, &secret));
    });
}
void SecretStore::keyringRemove(const QString &, QObject *context, DoneCallback callback)
{
    later(context, [callback = std::move(callback)] { callback(std::nullopt); });
}
#endif

} // namespace Sandbox::Ui
