#include "networkpolicy.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QRegularExpression>

#include <algorithm>
#include <optional>

namespace Sandbox::Engine {

namespace {

Error entryError(const QString &field, const QString &why)
{
    return Error::invalidParams(field, why);
}

// Strict dotted-quad: "127.1", "0x7f.0.0.1" or "2130706433" are names here, never addresses.
bool looksLikeIPv4(const QString &s)
{
    static const QRegularExpression re(
        QStringLiteral("^(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?"
                       "\\d)){3}$"));
    return re.match(s).hasMatch();
}

std::optional<quint16> parsePort(const QString &s)
{
    static const QRegularExpression re(QStringLiteral("^[1-9][0-9]{0,4}$"));
    if (!re.match(s).hasMatch())
        return std::nullopt;
    const int port = s.toInt();
    if (port < 1 || port > 65535)
        return std::nullopt;
    return quint16(port);
}

// An IPv4-mapped IPv6 address is its IPv4 address (as the proxy connects to it).
QHostAddress unmapped(const QHostAddress &a)
{
    bool ok = false;
    const quint32 v4 = a.toIPv4Address(&ok);
    if (ok && a.protocol() == QAbstractSocket::IPv6Protocol)
        return QHostAddress(v4);
    return a;
}

QString addressText(const QHostAddress &a, quint16 port)
{
    const QString text = a.toString();
    if (port == 0)
        return text;
    return (a.protocol() == QAbstractSocket::IPv6Protocol ? u'[' + text + u']' : text) + u':'
           + QString::number(port);
}

// Does the network address/prefix contain any address that is not public?
bool networkOpensNonPublic(const QHostAddress &network, int prefix)
{
    if (classifyAddress(network).cls != AddressClass::Public)
        return true;
    if (network.protocol() == QAbstractSocket::IPv4Protocol) {
        static const std::pair<const char *, int> special[] = {
            {"0.0.0.0", 8},        {"10.0.0.0", 8},    {"100.64.0.0", 10}, {"127.0.0.0", 8},
            {"169.254.0.0", 16},   {"172.16.0.0", 12}, {"192.0.0.0", 24},  {"192.88.99.0", 24},
            {"192.168.0.0", 16},   {"198.18.0.0", 15}, {"224.0.0.0", 4},   {"100.100.100.200", 32},
            {"168.63.129.16", 32},
        };
        for (const auto &[text, len] : special) {
            const QHostAddress s{QString::fromLatin1(text)};
            // CIDR blocks are nested or disjoint: they meet when one holds the other's start.
            if (network.isInSubnet(s, len) || s.isInSubnet(network, prefix))
                return true;
        }
        return false;
    }
    // IPv6: public is 2000::/3 minus 2001::/23 and 2002::/16 (6to4 carries any IPv4 address).
    static const std::pair<const char *, int> special[] = {
        {"2001::", 23},
        {"2002::", 16},
    };
    if (prefix < 3)
        return true;
    for (const auto &[text, len] : special) {
        const QHostAddress s{QString::fromLatin1(text)};
        if (network.isInSubnet(s, len) || s.isInSubnet(network, prefix))
            return true;
    }
    return false;
}

} // namespace

std::optional<QHostAddress> parseIpLiteral(const QString &text)
{
    QString t = text;
    if (t.startsWith(u'[') && t.endsWith(u']'))
        t = t.mid(1, t.size() - 2);
    if (looksLikeIPv4(t))
        return QHostAddress(t);
    if (!t.contains(u':'))
        return std::nullopt;
    const QHostAddress a(t);
    if (a.isNull() || a.protocol() != QAbstractSocket::IPv6Protocol || !a.scopeId().isEmpty())
        return std::nullopt;
    return a;
}

QString normaliseHostName(const QString &host)
{
    QString h = host.toLower();
    if (h.endsWith(u'.'))
        h.chop(1);
    if (h.isEmpty() || h.size() > 253)
        return {};
    static const QRegularExpression label(
        QStringLiteral("^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$"));
    for (const QString &l : h.split(u'.')) {
        if (!label.match(l).hasMatch())
            return {};
    }
    return h;
}

Result<PolicyEntry> PolicyEntry::parse(const QString &input)
{
    const QString s = input.trimmed();
    const QString field = QStringLiteral("entry");
    if (s.isEmpty())
        return entryError(field, QStringLiteral("an empty entry"));
    if (s.size() > NetworkPolicy::MaxEntryChars)
        return entryError(field, QStringLiteral("longer than %1 characters")
                                     .arg(NetworkPolicy::MaxEntryChars));
    PolicyEntry e;
    auto single = [&e](const QHostAddress &a, quint16 port) {
        e.kind = Kind::Network;
        e.address = unmapped(a);
        e.prefix = e.address.protocol() == QAbstractSocket::IPv4Protocol ? 32 : 128;
        e.port = port;
        e.text = addressText(e.address, port);
    };

    // [v6] or [v6]:port
    if (s.startsWith(u'[')) {
        const qsizetype close = s.indexOf(u']');
        const QHostAddress a(s.mid(1, close - 1));
        if (close < 0 || a.isNull() || a.protocol() != QAbstractSocket::IPv6Protocol
            || !a.scopeId().isEmpty())
            return entryError(field, QStringLiteral("'%1' is not [IPv6] or [IPv6]:port").arg(s));
        quint16 port = 0;
        if (close + 1 < s.size()) {
            const auto p = s.at(close + 1) == u':' ? parsePort(s.mid(close + 2)) : std::nullopt;
            if (!p)
                return entryError(field, QStringLiteral("'%1' has a bad port").arg(s));
            port = *p;
        }
        single(a, port);
        return e;
    }
    // address/prefix
    if (s.contains(u'/')) {
        const QString addr = s.section(u'/', 0, 0);
        const QString len = s.section(u'/', 1);
        static const QRegularExpression digits(QStringLiteral("^[0-9]{1,3}$"));
        const QHostAddress a(addr);
        const bool v4 = looksLikeIPv4(addr);
        const bool v6 = !v4 && a.protocol() == QAbstractSocket::IPv6Protocol
                        && a.scopeId().isEmpty();
        const int max = v4 ? 32 : 128;
        if ((!v4 && !v6) || !digits.match(len).hasMatch() || len.toInt() > max)
            return entryError(field,
                              QStringLiteral("'%1' is not a network (address/prefix)").arg(s));
        const auto [network, prefix] = QHostAddress::parseSubnet(addr + u'/' + len);
        e.kind = Kind::Network;
        e.address = network;
        e.prefix = prefix;
        if (e.address.protocol() == QAbstractSocket::IPv6Protocol) {
            // ::ffff:a.b.c.d/N (N >= 96) is an IPv4 network.
            bool ok = false;
            const quint32 v4addr = e.address.toIPv4Address(&ok);
            if (ok && prefix >= 96) {
                e.address = QHostAddress(v4addr);
                e.prefix = prefix - 96;
            }
        }
        e.text = e.address.toString() + u'/' + QString::number(e.prefix);
        return e;
    }
    // A bare IPv6 address (several colons, no brackets).
    if (s.count(u':') > 1) {
        const QHostAddress a(s);
        if (a.isNull() || a.protocol() != QAbstractSocket::IPv6Protocol || !a.scopeId().isEmpty())
            return entryError(field, QStringLiteral("'%1' is not an IPv6 address (with a port, "
                                                    "write [address]:port)")
                                         .arg(s));
        single(a, 0);
        return e;
    }
    QString host = s;
    quint16 port = 0;
    if (s.contains(u':')) {
        host = s.section(u':', 0, 0);
        const auto p = parsePort(s.section(u':', 1));
        if (!p)
            return entryError(field, QStringLiteral("'%1' has a bad port (1..65535)").arg(s));
        port = *p;
    }
    if (looksLikeIPv4(host)) {
        single(QHostAddress(host), port);
        return e;
    }
    e.kind = Kind::Host;
    if (host.startsWith(QLatin1String("*."))) {
        e.kind = Kind::Suffix;
        host = host.mid(2);
    }
    e.host = normaliseHostName(host);
    if (e.host.isEmpty() || e.host.contains(u'*'))
        return entryError(field, QStringLiteral("'%1' is not a host name, *.domain, address or "
                                                "network (names are ASCII: use punycode)")
                                     .arg(s));
    e.text = (e.kind == Kind::Suffix ? QStringLiteral("*.") : QString()) + e.host
             + (port ? u':' + QString::number(port) : QString());
    e.port = port;
    return e;
}

bool PolicyEntry::matchesName(const QString &name, quint16 p) const
{
    if (port != 0 && port != p)
        return false;
    switch (kind) {
    case Kind::Host:
        return name == host;
    case Kind::Suffix:
        return name.size() > host.size() + 1 && name.endsWith(host)
               && name.at(name.size() - host.size() - 1) == u'.';
    case Kind::Network:
        return false;
    }
    return false;
}

bool PolicyEntry::matchesAddress(const QHostAddress &a, quint16 p) const
{
    if (kind != Kind::Network || (port != 0 && port != p))
        return false;
    const QHostAddress u = unmapped(a);
    return u.protocol() == address.protocol() && u.isInSubnet(address, prefix);
}

bool PolicyEntry::isExactLoopback() const
{
    const int full = address.protocol() == QAbstractSocket::IPv4Protocol ? 32 : 128;
    return kind == Kind::Network && prefix == full && port != 0
           && classifyAddress(address).cls == AddressClass::Loopback;
}

bool PolicyEntry::opensNonPublic() const
{
    return kind == Kind::Network && networkOpensNonPublic(address, prefix);
}

NetworkPolicy NetworkPolicy::publicInternet()
{
    NetworkPolicy p;
    p.m_mode = Mode::Public;
    return p;
}

NetworkPolicy NetworkPolicy::read(FieldReader &params, const QString &name)
{
    auto policy = fromJson(params.raw(name), params.fieldName(name));
    if (!policy) {
        params.failWith(policy.error());
        return off();
    }
    return policy.value();
}

Result<NetworkPolicy> NetworkPolicy::fromJson(const QJsonValue &value, const QString &field)
{
    NetworkPolicy p;
    if (value.isUndefined() || value.isNull())
        return p;
    if (value.isBool()) {
        p.m_mode = value.toBool() ? Mode::Public : Mode::Off;
        return p;
    }
    if (!value.isObject())
        return Error::invalidParams(field, QStringLiteral(
                                               "must be false, true or {allow:[...], deny:[...]}"));
    const QJsonObject o = value.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (it.key() != QLatin1String("allow") && it.key() != QLatin1String("deny"))
            return Error::invalidParams(field + u'.' + it.key(),
                                        QStringLiteral(
                                            "unknown member (allow and deny are known)"));
    }
    bool star = false; // "*" in allow: the public internet
    auto readList = [&](const QString &name, QList<PolicyEntry> &out) -> std::optional<Error> {
        const QJsonValue v = o.value(name);
        if (v.isUndefined())
            return std::nullopt;
        const QString f = field + u'.' + name;
        if (!v.isArray())
            return Error::invalidParams(f, QStringLiteral("must be an array of strings"));
        const QJsonArray a = v.toArray();
        if (a.size() > MaxEntries)
            return Error::invalidParams(f, QStringLiteral("at most %1 entries").arg(MaxEntries));
        for (qsizetype i = 0; i < a.size(); ++i) {
            const QString ef = f + u'[' + QString::number(i) + u']';
            if (!a.at(i).isString())
                return Error::invalidParams(ef, QStringLiteral("must be a string"));
            if (a.at(i).toString().trimmed() == QLatin1String("*")
                && name == QLatin1String("allow")) {
                star = true;
                continue;
            }
            auto e = PolicyEntry::parse(a.at(i).toString());
            if (!e)
                return Error::invalidParams(ef, e.error().message);
            if (!out.contains(e.value()))
                out.append(e.value());
        }
        return std::nullopt;
    };
    if (auto e = readList(QStringLiteral("allow"), p.m_allow))
        return *e;
    if (auto e = readList(QStringLiteral("deny"), p.m_deny))
        return *e;
    if (star || !o.contains(QStringLiteral("allow")))
        p.m_mode = Mode::Public;
    else
        p.m_mode = p.m_allow.isEmpty() ? Mode::Off : Mode::List;
    if (p.m_mode == Mode::Off)
        p.m_deny.clear(); // nothing to deny
    return p;
}

