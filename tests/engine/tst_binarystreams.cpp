// Binary output frames (docs/protocol.md 2.6) against a real sandboxd and a real sandbox: output of
// every byte value reaches the product's client byte-exact through the binary path (100 MiB on a
// terminal); a client that never asked still gets text and base64; a stream's replay comes in the
// encoding of the connection that resumes it; a client set up as the programs' main() sets one
// up takes flood after flood without touching fresh memory.
#include "enginefixture.h"
#include "streamfollow.h"

#include <client/allocatortuning.h>
#include <client/client.h>
#include <client/execstream.h>
#include <client/rpcclient.h>
#include <client/terminalsession.h>
#include <client/transport.h>

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <array>
#include <functional>
#include <numeric>

#include <sys/resource.h>

namespace {

QByteArray decoded(const QJsonObject &params)
{
    if (params.contains(QStringLiteral("dataBase64")))
        return QByteArray::fromBase64(
            params.value(QStringLiteral("dataBase64")).toString().toLatin1());
    return params.value(QStringLiteral("data")).toString().toUtf8();
}

QList<QJsonObject> outputOf(const RpcTestClient &client, const QString &streamId)
{
    QList<QJsonObject> out;
    for (const QJsonObject &n : client.notifications) {
        const QJsonObject p = n.value(QStringLiteral("params")).toObject();
        if (n.value(QStringLiteral("method")).toString() == QLatin1String("stream.output")
            && p.value(QStringLiteral("streamId")).toString() == streamId)
            out.append(p);
    }
    return out;
}

// Minor page faults of this process so far: pages touched for the first time.
qint64 pageFaults()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// The most memory this process has held so far (VmHWM), in pages of 4 KiB.
qint64 peakPages()
{
    QFile status(QStringLiteral("/proc/self/status"));
    if (!status.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : status.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong() / 4;
    return 0;
}

} // namespace

class tst_BinaryStreams : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    // First: the floods of the tests after it free blocks big enough to raise glibc's own
    // thresholds for the rest of the process, which would keep the memory without the setting.
    void laterFloodsReuseTheClientsMemory();
    void everyByteValueArrivesExactOnBothChannels();
    void hundredMegabytesThroughATerminal();
    void hundredMegabytesAcrossAResume();
    void jsonClientGetsTextAndBase64();
    void replayComesInTheResumingConnectionsEncoding();

private:
    struct TerminalRun;
    QString sha256In(const QString &command);
    // `head -c bytes blob` as a streamed exec, all of it kept (maxOutputBytes).
    Sandbox::ExecStream *streamBlob(Sandbox::Client &client, qint64 bytes);
    Sandbox::TerminalSession *openRawTerminal(Sandbox::Client &client, const QString &script,
                                              TerminalRun &run);

    EngineFixture m_engine;
    QString m_id;
};

void tst_BinaryStreams::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    m_id = m_engine.createAgent(QStringLiteral("codex"), QStringLiteral("standard-2"));
    QVERIFY2(!m_id.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    // 100 MiB of random bytes: every byte value, many times over, and no valid UTF-8 for long.
    const QJsonObject made
        = m_engine.exec(m_id,
                        QStringLiteral("head -c 104857600 /dev/urandom > blob && wc -c < blob"),
                        {{QStringLiteral("timeout"), 120000}}, 180000);
    QCOMPARE(made.value(QStringLiteral("stdout")).toString().trimmed(),
             QStringLiteral("104857600"));
}

void tst_BinaryStreams::cleanupTestCase()
{
    m_engine.cleanup();
}

QString tst_BinaryStreams::sha256In(const QString &command)
{
    const QJsonObject r
        = m_engine.rpc().result(QStringLiteral("agents.exec"),
                                {{QStringLiteral("id"), m_id},
                                 {QStringLiteral("command"),
                                  QString(command + QStringLiteral(" | sha256sum"))}},
                                120000);
    return r.value(QStringLiteral("stdout")).toString().section(u' ', 0, 0);
}

