// The egress proxy's resolver against a real UDP DNS server in this process (TestDnsServer):
// answers, the hosts table, hostile answers, timeouts and bounds.
#include "egress/dnsmessage.h"
#include "egress/dnsresolver.h"
#include "testdnsserver.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryFile>
#include <QTest>
#include <QTimer>

using namespace Sandbox;
using namespace Sandbox::Engine;

namespace {

struct Lookup
{
    bool done = false;
    bool synchronous = false; // the callback ran inside lookup() (it must not)
    Result<QList<QHostAddress>> result = Error{ErrorCode::Timeout, QStringLiteral("no answer"), {}};
};

QHostAddress ip(const char *text)
{
    return QHostAddress(QString::fromLatin1(text));
}

} // namespace

class tst_DnsResolver : public QObject
{
    Q_OBJECT

private:
    TestDnsServer *m_server = nullptr;

    DnsResolver::Config config(int timeoutMs = 300, int attempts = 2) const
    {
        DnsResolver::Config c;
        c.servers = {{QHostAddress(QHostAddress::LocalHost), m_server->port()}};
        c.timeoutMs = timeoutMs;
        c.attempts = attempts;
        return c;
    }

    Lookup resolve(DnsResolver &r, const QString &name, int waitMs = 5000)
    {
        auto out = std::make_shared<Lookup>();
        auto inside = std::make_shared<bool>(true);
        r.lookup(name, this, [out, inside](Result<QList<QHostAddress>> res) {
            out->synchronous = *inside;
            out->done = true;
            out->result = std::move(res);
        });
        *inside = false;
        (void)QTest::qWaitFor([out] { return out->done; }, waitMs);
        if (out->synchronous)
            out->result = Error{ErrorCode::InternalError, QStringLiteral("synchronous"), {}};
        return *out;
    }

private Q_SLOTS:
    void init()
    {
        m_server = new TestDnsServer(this);
        QVERIFY(m_server->listen());
    }
    void cleanup()
    {
        delete m_server;
        m_server = nullptr;
    }

    void resolvesBothFamilies()
    {
        m_server->set(QStringLiteral("both.test"), {ip("93.184.215.14"), ip("2606:2800::1")});
        DnsResolver r(config());
        const Lookup l = resolve(r, QStringLiteral("both.test"));
        QVERIFY(l.result);
        QCOMPARE(l.result.value(), (QList<QHostAddress>{ip("93.184.215.14"), ip("2606:2800::1")}));
    }

    void cachesWithinTheTtl()
    {
        m_server->set(QStringLiteral("cached.test"), {ip("93.184.215.14")});
        DnsResolver r(config());
        QVERIFY(resolve(r, QStringLiteral("cached.test")).result);
        const int asked = m_server->queriesFor(QStringLiteral("cached.test"));
        QVERIFY(resolve(r, QStringLiteral("cached.test")).result);
        QCOMPARE(m_server->queriesFor(QStringLiteral("cached.test")), asked);
    }

    void hostsTableFirst()
    {
        m_server->set(QStringLiteral("local.test"), {ip("93.184.215.14")});
        QTemporaryFile hosts;
        QVERIFY(hosts.open());
        hosts.write("# a comment\n10.9.8.7  Local.Test other.test # trailing\nbad line\n"
                    "::ffff:127.0.0.1 mapped.test\n");
        hosts.flush();
        DnsResolver::Config c = config();
        DnsResolver::readHostsFile(hosts.fileName(), c.hosts);
        DnsResolver r(c);
        QCOMPARE(resolve(r, QStringLiteral("local.test")).result.value(),
                 QList<QHostAddress>{ip("10.9.8.7")});
        QCOMPARE(resolve(r, QStringLiteral("mapped.test")).result.value(),
                 QList<QHostAddress>{ip("::ffff:127.0.0.1")});
        QCOMPARE(m_server->queriesFor(QStringLiteral("local.test")), 0);
    }

    void noSuchName()
    {
        TestDnsServer::Name n;
        n.nxdomain = true;
        m_server->set(QStringLiteral("missing.test"), n);
        DnsResolver r(config());
        const Lookup l = resolve(r, QStringLiteral("missing.test"));
        QVERIFY(!l.result);
        QVERIFY2(l.result.error().message.contains(QLatin1String("no such name")),
                 qPrintable(l.result.error().message));
    }

    void followsCnames()
    {
        TestDnsServer::Name alias;
        alias.cname = QStringLiteral("target.test");
        m_server->set(QStringLiteral("alias.test"), alias);
        m_server->set(QStringLiteral("target.test"), {ip("93.184.215.14")});
        DnsResolver r(config());
        QCOMPARE(resolve(r, QStringLiteral("alias.test")).result.value(),
                 QList<QHostAddress>{ip("93.184.215.14")});
    }

    void ignoresRecordsOfOtherNames()
    {
        TestDnsServer::Name n;
        n.addresses = {ip("93.184.215.14")};
        n.poison = ip("127.0.0.1");
        m_server->set(QStringLiteral("poisoned.test"), n);
        DnsResolver r(config());
        QCOMPARE(resolve(r, QStringLiteral("poisoned.test")).result.value(),
                 QList<QHostAddress>{ip("93.184.215.14")});
    }