QJsonValue NetworkPolicy::toJson() const
{
    auto list = [](const QList<PolicyEntry> &entries) {
        QJsonArray a;
        for (const PolicyEntry &e : entries)
            a.append(e.text);
        return a;
    };
    switch (m_mode) {
    case Mode::Off:
        return false;
    case Mode::Public: {
        if (m_deny.isEmpty() && m_allow.isEmpty())
            return true;
        QJsonObject o;
        if (!m_allow.isEmpty()) {
            QJsonArray allow = list(m_allow);
            allow.prepend(QStringLiteral("*"));
            o.insert(QStringLiteral("allow"), allow);
        }
        if (!m_deny.isEmpty())
            o.insert(QStringLiteral("deny"), list(m_deny));
        return o;
    }
    case Mode::List: {
        QJsonObject o{{QStringLiteral("allow"), list(m_allow)}};
        if (!m_deny.isEmpty())
            o.insert(QStringLiteral("deny"), list(m_deny));
        return o;
    }
    }
    return false;
}

QStringList NetworkPolicy::entriesNeedingAdmin() const
{
    QStringList out;
    for (const PolicyEntry &e : m_allow) {
        if (e.isExactLoopback() || e.opensNonPublic())
            out.append(e.text);
    }
    return out;
}

QList<quint16> NetworkPolicy::loopbackPorts() const
{
    QList<quint16> out;
    for (const PolicyEntry &e : m_allow) {
        if (e.isExactLoopback() && !out.contains(e.port))
            out.append(e.port);
    }
    return out;
}

