#include "connectionprofile.h"

#include <QFile>
#include <QStandardPaths>

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

Result<QString> ConnectionProfile::readLocalKey() const
{
    QFile file(keyFilePath());
    if (!file.exists())
        return Error::notFound(QStringLiteral("API key file %1").arg(file.fileName()));
    if (!file.open(QIODevice::ReadOnly))
        return Error{ErrorCode::Unauthorized,
                     QStringLiteral("cannot read %1: %2").arg(file.fileName(), file.errorString()),
                     {}};
    const QString key = QString::fromUtf8(file.read(4096)).trimmed();
    if (key.isEmpty())
        return Error::notFound(QStringLiteral("API key in %1").arg(file.fileName()));
    return key;
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
