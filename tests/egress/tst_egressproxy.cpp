// The egress proxy and the model gateway against real sockets: this test plays the supervisor
// (it accepts the "sandbox's" connection and hands the fd to the EgressService, as the `listen`
// op does) and runs the upstream servers. The proxy runs on its own thread, as in sandboxd.
#include "egress/egressservice.h"
#include "egress/modelgateway.h"
#include "mockmodelserver.h"
#include "procstat.h"
#include "testdnsserver.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QSslKey>
#include <QSslServer>
#include <QSslSocket>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace Sandbox;
using namespace Sandbox::Engine;

namespace {

const QString kSandbox = QStringLiteral("sb_test");
const QByteArray kRealKey = "sk-ant-real-key-that-never-enters-the-sandbox-0123456789";

QString dataFile(const char *name)
{
    return QStringLiteral(SANDBOX_SOURCE_DIR "/tests/egress/data/") + QLatin1String(name);
}

// {allow:["127.0.0.1:PORT"]}: the one way to a service on this host's loopback.
NetworkPolicy allowOnly(quint16 port)
{
    return NetworkPolicy::fromJson(
               QJsonObject{
                   {QStringLiteral("allow"), QJsonArray{QStringLiteral("127.0.0.1:%1").arg(port)}}})
        .value();
}

// Spins the event loop until `socket` has received something matching `done` (or closed).
QByteArray readUntil(QTcpSocket &socket, const std::function<bool(const QByteArray &)> &done,
                     int timeoutMs = 5000)
{
    QByteArray got;
    (void)QTest::qWaitFor(
        [&] {
            got += socket.readAll();
            return done(got) || socket.state() == QAbstractSocket::UnconnectedState;
        },
        timeoutMs);
    got += socket.readAll();
    return got;
}

bool headDone(const QByteArray &b)
{
    return b.contains("\r\n\r\n");
}

// Echoes every byte back.
class EchoServer final : public QTcpServer
{
public:
    EchoServer()
    {
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [s] { s->write(s->readAll()); });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
        listen(QHostAddress::LocalHost, 0);
    }
};

// Records one request head and answers a fixed keep-alive response.
class HttpServer final : public QTcpServer
{
public:
    QByteArray lastHead;
    HttpServer()
    {
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = nextPendingConnection()) {
                auto buffer = std::make_shared<QByteArray>();
                connect(s, &QTcpSocket::readyRead, s, [this, s, buffer] {
                    *buffer += s->readAll();
                    if (!buffer->contains("\r\n\r\n"))
                        return;
                    lastHead = buffer->left(buffer->indexOf("\r\n\r\n") + 4);
                    // Keep-alive offered; the request's `Connection: close` is honoured.
                    s->write("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: "
                             "timeout=5\r\nContent-Length: 5\r\n\r\nhello");
                    if (lastHead.contains("Connection: close"))
                        s->disconnectFromHost();
                });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
        listen(QHostAddress::LocalHost, 0);
    }
};

// The CPU time (user + system) of this process's thread named `name`, or -1.
double threadCpuSeconds(const QString &name)
{
    const QString path = ProcStat::statPath(QStringLiteral("self"), name);
    return path.isEmpty() ? -1 : ProcStat::cpuSeconds(path);
}

constexpr int kHugePipe = 1 << 30;

} // namespace

class tst_EgressProxy : public QObject
{
    Q_OBJECT

private:
    int m_listenFd = -1;
    quint16 m_listenPort = 0;
    TestDnsServer *m_dns = nullptr;
    std::unique_ptr<EgressService> m_service;
    QList<QTcpSocket *> m_clients;

    void startService(EgressProxy::Limits limits = {})
    {
        EgressService::Config c;
        c.dns.servers = {{QHostAddress(QHostAddress::LocalHost), m_dns->port()}};
        c.dns.timeoutMs = 300;
        c.dns.attempts = 1;
        c.dns.hosts.insert(QStringLiteral("hosts-loopback.test"), {QHostAddress::LocalHost});
        c.limits = limits;
        c.enginePorts = {7465};
        QFile ca(dataFile("ca.pem"));
        if (ca.open(QIODevice::ReadOnly))
            c.extraCaCertificates = QSslCertificate::fromData(ca.readAll());
        m_service = std::make_unique<EgressService>(c);
    }