bool NetworkPolicy::operator==(const NetworkPolicy &other) const
{
    return m_mode == other.m_mode && m_allow == other.m_allow && m_deny == other.m_deny;
}

EgressRules::EgressRules(NetworkPolicy policy, QList<PolicyEntry> implicitAllow, EgressFacts facts)
    : m_policy(std::move(policy))
    , m_implicit(std::move(implicitAllow))
    , m_facts(std::move(facts))
{}

EgressRules::NameStep EgressRules::checkName(const QString &host, quint16 port) const
{
    NameStep step;
    if (port == 0) {
        step.decision.reason = QStringLiteral("port 0 is not a destination");
        return step;
    }
    const bool literal = parseIpLiteral(host).has_value();
    if (!literal) {
        for (const PolicyEntry &e : m_policy.deny()) {
            if (e.matchesName(host, port)) {
                step.decision.reason = QStringLiteral("denied by the policy entry '%1'").arg(e.text);
                return step;
            }
        }
    }
    const auto anyMatch = [&](const QList<PolicyEntry> &entries) {
        return !literal && std::any_of(entries.begin(), entries.end(), [&](const PolicyEntry &e) {
            return e.matchesName(host, port);
        });
    };
    const bool implicit = anyMatch(m_implicit);
    const QString remedy = literal ? addressText(*parseIpLiteral(host), port)
                                   : host + u':' + QString::number(port);
    switch (m_policy.mode()) {
    case NetworkPolicy::Mode::Off:
        if (!implicit) {
            step.decision.reason = QStringLiteral("the sandbox has no network (network: false)");
            step.decision.remedy = remedy;
            return step;
        }
        step.nameAllowed = true;
        break;
    case NetworkPolicy::Mode::Public:
        step.nameAllowed = implicit;
        break;
    case NetworkPolicy::Mode::List: {
        step.nameAllowed = implicit || anyMatch(m_policy.allow());
        const bool networks = std::any_of(m_policy.allow().begin(), m_policy.allow().end(),
                                          [](const PolicyEntry &e) {
                                              return e.kind == PolicyEntry::Kind::Network;
                                          });
        if (!step.nameAllowed && !networks) {
            step.decision.reason = QStringLiteral("not in the allow list");
            step.decision.remedy = remedy;
            return step;
        }
        break;
    }
    }
    step.decision.allowed = true;
    return step;
}

