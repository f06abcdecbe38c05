#pragma once

#include <protocol/result.h>

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QUrl>

namespace Sandbox {

// Where to connect and with which key: the local engine (key read from its data dir) or a remote
// server (URL and key given).
struct ConnectionProfile
{
    enum class Kind { LocalEngine, Remote };

    Kind kind = Kind::LocalEngine;
    QString name;
    QUrl url = defaultLocalUrl(); // http(s)://HOST:PORT
    QString apiKey;               // Remote: given; LocalEngine: filled from DATA_DIR/api-key
    QString dataDir;              // LocalEngine only; empty: defaultDataDir()

    static ConnectionProfile local(const QString &dataDir = {});
    static ConnectionProfile remote(const QUrl &url, const QString &apiKey);

    // http://127.0.0.1:7465
    static QUrl defaultLocalUrl();
    // $XDG_DATA_HOME/sandboxd (QStandardPaths::GenericDataLocation + "/sandboxd").
    static QString defaultDataDir();

    bool isLocal() const { return kind == Kind::LocalEngine; }
    QString effectiveDataDir() const;
    QString keyFilePath() const;
    // The data directories where the local engine's key may be: dataDir if set, else the
    // default of this user, then /var/lib/sandboxd (an engine run by root).
    QStringList candidateDataDirs() const;
    // Reads DATA_DIR/api-key (a few bytes, trimmed) from the first candidate that has one:
    // NotFound when none has (the message says where it looked and what to do), Unauthorized
    // when one exists that this user cannot read.
    Result<QString> readLocalKey() const;

    // ws(s)://HOST:PORT/rpc for the WebSocket, the base URL for REST.
    QUrl rpcUrl() const;
    QUrl restUrl() const { return url; }
};

} // namespace Sandbox

Q_DECLARE_METATYPE(Sandbox::ConnectionProfile)