Sandbox::ExecStream *tst_BinaryStreams::streamBlob(Sandbox::Client &client, qint64 bytes)
{
    Sandbox::ExecOptions options;
    options.maxOutputBytes = bytes;
    options.timeoutMs = 120000;
    return client.sandboxes().execStreaming(m_id,
                                            QStringList{QStringLiteral("head"),
                                                        QStringLiteral("-c"), QString::number(bytes),
                                                        QStringLiteral("blob")},
                                            options, this);
}

// An exec's stream (the console's path): 48 MiB on stdout and 3 MiB on stderr, interleaved, each
// channel byte-exact, and carried by binary messages.
void tst_BinaryStreams::everyByteValueArrivesExactOnBothChannels()
{
    Sandbox::Client client(
        Sandbox::ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    qint64 binaryMessages = 0;
    connect(client.rpc()->transport(), &Sandbox::Transport::binaryReceived, this,
            [&](const QByteArray &) { ++binaryMessages; });
    client.open();
    Sandbox::ExecOptions options;
    options.maxOutputBytes = 64 * 1024 * 1024;
    options.timeoutMs = 120000;
    QCryptographicHash out(QCryptographicHash::Sha256), err(QCryptographicHash::Sha256);
    qint64 outBytes = 0, errBytes = 0;
    bool finished = false;
    Sandbox::ExecResult result;
    auto *stream = client.sandboxes().execStreaming(
        m_id,
        QStringList{QStringLiteral("sh"), QStringLiteral("-c"),
                    QStringLiteral("head -c 50331648 blob & tail -c 3145728 blob >&2; wait")},
        options, this);
    connect(stream, &Sandbox::ExecStream::output, this,
            [&](const QString &channel, const QByteArray &data) {
                if (channel == QLatin1String("stderr")) {
                    err.addData(data);
                    errBytes += data.size();
                } else {
                    out.addData(data);
                    outBytes += data.size();
                }
            });
    connect(stream, &Sandbox::ExecStream::finished, this, [&](const Sandbox::ExecResult &r) {
        result = r;
        finished = true;
    });
    connect(stream, &Sandbox::ExecStream::failed, this, [&](const Sandbox::Error &e) {
        qWarning() << e.message;
        finished = true;
    });
    QTRY_VERIFY_WITH_TIMEOUT(finished, 120000);
    QCOMPARE(result.exitCode, 0);
    QCOMPARE(outBytes, qint64(50331648));
    QCOMPARE(errBytes, qint64(3145728));
    QCOMPARE(QString::fromLatin1(out.result().toHex()),
             sha256In(QStringLiteral("head -c 50331648 blob")));
    QCOMPARE(QString::fromLatin1(err.result().toHex()),
             sha256In(QStringLiteral("tail -c 3145728 blob")));
    // Every chunk came as a binary message (a chunk is at most one read of the supervisor).
    QVERIFY2(binaryMessages >= (50331648 + 3145728) / (1024 * 1024),
             qPrintable(QString::number(binaryMessages)));
    delete stream;
}

// What a terminal opened by openRawTerminal() brought: its output hashed and counted, and how
// it ended.
struct tst_BinaryStreams::TerminalRun
{
    QCryptographicHash hash{QCryptographicHash::Sha256};
    qint64 received = 0;
    bool finished = false;
    bool reset = false;
    Sandbox::ExecResult result;
    std::function<void()> afterOutput; // after each chunk is counted
};

// `script` in a 200x50 terminal in raw mode (no output processing: the bytes as written),
// through the product's TerminalSession.
Sandbox::TerminalSession *tst_BinaryStreams::openRawTerminal(Sandbox::Client &client,
                                                             const QString &script,
                                                             TerminalRun &run)
{
    Sandbox::TerminalOptions options;
    options.cols = 200;
    options.rows = 50;
    auto *session
        = client.sandboxes().openTerminal(m_id,
                                          QStringList{QStringLiteral("sh"), QStringLiteral("-c"),
                                                      QStringLiteral("stty raw -echo; ") + script},
                                          options, this);
    connect(session, &Sandbox::TerminalSession::output, this, [&run](const QByteArray &data) {
        run.hash.addData(data);
        run.received += data.size();
        if (run.afterOutput)
            run.afterOutput();
    });
    connect(session, &Sandbox::TerminalSession::reset, this, [&run] { run.reset = true; });
    connect(session, &Sandbox::TerminalSession::finished, this,
            [&run](const Sandbox::ExecResult &r) {
                run.result = r;
                run.finished = true;
            });
    connect(session, &Sandbox::TerminalSession::failed, this, [&run](const Sandbox::Error &e) {
        qWarning() << e.message;
        run.finished = true;
    });
    return session;
}

// 100 MiB through a terminal in raw mode (no output processing: the bytes as written), through
// the product's TerminalSession, byte-exact and as binary frames.
void tst_BinaryStreams::hundredMegabytesThroughATerminal()
{
    Sandbox::Client client(
        Sandbox::ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    qint64 binaryMessages = 0;
    connect(client.rpc()->transport(), &Sandbox::Transport::binaryReceived, this,
            [&](const QByteArray &) { ++binaryMessages; });
    client.open();
    TerminalRun run;
    auto *session = openRawTerminal(client, QStringLiteral("cat blob"), run);
    QTRY_VERIFY_WITH_TIMEOUT(run.finished, 120000);
    QCOMPARE(run.result.exitCode, 0);
    QCOMPARE(run.received, qint64(104857600));
    QCOMPARE(QString::fromLatin1(run.hash.result().toHex()), sha256In(QStringLiteral("cat blob")));
    QVERIFY2(binaryMessages >= 100, qPrintable(QString::number(binaryMessages)));
    delete session;
}

// 100 MiB through a terminal in raw mode (no output processing: the bytes as written), with the
// connection dropped near the end of the first half: the resume replays what the client missed
// from the engine's backlog, as binary frames, and the second half follows live.
void tst_BinaryStreams::hundredMegabytesAcrossAResume()
{
    constexpr qint64 half = 52428800;
    constexpr qint64 dropAt = half - 3 * 1024 * 1024;
    m_engine.rpc().result(QStringLiteral("agents.exec"),
                          {{QStringLiteral("id"), m_id},
                           {QStringLiteral("command"), QStringLiteral("rm -f go")}});
    Sandbox::Client client(
        Sandbox::ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    Sandbox::RpcClient::ReconnectPolicy policy;
    policy.initialDelayMs = 50;
    policy.jitter = 0;
    client.rpc()->setReconnectPolicy(policy);
    qint64 binaryMessages = 0;
    connect(client.rpc()->transport(), &Sandbox::Transport::binaryReceived, this,
            [&](const QByteArray &) { ++binaryMessages; });
    client.open();

    TerminalRun run;
    bool dropped = false;
    qint64 binaryAtDrop = 0;
    run.afterOutput = [&] {
        if (!dropped && run.received >= dropAt) {
            dropped = true;
            binaryAtDrop = binaryMessages;
            client.rpc()->transport()->close(); // as a network drop: the client reconnects
        }
    };
    auto *session = openRawTerminal(
        client,
        QStringLiteral("head -c %1 blob; while [ ! -e go ]; do sleep 0.02; done; tail -c +%2 blob")
            .arg(half)
            .arg(half + 1),
        run);
    // The first half, the drop, the reconnect and the replay of what was missed...
    QTRY_VERIFY2_WITH_TIMEOUT(run.received >= half,
                              qPrintable(QStringLiteral("received %1 of %2; the engine's log:\n%3")
                                             .arg(run.received)
                                             .arg(half)
                                             .arg(m_engine.process().log().right(4000))),
                              120000);
    QVERIFY(dropped);
    QCOMPARE(run.received, half);
    QVERIFY2(binaryMessages > binaryAtDrop, "the replay came as binary frames");
    // ...then the second half, live.
    m_engine.rpc().result(QStringLiteral("agents.exec"),
                          {{QStringLiteral("id"), m_id},
                           {QStringLiteral("command"), QStringLiteral("touch go")}});
    QTRY_VERIFY_WITH_TIMEOUT(run.finished, 120000);
    QVERIFY(!run.reset);
    QCOMPARE(run.result.exitCode, 0);
    QCOMPARE(run.received, 2 * half);
    QCOMPARE(QString::fromLatin1(run.hash.result().toHex()), sha256In(QStringLiteral("cat blob")));
    delete session;
}

// A client that never asks for binary frames (the Worker's relay, older apps): text in `data`,
// bytes that are not UTF-8 in `dataBase64`, and never a binary message.
void tst_BinaryStreams::jsonClientGetsTextAndBase64()
{
    RpcTestClient json;
    QVERIFY(json.open(m_engine.process().wsUrl(), m_engine.process().key()));
    const QJsonObject r
        = json.result(QStringLiteral("agents.exec"),
                      {{QStringLiteral("id"), m_id},
                       {QStringLiteral("command"),
                        QStringLiteral(
                            "printf 'h\\303\\251llo\\n'; sleep 0.1; head -c 65536 blob >&2")},
                       {QStringLiteral("options"), QJsonObject{{QStringLiteral("stream"), true}}}});
    const QString streamId = r.value(QStringLiteral("streamId")).toString();
    QVERIFY(!streamId.isEmpty());
    QByteArray out, err;
    bool sawBase64 = false;
    for (const QJsonObject &p : outputOf(json, streamId)) {
        if (p.value(QStringLiteral("channel")).toString() == QLatin1String("stderr")) {
            err += decoded(p);
            sawBase64 = sawBase64 || p.contains(QStringLiteral("dataBase64"));
        } else {
            QVERIFY(p.contains(QStringLiteral("data")));
            out += decoded(p);
        }
    }
    QCOMPARE(out, QByteArray("h\xc3\xa9llo\n"));
    QCOMPARE(err.size(), 65536);
    QVERIFY(sawBase64);
    QCOMPARE(QString::fromLatin1(QCryptographicHash::hash(err, QCryptographicHash::Sha256).toHex()),
             sha256In(QStringLiteral("head -c 65536 blob")));
    QVERIFY(json.binaryMessages.isEmpty());
}

// A stream started on a binary connection and resumed on a JSON one gets its replay as text (and
// the other way round), the same chunks under the same seq.
void tst_BinaryStreams::replayComesInTheResumingConnectionsEncoding()
{
    RpcTestClient binary;
    QVERIFY(binary.open(m_engine.process().wsUrl(), m_engine.process().key()));
    QCOMPARE(binary
                 .result(QStringLiteral("rpc.streamEncoding"),
                         {{QStringLiteral("encoding"), QStringLiteral("binary")}})
                 .value(QStringLiteral("encoding"))
                 .toString(),
             QStringLiteral("binary"));
    const QJsonObject r
        = binary.result(QStringLiteral("agents.exec"),
                        {{QStringLiteral("id"), m_id},
                         {QStringLiteral("command"),
                          QStringLiteral(
                              "printf 'h\\303\\251llo\\n'; sleep 0.1; printf '\\377\\376' >&2")},
                         {QStringLiteral("options"),
                          QJsonObject{{QStringLiteral("stream"), true}}}});
    const QString streamId = r.value(QStringLiteral("streamId")).toString();
    QVERIFY(!streamId.isEmpty());
    QCOMPARE(binary.binaryMessages.size(), 2);
    const QList<QJsonObject> first = outputOf(binary, streamId);
    QCOMPARE(first.size(), 2);

    RpcTestClient json;
    QVERIFY(json.open(m_engine.process().wsUrl(), m_engine.process().key()));
    QCOMPARE(json.result(QStringLiteral("stream.resume"),
                         {{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}})
                 .value(QStringLiteral("done"))
                 .toBool(),
             true);
    QTRY_COMPARE(outputOf(json, streamId).size(), 2);
    const QList<QJsonObject> replay = outputOf(json, streamId);
    QVERIFY(json.binaryMessages.isEmpty());
    QCOMPARE(replay[0].value(QStringLiteral("data")).toString(), QStringLiteral("h\u00e9llo\n"));
    QCOMPARE(replay[1].value(QStringLiteral("dataBase64")).toString(), QStringLiteral("//4="));
    for (int i = 0; i < 2; ++i) {
        QCOMPARE(replay[i].value(QStringLiteral("seq")), first[i].value(QStringLiteral("seq")));
        QCOMPARE(replay[i].value(QStringLiteral("channel")),
                 first[i].value(QStringLiteral("channel")));
        QCOMPARE(replay[i].value(QStringLiteral("requestId")),
                 first[i].value(QStringLiteral("requestId")));
        QCOMPARE(decoded(replay[i]), decoded(first[i]));
    }

    // And back: a binary connection resuming gets the same two chunks as binary frames.
    RpcTestClient again;
    QVERIFY(again.open(m_engine.process().wsUrl(), m_engine.process().key()));
    again.result(QStringLiteral("rpc.streamEncoding"),
                 {{QStringLiteral("encoding"), QStringLiteral("binary")}});
    again.result(QStringLiteral("stream.resume"),
                 {{QStringLiteral("streamId"), streamId}, {QStringLiteral("after"), 0}});
    QTRY_COMPARE(again.binaryMessages.size(), 2);
    QCOMPARE(again.binaryMessages, binary.binaryMessages);
}

// A program that follows streams (sandboxctl, the desktop) sets the allocator as main() does: the
// floods of output after the first then reuse the memory it touched (the socket's reads, each
// message's array) instead of faulting in fresh pages, which cost 20-40 us each on the virtual
// machines this runs on, several times what the bytes' copies cost.
void tst_BinaryStreams::laterFloodsReuseTheClientsMemory()
{
    QVERIFY(Sandbox::tuneAllocatorForStreams());
    // The peak starts here (5: resets VmHWM): memory the process held before, given back before
    // the setting, is not a peak these floods may fault in again unseen.
    QFile peak(QStringLiteral("/proc/self/clear_refs"));
    QVERIFY(peak.open(QIODevice::WriteOnly) && peak.write("5") == 1);
    peak.close();
    Sandbox::Client client(
        Sandbox::ConnectionProfile::remote(m_engine.process().url(), m_engine.process().key()));
    client.open();
    constexpr qint64 bytes = 16 * 1024 * 1024;
    std::array<qint64, 6> faults{};
    for (qint64 &f : faults) {
        const qint64 before = pageFaults();
        const qint64 peakBefore = peakPages();
        auto *stream = streamBlob(client, bytes);
        const qint64 received = StreamFollow::receivedUntilEnd(stream, 120000);
        // Faults that a new peak does not explain, i.e. memory given back and touched again: a
        // flood that holds more than any before it (its client behind on a busy machine) faults
        // in what it adds, with or without the setting.
        f = pageFaults() - before - (peakPages() - peakBefore);
        QCOMPARE(received, bytes);
        delete stream;
    }
    const qint64 later = std::accumulate(faults.begin() + 1, faults.end(), qint64(0));
    qInfo("page faults beyond a new peak: first flood %lld, the %d later ones %lld (%lld pages of "
          "output each)",
          static_cast<long long>(faults[0]), int(faults.size() - 1), static_cast<long long>(later),
          static_cast<long long>(bytes / 4096));
    // Without the setting the later floods fault in up to a flood's size in fresh pages, most of
    // them (some reuse what the last one left: glibc gives back its heap's top beyond twice the
    // largest block freed so far, and the blocks' sizes follow the socket's reads); with it, none
    // (a quarter MiB is left for the odd block the test's own work gives back and takes again).
    QVERIFY2(later < 64, "the later floods touched fresh memory again");
}

QTEST_GUILESS_MAIN(tst_BinaryStreams)
#include "tst_binarystreams.moc"
