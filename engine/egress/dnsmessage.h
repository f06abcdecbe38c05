#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QHostAddress>
#include <QList>
#include <QString>

#include <optional>

namespace Sandbox::Engine::DnsMessage {

// The DNS wire format (RFC 1035), only as much as an A/AAAA stub resolver needs. Answers come
// from the network and are parsed as hostile input: every length and pointer is checked, name
// compression may not loop, and at most MaxRecords records and MaxAddresses addresses are read.
constexpr quint16 TypeA = 1;
constexpr quint16 TypeCname = 5;
constexpr quint16 TypeAaaa = 28;
constexpr quint16 TypeOpt = 41;
constexpr int MaxRecords = 64;
constexpr int MaxAddresses = 16;
constexpr int MaxCnameChain = 8;
constexpr int UdpPayload = 1232; // EDNS(0) buffer size we announce (DNS flag day 2020)

// A recursive query for `name` (an already normalised host name) with an EDNS(0) OPT record.
QByteArray query(quint16 id, const QString &name, quint16 type);

struct Answer
{
    int rcode = 0; // 0 NOERROR, 3 NXDOMAIN, ...
    bool truncated = false;
    QList<QHostAddress> addresses; // A or AAAA records of `name` or of its CNAME chain
    quint32 ttl = 0;               // the smallest TTL among the records used
};

// Parses an answer to query(id, name, type). nullopt (with `error` set) when the packet is
// malformed or is not the answer to that question (wrong id, name, type, not a response).
std::optional<Answer> parse(QByteArrayView packet, quint16 id, const QString &name, quint16 type,
                            QString *error = nullptr);

} // namespace Sandbox::Engine::DnsMessage
