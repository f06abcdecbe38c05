// The console against a real sandboxd: streamed output as it comes, stdout and stderr apart,
// ANSI colours, exit code and duration, stop, cd, and a connection that drops mid-stream
// without losing or doubling a line.
#include <tcpproxy.h>
#include <uitest.h>

#include <console/commandline.h>
#include <console/consolebuffer.h>
#include <console/consolepage.h>
#include <console/consoleview.h>

#include <QPainter>
#include <QSignalSpy>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;
using Kind = ConsoleBuffer::LineKind;

namespace {
QList<QPair<Kind, QString>> linesOf(const ConsoleBuffer &b)
{
    QList<QPair<Kind, QString>> out;
    for (qint64 i = 0; i < b.lineCount(); ++i)
        out.append({b.line(i).kind, b.line(i).text});
    return out;
}

bool contains(const ConsoleBuffer &b, Kind kind, const QString &text)
{
    for (qint64 i = 0; i < b.lineCount(); ++i) {
        if (b.line(i).kind == kind && b.line(i).text == text)
            return true;
    }
    return false;
}

QString lastLine(const ConsoleBuffer &b)
{
    return b.lineCount() ? b.line(b.lineCount() - 1).text : QString();
}
} // namespace

class TestConsole final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        const auto sandbox = m_engine.createAgent(QStringLiteral("console-test"));
        QVERIFY2(sandbox, qPrintable(sandbox ? QString() : sandbox.error().message));
        m_sandbox = sandbox.value();
    }

    // Plain ASCII is drawn as glyphs placed by their advances (no shaping): the line spans the
    // width the same text takes drawn as text, where selection and clicks place its columns; and
    // a line with other characters looks the same way.
    void asciiLinesSpanTheirText_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("plain ASCII") << QStringLiteral("MMMMMMMMMMiiiiiiiiii|W");
        QTest::newRow("not ASCII") << QStringLiteral("MMMMMMMMMMiiiiiiiiii|\u00e9");
    }
    void asciiLinesSpanTheirText()
    {
        QFETCH(QString, text);
        ConsoleView view;
        view.resize(600, 200);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.appendOutput(ConsoleBuffer::Channel::Stdout, QByteArray(text.toUtf8() + '\n'));
        view.flushPendingUpdate();
        const QImage shown = view.viewport()->grab().toImage();
        const QRgb background = shown.pixel(shown.width() - 2, shown.height() - 2);
        // The columns with ink in them.
        const auto ink = [](const QImage &image, QRgb background) {
            int left = image.width();
            int right = -1;
            for (int y = 0; y < image.height(); ++y) {
                for (int x = 0; x < image.width(); ++x) {
                    if (image.pixel(x, y) != background) {
                        left = qMin(left, x);
                        right = qMax(right, x);
                    }
                }
            }
            return right - left + 1;
        };
        QImage drawn(shown.size(), QImage::Format_RGB32);
        drawn.fill(background);
        {
            QPainter p(&drawn);
            p.setFont(view.font());
            p.setPen(Qt::white);
            p.drawText(10, 40, text);
        }
        const int expected = ink(drawn, background);
        QVERIFY(expected > QFontMetrics(view.font()).horizontalAdvance(text) / 2);
        QVERIFY2(qAbs(ink(shown, background) - expected) <= 1,
                 qPrintable(QStringLiteral("%1 vs %2").arg(ink(shown, background)).arg(expected)));
    }

    void streamsOutputLive()
    {
        ConsolePage page(context(m_engine.client()));
        page.resize(900, 500);
        page.show();
        QSignalSpy finished(&page, &ConsolePage::commandFinished);
        page.run(QStringLiteral("for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.3; done; "
                                "printf '\\033[31mred\\033[0m plain\\n'; exit 3"));
        QVERIFY(page.isRunning());
        // The first lines are there while the command still runs: streamed, not collected.
        QVERIFY(UiTest::waitFor(
            [&] { return contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("out1")); },
            10000));
        QVERIFY(page.isRunning());
        QVERIFY(finished.wait(20000));
        const ExecResult result = finished.first().first().value<ExecResult>();
        QCOMPARE(result.exitCode, 3);

        const ConsoleBuffer &b = page.view()->buffer();
        for (int i = 1; i <= 3; ++i) {
            QVERIFY(contains(b, Kind::Stdout, QStringLiteral("out%1").arg(i)));
            QVERIFY(contains(b, Kind::Stderr, QStringLiteral("err%1").arg(i)));
        }
        // The echoed command, then the colour, then the summary with the exit code and duration.
        QVERIFY(b.line(0).kind == Kind::Command
                && b.line(0).text.startsWith(QStringLiteral("/workspace $ for i")));
        qint64 red = -1;
        for (qint64 i = 0; i < b.lineCount(); ++i) {
            if (b.line(i).text == QLatin1String("red plain"))
                red = i;
        }
        QVERIFY(red >= 0);
        QCOMPARE(b.line(red).spans.size(), 1);
        QCOMPARE(b.format(b.line(red).spans[0].format).foreground, AnsiParser::paletteColor(1));
        QCOMPARE(b.line(red).spans[0].length, 3);
        const QString summary = lastLine(b);
        QVERIFY2(summary.startsWith(QStringLiteral("[exit 3 · ")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral(" s]")) || summary.contains(QStringLiteral(" ms]")),
                 qPrintable(summary));
        QCOMPARE(b.line(b.lineCount() - 1).kind, Kind::Error);
        QVERIFY(!page.isRunning());
    }

    void stopKillsTheCommand()
    {
        ConsolePage page(context(m_engine.client()));
        page.show();
        QSignalSpy running(&page, &ConsolePage::runningChanged);
        page.run(QStringLiteral("echo started; sleep 60; echo never"));
        QVERIFY(UiTest::waitFor(
            [&] { return contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("started")); },
            10000));
        QElapsedTimer t;
        t.start();
        page.stop();
        QVERIFY(UiTest::waitFor([&] { return !page.isRunning(); }, 10000));
        QVERIFY(t.elapsed() < 10000);
        QVERIFY(!contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("never")));
        const QString last = lastLine(page.view()->buffer());
        QVERIFY2(last.contains(QStringLiteral("stopped")), qPrintable(last));
        // The sandbox is free again: the next command runs.
        QSignalSpy finished(&page, &ConsolePage::commandFinished);
        page.run(QStringLiteral("echo again"));
        QVERIFY(finished.wait(10000));
        QVERIFY(contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("again")));
    }

    void closingTheConsoleStopsItsCommand()
    {
        {
            ConsolePage page(context(m_engine.client()));
            page.run(QStringLiteral("echo started; exec sleep 301"));
            QVERIFY(UiTest::waitFor(
                [&] {
                    return contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("started"));
                },
                10000));
        }
        QVERIFY(UiTest::waitFor(
            [&] {
                const auto r = m_engine.exec(m_sandbox.id,
                                             QStringLiteral("pgrep -f 'sleep 30[1]'"));
                return r && r->exitCode == 1;
            },
            10000));
    }

    void cdChangesTheWorkingDirectory()
    {
        ConsolePage page(context(m_engine.client()));
        QSignalSpy finished(&page, &ConsolePage::commandFinished);
        // A command without any output still ends (its stream.end comes before the answer).
        page.run(QStringLiteral("mkdir -p sub/dir"));
        QVERIFY(finished.wait(10000));
        page.run(QStringLiteral("cd sub/dir"));
        QVERIFY(finished.wait(10000));
        QCOMPARE(page.workingDirectory(), QStringLiteral("/workspace/sub/dir"));
        page.run(QStringLiteral("pwd"));
        QVERIFY(finished.wait(10000));
        QVERIFY(contains(page.view()->buffer(), Kind::Stdout, QStringLiteral("/workspace/sub/dir")));
        page.run(QStringLiteral("cd /etc"));
        QVERIFY(UiTest::waitFor([&] { return !page.isRunning(); }, 10000));
        QCOMPARE(page.workingDirectory(), QStringLiteral("/workspace/sub/dir")); // refused: outside
        page.run(QStringLiteral("cd"));
        QVERIFY(UiTest::waitFor([&] { return !page.isRunning(); }, 10000));
        QCOMPARE(page.workingDirectory(), QStringLiteral("/workspace"));
    }

    void historyIsKept()
    {
        {
            ConsolePage page(context(m_engine.client()));
            QSignalSpy finished(&page, &ConsolePage::commandFinished);
            page.run(QStringLiteral("echo first"));
            QVERIFY(finished.wait(10000));
            page.run(QStringLiteral("echo second"));
            QVERIFY(finished.wait(10000));
        }
        ConsolePage again(context(m_engine.client()));
        const QStringList h = again.commandLine()->history();
        QVERIFY(h.size() >= 2);
        QCOMPARE(h.last(), QStringLiteral("echo second"));
        QCOMPARE(h.at(h.size() - 2), QStringLiteral("echo first"));
    }

    // The connection drops three times while a command streams 3000 lines: every line arrives,
    // once, in order (core resumes the stream after the last sequence number it saw).
    void reconnectKeepsTheConsoleWhole()
    {
        TcpProxy proxy(m_engine.process().url());
        QVERIFY(proxy.listen());
        QObject owner;
        auto *client = new Client(ConnectionProfile::remote(proxy.url(), m_engine.process().key()),
                                  &owner);
        RpcClient::ReconnectPolicy policy;
        policy.initialDelayMs = 50;
        policy.maxDelayMs = 200;
        client->rpc()->setReconnectPolicy(policy);
        client->open();
        QVERIFY(
            UiTest::waitFor([&] { return client->rpc()->state() == RpcClient::State::Connected; },
                            10000));

        ConsolePage page(context(client));
        page.show();
        QSignalSpy finished(&page, &ConsolePage::commandFinished);
        QSignalSpy failed(&page, &ConsolePage::commandFailed);
        page.run(QStringLiteral("i=1; while [ $i -le 3000 ]; do echo \"line $i\"; "
                                "if [ $((i % 150)) -eq 0 ]; then sleep 0.1; fi; i=$((i+1)); done"));
        int drops = 0;
        for (int at : {300, 1200, 2200}) {
            QVERIFY(UiTest::waitFor(
                [&] { return page.view()->buffer().totalLines() >= at || !page.isRunning(); },
                20000));
            if (!page.isRunning())
                break;
            proxy.dropAll();
            ++drops;
        }
        QVERIFY(finished.wait(60000) || !finished.isEmpty());
        QCOMPARE(failed.size(), 0);
        QVERIFY2(drops >= 2, "the command ended before the connection could be dropped");
        QVERIFY(proxy.connectionsAccepted() > drops);

        QStringList out;
        for (const auto &[kind, text] : linesOf(page.view()->buffer())) {
            if (kind == Kind::Stdout)
                out << text;
        }
        QCOMPARE(out.size(), 3000);
        for (int i = 0; i < 3000; ++i)
            QCOMPARE(out[i], QStringLiteral("line %1").arg(i + 1));
        QCOMPARE(finished.first().first().value<ExecResult>().exitCode, 0);
    }

    void stoppedSandboxSaysSo()
    {
        const auto second = m_engine.createAgent(QStringLiteral("stopped-one"));
        QVERIFY(second);
        Client *c = m_engine.client();
        QVERIFY(UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().stop(second->id, this, cb); }));
        SandboxPageContext ctx{c, second.value(), nullptr};
        ConsolePage page(ctx);
        QSignalSpy failed(&page, &ConsolePage::commandFailed);
        page.run(QStringLiteral("echo hi"));
        QVERIFY(failed.wait(10000));
        QCOMPARE(failed.first().first().value<Error>().code, ErrorCode::SandboxNotRunning);
        QVERIFY(lastLine(page.view()->buffer()).contains(QStringLiteral("not running")));
    }

private:
    SandboxPageContext context(Client *client) const
    {
        return SandboxPageContext{client, m_sandbox, nullptr};
    }

    UiTest::Engine m_engine;
    SandboxInfo m_sandbox;
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
