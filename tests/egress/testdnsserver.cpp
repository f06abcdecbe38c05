#include "testdnsserver.h"

#include <QNetworkDatagram>
#include <QUdpSocket>
#include <QtEndian>

namespace {

void put16(QByteArray &out, quint16 v)
{
    char b[2];
    qToBigEndian<quint16>(v, b);
    out.append(b, 2);
}

void put32(QByteArray &out, quint32 v)
{
    char b[4];
    qToBigEndian<quint32>(v, b);
    out.append(b, 4);
}

QByteArray encodeName(const QString &name)
{
    QByteArray out;
    for (const QString &label : name.split(u'.', Qt::SkipEmptyParts)) {
        out.append(char(label.size()));
        out.append(label.toLatin1());
    }
    out.append('\0');
    return out;
}

void record(QByteArray &out, const QByteArray &owner, quint16 type, quint32 ttl,
            const QByteArray &rdata)
{
    out.append(owner);
    put16(out, type);
    put16(out, 1);
    put32(out, ttl);
    put16(out, quint16(rdata.size()));
    out.append(rdata);
}

QByteArray addressData(const QHostAddress &a)
{
    if (a.protocol() == QAbstractSocket::IPv4Protocol) {
        QByteArray d;
        put32(d, a.toIPv4Address());
        return d;
    }
    const Q_IPV6ADDR v6 = a.toIPv6Address();
    return QByteArray(reinterpret_cast<const char *>(&v6), 16);
}

} // namespace

TestDnsServer::TestDnsServer(QObject *parent)
    : QObject(parent)
    , m_socket(new QUdpSocket(this))
{
    connect(m_socket, &QUdpSocket::readyRead, this, &TestDnsServer::onReadyRead);
}

TestDnsServer::~TestDnsServer() = default;

bool TestDnsServer::listen()
{
    return m_socket->bind(QHostAddress::LocalHost, 0);
}

quint16 TestDnsServer::port() const
{
    return m_socket->localPort();
}

void TestDnsServer::onReadyRead()
{
    while (m_socket->hasPendingDatagrams()) {
        const QNetworkDatagram d = m_socket->receiveDatagram();
        const QByteArray q = d.data();
        if (q.size() < 12)
            continue;
        ++m_queries;
        // The name, to know whether to misbehave.
        QString name;
        for (qsizetype at = 12; at < q.size() && q.at(at) != 0;) {
            const int len = quint8(q.at(at));
            if (!name.isEmpty())
                name += u'.';
            name += QString::fromLatin1(q.mid(at + 1, len)).toLower();
            at += 1 + len;
        }
        ++m_perName[name];
        const Name n = m_names.value(name);
        if (n.silent)
            continue;
        if (n.spoofFirst) {
            const quint16 id = qFromBigEndian<quint16>(q.constData());
            m_socket->writeDatagram(answer(q, quint16(id + 1), true), d.senderAddress(),
                                    quint16(d.senderPort()));
        }
        m_socket->writeDatagram(answer(q, 0, false), d.senderAddress(), quint16(d.senderPort()));
    }
}

QByteArray TestDnsServer::answer(const QByteArray &query, quint16 idOverride, bool spoof)
{
    const quint16 id = idOverride ? idOverride : qFromBigEndian<quint16>(query.constData());
    qsizetype at = 12;
    QString name;
    while (at < query.size() && query.at(at) != 0) {
        const int len = quint8(query.at(at));
        if (!name.isEmpty())
            name += u'.';
        name += QString::fromLatin1(query.mid(at + 1, len)).toLower();
        at += 1 + len;
    }
    const QByteArray question = query.mid(12, at + 1 + 4 - 12);
    const quint16 qtype = qFromBigEndian<quint16>(query.constData() + at + 1);
    const auto wanted = qtype == 1 ? QAbstractSocket::IPv4Protocol : QAbstractSocket::IPv6Protocol;
    const Name n = m_names.value(name);

    QByteArray answers;
    int count = 0;
    const QByteArray self("\xc0\x0c", 2);
    auto addAddresses = [&](const Name &entry, const QByteArray &owner) {
        for (const QHostAddress &a : entry.addresses) {
            if (a.protocol() == wanted) {
                record(answers, owner, qtype, quint32(entry.ttl), addressData(a));
                ++count;
            }
        }
    };
    if (spoof) {
        if (qtype == 1) {
            record(answers, self, 1, 60, addressData(QHostAddress(QHostAddress::LocalHost)));
            ++count;
        }
    } else if (!n.cname.isEmpty()) {
        record(answers, self, 5, quint32(n.ttl), encodeName(n.cname));
        ++count;
        addAddresses(m_names.value(n.cname.toLower()), encodeName(n.cname));
    } else {
        addAddresses(n, self);
    }
    if (!spoof && !n.poison.isNull() && qtype == 1) {
        record(answers, encodeName(QStringLiteral("other.test")), 1, 60, addressData(n.poison));
        ++count;
    }
    for (int i = 0; !spoof && i < n.extraRecords && qtype == 1; ++i) {
        record(answers, self, 1, 60,
               addressData(QHostAddress(QStringLiteral("198.51.100.%1").arg(i % 250 + 1))));
        ++count;
    }
    QByteArray out;
    put16(out, id);
    put16(out, quint16(0x8180 | (n.nxdomain && !spoof ? 3 : 0)));
    put16(out, 1);
    put16(out, quint16(count + (n.loop ? 1 : 0)));
    put16(out, 0);
    put16(out, 0);
    out.append(question);
    if (n.loop && !spoof) {
        // An owner name that is a pointer to itself.
        const quint16 self16 = quint16(0xc000 | out.size());
        put16(out, self16);
        put16(out, qtype);
        put16(out, 1);
        put32(out, 60);
        put16(out, 4);
        put32(out, 0x7f000001);
    }
    out.append(answers);
    return out;
}
