#include "profilestore.h"

#include <QSettings>
#include <QUuid>

#include <memory>

namespace Sandbox::Ui {

namespace {
const QString kGroup = QStringLiteral("profiles");
const QString kLastUsed = QStringLiteral("connection/lastProfile");
} // namespace

ConnectionProfile StoredProfile::toConnectionProfile(const QString &apiKey) const
{
    if (local) {
        ConnectionProfile p = ConnectionProfile::local(dataDir);
        if (url.isValid() && !url.isEmpty())
            p.url = url;
        p.name = name;
        p.apiKey = apiKey; // empty: read from the data directory
        return p;
    }
    ConnectionProfile p = ConnectionProfile::remote(url, apiKey);
    p.name = name;
    return p;
}

ProfileStore::ProfileStore(QSettings *settings)
    : m_settings(settings)
{
    if (!m_settings) {
        m_owned = std::make_unique<QSettings>();
        m_settings = m_owned.get();
    }
}

ProfileStore::~ProfileStore() = default;

QSettings &ProfileStore::settings() const
{
    return *m_settings;
}

StoredProfile ProfileStore::localProfile()
{
    StoredProfile p;
    p.id = QString::fromLatin1(LocalId);
    p.name = QObject::tr("Local engine (this computer)");
    p.local = true;
    return p;
}

StoredProfile ProfileStore::storedLocalProfile() const
{
    StoredProfile p = localProfile();
    p.dataDir = settings().value(QStringLiteral("localEngine/dataDir")).toString();
    return p;
}

QList<StoredProfile> ProfileStore::profiles() const
{
    QList<StoredProfile> out{storedLocalProfile()};
    QSettings &s = settings();
    const int n = s.beginReadArray(kGroup);
    for (int i = 0; i < n; ++i) {
        s.setArrayIndex(i);
        StoredProfile p;
        p.id = s.value(QStringLiteral("id")).toString();
        p.name = s.value(QStringLiteral("name")).toString();
        p.url = QUrl(s.value(QStringLiteral("url")).toString());
        if (p.id.isEmpty() || p.id == QLatin1String(LocalId) || !p.url.isValid())
            continue;
        out.append(p);
    }
    s.endArray();
    return out;
}

StoredProfile ProfileStore::profile(const QString &id) const
{
    for (const StoredProfile &p : profiles()) {
        if (p.id == id)
            return p;
    }
    return {};
}

StoredProfile ProfileStore::save(StoredProfile profile)
{
    if (profile.local) {
        // The local engine's one setting: its data directory (empty: the default).
        settings().setValue(QStringLiteral("localEngine/dataDir"), profile.dataDir);
        return storedLocalProfile();
    }
    if (profile.id.isEmpty())
        profile.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    QList<StoredProfile> list = profiles().mid(1);
    bool replaced = false;
    for (StoredProfile &p : list) {
        if (p.id == profile.id) {
            p = profile;
            replaced = true;
        }
    }
    if (!replaced)
        list.append(profile);
    writeAll(list);
    return profile;
}

void ProfileStore::remove(const QString &id)
{
    QList<StoredProfile> list = profiles().mid(1);
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const StoredProfile &p) { return p.id == id; }),
               list.end());
    writeAll(list);
    if (lastUsedId() == id)
        setLastUsedId(QString::fromLatin1(LocalId));
}

void ProfileStore::writeAll(const QList<StoredProfile> &remote)
{
    QSettings &s = settings();
    s.remove(kGroup);
    s.beginWriteArray(kGroup, int(remote.size()));
    for (int i = 0; i < remote.size(); ++i) {
        s.setArrayIndex(i);
        s.setValue(QStringLiteral("id"), remote[i].id);
        s.setValue(QStringLiteral("name"), remote[i].name);
        s.setValue(QStringLiteral("url"), remote[i].url.toString());
        // Deliberately no key here: see SecretStore.
    }
    s.endArray();
}

QString ProfileStore::lastUsedId() const
{
    return settings().value(kLastUsed, QString::fromLatin1(LocalId)).toString();
}

void ProfileStore::setLastUsedId(const QString &id)
{
    settings().setValue(kLastUsed, id);
}

} // namespace Sandbox::Ui
