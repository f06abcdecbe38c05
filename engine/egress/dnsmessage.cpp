#include "dnsmessage.h"

#include <QtEndian>

namespace Sandbox::Engine::DnsMessage {

namespace {

constexpr int kHeader = 12;
constexpr int kMaxNameLength = 255;
constexpr int kMaxPointerJumps = 32;

class Reader
{
public:
    explicit Reader(QByteArrayView p)
        : m_p(p)
    {}

    bool u16(qsizetype &pos, quint16 &out) const
    {
        if (pos < 0 || pos + 2 > m_p.size())
            return false;
        out = qFromBigEndian<quint16>(m_p.data() + pos);
        pos += 2;
        return true;
    }
    bool u32(qsizetype &pos, quint32 &out) const
    {
        if (pos < 0 || pos + 4 > m_p.size())
            return false;
        out = qFromBigEndian<quint32>(m_p.data() + pos);
        pos += 4;
        return true;
    }
    // Reads a (possibly compressed) name at pos; pos moves past it in the record.
    bool name(qsizetype &pos, QByteArray &out) const
    {
        out.clear();
        qsizetype at = pos;
        bool jumped = false;
        int jumps = 0;
        while (true) {
            if (at < 0 || at >= m_p.size())
                return false;
            const quint8 len = quint8(m_p[at]);
            if ((len & 0xc0) == 0xc0) {
                if (at + 1 >= m_p.size() || ++jumps > kMaxPointerJumps)
                    return false;
                const qsizetype target = ((len & 0x3f) << 8) | quint8(m_p[at + 1]);
                // A pointer must point backwards: no loops, no forward references.
                if (target >= at)
                    return false;
                if (!jumped)
                    pos = at + 2;
                jumped = true;
                at = target;
                continue;
            }
            if ((len & 0xc0) != 0)
                return false; // the 0x40/0x80 label types are obsolete
            if (len == 0) {
                if (!jumped)
                    pos = at + 1;
                return true;
            }
            if (at + 1 + len > m_p.size())
                return false;
            if (!out.isEmpty())
                out.append('.');
            out.append(m_p.data() + at + 1, len);
            if (out.size() > kMaxNameLength)
                return false;
            at += 1 + len;
        }
    }

private:
    QByteArrayView m_p;
};

bool sameName(const QByteArray &a, const QByteArray &b)
{
    return a.compare(b, Qt::CaseInsensitive) == 0;
}

} // namespace

QByteArray query(quint16 id, const QString &name, quint16 type)
{
    QByteArray q(kHeader, '\0');
    qToBigEndian<quint16>(id, q.data());
    q[2] = 0x01; // RD
    q[5] = 1;    // QDCOUNT
    q[11] = 1;   // ARCOUNT: the OPT record
    for (const QString &label : name.split(u'.', Qt::SkipEmptyParts)) {
        const QByteArray l = label.toLatin1();
        q.append(char(l.size()));
        q.append(l);
    }
    q.append('\0');
    char tail[4];
    qToBigEndian<quint16>(type, tail);
    qToBigEndian<quint16>(1, tail + 2); // IN
    q.append(tail, 4);
    // OPT: root name, type 41, class = UDP payload size, TTL 0, no options.
    char opt[11] = {0};
    qToBigEndian<quint16>(TypeOpt, opt + 1);
    qToBigEndian<quint16>(UdpPayload, opt + 3);
    q.append(opt, sizeof opt);
    return q;
}

std::optional<Answer> parse(QByteArrayView p, quint16 id, const QString &name, quint16 type,
                            QString *error)
{
    auto fail = [error](const char *why) -> std::optional<Answer> {
        if (error)
            *error = QString::fromLatin1(why);
        return std::nullopt;
    };
    if (p.size() < kHeader)
        return fail("short packet");
    const Reader r(p);
    qsizetype pos = 0;
    quint16 gotId = 0, flags = 0, qd = 0, an = 0;
    r.u16(pos, gotId);
    r.u16(pos, flags);
    r.u16(pos, qd);
    r.u16(pos, an);
    pos = kHeader;
    if (gotId != id)
        return fail("wrong id");
    if (!(flags & 0x8000) || ((flags >> 11) & 0xf) != 0)
        return fail("not a response to a standard query");
    if (qd != 1)
        return fail("not exactly one question");
    QByteArray qname;
    quint16 qtype = 0, qclass = 0;
    if (!r.name(pos, qname) || !r.u16(pos, qtype) || !r.u16(pos, qclass))
        return fail("malformed question");
    const QByteArray wanted = name.toLatin1();
    if (!sameName(qname, wanted) || qtype != type || qclass != 1)
        return fail("answer to another question");

    Answer a;
    a.rcode = flags & 0xf;
    a.truncated = flags & 0x0200;
    a.ttl = std::numeric_limits<quint32>::max();
    // Names whose records count: the query name and, in order, the CNAMEs it leads to.
    QList<QByteArray> chain{wanted};
    struct Record
    {
        QByteArray owner;
        quint16 type;
        quint32 ttl;
        QByteArray target; // CNAME
        QHostAddress address;
    };
    QList<Record> records;
    const int count = qMin<int>(an, MaxRecords);
    for (int i = 0; i < count; ++i) {
        Record rec;
        quint16 cls = 0, rdlength = 0;
        if (!r.name(pos, rec.owner) || !r.u16(pos, rec.type) || !r.u16(pos, cls)
            || !r.u32(pos, rec.ttl) || !r.u16(pos, rdlength) || pos + rdlength > p.size())
            return fail("malformed answer record");
        const qsizetype rdata = pos;
        pos += rdlength;
        if (cls != 1)
            continue;
        if (rec.type == TypeA && rdlength == 4) {
            rec.address = QHostAddress(qFromBigEndian<quint32>(p.data() + rdata));
        } else if (rec.type == TypeAaaa && rdlength == 16) {
            rec.address = QHostAddress(reinterpret_cast<const quint8 *>(p.data() + rdata));
        } else if (rec.type == TypeCname) {
            qsizetype at = rdata;
            if (!r.name(at, rec.target) || at > pos)
                return fail("malformed CNAME");
        } else {
            continue;
        }
        records.append(rec);
    }
    // Follow the CNAME chain (bounded), then take the wanted type's records of its names.
    for (int hop = 0; hop < MaxCnameChain; ++hop) {
        bool extended = false;
        for (const Record &rec : std::as_const(records)) {
            if (rec.type == TypeCname && sameName(rec.owner, chain.last())
                && !std::any_of(chain.begin(), chain.end(),
                                [&](const QByteArray &n) { return sameName(n, rec.target); })) {
                chain.append(rec.target);
                a.ttl = qMin(a.ttl, rec.ttl);
                extended = true;
                break;
            }
        }
        if (!extended)
            break;
    }
    for (const Record &rec : std::as_const(records)) {
        if (rec.type != type || rec.address.isNull())
            continue;
        if (!std::any_of(chain.begin(), chain.end(),
                         [&](const QByteArray &n) { return sameName(n, rec.owner); }))
            continue;
        if (a.addresses.size() >= MaxAddresses)
            break;
        if (!a.addresses.contains(rec.address))
            a.addresses.append(rec.address);
        a.ttl = qMin(a.ttl, rec.ttl);
    }
    if (a.addresses.isEmpty())
        a.ttl = 0;
    return a;
}

} // namespace Sandbox::Engine::DnsMessage
