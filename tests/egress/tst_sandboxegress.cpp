// Egress that holds, against a real sandboxd and real sandboxes: every sandbox has its own network
// namespace, the engine's proxy (reached through the supervisor's listeners) is the only way out,
// and the policy decides what passes. Code inside tries every bypass a hostile repository would:
// loopback and the engine's port, private and link-local addresses, by IP and by a name that
// resolves to them, `--noproxy`, raw TCP, UDP, DNS. The real agent CLIs reach the mock model
// server through the proxy; with the model gateway their keys never enter the sandbox.
#include "enginefixture.h"
#include "mockmodelserver.h"
#include "sandboxprocesses.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkInterface>
#include <QProcess>
#include <QScopeGuard>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QUdpSocket>

#include <csignal>
#include <unistd.h>

using Sandbox::Mocks::MockModelServer;

namespace {

const QString kSecret = QStringLiteral("sk-ant-egress-9a8b7c6d5e4f-never-inside");

QString agentsDir()
{
    return QStringLiteral(SANDBOX_BINARY_DIR "/agents");
}

// This computer's first non-loopback IPv4 address (the sandbox must not reach it either).
QString hostAddress()
{
    for (const QHostAddress &a : QNetworkInterface::allAddresses()) {
        if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback() && !a.isLinkLocal())
            return a.toString();
    }
    return {};
}

// curl through the proxy whatever NO_PROXY says: the HTTP status, or CONNECT's for https.
QString viaProxy(const QString &url)
{
    return QStringLiteral("env -u NO_PROXY -u no_proxy curl -sS -m 20 -o /dev/null "
                          "-w '%{http_code} %{http_connect}' -D /tmp/headers '%1'; "
                          "echo; cat /tmp/headers 2>/dev/null")
        .arg(url);
}

} // namespace

class tst_SandboxEgress : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void theOnlyRouteIsTheProxy();
    void publicInternetRefusesLocalTargets_data();
    void publicInternetRefusesLocalTargets();
    void allowedHostReachableDeniedNot();
    void denialIsAnEventAndInTheLog();
    void manyConnectionsAtOnce();
    void connectionsDoNotWaitForTheSupervisor();
    void setNetworkTakesEffectOnTheNextConnection();
    void databasesAreCreatedWithAPolicyToo();
    void gatewayKeepsTheKeyOutOfTheSandbox();
    void eachCliThroughTheProxy_data();
    void eachCliThroughTheProxy();
    void gitThroughTheProxy();
    void npmAndPipThroughTheProxy();

private:
    QJsonObject create(const QJsonObject &params);
    QJsonObject exec(const QString &id, const QString &shell, int timeoutMs = 60000);
    QString allowLoopback(quint16 port) const { return QStringLiteral("127.0.0.1:%1").arg(port); }

    EngineFixture m_engine;
    MockModelServer m_mock;
    QTcpServer m_hostServer; // on every address of this computer; answers "host-ok"
    QUdpSocket m_hostUdp;    // on every address: no datagram may arrive
    int m_hostConnections = 0;
    quint16 m_enginePort = 0;
    QString m_hostIp;
    QTemporaryDir m_dir;
    QString m_open;   // network: true
    QString m_listed; // {allow: [mock]}
};

