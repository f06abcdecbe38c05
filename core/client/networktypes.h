#pragma once

#include <protocol/result.h>

#include <QDateTime>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>

namespace Sandbox {

// A sandbox's network policy as the client reads and writes it (docs/protocol.md 3.5): `false`,
// `true`, `{deny:[...]}` (the internet but those), `{allow:["*", ...]}` (the internet and more)
// or `{allow:[...], deny:[...]}`. The server validates the entries; the client keeps them as text.
struct NetworkPolicy
{
    enum class Mode {
        Off,    // false (or an empty allow list)
        Public, // the public internet; `allow` holds what it adds ("*" is not kept in it)
        List,   // only `allow`
    };
    Mode mode = Mode::Off;
    QStringList allow;
    QStringList deny;

    static NetworkPolicy off() { return {}; }
    static NetworkPolicy publicInternet() { return {Mode::Public, {}, {}}; }
    static Result<NetworkPolicy> fromJson(const QJsonValue &value);
    QJsonValue toJson() const;

    // The policy with `entry` let through: added to `allow` (a List, or a new List from Off),
    // and removed from `deny` where it is named there.
    NetworkPolicy allowing(const QString &entry) const;
    // One line for people: "no network", "the public internet", "2 hosts allowed", ...
    QString summary() const;
    bool operator==(const NetworkPolicy &other) const = default;
};

// One refused connection attempt (docs/protocol.md 4.9).
struct NetworkDenial
{
    QDateTime time;
    QString host;
    int port = 0;
    QString address; // empty: refused by name
    QString reason;
    QString via;     // proxy | forward | gateway
    qint64 pid = -1; // -1: not known
    QString process;
    int count = 1;
    QString allowWith; // the allow entry that would let it through; empty: no entry can

    static Result<NetworkDenial> fromJson(const QJsonValue &value);
};

// sandbox.networkLog: the policy and the recent denials, oldest first.
struct NetworkLog
{
    QString id;
    NetworkPolicy policy;
    QList<NetworkDenial> denied;

    static Result<NetworkLog> fromJson(const QJsonValue &value);
};

} // namespace Sandbox
