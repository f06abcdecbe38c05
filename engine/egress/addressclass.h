#pragma once

#include <QHostAddress>
#include <QString>

namespace Sandbox::Engine {

// What kind of destination an IP address is, for the egress policy (docs/protocol.md, 3.5).
enum class AddressClass {
    Public,      // the internet
    Loopback,    // 127.0.0.0/8, ::1
    Private,     // 10/8, 172.16/12, 192.168/16, fc00::/7
    LinkLocal,   // 169.254/16, fe80::/10 (metadata addresses are Metadata)
    SharedCgnat, // 100.64/10
    SpecialUse, // 192.0.0/24, 198.18/15, 100::/64, 2001::/23 (Teredo...), 64:ff9b:1::/48, fec0::/10
    Metadata,   // cloud instance metadata endpoints (169.254.169.254, fd00:ec2::254, ...)
    Unspecified, // 0.0.0.0/8, :: (a connect to 0.x reaches this host on Linux)
    Multicast,   // 224/4, ff00::/8
    Reserved,    // 240/4 incl. broadcast, ::/96 (IPv4-compatible), other unusable forms
};

struct ClassifiedAddress
{
    AddressClass cls = AddressClass::Reserved;
    // The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) address stands for, else the address
    // itself: what the engine connects to and what CIDR entries are matched against.
    QHostAddress effective;
    // For NAT64 (64:ff9b::/96) and 6to4 (2002::/16): the IPv4 address inside, which decided `cls`.
    QHostAddress embedded;
};

// Classifies an address; the IPv4 address inside IPv4-mapped, NAT64 and 6to4 addresses decides
// (so that ::ffff:127.0.0.1 and 64:ff9b::a00:1 are as refused as 127.0.0.1 and 10.0.0.1).
ClassifiedAddress classifyAddress(const QHostAddress &address);

// Addresses no policy entry can open: metadata, unspecified, multicast, reserved.
bool isNeverReachable(AddressClass cls);

// "loopback", "private", ...: for messages.
QString addressClassName(AddressClass cls);

} // namespace Sandbox::Engine
