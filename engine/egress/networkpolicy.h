#pragma once

#include "addressclass.h"
#include "protocol/fieldreader.h"
#include "protocol/result.h"

#include <QHostAddress>
#include <QJsonValue>
#include <QList>
#include <QString>

#include <optional>

namespace Sandbox::Engine {

// One entry of an allow or deny list (docs/protocol.md, 3.5): `host`, `*.host`, either with
// `:port`; an address `1.2.3.4`, `1.2.3.4:443`, `[::1]:8080`; or a network `10.0.0.0/8`.
struct PolicyEntry
{
    enum class Kind {
        Host,    // exactly this name
        Suffix,  // any name below `host` (not `host` itself)
        Network, // addresses inside address/prefix (a single address: /32, /128)
    };
    Kind kind = Kind::Host;
    QString host;         // Host, Suffix: lower case, no trailing dot
    QHostAddress address; // Network: the network address (masked)
    int prefix = -1;      // Network
    quint16 port = 0;     // 0: any port
    QString text;         // canonical form, as the policy shows it

    static Result<PolicyEntry> parse(const QString &text);

    bool matchesName(const QString &name, quint16 port) const;
    bool matchesAddress(const QHostAddress &address, quint16 port) const;
    // `127.0.0.1:PORT` or `[::1]:PORT`: the only way to reach a service on the host's loopback.
    bool isExactLoopback() const;
    // A Network entry that covers any address that is not public: opening it needs an admin key.
    bool opensNonPublic() const;
    bool operator==(const PolicyEntry &other) const { return text == other.text; }
};

// A sandbox's network policy: `false` (nothing), `true` (the public internet), or
// `{allow:[...], deny:[...]}`. Without `allow`, or with `*` in it, the base is the public
// internet (`{deny:[..]}` is `true` minus the deny list; `{allow:["*","127.0.0.1:8080"]}` adds a
// loopback port to it); otherwise only what `allow` names. Deny always wins.
class NetworkPolicy final
{
public:
    enum class Mode {
        Off,    // nothing (also an empty allow list)
        Public, // the public internet; `allow` may add loopback ports and private networks
        List,   // only what `allow` names
    };

    static constexpr int MaxEntries = 256;
    static constexpr int MaxEntryChars = 300;

    NetworkPolicy() = default;
    static NetworkPolicy off() { return {}; }
    static NetworkPolicy publicInternet();
    // Parses and validates; errors are -32602 with data.field (e.g. "network.allow[2]").
    static Result<NetworkPolicy> fromJson(const QJsonValue &value,
                                          const QString &field = QStringLiteral("network"));
    // The policy in a method's params (off when absent); a bad one fails `params`.
    static NetworkPolicy read(FieldReader &params, const QString &name);
    QJsonValue toJson() const;

    Mode mode() const { return m_mode; }
    const QList<PolicyEntry> &allow() const { return m_allow; }
    const QList<PolicyEntry> &deny() const { return m_deny; }
    bool isOff() const { return m_mode == Mode::Off; }

    // Entries that reach the host's loopback or non-public networks: set only with an admin key.
    QStringList entriesNeedingAdmin() const;
    // The exact loopback entries' ports (the engine forwards these ports inside the sandbox).
    QList<quint16> loopbackPorts() const;

    bool operator==(const NetworkPolicy &other) const;

private:
    Mode m_mode = Mode::Off;
    QList<PolicyEntry> m_allow;
    QList<PolicyEntry> m_deny;
};

// Facts of this engine that every decision needs besides the policy.
struct EgressFacts
{
    QList<QHostAddress> hostAddresses; // every address of this host's interfaces (not loopback)
    QList<quint16> enginePorts;        // the engine's own API port(s)
};

// One decision of the egress proxy, made in two steps: by name before any DNS lookup, then
// for each address the name resolves to (so a name that resolves to loopback is refused as the
// literal would be).
struct EgressDecision
{
    bool allowed = false;
    QString reason; // why not (for the deny log and the 403 text)
    // The allow entry that would let it through ("host:443", "10.1.2.3:5432",
    // "127.0.0.1:8080"), or empty when no entry can (metadata, the engine, a deny entry).
    QString remedy;
};

class EgressRules final
{
public:
    EgressRules() = default;
    // `implicitAllow`: entries the engine adds (an agent's model API host); they open public
    // addresses only, never loopback or private ones, and deny entries still win over them.
    EgressRules(NetworkPolicy policy, QList<PolicyEntry> implicitAllow, EgressFacts facts);

    const NetworkPolicy &policy() const { return m_policy; }
    const QList<PolicyEntry> &implicitAllow() const { return m_implicit; }

    struct NameStep
    {
        EgressDecision decision;  // allowed: go on and resolve
        bool nameAllowed = false; // an allow entry names it (public addresses then pass)
    };
    // `host` is a name or an IP literal (then nameAllowed stays false: addresses decide).
    NameStep checkName(const QString &host, quint16 port) const;
    EgressDecision checkAddress(const QHostAddress &address, quint16 port, bool nameAllowed) const;

private:
    NetworkPolicy m_policy;
    QList<PolicyEntry> m_implicit;
    EgressFacts m_facts;
};

// An IP address literal: a strict dotted quad ("127.1", "0x7f.1" and "2130706433" are not) or
// an IPv6 address without scope (brackets allowed). IPv4-mapped IPv6 stays as given.
std::optional<QHostAddress> parseIpLiteral(const QString &text);

// A host name as the proxy accepts it: LDH labels (and '_'), 1..253 characters, lower-cased,
// without a trailing dot. Empty when it is not one.
QString normaliseHostName(const QString &host);

} // namespace Sandbox::Engine
