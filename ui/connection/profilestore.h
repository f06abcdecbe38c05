#pragma once

#include <client/connectionprofile.h>

#include <QList>
#include <QObject>
#include <QString>
#include <QUrl>

#include <memory>

class QSettings;

namespace Sandbox::Ui {

// A remembered connection: the local engine (built in, always first) or a remote endpoint.
// Only what is not secret lives here; a remote profile's API key is in the SecretStore under
// secretName().
struct StoredProfile
{
    QString id; // "local" for the built-in one; a UUID for the others
    QString name;
    bool local = false;
    QUrl url;        // remote: https://...; local: empty for the default
    QString dataDir; // local only; empty for the default

    bool isValid() const { return !id.isEmpty(); }
    QString secretName() const { return QStringLiteral("profile/") + id; }
    // The profile to connect with (the key filled in by the caller for remote profiles).
    ConnectionProfile toConnectionProfile(const QString &apiKey = {}) const;
};

// The profiles in the app's settings (QSettings, group "profiles").
class ProfileStore final
{
public:
    static constexpr const char *LocalId = "local";

    // `settings`: not owned; nullptr uses the default QSettings of the application.
    explicit ProfileStore(QSettings *settings = nullptr);
    ~ProfileStore();

    QList<StoredProfile> profiles() const;
    StoredProfile profile(const QString &id) const;
    static StoredProfile localProfile();
    // The local profile with its saved data directory.
    StoredProfile storedLocalProfile() const;
    // Adds (no id: one is made) or replaces a remote profile; returns it.
    StoredProfile save(StoredProfile profile);
    void remove(const QString &id);
    QString lastUsedId() const;
    void setLastUsedId(const QString &id);

private:
    QSettings &settings() const;
    void writeAll(const QList<StoredProfile> &remote);

    QSettings *m_settings;
    std::unique_ptr<QSettings> m_owned;
};

} // namespace Sandbox::Ui
