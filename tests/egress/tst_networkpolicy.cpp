// The egress policy's parts that need no socket: what an address is, how entries and policies
// are read, and which destinations a policy lets through (docs/protocol.md, 3.5).
#include "egress/addressclass.h"
#include "egress/networkpolicy.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Engine;

Q_DECLARE_METATYPE(Sandbox::Engine::AddressClass)

namespace {

QJsonValue json(const char *text)
{
    const QByteArray t(text);
    if (t == "true" || t == "false")
        return t == "true";
    return QJsonDocument::fromJson(t).object();
}

EgressFacts facts()
{
    EgressFacts f;
    f.hostAddresses = {QHostAddress(QStringLiteral("192.0.2.10")),
                       QHostAddress(QStringLiteral("2001:db8::10"))};
    f.enginePorts = {7465};
    return f;
}

} // namespace

class tst_NetworkPolicy : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void classify_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<AddressClass>("cls");
        const auto row = [](const char *a, AddressClass c) {
            QTest::newRow(a) << QString::fromLatin1(a) << c;
        };
        row("8.8.8.8", AddressClass::Public);
        row("203.0.113.80", AddressClass::Public); // documentation ranges are not blocked
        row("127.0.0.1", AddressClass::Loopback);
        row("127.255.0.9", AddressClass::Loopback);
        row("0.0.0.0", AddressClass::Unspecified);
        row("0.1.2.3", AddressClass::Unspecified);
        row("10.1.2.3", AddressClass::Private);
        row("172.16.0.1", AddressClass::Private);
        row("172.31.255.255", AddressClass::Private);
        row("172.32.0.1", AddressClass::Public);
        row("192.168.1.1", AddressClass::Private);
        row("169.254.1.1", AddressClass::LinkLocal);
        row("169.254.169.254", AddressClass::Metadata);
        row("169.254.170.2", AddressClass::Metadata);
        row("100.100.100.200", AddressClass::Metadata);
        row("168.63.129.16", AddressClass::Metadata);
        row("100.64.0.1", AddressClass::SharedCgnat);
        row("100.127.255.254", AddressClass::SharedCgnat);
        row("192.0.0.170", AddressClass::SpecialUse);
        row("198.18.0.1", AddressClass::SpecialUse);
        row("224.0.0.251", AddressClass::Multicast);
        row("239.255.255.250", AddressClass::Multicast);
        row("240.0.0.1", AddressClass::Reserved);
        row("255.255.255.255", AddressClass::Reserved);
        row("::", AddressClass::Unspecified);
        row("::1", AddressClass::Loopback);
        row("::ffff:127.0.0.1", AddressClass::Loopback);
        row("::ffff:10.0.0.1", AddressClass::Private);
        row("::ffff:8.8.8.8", AddressClass::Public);
        row("::ffff:169.254.169.254", AddressClass::Metadata);
        row("::127.0.0.1", AddressClass::Reserved);     // IPv4-compatible
        row("64:ff9b::7f00:1", AddressClass::Loopback); // NAT64 of 127.0.0.1
        row("64:ff9b::a00:1", AddressClass::Private);   // NAT64 of 10.0.0.1
        row("64:ff9b::808:808", AddressClass::Public);  // NAT64 of 8.8.8.8
        row("64:ff9b:1::1", AddressClass::SpecialUse);
        row("2002:7f00:1::", AddressClass::Loopback); // 6to4 of 127.0.0.1
        row("2002:a9fe:a9fe::1", AddressClass::Metadata);
        row("2002:808:808::1", AddressClass::Public);
        row("2001::1", AddressClass::SpecialUse); // Teredo
        row("2001:4860:4860::8888", AddressClass::Public);
        row("2606:4700::1111", AddressClass::Public);
        row("fc00::1", AddressClass::Private);
        row("fd12:3456::1", AddressClass::Private);
        row("fd00:ec2::254", AddressClass::Metadata);
        row("fe80::1", AddressClass::LinkLocal);
        row("fec0::1", AddressClass::SpecialUse);
        row("ff02::1", AddressClass::Multicast);
        row("100::1", AddressClass::SpecialUse);
        row("4000::1", AddressClass::Reserved);
    }
    void classify()
    {
        QFETCH(QString, address);
        QFETCH(AddressClass, cls);
        const QHostAddress a(address);
        QVERIFY2(!a.isNull(), qPrintable(address));
        QCOMPARE(classifyAddress(a).cls, cls);
    }

    void mappedAddressesConnectToTheirIPv4()
    {
        const ClassifiedAddress c = classifyAddress(QHostAddress(QStringLiteral("::ffff:1.2.3.4")));
        QCOMPARE(c.effective, QHostAddress(QStringLiteral("1.2.3.4")));
        QCOMPARE(c.effective.protocol(), QAbstractSocket::IPv4Protocol);
    }

    void entries_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("canonical"); // empty: refused
        const auto row = [](const char *name, const char *in, const char *out) {
            QTest::newRow(name) << QString::fromUtf8(in) << QString::fromUtf8(out);
        };
        row("host", "Example.COM", "example.com");
        row("host with trailing dot", "example.com.", "example.com");
        row("host:port", "example.com:443", "example.com:443");
        row("wildcard", "*.github.com", "*.github.com");
        row("wildcard:port", "*.github.com:22", "*.github.com:22");
        row("ipv4", "1.2.3.4", "1.2.3.4");
        row("ipv4:port", "127.0.0.1:8080", "127.0.0.1:8080");
        row("cidr", "10.0.0.0/8", "10.0.0.0/8");
        row("cidr masked", "10.1.2.3/8", "10.0.0.0/8");
        row("ipv6 bare", "2001:db8::1", "2001:db8::1");
        row("ipv6 port", "[::1]:8080", "[::1]:8080");
        row("ipv6 cidr", "fd00::/8", "fd00::/8");
        row("mapped is ipv4", "[::ffff:127.0.0.1]:80", "127.0.0.1:80");
        row("empty", "", "");
        row("port zero", "example.com:0", "");
        row("port too big", "example.com:65536", "");
        row("port not a number", "example.com:http", "");
        row("wildcard in the middle", "a.*.com", "");
        row("bare star", "*", "");
        row("unicode", "bücher.de", "");
        row("space", "exa mple.com", "");
        row("short ipv4 is a name, not an address", "127.1", "127.1");
        row("cidr too long", "10.0.0.0/33", "");
        row("cidr of a name", "example.com/8", "");
        row("scope id", "[fe80::1%eth0]:80", "");
        row("label too long",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "");
    }
    void entries()
    {
        QFETCH(QString, input);
        QFETCH(QString, canonical);
        const auto e = PolicyEntry::parse(input);
        if (canonical.isEmpty()) {
            QVERIFY2(!e, qPrintable(input));
            QCOMPARE(e.error().code, ErrorCode::InvalidParams);
            return;
        }
        QVERIFY2(e, qPrintable(e ? QString() : e.error().message));
        QCOMPARE(e->text, canonical);
    }

    void policies_data()
    {
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("error"); // the field of the -32602, or empty
        QTest::addColumn<QJsonValue>("canonical");
        QTest::newRow("false") << json("false") << QString() << json("false");
        QTest::newRow("true") << json("true") << QString() << json("true");
        QTest::newRow("deny only is the internet minus the list")
            << json(R"({"deny":["evil.example"]})") << QString()
            << json(R"({"deny":["evil.example"]})");
        QTest::newRow("empty deny is true") << json(R"({"deny":[]})") << QString() << json("true");
        QTest::newRow("allow list")
            << json(R"({"allow":["Example.com","example.com","10.0.0.0/8"]})") << QString()
            << json(R"({"allow":["example.com","10.0.0.0/8"]})");
        QTest::newRow("empty allow is false")
            << json(R"({"allow":[]})") << QString() << json("false");
        QTest::newRow("star is the internet") << json(R"({"allow":["*"],"deny":["x.example"]})")
                                              << QString() << json(R"({"deny":["x.example"]})");
        QTest::newRow("the internet and a loopback port")
            << json(R"({"allow":["127.0.0.1:8080","*"]})") << QString()
            << json(R"({"allow":["*","127.0.0.1:8080"]})");
        QTest::newRow("unknown member")
            << json(R"({"allowed":["x"]})") << QStringLiteral("network.allowed") << QJsonValue();
        QTest::newRow("bad entry") << json(R"({"allow":["ok.com","not ok"]})")
                                   << QStringLiteral("network.allow[1]") << QJsonValue();
        QTest::newRow("not a list")
            << json(R"({"deny":"x"})") << QStringLiteral("network.deny") << QJsonValue();
        QTest::newRow("a string") << QJsonValue(QStringLiteral("yes")) << QStringLiteral("network")
                                  << QJsonValue();
        QJsonArray many;
        for (int i = 0; i <= NetworkPolicy::MaxEntries; ++i)
            many.append(QStringLiteral("h%1.example").arg(i));
        QTest::newRow("too many entries")
            << QJsonValue(QJsonObject{{QStringLiteral("allow"), many}})
            << QStringLiteral("network.allow") << QJsonValue();
    }
    void policies()
    {
        QFETCH(QJsonValue, value);
        QFETCH(QString, error);
        QFETCH(QJsonValue, canonical);
        const auto p = NetworkPolicy::fromJson(value);
        if (!error.isEmpty()) {
            QVERIFY(!p);
            QCOMPARE(p.error().code, ErrorCode::InvalidParams);
            QCOMPARE(p.error().data.toObject().value(QStringLiteral("field")).toString(), error);
            return;
        }
        QVERIFY2(p, qPrintable(p ? QString() : p.error().message));
        QCOMPARE(p->toJson(), canonical);
        // What it writes, it reads back the same.
        QCOMPARE(NetworkPolicy::fromJson(p->toJson())->toJson(), canonical);
    }

    void adminEntries()
    {
        const auto p = NetworkPolicy::fromJson(json(
            R"({"allow":["example.com","127.0.0.1:8080","10.0.0.0/8","8.8.8.0/24","0.0.0.0/0",)"
            R"("2606:4700::/32","2000::/3","169.254.169.254"],"deny":["10.1.0.0/16"]})"));
        QVERIFY(p);
        QCOMPARE(p->entriesNeedingAdmin(),
                 QStringList({QStringLiteral("127.0.0.1:8080"), QStringLiteral("10.0.0.0/8"),
                              QStringLiteral("0.0.0.0/0"), QStringLiteral("2000::/3"),
                              QStringLiteral("169.254.169.254")}));
        QCOMPARE(p->loopbackPorts(), QList<quint16>{8080});
    }

    // One row: a policy, the destination asked for, what it resolved to, and the verdict.
    void decisions_data()
    {
        QTest::addColumn<QJsonValue>("policy");
        QTest::addColumn<QString>("implicit"); // an implicit allow entry, or empty
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("address"); // what the name resolved to (empty: refused by name)
        QTest::addColumn<bool>("allowed");
        QTest::addColumn<QString>("reason"); // a part of the refusal

        const QJsonValue on = json("true");
        const QJsonValue off = json("false");
        const auto row = [](const char *name, QJsonValue p, const char *implicit, const char *host,
                            int port, const char *address, bool allowed, const char *reason) {
            QTest::newRow(name) << p << QString::fromLatin1(implicit) << QString::fromLatin1(host)
                                << port << QString::fromLatin1(address) << allowed
                                << QString::fromLatin1(reason);
        };
        row("true: public host", on, "", "example.com", 443, "93.184.215.14", true, "");
        row("true: loopback literal", on, "", "127.0.0.1", 8080, "127.0.0.1", false, "loopback");
        row("true: name resolving to loopback", on, "", "rebind.test", 80, "127.0.0.1", false,
            "loopback");
        row("true: mapped loopback", on, "", "::ffff:127.0.0.1", 80, "::ffff:127.0.0.1", false,
            "loopback");
        row("true: ::1", on, "", "::1", 80, "::1", false, "loopback");
        row("true: NAT64 of loopback", on, "", "nat64.test", 80, "64:ff9b::7f00:1", false,
            "loopback");
        row("true: 6to4 of a private address", on, "", "x.test", 80, "2002:c0a8:101::1", false,
            "private");
        row("true: private", on, "", "intranet.test", 80, "10.0.0.5", false, "private");
        row("true: link-local", on, "", "169.254.3.4", 80, "169.254.3.4", false, "link-local");
        row("true: metadata", on, "", "metadata.google.internal", 80, "169.254.169.254", false,
            "metadata");
        row("true: CGNAT", on, "", "100.64.1.1", 80, "100.64.1.1", false, "CGNAT");
        row("true: ULA", on, "", "fd00::1", 80, "fd00::1", false, "private");
        row("true: multicast", on, "", "239.1.1.1", 80, "239.1.1.1", false, "multicast");
        row("true: 0.0.0.0 reaches this host", on, "", "0.0.0.0", 7465, "0.0.0.0", false,
            "unspecified");
        row("true: this host's own address", on, "", "192.0.2.10", 22, "192.0.2.10", false,
            "this computer");
        row("true: the engine's port", on, "", "127.0.0.1", 7465, "127.0.0.1", false, "engine");
        row("false: anything", off, "", "example.com", 443, "", false, "no network");
        row("false: the provider's host", off, "api.anthropic.com", "api.anthropic.com", 443,
            "160.79.104.10", true, "");
        row("false: implicit never opens loopback", off, "localhost:8080", "localhost", 8080,
            "127.0.0.1", false, "loopback");
        row("list: named host", json(R"({"allow":["example.com"]})"), "", "example.com", 443,
            "93.184.215.14", true, "");
        row("list: other host", json(R"({"allow":["example.com"]})"), "", "example.org", 443, "",
            false, "not in the allow list");
        row("list: port mismatch", json(R"({"allow":["example.com:443"]})"), "", "example.com", 80,
            "", false, "not in the allow list");
        row("list: wildcard", json(R"({"allow":["*.github.com"]})"), "", "api.github.com", 443,
            "140.82.112.6", true, "");
        row("list: wildcard not the apex", json(R"({"allow":["*.github.com"]})"), "", "github.com",
            443, "", false, "not in the allow list");
        row("list: wildcard is not a suffix match", json(R"({"allow":["*.github.com"]})"), "",
            "evilgithub.com", 443, "", false, "not in the allow list");
        row("list: allowed name resolving to private", json(R"({"allow":["intranet.example"]})"),
            "", "intranet.example", 443, "10.0.0.5", false, "private");
        row("list: private through a CIDR", json(R"({"allow":["10.0.0.0/8"]})"), "",
            "intranet.example", 443, "10.0.0.5", true, "");
        row("list: exact loopback", json(R"({"allow":["127.0.0.1:8080"]})"), "", "127.0.0.1", 8080,
            "127.0.0.1", true, "");
        row("list: exact loopback by name", json(R"({"allow":["127.0.0.1:8080"]})"), "",
            "mock.test", 8080, "127.0.0.1", true, "");
        row("list: exact loopback, other port", json(R"({"allow":["127.0.0.1:8080"]})"), "",
            "127.0.0.1", 8081, "127.0.0.1", false, "loopback");
        row("list: loopback CIDR opens nothing", json(R"({"allow":["127.0.0.0/8"]})"), "",
            "127.0.0.1", 8080, "127.0.0.1", false, "loopback");
        row("list: exact loopback of the engine", json(R"({"allow":["127.0.0.1:7465"]})"), "",
            "127.0.0.1", 7465, "127.0.0.1", false, "engine");
        row("list: metadata never", json(R"({"allow":["169.254.0.0/16"]})"), "", "x.test", 80,
            "169.254.169.254", false, "metadata");
        row("list: everything CIDR still not loopback", json(R"({"allow":["0.0.0.0/0"]})"), "",
            "x.test", 80, "127.0.0.1", false, "loopback");
        row("deny by name wins", json(R"({"allow":["*.example.com"],"deny":["bad.example.com"]})"),
            "", "bad.example.com", 443, "", false, "bad.example.com");
        row("deny by address wins", json(R"({"deny":["93.184.0.0/16"]})"), "", "example.com", 443,
            "93.184.215.14", false, "93.184.0.0/16");
        row("deny covers NAT64 of its address", json(R"({"deny":["93.184.0.0/16"]})"), "",
            "example.com", 443, "64:ff9b::5db8:d70e", false, "93.184.0.0/16");
        row("deny wins over implicit", json(R"({"deny":["api.openai.com"]})"), "api.openai.com",
            "api.openai.com", 443, "", false, "api.openai.com");
        row("deny-only policy: public passes", json(R"({"deny":["evil.example"]})"), "",
            "example.com", 443, "93.184.215.14", true, "");
        row("internet plus a loopback port", json(R"({"allow":["*","127.0.0.1:8080"]})"), "",
            "127.0.0.1", 8080, "127.0.0.1", true, "");
        row("internet plus a loopback port: other ports",
            json(R"({"allow":["*","127.0.0.1:8080"]})"), "", "127.0.0.1", 22, "127.0.0.1", false,
            "loopback");
        row("internet plus a loopback port: public", json(R"({"allow":["*","127.0.0.1:8080"]})"),
            "", "example.com", 443, "93.184.215.14", true, "");
        row("internet plus a private network", json(R"({"allow":["*","10.0.0.0/8"]})"), "",
            "db.internal", 5432, "10.2.3.4", true, "");
        row("port 0", on, "", "example.com", 0, "", false, "port 0");
    }
    void decisions()
    {
        QFETCH(QJsonValue, policy);
        QFETCH(QString, implicit);
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(QString, address);
        QFETCH(bool, allowed);
        QFETCH(QString, reason);
        const auto p = NetworkPolicy::fromJson(policy);
        QVERIFY(p);
        QList<PolicyEntry> implicitEntries;
        if (!implicit.isEmpty())
            implicitEntries.append(PolicyEntry::parse(implicit).value());
        const EgressRules rules(p.value(), implicitEntries, facts());
        const auto step = rules.checkName(host, quint16(port));
        EgressDecision d = step.decision;
        if (d.allowed) {
            QVERIFY2(!address.isEmpty(), "allowed by name, but the row expects a refusal by name");
            d = rules.checkAddress(QHostAddress(address), quint16(port), step.nameAllowed);
        } else {
            QVERIFY2(address.isEmpty() || !allowed, qPrintable(d.reason));
        }
        QCOMPARE(d.allowed, allowed);
        if (!allowed)
            QVERIFY2(d.reason.contains(reason, Qt::CaseInsensitive), qPrintable(d.reason));
    }

    void strictIpLiterals_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("literal");
        QTest::newRow("dotted quad") << QStringLiteral("127.0.0.1") << true;
        QTest::newRow("short form") << QStringLiteral("127.1") << false;
        QTest::newRow("decimal") << QStringLiteral("2130706433") << false;
        QTest::newRow("hex") << QStringLiteral("0x7f.0.0.1") << false;
        QTest::newRow("octal") << QStringLiteral("0177.0.0.1") << false;
        QTest::newRow("bracketed v6") << QStringLiteral("[::1]") << true;
        QTest::newRow("v6") << QStringLiteral("::ffff:7f00:1") << true;
        QTest::newRow("scoped v6") << QStringLiteral("fe80::1%lo") << false;
    }
    void strictIpLiterals()
    {
        QFETCH(QString, text);
        QFETCH(bool, literal);
        QCOMPARE(parseIpLiteral(text).has_value(), literal);
    }
};

QTEST_GUILESS_MAIN(tst_NetworkPolicy)
#include "tst_networkpolicy.moc"
