#pragma once

#include <protocol/result.h>

#include <QObject>
#include <QPointer>

#include <functional>

namespace Sandbox::Ui {

// Where API keys of remote profiles are kept: the desktop keyring (QtKeychain: Secret Service /
// KWallet) when one answers, else a file only its owner can read (mode 0600 in a 0700
// directory). Never QSettings, never the command line.
//
// Automatic: every call tries the keyring first; when it has no backend (or fails), the file is
// used, and the keyring is not asked again in this session. Reads look in both.
class SecretStore final : public QObject
{
    Q_OBJECT

public:
    enum class Backend { Automatic, Keyring, File };
    using ReadCallback = std::function<void(Result<QString>)>;
    using DoneCallback = std::function<void(const std::optional<Error> &)>;

    explicit SecretStore(Backend backend = Backend::Automatic, const QString &filePath = {},
                         QObject *parent = nullptr);
    ~SecretStore() override;

    // $XDG_CONFIG_HOME/sandbox-desktop/api-keys.json
    static QString defaultFilePath();
    QString filePath() const { return m_filePath; }
    bool keyringAvailable() const;
    // Where the last successful write went.
    Backend lastWriteBackend() const { return m_lastWrite; }

    // `callback` runs later (never inside the call) unless `context` is gone by then.
    // A missing entry is ErrorCode::NotFound.
    void read(const QString &name, QObject *context, ReadCallback callback);
    void write(const QString &name, const QString &secret, QObject *context, DoneCallback callback);
    void remove(const QString &name, QObject *context, DoneCallback callback);

private:
    Result<QString> readFile(const QString &name) const;
    std::optional<Error> writeFile(const QString &name, const QString *secret);
    void keyringRead(const QString &name, QObject *context, ReadCallback callback);
    void keyringWrite(const QString &name, const QString &secret, QObject *context,
                      DoneCallback callback);
    void keyringRemove(const QString &name, QObject *context, DoneCallback callback);
    bool useKeyring() const;

    Backend m_backend;
    QString m_filePath;
    bool m_keyringFailed = false;
    Backend m_lastWrite = Backend::Automatic;
};

} // namespace Sandbox::Ui
