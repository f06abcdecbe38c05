#include "connectionprofile.h"

#include <QFile>
#include <QStandardPaths>

#include <optional>

#include <unistd.h>

namespace Sandbox {

ConnectionProfile ConnectionProfile::local(const QString &dataDir)
{
    ConnectionProfile p;
    p.kind = Kind::LocalEngine;
    p.name = QStringLiteral("local");
    p.dataDir = dataDir;
    return p;
}

ConnectionProfile ConnectionProfile::remote(const QUrl &url, const QString &apiKey)
{
    ConnectionProfile p;
    p.kind = Kind::Remote;
    p.name = url.host();
    p.url = url;
    p.apiKey = apiKey;
    return p;
}

QUrl ConnectionProfile::defaultLocalUrl()
{
    return QUrl(QStringLiteral("http://127.0.0.1:7465"));
}

QString ConnectionProfile::defaultDataDir()
{
    // The same default as sandboxd's: a root engine keeps its state in /var/lib.
    if (::geteuid() == 0)
        return QStringLiteral("/var/lib/sandboxd");
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation)
           + QStringLiteral("/sandboxd");
}

QString ConnectionProfile::effectiveDataDir() const
{
    return dataDir.isEmpty() ? defaultDataDir() : dataDir;
}

QString ConnectionProfile::keyFilePath() const
{
    return effectiveDataDir() + QStringLiteral("/api-key");
}

QStringList ConnectionProfile::candidateDataDirs() const
{
    if (!dataDir.isEmpty())
        return {dataDir};
    // The default of whoever runs the app, then a root engine's (a system service).
    QStringList dirs{defaultDataDir()};
    const QString system = QStringLiteral("/var/lib/sandboxd");
    if (!dirs.contains(system))
        dirs.append(system);
    return dirs;
}

Result<QString> ConnectionProfile::readLocalKey() const
{
    QStringList looked;
    std::optional<Error> unreadable;
    for (const QString &dir : candidateDataDirs()) {
        QFile file(dir + QStringLiteral("/api-key"));
        looked.append(file.fileName());
        if (!file.exists())
            continue;
        if (!file.open(QIODevice::ReadOnly)) {
            if (!unreadable)
                unreadable = Error{ErrorCode::Unauthorized,
                                   QStringLiteral(
                                       "the engine's key %1 cannot be read by this user (%2): the "
                                       "engine runs as another user. Run \"sudo cat %1\" and paste "
                                       "the key in File > Connect > Local engine.")
                                       .arg(file.fileName(), file.errorString()),
                                   {}};
            continue;
        }
        const QString key = QString::fromUtf8(file.read(4096)).trimmed();
        if (!key.isEmpty())
            return key;
    }
    if (unreadable)
        return *unreadable;
    return Error::notFound(
        QStringLiteral("no API key in %1: the engine runs with another data directory. Give "
                       "it in File > Connect > Local engine (sandboxd --data-dir DIR)")
            .arg(looked.join(QStringLiteral(" or "))));
}

QUrl ConnectionProfile::rpcUrl() const
{
    QUrl u = url;
    u.setScheme(url.scheme() == QStringLiteral("https") ? QStringLiteral("wss")
                                                        : QStringLiteral("ws"));
    QString path = u.path();
    while (path.endsWith(u'/'))
        path.chop(1);
    u.setPath(path + QStringLiteral("/rpc"));
    u.setQuery(QString());
    return u;
}

} // namespace Sandbox
