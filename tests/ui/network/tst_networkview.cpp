// The network page against a real sandboxd and a real sandbox: the policy is shown, a connection
// the sandbox was refused appears live (network.denied), and "Allow" adds its entry to the policy
// on the server, so that the next connection gets through.
#include "enginefixture.h"

#include <client/client.h>
#include <network/networklogmodel.h>
#include <network/networkview.h>

#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTableView>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include <memory>
#include <unistd.h>

using namespace Sandbox;
using namespace Sandbox::Ui;

class tst_NetworkView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void refusedConnectionAppearsAndAllowLetsItThrough();

private:
    EngineFixture m_engine;
    std::unique_ptr<Client> m_client;
    QTcpServer m_server; // a service on this host's loopback, answering "ok"
    int m_connections = 0;
};

void tst_NetworkView::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("needs root (sandboxd drops each sandbox to its own uid)");
    QVERIFY(m_server.listen(QHostAddress::LocalHost, 0));
    connect(&m_server, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket *s = m_server.nextPendingConnection()) {
            ++m_connections;
            s->write("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
            s->disconnectFromHost();
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
        }
    });
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_client = std::make_unique<Client>(
        ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    m_client->open();
    QTRY_COMPARE(m_client->rpc()->state(), RpcClient::State::Connected);
}

void tst_NetworkView::cleanupTestCase()
{
    m_client.reset();
    m_engine.cleanup();
}

void tst_NetworkView::refusedConnectionAppearsAndAllowLetsItThrough()
{
    const QJsonObject sb = m_engine.create(QStringLiteral("agents.create"),
                                           {{QStringLiteral("type"), QStringLiteral("claude-code")},
                                            {QStringLiteral("size"), QStringLiteral("lite")},
                                            {QStringLiteral("gateway"), false}},
                                           120000);
    QVERIFY2(!sb.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    const auto info = SandboxInfo::fromJson(sb);
    QVERIFY(info);
    QCOMPARE(info->networkPolicy.mode, NetworkPolicy::Mode::Off);

    NetworkView view(m_client.get(), info.value());
    view.resize(900, 600);
    view.show();
    QTRY_COMPARE(view.model()->rowCount(), 0);

    // The sandbox tries the host's service through the proxy: refused, and shown at once.
    const QString entry = QStringLiteral("127.0.0.1:%1").arg(m_server.serverPort());
    const QString curl = QStringLiteral("env -u NO_PROXY -u no_proxy curl -s -o /dev/null "
                                        "-w '%{http_code}' http://%1/")
                             .arg(entry);
    QJsonObject r = m_engine.rpc().result(QStringLiteral("agents.exec"),
                                          {{QStringLiteral("id"), info->id},
                                           {QStringLiteral("command"), curl}});
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("403"));
    QTRY_COMPARE_WITH_TIMEOUT(view.model()->rowCount(), 1, 10000);
    const QModelIndex row = view.model()->index(0, NetworkLogModel::Destination);
    QVERIFY(row.data().toString().contains(entry));
    QCOMPARE(row.data(NetworkLogModel::AllowEntryRole).toString(), entry);
    QCOMPARE(m_connections, 0);

    // Select it and allow it: the server's policy now names it, and the next connection passes.
    view.table()->selectionModel()->select(row, QItemSelectionModel::ClearAndSelect
                                                    | QItemSelectionModel::Rows);
    QSignalSpy changed(&view, &NetworkView::sandboxChanged);
    view.allowSelected();
    QTRY_COMPARE_WITH_TIMEOUT(changed.size(), 1, 10000);
    const auto now = changed.first().first().value<SandboxInfo>();
    QCOMPARE(now.networkPolicy.allow, QStringList{entry});
    const QJsonObject got = m_engine.rpc().result(QStringLiteral("agents.get"),
                                                  {{QStringLiteral("id"), info->id}});
    QCOMPARE(got.value(QStringLiteral("network")).toObject().value(QStringLiteral("allow")).toArray(),
             QJsonArray{entry});
    r = m_engine.rpc().result(QStringLiteral("agents.exec"), {{QStringLiteral("id"), info->id},
                                                              {QStringLiteral("command"), curl}});
    QCOMPARE(r.value(QStringLiteral("stdout")).toString(), QStringLiteral("200"));
    QCOMPARE(m_connections, 1);
}

QTEST_MAIN(tst_NetworkView)
#include "tst_networkview.moc"