    // A client "inside the sandbox" whose connection the test accepts and hands to the proxy.
    QTcpSocket *open(EgressListener listener = EgressListener::Proxy, quint16 listenPort = 3128,
                     qint64 pid = 42)
    {
        auto *client = new QTcpSocket(this);
        m_clients.append(client);
        client->connectToHost(QHostAddress::LocalHost, m_listenPort);
        if (!client->waitForConnected(2000))
            return client;
        pollfd p{m_listenFd, POLLIN, 0};
        ::poll(&p, 1, 2000);
        const int fd = ::accept4(m_listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        EgressClient info;
        info.sandboxId = kSandbox;
        info.pid = pid;
        info.process = QStringLiteral("curl");
        m_service->accept(fd, info, listener, listenPort);
        return client;
    }

    QByteArray request(const QByteArray &text, EgressListener listener = EgressListener::Proxy)
    {
        QTcpSocket *c = open(listener);
        c->write(text);
        return readUntil(*c, [](const QByteArray &b) { return b.contains("\r\n\r\n"); });
    }

    QJsonArray log() { return m_service->log(kSandbox); }

private Q_SLOTS:
    void init()
    {
        m_listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QVERIFY(::bind(m_listenFd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        QVERIFY(::listen(m_listenFd, 64) == 0);
        socklen_t len = sizeof a;
        ::getsockname(m_listenFd, reinterpret_cast<sockaddr *>(&a), &len);
        m_listenPort = ntohs(a.sin_port);
        m_dns = new TestDnsServer(this);
        QVERIFY(m_dns->listen());
        startService();
    }
    void cleanup()
    {
        qDeleteAll(m_clients);
        m_clients.clear();
        m_service.reset();
        delete m_dns;
        ::close(m_listenFd);
    }

    void connectTunnelCarriesBytesBothWays()
    {
        EchoServer echo;
        m_service->setPolicy(kSandbox, allowOnly(echo.serverPort()));
        QTcpSocket *c = open();
        c->write("CONNECT 127.0.0.1:" + QByteArray::number(echo.serverPort())
                 + " HTTP/1.1\r\nHost: x\r\n\r\n");
        const QByteArray head = readUntil(*c, headDone);
        QVERIFY2(head.startsWith("HTTP/1.1 200"), head.constData());
        // 4 MiB of random bytes through the tunnel and back, byte for byte.
        QByteArray payload(4 * 1024 * 1024, Qt::Uninitialized);
        QRandomGenerator::global()->fillRange(reinterpret_cast<quint32 *>(payload.data()),
                                              payload.size() / 4);
        c->write(payload);
        const QByteArray back = readUntil(
            *c, [&](const QByteArray &b) { return b.size() >= payload.size(); }, 20000);
        QCOMPARE(back.size(), payload.size());
        QVERIFY(back == payload);
        QVERIFY(log().isEmpty());
    }

    void connectToLoopbackIsDeniedAndReported()
    {
        EchoServer echo;
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        QSignalSpy denied(m_service.get(), &EgressService::denied);
        const QByteArray answer = request(
            "CONNECT 127.0.0.1:" + QByteArray::number(echo.serverPort()) + " HTTP/1.1\r\n\r\n");
        QVERIFY2(answer.startsWith("HTTP/1.1 403"), answer.constData());
        QVERIFY(answer.contains("X-Sandbox-Egress: denied"));
        QVERIFY(answer.contains("loopback"));
        QVERIFY(denied.wait(2000) || denied.size() == 1);
        QCOMPARE(denied.first().at(0).toString(), kSandbox);
        const QJsonObject r = denied.first().at(1).toJsonObject();
        QCOMPARE(r.value(QStringLiteral("host")).toString(), QStringLiteral("127.0.0.1"));
        QCOMPARE(r.value(QStringLiteral("port")).toInt(), echo.serverPort());
        QCOMPARE(r.value(QStringLiteral("pid")).toInt(), 42);
        QCOMPARE(r.value(QStringLiteral("process")).toString(), QStringLiteral("curl"));
        QCOMPARE(r.value(QStringLiteral("via")).toString(), QStringLiteral("proxy"));
        QVERIFY(!r.value(QStringLiteral("time")).toString().isEmpty());
        QCOMPARE(log().size(), 1);
    }

    void namesAreCheckedByWhatTheyResolveTo_data()
    {
        QTest::addColumn<QByteArray>("host");
        QTest::addColumn<QString>("address");
        QTest::addColumn<QString>("reason");
        QTest::newRow("dns: loopback") << QByteArray("rebind.test") << QStringLiteral("127.0.0.1")
                                       << QStringLiteral("loopback");
        QTest::newRow("dns: private") << QByteArray("intranet.test") << QStringLiteral("10.1.2.3")
                                      << QStringLiteral("private");
        QTest::newRow("dns: metadata")
            << QByteArray("metadata.test") << QStringLiteral("169.254.169.254")
            << QStringLiteral("metadata");
        QTest::newRow("dns: mapped loopback (AAAA)")
            << QByteArray("mapped.test") << QStringLiteral("::ffff:127.0.0.1")
            << QStringLiteral("loopback");
        QTest::newRow("dns: NAT64 of loopback")
            << QByteArray("nat64.test") << QStringLiteral("64:ff9b::7f00:1")
            << QStringLiteral("loopback");
        QTest::newRow("hosts table: loopback")
            << QByteArray("hosts-loopback.test") << QString() << QStringLiteral("loopback");
        QTest::newRow("literal: ::1")
            << QByteArray("[::1]") << QString() << QStringLiteral("loopback");
        QTest::newRow("literal: 0.0.0.0")
            << QByteArray("0.0.0.0") << QString() << QStringLiteral("unspecified");
        QTest::newRow("literal: link-local")
            << QByteArray("169.254.10.10") << QString() << QStringLiteral("link-local");
        QTest::newRow("literal: CGNAT")
            << QByteArray("100.64.0.1") << QString() << QStringLiteral("CGNAT");
    }
    void namesAreCheckedByWhatTheyResolveTo()
    {
        QFETCH(QByteArray, host);
        QFETCH(QString, address);
        QFETCH(QString, reason);
        if (!address.isEmpty())
            m_dns->set(QString::fromLatin1(host), {QHostAddress(address)});
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        for (const QByteArray &form :
             {QByteArray("CONNECT " + host + ":8080 HTTP/1.1\r\n\r\n"),
              QByteArray("GET http://" + host + ":8080/ HTTP/1.1\r\n\r\n")}) {
            const QByteArray answer = request(form);
            QVERIFY2(answer.startsWith("HTTP/1.1 403"), answer.constData());
            QVERIFY2(answer.contains(reason.toLatin1()), answer.constData());
        }
        QTRY_VERIFY(!log().isEmpty());
        const QJsonObject r = log().last().toObject();
        QVERIFY(r.value(QStringLiteral("reason")).toString().contains(reason));
        if (!address.isEmpty())
            QCOMPARE(r.value(QStringLiteral("address")).toString(),
                     classifyAddress(QHostAddress(address)).effective.toString());
    }

    void plainHttpIsForwardedOneRequestPerConnection()
    {
        HttpServer http;
        m_service->setPolicy(kSandbox, allowOnly(http.serverPort()));
        const QByteArray port = QByteArray::number(http.serverPort());
        QTcpSocket *c = open();
        c->write("GET http://127.0.0.1:" + port
                 + "/a/b?c=1#frag HTTP/1.1\r\nHost: wrong\r\nProxy-Connection: keep-alive\r\n"
                   "Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive, X-Hop\r\n"
                   "X-Hop: 1\r\nUser-Agent: test\r\n\r\n");
        const QByteArray answer = readUntil(*c, [](const QByteArray &b) {
            return b.endsWith("hello");
        });
        QVERIFY2(answer.startsWith("HTTP/1.1 200 OK\r\n"), answer.constData());
        QVERIFY(answer.contains("Connection: close\r\n"));
        QVERIFY(!answer.contains("keep-alive"));
        QVERIFY(answer.endsWith("\r\n\r\nhello"));
        const QByteArray &up = http.lastHead;
        QVERIFY2(up.startsWith("GET /a/b?c=1 HTTP/1.1\r\n"), up.constData());
        QVERIFY(up.contains(QByteArray("Host: 127.0.0.1:" + port + "\r\n")));
        QVERIFY(up.contains("User-Agent: test\r\n"));
        QVERIFY(up.contains("Connection: close\r\n"));
        for (const char *gone : {"Proxy-Connection", "Proxy-Authorization", "X-Hop", "wrong"})
            QVERIFY2(!up.contains(gone), gone);
        // The server closes after the response, as asked: so does the client's connection.
        QTRY_COMPARE(c->state(), QAbstractSocket::UnconnectedState);
    }

    void malformedRequests_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("status");
        QTest::newRow("origin form")
            << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n") << QByteArray("400");
        QTest::newRow("https absolute")
            << QByteArray("GET https://example.com/ HTTP/1.1\r\n\r\n") << QByteArray("400");
        QTest::newRow("not http") << QByteArray("\x16\x03\x01\x02\x05\x01\r\n\r\n")
                                  << QByteArray("400");
        QTest::newRow("connect without port")
            << QByteArray("CONNECT example.com HTTP/1.1\r\n\r\n") << QByteArray("400");
        QTest::newRow("user info")
            << QByteArray("GET http://u:p@example.com/ HTTP/1.1\r\n\r\n") << QByteArray("400");
        QTest::newRow("bad host") << QByteArray("CONNECT ex_ample..com:443 HTTP/1.1\r\n\r\n")
                                  << QByteArray("400");
        QTest::newRow("obs-fold") << QByteArray("CONNECT a.com:443 HTTP/1.1\r\nA: b\r\n c\r\n\r\n")
                                  << QByteArray("400");
        QTest::newRow("too large")
            << QByteArray("CONNECT a.com:443 HTTP/1.1\r\nX: " + QByteArray(20000, 'a') + "\r\n\r\n")
            << QByteArray("431");
    }
    void malformedRequests()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, status);
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        const QByteArray answer = request(text);
        QVERIFY2(answer.startsWith(QByteArray("HTTP/1.1 " + status)), answer.constData());
    }

