#include "addressclass.h"

#include <array>

namespace Sandbox::Engine {

namespace {

struct V4Range
{
    quint32 network;
    int prefix;
    AddressClass cls;
};

constexpr quint32 ip4(int a, int b, int c, int d)
{
    return quint32(a) << 24 | quint32(b) << 16 | quint32(c) << 8 | quint32(d);
}

// Cloud instance metadata endpoints: AWS/GCP/Azure/OpenStack/Oracle (169.254.169.254), AWS ECS
// task metadata, Alibaba, Azure WireServer (a public address), Oracle's legacy one.
constexpr quint32 kMetadataV4[] = {
    ip4(169, 254, 169, 254), ip4(169, 254, 170, 2), ip4(169, 254, 169, 123),
    ip4(100, 100, 100, 200), ip4(168, 63, 129, 16), ip4(192, 0, 0, 192),
};

// Most specific first: the first range that contains the address decides.
constexpr V4Range kV4Ranges[] = {
    {ip4(0, 0, 0, 0), 8, AddressClass::Unspecified},
    {ip4(127, 0, 0, 0), 8, AddressClass::Loopback},
    {ip4(10, 0, 0, 0), 8, AddressClass::Private},
    {ip4(172, 16, 0, 0), 12, AddressClass::Private},
    {ip4(192, 168, 0, 0), 16, AddressClass::Private},
    {ip4(169, 254, 0, 0), 16, AddressClass::LinkLocal},
    {ip4(100, 64, 0, 0), 10, AddressClass::SharedCgnat},
    {ip4(192, 0, 0, 0), 24, AddressClass::SpecialUse},
    {ip4(198, 18, 0, 0), 15, AddressClass::SpecialUse},
    {ip4(192, 88, 99, 0), 24, AddressClass::SpecialUse}, // 6to4 relay anycast (deprecated)
    {ip4(224, 0, 0, 0), 4, AddressClass::Multicast},
    {ip4(240, 0, 0, 0), 4, AddressClass::Reserved}, // includes 255.255.255.255
};

bool inRange(quint32 a, quint32 network, int prefix)
{
    const quint32 mask = prefix == 0 ? 0 : ~quint32(0) << (32 - prefix);
    return (a & mask) == (network & mask);
}

AddressClass classifyV4(quint32 a)
{
    for (quint32 m : kMetadataV4) {
        if (a == m)
            return AddressClass::Metadata;
    }
    for (const V4Range &r : kV4Ranges) {
        if (inRange(a, r.network, r.prefix))
            return r.cls;
    }
    return AddressClass::Public;
}

using V6 = std::array<quint8, 16>;

V6 bytesOf(const QHostAddress &a)
{
    const Q_IPV6ADDR raw = a.toIPv6Address();
    V6 out;
    for (int i = 0; i < 16; ++i)
        out[size_t(i)] = raw[i];
    return out;
}

bool hasPrefix(const V6 &a, std::initializer_list<quint8> prefixBytes, int prefixBits)
{
    int bit = 0;
    for (quint8 b : prefixBytes) {
        const int take = qMin(8, prefixBits - bit);
        if (take <= 0)
            break;
        const quint8 mask = quint8(0xff << (8 - take));
        if ((a[size_t(bit / 8)] & mask) != (b & mask))
            return false;
        bit += take;
    }
    return true;
}

bool allZero(const V6 &a, size_t from, size_t to)
{
    for (size_t i = from; i < to; ++i) {
        if (a[i] != 0)
            return false;
    }
    return true;
}

quint32 v4At(const V6 &a, size_t offset)
{
    return quint32(a[offset]) << 24 | quint32(a[offset + 1]) << 16 | quint32(a[offset + 2]) << 8
           | quint32(a[offset + 3]);
}

} // namespace

ClassifiedAddress classifyAddress(const QHostAddress &address)
{
    ClassifiedAddress out;
    out.effective = address;
    if (address.protocol() == QAbstractSocket::IPv4Protocol) {
        out.cls = classifyV4(address.toIPv4Address());
        return out;
    }
    if (address.protocol() != QAbstractSocket::IPv6Protocol) {
        out.cls = AddressClass::Reserved;
        return out;
    }
    // A scope id (fe80::1%eth0) names an interface of this host: never a destination.
    if (!address.scopeId().isEmpty()) {
        out.cls = AddressClass::LinkLocal;
        return out;
    }
    const V6 a = bytesOf(address);
    // ::ffff:a.b.c.d: the IPv4 address itself.
    if (allZero(a, 0, 10) && a[10] == 0xff && a[11] == 0xff) {
        const quint32 v4 = v4At(a, 12);
        out.effective = QHostAddress(v4);
        out.cls = classifyV4(v4);
        return out;
    }
    if (allZero(a, 0, 16)) {
        out.cls = AddressClass::Unspecified;
        return out;
    }
    if (allZero(a, 0, 15) && a[15] == 1) {
        out.cls = AddressClass::Loopback;
        return out;
    }
    // ::a.b.c.d (IPv4-compatible, deprecated) and the rest of ::/96: not a destination.
    if (allZero(a, 0, 12)) {
        out.cls = AddressClass::Reserved;
        return out;
    }
    // NAT64, the well-known prefix 64:ff9b::/96: the IPv4 address inside decides.
    if (hasPrefix(a, {0x00, 0x64, 0xff, 0x9b}, 32) && allZero(a, 4, 12)) {
        const quint32 v4 = v4At(a, 12);
        out.embedded = QHostAddress(v4);
        out.cls = classifyV4(v4);
        return out;
    }
    // 64:ff9b:1::/48, local-use NAT64: translated inside some network, not the internet.
    if (hasPrefix(a, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48)) {
        out.cls = AddressClass::SpecialUse;
        return out;
    }
    // 6to4, 2002::/16: the IPv4 address in bits 16..47 decides.
    if (hasPrefix(a, {0x20, 0x02}, 16)) {
        const quint32 v4 = v4At(a, 2);
        out.embedded = QHostAddress(v4);
        out.cls = classifyV4(v4);
        return out;
    }
    // AWS's IPv6 instance metadata endpoint fd00:ec2::254 (inside fc00::/7).
    if (hasPrefix(a, {0xfd, 0x00, 0x0e, 0xc2}, 32) && allZero(a, 4, 14) && a[14] == 0x02
        && a[15] == 0x54) {
        out.cls = AddressClass::Metadata;
        return out;
    }
    if (hasPrefix(a, {0xff}, 8))
        out.cls = AddressClass::Multicast;
    else if (hasPrefix(a, {0xfe, 0x80}, 10))
        out.cls = AddressClass::LinkLocal;
    else if (hasPrefix(a, {0xfe, 0xc0}, 10))
        out.cls = AddressClass::SpecialUse; // site-local (deprecated)
    else if (hasPrefix(a, {0xfc}, 7))
        out.cls = AddressClass::Private;
    else if (hasPrefix(a, {0x01, 0x00}, 16) && allZero(a, 2, 8))
        out.cls = AddressClass::SpecialUse; // 100::/64 discard
    else if (hasPrefix(a, {0x20, 0x01, 0x00}, 23))
        out.cls = AddressClass::SpecialUse; // IETF protocol assignments, Teredo 2001::/32 among them
    else if (hasPrefix(a, {0x20, 0x00}, 3))
        out.cls = AddressClass::Public; // 2000::/3, global unicast
    else
        out.cls = AddressClass::Reserved; // everything IANA has not allocated for unicast
    return out;
}

bool isNeverReachable(AddressClass cls)
{
    switch (cls) {
    case AddressClass::Metadata:
    case AddressClass::Unspecified:
    case AddressClass::Multicast:
    case AddressClass::Reserved:
        return true;
    default:
        return false;
    }
}

QString addressClassName(AddressClass cls)
{
    switch (cls) {
    case AddressClass::Public:
        return QStringLiteral("public");
    case AddressClass::Loopback:
        return QStringLiteral("loopback");
    case AddressClass::Private:
        return QStringLiteral("private");
    case AddressClass::LinkLocal:
        return QStringLiteral("link-local");
    case AddressClass::SharedCgnat:
        return QStringLiteral("shared (CGNAT)");
    case AddressClass::SpecialUse:
        return QStringLiteral("special-use");
    case AddressClass::Metadata:
        return QStringLiteral("cloud metadata");
    case AddressClass::Unspecified:
        return QStringLiteral("unspecified");
    case AddressClass::Multicast:
        return QStringLiteral("multicast");
    case AddressClass::Reserved:
        return QStringLiteral("reserved");
    }
    return QStringLiteral("reserved");
}

} // namespace Sandbox::Engine