    void ignoresAnswersWithAnotherId()
    {
        TestDnsServer::Name n;
        n.addresses = {ip("93.184.215.14")};
        n.spoofFirst = true; // 127.0.0.1 under a wrong id arrives first
        m_server->set(QStringLiteral("spoofed.test"), n);
        DnsResolver r(config());
        QCOMPARE(resolve(r, QStringLiteral("spoofed.test")).result.value(),
                 QList<QHostAddress>{ip("93.184.215.14")});
    }

    void boundsTheAddresses()
    {
        TestDnsServer::Name n;
        n.extraRecords = 200;
        m_server->set(QStringLiteral("many.test"), n);
        DnsResolver r(config());
        const Lookup l = resolve(r, QStringLiteral("many.test"));
        QVERIFY(l.result);
        QCOMPARE(l.result->size(), DnsMessage::MaxAddresses);
    }

    void refusesACompressionLoop()
    {
        TestDnsServer::Name n;
        n.loop = true;
        m_server->set(QStringLiteral("loop.test"), n);
        DnsResolver r(config(200, 1));
        const Lookup l = resolve(r, QStringLiteral("loop.test"));
        QVERIFY(!l.result);
    }

    void silentServerTimesOutWithoutBlocking()
    {
        TestDnsServer::Name n;
        n.silent = true;
        m_server->set(QStringLiteral("silent.test"), n);
        DnsResolver r(config(200, 2));
        // The event loop keeps running meanwhile: a timer fires several times.
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, this, [&ticks] { ++ticks; });
        tick.start(20);
        QElapsedTimer clock;
        clock.start();
        const Lookup l = resolve(r, QStringLiteral("silent.test"));
        QVERIFY(!l.result);
        QVERIFY2(clock.elapsed() >= 350 && clock.elapsed() < 3000,
                 qPrintable(QString::number(clock.elapsed())));
        QVERIFY(ticks >= 10);
        QCOMPARE(m_server->queriesFor(QStringLiteral("silent.test")), 4); // 2 attempts x A+AAAA
        QCOMPARE(r.inFlight(), 0);
    }

    void coalescesAndCancels()
    {
        TestDnsServer::Name n;
        n.silent = true;
        m_server->set(QStringLiteral("slow.test"), n);
        DnsResolver r(config(2000, 1));
        bool called = false;
        const quint64 a = r.lookup(QStringLiteral("slow.test"), this,
                                   [&called](Result<QList<QHostAddress>>) { called = true; });
        const quint64 b = r.lookup(QStringLiteral("slow.test"), this,
                                   [&called](Result<QList<QHostAddress>>) { called = true; });
        QCOMPARE(r.inFlight(), 1);
        r.cancel(a);
        QCOMPARE(r.inFlight(), 1);
        r.cancel(b);
        QCOMPARE(r.inFlight(), 0);
        QTest::qWait(50); // on purpose: a cancelled callback would have run by now
        QVERIFY(!called);
    }

    void capsLookupsInFlight()
    {
        TestDnsServer::Name n;
        n.silent = true;
        DnsResolver::Config c = config(2000, 1);
        c.maxInFlight = 3;
        DnsResolver r(c);
        for (int i = 0; i < 3; ++i) {
            m_server->set(QStringLiteral("s%1.test").arg(i), n);
            r.lookup(QStringLiteral("s%1.test").arg(i), this, [](Result<QList<QHostAddress>>) {});
        }
        const Lookup l = resolve(r, QStringLiteral("s9.test"));
        QVERIFY(!l.result);
        QVERIFY(l.result.error().message.contains(QLatin1String("busy")));
        QCOMPARE(r.inFlight(), 3);
    }

    // The parser alone, on packets the server would not send.
    void parserRefusesMalformedPackets_data()
    {
        QTest::addColumn<QByteArray>("packet");
        const QByteArray q = DnsMessage::query(0x1234, QStringLiteral("a.test"), DnsMessage::TypeA);
        QByteArray response = q;
        response[2] = char(0x81);
        response[3] = char(0x80);
        response[7] = 1;   // one answer
        response[11] = 0;  // no additional record
        response.chop(11); // without the OPT record of the query
        QTest::newRow("empty") << QByteArray();
        QTest::newRow("header only") << response.left(12);
        QTest::newRow("answer count, no answer") << response;
        QByteArray forward = response;
        forward.append("\xc0\x40", 2); // a pointer forwards, out of the packet
        forward.append(QByteArray("\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x7f\x00\x00\x01", 14));
        QTest::newRow("forward pointer") << forward;
        QByteArray rdlength = response;
        rdlength.append("\xc0\x0c", 2);
        rdlength.append(QByteArray("\x00\x01\x00\x01\x00\x00\x00\x3c\xff\xff\x7f", 11));
        QTest::newRow("rdlength past the end") << rdlength;
        QByteArray query = q;
        QTest::newRow("a query, not a response") << query;
    }
    void parserRefusesMalformedPackets()
    {
        QFETCH(QByteArray, packet);
        const auto a = DnsMessage::parse(packet, 0x1234, QStringLiteral("a.test"),
                                         DnsMessage::TypeA);
        QVERIFY(!a);
    }
};

QTEST_GUILESS_MAIN(tst_DnsResolver)
#include "tst_dnsresolver.moc"