    void policyChangesApplyToTheNextConnection()
    {
        EchoServer echo;
        const QByteArray connect = "CONNECT 127.0.0.1:" + QByteArray::number(echo.serverPort())
                                   + " HTTP/1.1\r\n\r\n";
        m_service->setPolicy(kSandbox, allowOnly(echo.serverPort()));
        QTcpSocket *open1 = open();
        open1->write(connect);
        QVERIFY(readUntil(*open1, headDone).startsWith("HTTP/1.1 200"));
        m_service->setPolicy(kSandbox, NetworkPolicy::off());
        QVERIFY(request(connect).startsWith("HTTP/1.1 403"));
        // The tunnel that was open stays open (a policy applies to new connections).
        open1->write("still here");
        QCOMPARE(readUntil(*open1, [](const QByteArray &b) { return b.size() >= 10; }),
                 QByteArray("still here"));
        m_service->setPolicy(kSandbox, allowOnly(echo.serverPort()));
        QVERIFY(request(connect).startsWith("HTTP/1.1 200"));
    }

    void forwardListenerNeedsAnExactEntry()
    {
        EchoServer echo;
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        QTcpSocket *c = open(EgressListener::Forward, echo.serverPort());
        c->write("ping");
        readUntil(
            *c, [](const QByteArray &) { return false; }, 1000);
        QCOMPARE(c->state(), QAbstractSocket::UnconnectedState);
        QTRY_VERIFY(!log().isEmpty());
        QCOMPARE(log().last().toObject().value(QStringLiteral("via")).toString(),
                 QStringLiteral("forward"));

        m_service->setPolicy(kSandbox, allowOnly(echo.serverPort()));
        QTcpSocket *d = open(EgressListener::Forward, echo.serverPort());
        d->write("ping");
        QCOMPARE(readUntil(*d, [](const QByteArray &b) { return b.size() >= 4; }),
                 QByteArray("ping"));
    }