void tst_SandboxEgress::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("needs root (sandboxd drops each sandbox to its own uid)");
    QVERIFY(m_dir.isValid());
    QVERIFY(m_mock.listen());
    QVERIFY(m_hostServer.listen(QHostAddress::Any, 0));
    connect(&m_hostServer, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket *s = m_hostServer.nextPendingConnection()) {
            ++m_hostConnections;
            s->write("HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nhost-ok");
            s->disconnectFromHost();
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
        }
    });
    QVERIFY(m_hostUdp.bind(QHostAddress::AnyIPv4, 0));
    m_hostIp = hostAddress();
    QVERIFY2(!m_hostIp.isEmpty(), "this computer has no non-loopback IPv4 address");

    // Names the proxy's resolver knows (and the sandbox's does not).
    QFile hosts(m_dir.filePath(QStringLiteral("hosts")));
    QVERIFY(hosts.open(QIODevice::WriteOnly));
    hosts.write("127.0.0.1 loop.test mock.test\n10.1.2.3 private.test\n"
                "169.254.169.254 metadata.test\n");
    hosts.write(
        QStringLiteral("%1 myself.test\n93.184.215.14 public.test\n").arg(m_hostIp).toUtf8());
    hosts.close();
    QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"), agentsDir(),
                             QStringLiteral("--egress-hosts"), hosts.fileName(),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("65536")}),
             qPrintable(m_engine.process().log()));
    m_enginePort = quint16(m_engine.process().url().port());

    const QJsonObject open = create({{QStringLiteral("network"), true}});
    QVERIFY2(!open.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QCOMPARE(open.value(QStringLiteral("network")).toBool(), true);
    m_open = open.value(QStringLiteral("id")).toString();
    const QJsonObject listed = create(
        {{QStringLiteral("network"),
          QJsonObject{{QStringLiteral("allow"), QJsonArray{allowLoopback(m_mock.port())}}}}});
    QVERIFY2(!listed.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    m_listed = listed.value(QStringLiteral("id")).toString();
}

void tst_SandboxEgress::cleanupTestCase()
{
    m_engine.cleanup();
}

QJsonObject tst_SandboxEgress::create(const QJsonObject &extra)
{
    QJsonObject params{{QStringLiteral("type"), QStringLiteral("claude-code")},
                       {QStringLiteral("size"), QStringLiteral("lite")},
                       {QStringLiteral("gateway"), false}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        params.insert(it.key(), it.value());
    return m_engine.create(QStringLiteral("agents.create"), params, 120000);
}

QJsonObject tst_SandboxEgress::exec(const QString &id, const QString &shell, int timeoutMs)
{
    return m_engine.exec(id, shell, {{QStringLiteral("timeout"), timeoutMs}}, timeoutMs + 30000);
}

void tst_SandboxEgress::theOnlyRouteIsTheProxy()
{
    // The namespace has loopback and nothing else.
    QJsonObject r = exec(m_open,
                         QStringLiteral("python3 -c 'import socket; "
                                        "print(sorted(n for i, n in socket.if_nameindex()))'"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString().trimmed(), QStringLiteral("['lo']"));
    // The environment points at the proxy.
    r = exec(m_open, QStringLiteral("echo $HTTPS_PROXY $HTTP_PROXY $NO_PROXY"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString().trimmed(),
             QStringLiteral("http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1"));

    const QString port = QString::number(m_enginePort);
    const QString hostPort = QString::number(m_hostServer.serverPort());
    const QStringList bypasses{
        // curl told to ignore the proxy: the engine's port on loopback, this host's address.
        QStringLiteral("curl -sS -m 5 --noproxy '*' http://127.0.0.1:%1/health").arg(port),
        QStringLiteral("curl -sS -m 5 --noproxy '*' http://%1:%2/").arg(m_hostIp, hostPort),
        QStringLiteral("curl -sS -m 5 --noproxy '*' http://[::1]:%1/health").arg(port),
        // Raw TCP.
        QStringLiteral("exec 3<>/dev/tcp/127.0.0.1/%1").arg(port),
        QStringLiteral("exec 3<>/dev/tcp/%1/%2").arg(m_hostIp, hostPort),
        QStringLiteral("exec 3<>/dev/tcp/10.1.2.3/80"),
        QStringLiteral("exec 3<>/dev/tcp/169.254.169.254/80"),
        // UDP, and DNS of its own.
        QStringLiteral("python3 -c \"import socket; s = socket.socket(socket.AF_INET, "
                       "socket.SOCK_DGRAM); s.sendto(b'x', ('%1', %2))\"")
            .arg(m_hostIp)
            .arg(m_hostUdp.localPort()),
        QStringLiteral("python3 -c \"import socket; s = socket.socket(socket.AF_INET, "
                       "socket.SOCK_DGRAM); s.sendto(b'x', ('8.8.8.8', 53))\""),
        QStringLiteral("timeout 20 getent hosts example.com"),
        QStringLiteral("timeout 20 getent hosts mock.test"),
    };
    for (const QString &attempt : bypasses) {
        r = m_engine.rpc().result(QStringLiteral("agents.exec"),
                                  {{QStringLiteral("id"), m_open},
                                   {QStringLiteral("command"),
                                    QJsonArray{QStringLiteral("bash"), QStringLiteral("-c"),
                                               attempt}}},
                                  90000);
        QVERIFY2(r.contains(QStringLiteral("exitCode"))
                     && r.value(QStringLiteral("exitCode")).toInt() != 0,
                 qPrintable(attempt + QStringLiteral(" -> ")
                            + QString::fromUtf8(QJsonDocument(r).toJson())));
    }
    QTest::qWait(200); // on purpose: a late connection to the host would have come by now
    QCOMPARE(m_hostConnections, 0);
    QVERIFY(!m_hostUdp.hasPendingDatagrams());
}

void tst_SandboxEgress::publicInternetRefusesLocalTargets_data()
{
    QTest::addColumn<QString>("url");
    QTest::newRow("the engine by IP") << QStringLiteral("http://127.0.0.1:ENGINE/health");
    QTest::newRow("the engine by name") << QStringLiteral("http://loop.test:ENGINE/health");
    QTest::newRow("the engine, IPv6") << QStringLiteral("http://[::1]:ENGINE/health");
    QTest::newRow("the engine, v4-mapped") << QStringLiteral("http://[::ffff:127.0.0.1]:ENGINE/");
    QTest::newRow("the engine, TLS tunnel") << QStringLiteral("https://loop.test:ENGINE/health");
    QTest::newRow("this host's address") << QStringLiteral("http://HOSTIP:HOSTPORT/");
    QTest::newRow("this host by name") << QStringLiteral("http://myself.test:HOSTPORT/");
    QTest::newRow("private by IP") << QStringLiteral("http://10.1.2.3/");
    QTest::newRow("private by name") << QStringLiteral("http://private.test/");
    QTest::newRow("metadata by IP") << QStringLiteral("http://169.254.169.254/latest/meta-data/");
    QTest::newRow("metadata by name") << QStringLiteral("http://metadata.test/latest/meta-data/");
    QTest::newRow("metadata, TLS tunnel") << QStringLiteral("https://169.254.169.254/");
}

void tst_SandboxEgress::publicInternetRefusesLocalTargets()
{
    QFETCH(QString, url);
    url.replace(QLatin1String("ENGINE"), QString::number(m_enginePort))
        .replace(QLatin1String("HOSTIP"), m_hostIp)
        .replace(QLatin1String("HOSTPORT"), QString::number(m_hostServer.serverPort()));
    const QJsonObject r = exec(m_open, viaProxy(url));
    const QString out = r.value(QStringLiteral("stdout")).toString();
    // http: the proxy's own 403; https: CONNECT answered 403 (and no tunnel).
    const QString codes = out.section(u'\n', 0, 0);
    QVERIFY2(url.startsWith(QLatin1String("https")) ? codes.endsWith(QLatin1String("403"))
                                                    : codes.startsWith(QLatin1String("403")),
             qPrintable(url + QStringLiteral(" -> ") + out
                        + r.value(QStringLiteral("stderr")).toString()));
    if (!url.startsWith(QLatin1String("https")))
        QVERIFY2(out.contains(QLatin1String("X-Sandbox-Egress: denied"), Qt::CaseInsensitive),
                 qPrintable(out));
    QCOMPARE(m_hostConnections, 0);
}

void tst_SandboxEgress::allowedHostReachableDeniedNot()
{
    const QString mock = QString::number(m_mock.port());
    const QString other = QString::number(m_hostServer.serverPort());
    const int before = m_mock.requests().size();
    // The allowed loopback port: directly (forwarded inside the sandbox) and through the proxy.
    QJsonObject r = exec(m_listed, QStringLiteral("curl -sS -m 20 -o /dev/null -w '%{http_code}' "
                                                  "http://127.0.0.1:%1/v1/models")
                                       .arg(mock));
    QVERIFY2(r.value(QStringLiteral("exitCode")).toInt() == 0
                 && r.value(QStringLiteral("stdout")).toString() != QLatin1String("000"),
             qPrintable(r.value(QStringLiteral("stderr")).toString()));
    r = exec(m_listed, viaProxy(QStringLiteral("http://mock.test:%1/v1/models").arg(mock)));
    QVERIFY2(!r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403"))
                 && !r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("000")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()
                        + r.value(QStringLiteral("stderr")).toString()));
    QCOMPARE(m_mock.requests().size(), before + 2);

    // Another loopback port: no forward inside, and the proxy refuses it.
    r = exec(m_listed, QStringLiteral("curl -sS -m 5 http://127.0.0.1:%1/").arg(other));
    QCOMPARE(r.value(QStringLiteral("exitCode")).toInt(), 7); // connection refused
    r = exec(m_listed, viaProxy(QStringLiteral("http://mock.test:%1/").arg(other)));
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    // ... and neither a public host nor a private one is in the list.
    r = exec(m_listed, viaProxy(QStringLiteral("http://public.test/")));
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    r = exec(m_listed, viaProxy(QStringLiteral("http://private.test/")));
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    // A sandbox with `network: true` does not reach the mock either: loopback needs its entry.
    r = exec(m_open, viaProxy(QStringLiteral("http://127.0.0.1:%1/v1/models").arg(mock)));
    QVERIFY(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")));
    QCOMPARE(m_mock.requests().size(), before + 2);
    QCOMPARE(m_hostConnections, 0);
}

void tst_SandboxEgress::denialIsAnEventAndInTheLog()
{
    const quint16 port = m_hostServer.serverPort();
    m_engine.rpc().notifications.clear();
    const QJsonObject r = exec(m_listed,
                               viaProxy(QStringLiteral("http://private.test:%1/x").arg(port)));
    QVERIFY(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")));

    const auto matches = [port](const QJsonObject &d) {
        return d.value(QStringLiteral("host")).toString() == QLatin1String("private.test")
               && d.value(QStringLiteral("port")).toInt() == port;
    };
    QJsonObject event;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            for (const QJsonObject &n : std::as_const(m_engine.rpc().notifications)) {
                const QJsonObject p = n.value(QStringLiteral("params")).toObject();
                if (n.value(QStringLiteral("method")).toString() == QLatin1String("network.denied")
                    && p.value(QStringLiteral("id")).toString() == m_listed
                    && matches(p.value(QStringLiteral("denial")).toObject()))
                    event = p.value(QStringLiteral("denial")).toObject();
            }
            return !event.isEmpty();
        }(),
        5000);
    QCOMPARE(event.value(QStringLiteral("address")).toString(), QStringLiteral("10.1.2.3"));
    QCOMPARE(event.value(QStringLiteral("via")).toString(), QStringLiteral("proxy"));
    QCOMPARE(event.value(QStringLiteral("process")).toString(), QStringLiteral("curl"));
    QVERIFY(event.value(QStringLiteral("pid")).toInt() > 0);
    QVERIFY(!event.value(QStringLiteral("reason")).toString().isEmpty());
    QVERIFY(!event.value(QStringLiteral("time")).toString().isEmpty());

    const QJsonObject log = m_engine.rpc().result(QStringLiteral("sandbox.networkLog"),
                                                  {{QStringLiteral("id"), m_listed}});
    bool inLog = false;
    for (const QJsonValue &d : log.value(QStringLiteral("denied")).toArray())
        inLog = inLog || matches(d.toObject());
    QVERIFY2(inLog, QJsonDocument(log).toJson().constData());
}

void tst_SandboxEgress::manyConnectionsAtOnce()
{
    // 60 at once (a package manager's parallel downloads): each connection is handed over as it
    // is accepted, all are answered, and the sandbox goes on. Starting 60 curls takes the "lite"
    // sandbox's sixteenth of a CPU about 30 s on an idle machine; on a loaded one (the whole test
    // command running) only 22 of 60 had answered within the exec's minute: 4 minutes.
    const int before = m_mock.requests().size();
    const QJsonObject r
        = exec(m_listed,
               QStringLiteral(
                   "for i in $(seq 60); do curl -s -m 30 -o /dev/null -w '%{http_code}\\n' "
                   "http://127.0.0.1:%1/v1/models & done; wait")
                   .arg(m_mock.port()),
               240000);
    QVERIFY2(!r.value(QStringLiteral("timedOut")).toBool(),
             "the curls ran past the exec's timeout");
    const QStringList codes
        = r.value(QStringLiteral("stdout")).toString().split(u'\n', Qt::SkipEmptyParts);
    QCOMPARE(codes.size(), 60);
    QCOMPARE(codes.count(QStringLiteral("200")), 60);
    QCOMPARE(m_mock.requests().size(), before + 60);
    QCOMPARE(exec(m_listed, QStringLiteral("true")).value(QStringLiteral("exitCode")).toInt(), 0);
}

// The supervisor hands its listening sockets to the engine, which accepts on them: a new
// connection costs no trip through the supervisor (nor the engine's main thread), so a busy
// supervisor — here a stopped one — holds up none of them.
void tst_SandboxEgress::connectionsDoNotWaitForTheSupervisor()
{
    const int supervisor = supervisorPid(m_listed);
    QVERIFY(supervisor > 0);
    const int before = m_mock.requests().size();
    const QString mock = QString::number(m_mock.port());
    const QString curl = QStringLiteral("curl -sS -m 30 -o /dev/null -w '%{http_code} ' ");
    // A streamed exec that says when it runs, then connects a second later: by then the
    // supervisor is stopped.
    const QJsonObject request{
        {QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
        {QStringLiteral("id"), 7701},
        {QStringLiteral("method"), QStringLiteral("agents.exec")},
        {QStringLiteral("params"),
         QJsonObject{{QStringLiteral("id"), m_listed},
                     {QStringLiteral("command"),
                      QStringLiteral("echo started; sleep 1; %1http://127.0.0.1:%2/v1/models; %3")
                          .arg(curl, mock,
                               viaProxy(QStringLiteral("http://mock.test:%1/v1/models").arg(mock)))},
                     {QStringLiteral("options"), QJsonObject{{QStringLiteral("timeout"), 120000},
                                                             {QStringLiteral("stream"), true}}}}}};
    m_engine.rpc().sendText(QJsonDocument(request).toJson(QJsonDocument::Compact));
    m_engine.rpc().notifications.clear();
    const auto output = [this] {
        QString out;
        for (const QJsonObject &n : std::as_const(m_engine.rpc().notifications)) {
            if (n.value(QStringLiteral("method")) == QLatin1String("stream.output"))
                out += n.value(QStringLiteral("params"))
                           .toObject()
                           .value(QStringLiteral("data"))
                           .toString();
        }
        return out;
    };
    QTRY_VERIFY_WITH_TIMEOUT(output().contains(QLatin1String("started")), 120000);
    QCOMPARE(::kill(supervisor, SIGSTOP), 0);
    auto resume = qScopeGuard([supervisor] { ::kill(supervisor, SIGCONT); });
    // Both requests (the forwarded port and the proxy) reach the mock while it is stopped.
    QTRY_COMPARE_WITH_TIMEOUT(m_mock.requests().size() - before, 2, 60000);
    resume.dismiss();
    QCOMPARE(::kill(supervisor, SIGCONT), 0);
    // And the command saw both answers once its output could flow again.
    QTRY_VERIFY_WITH_TIMEOUT(output().contains(QLatin1String("200 200 ")), 60000);
}

void tst_SandboxEgress::setNetworkTakesEffectOnTheNextConnection()
{
    const QString hostPort = QString::number(m_hostServer.serverPort());
    const QString direct = QStringLiteral("curl -sS -m 10 http://127.0.0.1:%1/").arg(hostPort);
    const QString proxied = viaProxy(QStringLiteral("http://loop.test:%1/").arg(hostPort));
    const int before = m_hostConnections;
    QCOMPARE(exec(m_listed, direct).value(QStringLiteral("exitCode")).toInt(), 7);

    QJsonObject s
        = m_engine.rpc().result(QStringLiteral("sandbox.setNetwork"),
                                {{QStringLiteral("id"), m_listed},
                                 {QStringLiteral("network"),
                                  QJsonObject{
                                      {QStringLiteral("allow"),
                                       QJsonArray{allowLoopback(m_mock.port()),
                                                  allowLoopback(m_hostServer.serverPort())}}}}});
    QVERIFY2(!s.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QJsonObject r = exec(m_listed, direct);
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("host-ok"));
    r = exec(m_listed, proxied);
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("200")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    QCOMPARE(m_hostConnections, before + 2);

    s = m_engine.rpc().result(QStringLiteral("sandbox.setNetwork"),
                              {{QStringLiteral("id"), m_listed},
                               {QStringLiteral("network"), false}});
    QCOMPARE(s.value(QStringLiteral("network")).toBool(true), false);
    QCOMPARE(exec(m_listed, direct).value(QStringLiteral("exitCode")).toInt(), 7);
    r = exec(m_listed, proxied);
    QVERIFY(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")));
    QCOMPARE(m_hostConnections, before + 2);

    // A policy that is none of false, true or {allow, deny} is refused.
    const QJsonObject bad = m_engine.rpc().call(QStringLiteral("sandbox.setNetwork"),
                                                {{QStringLiteral("id"), m_listed},
                                                 {QStringLiteral("network"),
                                                  QStringLiteral("yes")}});
    QCOMPARE(bad.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32602);
    // Even an exact entry does not open the engine's own port.
    s = m_engine.rpc().result(QStringLiteral("sandbox.setNetwork"),
                              {{QStringLiteral("id"), m_listed},
                               {QStringLiteral("network"),
                                QJsonObject{{QStringLiteral("allow"),
                                             QJsonArray{allowLoopback(m_enginePort)}}}}});
    QVERIFY2(!s.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    r = exec(m_listed,
             QStringLiteral("curl -sS -m 10 http://127.0.0.1:%1/health").arg(m_enginePort));
    QVERIFY2(r.value(QStringLiteral("exitCode")).toInt() != 0,
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    r = exec(m_listed, viaProxy(QStringLiteral("http://127.0.0.1:%1/health").arg(m_enginePort)));
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().startsWith(QLatin1String("403")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    // Back to the mock for later tests.
    s = m_engine.rpc().result(QStringLiteral("sandbox.setNetwork"),
                              {{QStringLiteral("id"), m_listed},
                               {QStringLiteral("network"),
                                QJsonObject{{QStringLiteral("allow"),
                                             QJsonArray{allowLoopback(m_mock.port())}}}}});
    QVERIFY(!s.isEmpty());
}

// databases.create takes the same `network` as agents.create: a database sandbox that imports
// from (or replicates to) a server reaches it, and only it; without a policy, nothing.
void tst_SandboxEgress::databasesAreCreatedWithAPolicyToo()
{
    const QString hostPort = QString::number(m_hostServer.serverPort());
    const auto createDb = [this](const QJsonValue &network) {
        QJsonObject params{{QStringLiteral("type"), QStringLiteral("sqlite")},
                           {QStringLiteral("size"), QStringLiteral("lite")}};
        if (!network.isUndefined())
            params.insert(QStringLiteral("network"), network);
        return m_engine.rpc().call(QStringLiteral("databases.create"), params, 120000);
    };
    const auto curl = [this, &hostPort](const QString &id) {
        return m_engine.exec(id,
                             QStringLiteral("curl -sS -m 10 http://127.0.0.1:%1/").arg(hostPort));
    };
    const int before = m_hostConnections;

    const QJsonObject allowed
        = createDb(QJsonObject{{QStringLiteral("allow"),
                                QJsonArray{allowLoopback(m_hostServer.serverPort())}}})
              .value(QStringLiteral("result"))
              .toObject();
    QVERIFY2(!allowed.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QCOMPARE(allowed.value(QStringLiteral("network"))
                 .toObject()
                 .value(QStringLiteral("allow"))
                 .toArray(),
             QJsonArray{allowLoopback(m_hostServer.serverPort())});
    QCOMPARE(curl(allowed.value(QStringLiteral("id")).toString())
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("host-ok"));

    const QJsonObject closed
        = createDb(QJsonValue::Undefined).value(QStringLiteral("result")).toObject();
    QCOMPARE(closed.value(QStringLiteral("network")).toBool(true), false);
    QCOMPARE(curl(closed.value(QStringLiteral("id")).toString())
                 .value(QStringLiteral("exitCode"))
                 .toInt(),
             7);
    QCOMPARE(m_hostConnections, before + 1);

    // A policy that is none of false, true or {allow, deny} is refused, and nothing is made.
    const auto databases = [this] {
        return m_engine.rpc()
            .result(QStringLiteral("databases.list"), {})
            .value(QStringLiteral("databases"))
            .toArray()
            .size();
    };
    const qsizetype made = databases();
    const QJsonObject bad = createDb(QStringLiteral("yes"));
    QCOMPARE(bad.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32602);
    QCOMPARE(databases(), made);
}

void tst_SandboxEgress::gatewayKeepsTheKeyOutOfTheSandbox()
{
    const QJsonObject sb = m_engine.create(
        QStringLiteral("agents.create"),
        {{QStringLiteral("type"), QStringLiteral("claude-code")},
         {QStringLiteral("size"), QStringLiteral("standard-2")},
         {QStringLiteral("network"),
          QJsonObject{{QStringLiteral("allow"), QJsonArray{allowLoopback(m_mock.port())}}}},
         {QStringLiteral("env"),
          QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), kSecret},
                      {QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}}}},
        120000);
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    QCOMPARE(sb.value(QStringLiteral("gateway")).toBool(), true);
    const QString id = sb.value(QStringLiteral("id")).toString();

    // A real run: Claude Code talks to the gateway, the engine adds the key.
    m_mock.clear();
    const QJsonObject run
        = m_engine.rpc()
              .result(QStringLiteral("agents.run"),
                      {{QStringLiteral("id"), id},
                       {QStringLiteral("prompt"),
                        QStringLiteral("Please [[write:/workspace/gw.txt|through the gateway]]")},
                       {QStringLiteral("options"),
                        QJsonObject{{QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5")},
                                    {QStringLiteral("timeout"), 180000}}}},
                      240000);
    QVERIFY2(run.value(QStringLiteral("success")).toBool(), QJsonDocument(run).toJson().constData());
    bool sawKey = false, sawPlaceholder = false;
    for (const MockModelServer::Request &q : m_mock.requests()) {
        sawKey = sawKey || q.headers.value("x-api-key") == kSecret.toUtf8();
        sawPlaceholder = sawPlaceholder
                         || q.headers.value("x-api-key").contains("sandbox-model-gateway");
    }
    QVERIFY(sawKey);
    QVERIFY(!sawPlaceholder);

    // Inside: the gateway and a stand-in, never the key — not in the environment, not in any
    // process's /proc, not in a file. Leave a process running that would hold it if it were
    // there. The pattern comes in on stdin: it is in no command line.
    QJsonObject r = exec(id, QStringLiteral("echo $ANTHROPIC_API_KEY $ANTHROPIC_BASE_URL"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString().trimmed(),
             QStringLiteral("sandbox-model-gateway http://127.0.0.1:3129"));
    exec(id, QStringLiteral("nohup sleep 300 >/dev/null 2>&1 &"));
    r = m_engine.rpc()
            .result(QStringLiteral("agents.exec"),
                    {{QStringLiteral("id"), id},
                     {QStringLiteral("command"),
                      QStringLiteral(
                          "grep -rlsaF -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline "
                          "/home /workspace /tmp /etc /run /opt 2>/dev/null; echo rc=$?")},
                     {QStringLiteral("options"),
                      QJsonObject{{QStringLiteral("stdin"), QString(kSecret + u'\n')}}}},
                    120000);
    // grep names every file that holds it (none), and may not read some (the supervisor's).
    const QString found = r.value(QStringLiteral("stdout")).toString().trimmed();
    QVERIFY2(found == QLatin1String("rc=1") || found == QLatin1String("rc=2"), qPrintable(found));
    // The key is not returned either.
    const QJsonObject info = m_engine.rpc().result(QStringLiteral("agents.get"),
                                                   {{QStringLiteral("id"), id}});
    QVERIFY(!QJsonDocument(info).toJson().contains(kSecret.toUtf8()));
    QVERIFY(!m_engine.process().log().contains(kSecret));

    // The gateway serves model calls only: anything else is refused.
    r = exec(id, QStringLiteral("curl -s -o /dev/null -w '%{http_code}' "
                                "http://127.0.0.1:3129/v1/files"));
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("403"));
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 60000);
}

void tst_SandboxEgress::eachCliThroughTheProxy_data()
{
    QTest::addColumn<QString>("type");
    QTest::newRow("claude-code") << QStringLiteral("claude-code");
    QTest::newRow("codex") << QStringLiteral("codex");
    QTest::newRow("opencode") << QStringLiteral("opencode");
}

void tst_SandboxEgress::eachCliThroughTheProxy()
{
    QFETCH(QString, type);
    const QString cli = type == QLatin1String("claude-code") ? QStringLiteral("claude") : type;
    if (!QFileInfo::exists(agentsDir() + u'/' + type + QStringLiteral("/node_modules/.bin/") + cli))
        QFAIL(qPrintable(
            QStringLiteral("the %1 CLI is not installed: run scripts/setup.sh").arg(type)));
    // The CLI calls its provider itself (no gateway), at a name only the proxy can resolve: the
    // proxy is its only way to the mock.
    const QString base = QStringLiteral("http://mock.test:%1").arg(m_mock.port());
    const QJsonObject env = type == QLatin1String("claude-code")
                                ? QJsonObject{{QStringLiteral("ANTHROPIC_API_KEY"), kSecret},
                                              {QStringLiteral("ANTHROPIC_BASE_URL"), base}}
                                : QJsonObject{{QStringLiteral("OPENAI_API_KEY"), kSecret},
                                              {QStringLiteral("OPENAI_BASE_URL"),
                                               QString(base + QStringLiteral("/v1"))}};
    const QJsonObject sb
        = m_engine.create(QStringLiteral("agents.create"),
                          {{QStringLiteral("type"), type},
                           {QStringLiteral("size"), QStringLiteral("standard-3")},
                           {QStringLiteral("gateway"), false},
                           {QStringLiteral("network"),
                            QJsonObject{{QStringLiteral("allow"),
                                         QJsonArray{allowLoopback(m_mock.port())}}}},
                           {QStringLiteral("env"), env}},
                          120000);
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const QString id = sb.value(QStringLiteral("id")).toString();
    const int before = m_mock.modelCallCount();
    const QString path = QStringLiteral("/workspace/proxied-%1.txt").arg(type);
    QJsonObject options{{QStringLiteral("timeout"), 300000}};
    if (type == QLatin1String("claude-code"))
        options.insert(QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5"));
    const QJsonObject run
        = m_engine.rpc().result(QStringLiteral("agents.run"),
                                {{QStringLiteral("id"), id},
                                 {QStringLiteral("prompt"),
                                  QStringLiteral("Please [[write:%1|through the proxy]]").arg(path)},
                                 {QStringLiteral("options"), options}},
                                360000);
    QVERIFY2(run.value(QStringLiteral("success")).toBool(), QJsonDocument(run).toJson().constData());
    QVERIFY(m_mock.modelCallCount() >= before + 2);
    const QJsonObject file = m_engine.rpc().result(QStringLiteral("agents.readFile"),
                                                   {{QStringLiteral("id"), id},
                                                    {QStringLiteral("path"), path}});
    QCOMPARE(file.value(QStringLiteral("content")).toString().trimmed(),
             QStringLiteral("through the proxy"));
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 60000);
}

void tst_SandboxEgress::gitThroughTheProxy()
{
    // A real repository over git's dumb HTTP protocol, by a name only the proxy resolves.
    QTemporaryDir dir;
    const QString src = dir.filePath(QStringLiteral("src")),
                  bare = dir.filePath(QStringLiteral("served/demo.git"));
    const auto git = [](const QStringList &args) {
        QProcess p;
        p.start(QStringLiteral("git"), args);
        return p.waitForFinished(30000) && p.exitCode() == 0;
    };
    QVERIFY(git({QStringLiteral("init"), QStringLiteral("-q"), src}));
    QFile f(src + QStringLiteral("/README"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("through the proxy\n");
    f.close();
    QVERIFY(git({QStringLiteral("-C"), src, QStringLiteral("add"), QStringLiteral(".")}));
    QVERIFY(git({QStringLiteral("-C"), src, QStringLiteral("-c"), QStringLiteral("user.name=t"),
                 QStringLiteral("-c"), QStringLiteral("user.email=t@t"), QStringLiteral("commit"),
                 QStringLiteral("-qm"), QStringLiteral("one")}));
    QVERIFY(
        git({QStringLiteral("clone"), QStringLiteral("-q"), QStringLiteral("--bare"), src, bare}));
    QVERIFY(git({QStringLiteral("-C"), bare, QStringLiteral("update-server-info")}));
    m_mock.setStaticRoot(dir.filePath(QStringLiteral("served")));
    const QJsonObject r = exec(m_listed,
                               QStringLiteral(
                                   "cd /tmp && git clone -q http://mock.test:%1/files/demo.git "
                                   "&& cat demo/README")
                                   .arg(m_mock.port()));
    m_mock.setStaticRoot({});
    QVERIFY2(r.value(QStringLiteral("stdout")).toString() == QLatin1String("through the proxy\n"),
             qPrintable(r.value(QStringLiteral("stderr")).toString()));
}

void tst_SandboxEgress::npmAndPipThroughTheProxy()
{
    // A package registry and a package index, by a name only the proxy resolves: npm and pip
    // find them through HTTP_PROXY as they are.
    QTemporaryDir dir;
    const auto write = [&](const QString &rel, const QByteArray &body) {
        QDir().mkpath(QFileInfo(dir.filePath(rel)).path());
        QFile f(dir.filePath(rel));
        return f.open(QIODevice::WriteOnly) && f.write(body) == body.size();
    };
    QVERIFY(write(QStringLiteral("npm/egress-probe"),
                  R"({"name":"egress-probe","dist-tags":{"latest":"1.2.3"},"versions":{"1.2.3":)"
                  R"({"name":"egress-probe","version":"1.2.3","dist":{"tarball":"http://x/t.tgz",)"
                  R"("shasum":"0000000000000000000000000000000000000000"}}}})"));
    QVERIFY(write(QStringLiteral("pypi/egress-probe/index.html"),
                  "<html><body><a href=\"egress_probe-1.2.3.tar.gz\">egress_probe-1.2.3.tar.gz"
                  "</a></body></html>\n"));
    m_mock.setStaticRoot(dir.path());
    const QString base = QStringLiteral("http://mock.test:%1/files").arg(m_mock.port());
    QJsonObject r = exec(m_listed,
                         QStringLiteral("cd /tmp && HOME=/tmp npm view egress-probe version "
                                        "--registry %1/npm/ 2>&1")
                             .arg(base),
                         120000);
    QVERIFY2(r.value(QStringLiteral("stdout")).toString().trimmed() == QLatin1String("1.2.3"),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
    r = exec(m_listed,
             QStringLiteral(
                 "cd /tmp && HOME=/tmp python3 -m pip index versions egress-probe "
                 "--index-url %1/pypi/ --trusted-host mock.test --disable-pip-version-check 2>&1")
                 .arg(base),
             120000);
    m_mock.setStaticRoot({});
    QVERIFY2(r.value(QStringLiteral("stdout"))
                 .toString()
                 .contains(QLatin1String("egress-probe (1.2.3)")),
             qPrintable(r.value(QStringLiteral("stdout")).toString()));
}

QTEST_GUILESS_MAIN(tst_SandboxEgress)
#include "tst_sandboxegress.moc"