EgressDecision EgressRules::checkAddress(const QHostAddress &address, quint16 port,
                                         bool nameAllowed) const
{
    EgressDecision d;
    const ClassifiedAddress c = classifyAddress(address);
    const QHostAddress &a = c.effective;
    const QString shown = addressText(a, port);
    if (port == 0) {
        d.reason = QStringLiteral("port 0 is not a destination");
        return d;
    }
    if (isNeverReachable(c.cls)) {
        d.reason = QStringLiteral("%1 is a %2 address, never reachable from a sandbox")
                       .arg(shown, addressClassName(c.cls));
        return d;
    }
    if (c.cls != AddressClass::Loopback && m_facts.hostAddresses.contains(a)) {
        d.reason = QStringLiteral("%1 is an address of this computer").arg(shown);
        return d;
    }
    if (c.cls == AddressClass::Loopback) {
        if (m_facts.enginePorts.contains(port)) {
            d.reason = QStringLiteral("%1 is the engine itself").arg(shown);
            return d;
        }
        const bool exact = std::any_of(m_policy.allow().begin(), m_policy.allow().end(),
                                       [&](const PolicyEntry &e) {
                                           return e.isExactLoopback() && e.matchesAddress(a, port);
                                       });
        if (!exact) {
            d.reason = QStringLiteral("%1 is loopback: only an exact 127.0.0.1:PORT allow entry "
                                      "reaches this computer's loopback")
                           .arg(shown);
            d.remedy = shown;
            return d;
        }
    }
    for (const PolicyEntry &e : m_policy.deny()) {
        if (e.matchesAddress(a, port)
            || (!c.embedded.isNull() && e.matchesAddress(c.embedded, port))) {
            d.reason = QStringLiteral("%1 is denied by the policy entry '%2'").arg(shown, e.text);
            return d;
        }
    }
    if (c.cls == AddressClass::Loopback) {
        d.allowed = true;
        return d;
    }
    const bool byNetwork = std::any_of(m_policy.allow().begin(), m_policy.allow().end(),
                                       [&](const PolicyEntry &e) {
                                           return e.matchesAddress(a, port);
                                       });
    if (c.cls != AddressClass::Public) {
        if (!byNetwork) {
            d.reason = QStringLiteral("%1 is a %2 address: only an allow entry for its network "
                                      "reaches it")
                           .arg(shown, addressClassName(c.cls));
            d.remedy = shown;
            return d;
        }
        d.allowed = true;
        return d;
    }
    switch (m_policy.mode()) {
    case NetworkPolicy::Mode::Public:
        d.allowed = true;
        break;
    case NetworkPolicy::Mode::Off:
        d.allowed = nameAllowed;
        if (!nameAllowed) {
            d.reason = QStringLiteral("the sandbox has no network (network: false)");
            d.remedy = shown;
        }
        break;
    case NetworkPolicy::Mode::List:
        d.allowed = nameAllowed || byNetwork;
        if (!d.allowed) {
            d.reason = QStringLiteral("%1 is not in the allow list").arg(shown);
            d.remedy = shown;
        }
        break;
    }
    return d;
}

} // namespace Sandbox::Engine