    // A server that answers at once and closes without reading the request (its kernel then
    // resets the connection when the request arrives): the answer still reaches the client.
    // (The relay used to end both directions at the first failed write.)
    void answerBeforeAResetIsDelivered()
    {
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QVERIFY(::bind(server, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        QVERIFY(::listen(server, 64) == 0);
        socklen_t len = sizeof a;
        ::getsockname(server, reinterpret_cast<sockaddr *>(&a), &len);
        const quint16 port = ntohs(a.sin_port);
        constexpr int kRounds = 20;
        std::thread answering([server] {
            for (int i = 0; i < kRounds; ++i) {
                const int c = ::accept(server, nullptr, nullptr);
                if (c < 0)
                    return;
                static const char answer[] = "HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nhost-ok";
                (void)!::write(c, answer, sizeof answer - 1);
                ::close(c); // the request arrives after this: a reset
            }
        });
        m_service->setPolicy(kSandbox, allowOnly(port));
        int delivered = 0;
        for (int i = 0; i < kRounds; ++i) {
            QTcpSocket *c = open(EgressListener::Forward, port);
            c->write("GET / HTTP/1.0\r\nHost: x\r\n\r\n");
            const QByteArray got = readUntil(
                *c, [](const QByteArray &b) { return b.endsWith("host-ok"); }, 3000);
            delivered += got.endsWith("host-ok") ? 1 : 0;
        }
        answering.join();
        ::close(server);
        QCOMPARE(delivered, kRounds);
    }

    void headTimeout()
    {
        EgressProxy::Limits l;
        l.headTimeoutMs = 300;
        m_service.reset();
        startService(l);
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        QTcpSocket *c = open();
        c->write("CONNECT example.com:443 HTTP/1.1\r\n"); // never finished
        const QByteArray answer = readUntil(*c, headDone, 4000);
        QVERIFY2(answer.startsWith("HTTP/1.1 408"), answer.constData());
        QTRY_COMPARE(c->state(), QAbstractSocket::UnconnectedState);
    }

    void aSmallerPipeThanAskedForDoesNotSpin()
    {
        // A pipe the kernel does not grow (a normal user past its pipe quota gets one page; here:
        // more than the kernel allocates) must not leave the relay reading into a full pipe: the
        // source stays readable and the egress thread would spin while the client is slow.
        int probe[2] = {-1, -1};
        QVERIFY(::pipe2(probe, O_CLOEXEC) == 0);
        const bool grows = ::fcntl(probe[1], F_SETPIPE_SZ, kHugePipe) >= kHugePipe;
        ::close(probe[0]);
        ::close(probe[1]);
        if (grows)
            QSKIP("this kernel grants a 1 GiB pipe");
        EgressProxy::Limits l;
        l.pipeBytes = kHugePipe;
        m_service.reset();
        startService(l);
        QTcpServer source;
        QVERIFY(source.listen(QHostAddress::LocalHost, 0));
        const QByteArray block(1024 * 1024, 'x');
        connect(&source, &QTcpServer::newConnection, &source, [&] {
            QTcpSocket *s = source.nextPendingConnection();
            for (int i = 0; i < 32; ++i)
                s->write(block); // far more than the sockets and the pipe hold
        });
        m_service->setPolicy(kSandbox, allowOnly(source.serverPort()));
        QTcpSocket *c = open(EgressListener::Forward, source.serverPort());
        c->setReadBufferSize(64 * 1024); // a slow reader: stops taking bytes early
        QTRY_VERIFY(c->bytesAvailable() >= 64 * 1024);
        QTest::qWait(200); // on purpose: the relay fills everything it can (nothing shows when)
        const double before = threadCpuSeconds(QStringLiteral("egress"));
        QVERIFY(before >= 0);
        QTest::qWait(1000); // on purpose: the second of waiting whose CPU is measured
        const double spent = threadCpuSeconds(QStringLiteral("egress")) - before;
        // Waiting costs nothing (0 ticks here); a spin costs what the scheduler gives it: the whole
        // second on an idle machine, 0.25 s and more with nine runnable threads on two cores.
        QVERIFY2(spent < 0.1, qPrintable(QStringLiteral("the egress thread used %1 s of CPU while "
                                                        "waiting 1 s for a slow client")
                                             .arg(spent)));
        // And the bytes still arrive once the client reads.
        c->setReadBufferSize(0);
        qint64 got = 0;
        QTRY_VERIFY_WITH_TIMEOUT((got += c->readAll().size()) >= 32 * block.size(), 20000);
    }

    void connectionsPerSandboxAreCapped()
    {
        EgressProxy::Limits l;
        l.maxConnectionsPerSandbox = 3;
        m_service.reset();
        startService(l);
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet());
        QList<QTcpSocket *> idle;
        for (int i = 0; i < 3; ++i)
            idle.append(open()); // sends nothing: holds a slot
        QTcpSocket *fourth = open();
        readUntil(
            *fourth, [](const QByteArray &) { return false; }, 1500);
        QCOMPARE(fourth->state(), QAbstractSocket::UnconnectedState);
        QTRY_VERIFY(!log().isEmpty());
        QVERIFY(log()
                    .last()
                    .toObject()
                    .value(QStringLiteral("reason"))
                    .toString()
                    .contains(QLatin1String("too many connections")));
        for (QTcpSocket *s : idle)
            QCOMPARE(s->state(), QAbstractSocket::ConnectedState);
    }

    void repeatedDenialsAreFoldedAndBounded()
    {
        m_service->setPolicy(kSandbox, NetworkPolicy::off());
        QSignalSpy denied(m_service.get(), &EgressService::denied);
        for (int i = 0; i < 60; ++i)
            QVERIFY(
                request("CONNECT blocked.example:443 HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 403"));
        // Folded within the second: far fewer records than attempts, and every attempt counted.
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                int total = 0;
                for (const QJsonValue &v : log())
                    total += v.toObject().value(QStringLiteral("count")).toInt();
                return total == 60;
            }(),
            5000);
        QVERIFY2(log().size() < 20, qPrintable(QString::number(log().size())));
        QVERIFY(denied.size() < 20);
    }

    void gatewayAddsTheKeyAndForwardsModelCallsOnly()
    {
        Sandbox::Mocks::MockModelServer mock;
        QVERIFY(mock.listen());
        m_service->setPolicy(kSandbox, allowOnly(mock.port()));
        GatewayRoute route;
        route.provider = QStringLiteral("anthropic");
        route.upstream = mock.baseUrl();
        route.authHeader = "x-api-key";
        route.authValue = kRealKey;
        m_service->setGateway(kSandbox, route);

        const QByteArray body
            = R"({"model":"m","max_tokens":10,"stream":false,"messages":[{"role":"user","content":"hi"}]})";
        QTcpSocket *c = open(EgressListener::Gateway, 3129);
        c->write("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3129\r\nx-api-key: placeholder\r\n"
                 "Authorization: Bearer placeholder\r\nContent-Type: application/json\r\n"
                 "Content-Length: "
                 + QByteArray::number(body.size()) + "\r\n\r\n" + body);
        const QByteArray answer = readUntil(
            *c, [](const QByteArray &) { return false; }, 5000);
        QVERIFY2(answer.startsWith("HTTP/1.1 200"), answer.constData());
        QVERIFY2(answer.contains("\"type\":\"message\""), answer.constData());
        QVERIFY(!mock.requests().isEmpty());
        const auto &req = mock.requests().last();
        QCOMPARE(req.headers.value("x-api-key"), kRealKey);
        QVERIFY(!req.headers.contains("authorization"));

        // Anything but a model call is refused, and reported.
        QTcpSocket *d = open(EgressListener::Gateway, 3129);
        d->write("GET /v1/files HTTP/1.1\r\nHost: x\r\n\r\n");
        const QByteArray refused = readUntil(*d, headDone);
        QVERIFY2(refused.startsWith("HTTP/1.1 403"), refused.constData());
        QVERIFY(!refused.contains(kRealKey));
        QTRY_VERIFY(!log().isEmpty());
        QCOMPARE(log().last().toObject().value(QStringLiteral("via")).toString(),
                 QStringLiteral("gateway"));
    }

    void gatewayNeedsTheUpstreamAllowed()
    {
        Sandbox::Mocks::MockModelServer mock;
        QVERIFY(mock.listen());
        m_service->setPolicy(kSandbox, NetworkPolicy::publicInternet()); // no loopback entry
        GatewayRoute route;
        route.provider = QStringLiteral("openai");
        route.upstream = QUrl(mock.baseUrl().toString() + QStringLiteral("/v1"));
        route.sandboxBasePath = QStringLiteral("/v1");
        route.authHeader = "Authorization";
        route.authValue = "Bearer " + kRealKey;
        m_service->setGateway(kSandbox, route);
        QTcpSocket *c = open(EgressListener::Gateway, 3129);
        c->write("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
        const QByteArray answer = readUntil(*c, headDone);
        QVERIFY2(answer.startsWith("HTTP/1.1 403"), answer.constData());
        QVERIFY(answer.contains("loopback"));
        QCOMPARE(mock.requests().size(), 0);
    }

    void gatewaySpeaksTlsToTheProviderAndChecksItsCertificate_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<bool>("trusted");
        QTest::newRow("trusted, name matches") << QStringLiteral("localhost") << true;
        QTest::newRow("name does not match") << QStringLiteral("127.0.0.1.nip.test") << false;
    }
    void gatewaySpeaksTlsToTheProviderAndChecksItsCertificate()
    {
        QFETCH(QString, host);
        QFETCH(bool, trusted);
        if (!QSslSocket::supportsSsl())
            QFAIL("no TLS backend: install the Qt TLS plugin (libqt6network6's openssl backend)");
        QFile certFile(dataFile("server.pem")), keyFile(dataFile("server.key"));
        QVERIFY(certFile.open(QIODevice::ReadOnly) && keyFile.open(QIODevice::ReadOnly));
        QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
        tls.setLocalCertificate(QSslCertificate(certFile.readAll()));
        tls.setPrivateKey(QSslKey(keyFile.readAll(), QSsl::Rsa));
        QSslServer server;
        server.setSslConfiguration(tls);
        QVERIFY(server.listen(QHostAddress::LocalHost, 0));
        QByteArray seen;
        connect(&server, &QSslServer::pendingConnectionAvailable, this, [&] {
            auto *s = server.nextPendingConnection();
            connect(s, &QTcpSocket::readyRead, s, [s, &seen] {
                seen += s->readAll();
                if (seen.contains("\r\n\r\n"))
                    s->write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            });
        });
        m_dns->set(QStringLiteral("127.0.0.1.nip.test"), {QHostAddress(QHostAddress::LocalHost)});
        if (host == QLatin1String("localhost"))
            m_dns->set(QStringLiteral("localhost"), {QHostAddress(QHostAddress::LocalHost)});
        m_service->setPolicy(kSandbox, allowOnly(server.serverPort()));
        GatewayRoute route;
        route.provider = QStringLiteral("openai");
        route.upstream = QUrl(QStringLiteral("https://%1:%2/v1").arg(host).arg(server.serverPort()));
        route.sandboxBasePath = QStringLiteral("/v1");
        route.authHeader = "Authorization";
        route.authValue = "Bearer " + kRealKey;
        m_service->setGateway(kSandbox, route);
        QTcpSocket *c = open(EgressListener::Gateway, 3129);
        c->write("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
        const QByteArray answer = readUntil(*c,
                                            [](const QByteArray &b) { return b.endsWith("ok"); });
        if (trusted) {
            QVERIFY2(answer.startsWith("HTTP/1.1 200"), answer.constData());
            QVERIFY2(seen.startsWith("GET /v1/models HTTP/1.1\r\n"), seen.constData());
            QVERIFY(seen.contains(QByteArray("Authorization: Bearer " + kRealKey)));
        } else {
            QVERIFY2(answer.startsWith("HTTP/1.1 502"), answer.constData());
            QVERIFY(!seen.contains(kRealKey));
        }
    }
};

QTEST_GUILESS_MAIN(tst_EgressProxy)
#include "tst_egressproxy.moc"
