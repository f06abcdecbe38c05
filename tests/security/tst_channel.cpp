// Hostile sandboxes against the supervisor channel and the sandbox's launch (issue 9: attacks 3,
// 4, 8 and 10): the user's environment never reaches bubblewrap or the supervisor, the channel
// cannot be taken from inside, every sandbox runs under a seccomp filter with a curated /etc and
// no host path on its command lines, kills win against a fork bomb, and a supervisor that turns
// hostile (forged frames, a second HELLO, a hang, a crash) ends only its own sandbox. Each case
// runs against a real sandboxd as root, with GET /health probed all along (within 100 ms).
#include "enginefixture.h"
#include "healthprobe.h"
#include "sandboxprocesses.h"

#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The names in a process's environment.
QStringList environmentNames(int pid)
{
    QStringList names;
    for (const QByteArray &kv : readAll(QStringLiteral("/proc/%1/environ").arg(pid)).split('\0')) {
        if (!kv.isEmpty())
            names.append(QString::fromUtf8(kv.left(kv.indexOf('='))));
    }
    names.sort();
    return names;
}

} // namespace

class tst_Channel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    // Attack 3
    void userEnvironmentNeverReachesBubblewrap();
    // Attack 10
    void noHostPathOnAnyCommandLine();
    void etcIsCurated();
    void seccompRefusesWhatASandboxNeverNeeds();
    // Attack 4
    void channelCannotBeTakenFromInside();
    void outputIsBoundedByTheEngine();
    // Attack 8
    void forkBombDiesAtTheTimeout_data();
    void forkBombDiesAtTheTimeout();
    void cancelKillsTheWholeTree();
    // A supervisor that turned hostile (attacks 4 and 10), against an engine of its own.
    void hostileSupervisorEndsOnlyItsSandbox_data();
    void hostileSupervisorEndsOnlyItsSandbox();
    void forgedOutputIsCountedByTheEngine();
    void hostileWatchEndsOnlyItsSandbox();

private:
    QString create(EngineFixture &engine, const QJsonObject &extra = {});
    QJsonObject exec(RpcTestClient &rpc, const QString &id, const QJsonValue &command,
                     int timeoutMs = 60000, const QJsonObject &moreOptions = {});
    QString stdoutOf(const QString &id, const QJsonValue &command);
    void checkHealth(const HealthProbe &probe, const char *what);
    bool startHostileEngine();

    EngineFixture m_engine;
    QString m_sandbox; // one ordinary sandbox shared by the read-only checks
    QTemporaryDir m_host;
    std::unique_ptr<EngineFixture> m_hostile;
};

void tst_Channel::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("these attacks are on the engine as the README runs it: root");
    QVERIFY(m_host.isValid());
    ::chmod(QFile::encodeName(m_host.path()).constData(), 0755);
    QVERIFY2(m_engine.start({QStringLiteral("--max-running"), QStringLiteral("16"),
                             QStringLiteral("--max-memory-mb"), QStringLiteral("65536")}),
             qPrintable(m_engine.process().log()));
    m_sandbox = create(m_engine);
    QVERIFY(!m_sandbox.isEmpty());
}

void tst_Channel::cleanupTestCase()
{
    m_engine.cleanup();
    if (m_hostile)
        m_hostile->cleanup();
}

QString tst_Channel::create(EngineFixture &engine, const QJsonObject &extra)
{
    const QString id = engine.createAgent(QStringLiteral("claude-code"), QStringLiteral("lite"),
                                          extra);
    if (id.isEmpty())
        qWarning("create failed: %s", dump(engine.rpc().lastError()).constData());
    return id;
}

QJsonObject tst_Channel::exec(RpcTestClient &rpc, const QString &id, const QJsonValue &command,
                              int timeoutMs, const QJsonObject &moreOptions)
{
    QJsonObject options{{QStringLiteral("timeout"), timeoutMs}};
    for (auto it = moreOptions.begin(); it != moreOptions.end(); ++it)
        options.insert(it.key(), it.value());
    return rpc.call(QStringLiteral("agents.exec"),
                    {{QStringLiteral("id"), id},
                     {QStringLiteral("command"), command},
                     {QStringLiteral("options"), options}},
                    timeoutMs + 60000);
}

QString tst_Channel::stdoutOf(const QString &id, const QJsonValue &command)
{
    const QJsonObject r = exec(m_engine.rpc(), id, command);
    if (!r.contains(QStringLiteral("result")))
        qWarning("exec failed: %s", dump(r).constData());
    return r.value(QStringLiteral("result")).toObject().value(QStringLiteral("stdout")).toString();
}

void tst_Channel::checkHealth(const HealthProbe &probe, const char *what)
{
    qInfo("GET /health while %s: %s", what, qPrintable(probe.summary()));
    const QString stall = probe.stall();
    QVERIFY2(stall.isEmpty(), qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(what), stall)));
}

// Attack 3: the creation env used to be bubblewrap's own environment, so LD_PRELOAD ran a library
// inside bwrap, in the host's namespaces. The engine's API refuses LD_* (-32602); underneath it,
// bwrap and the supervisor get a fixed environment whatever the sandbox's is.
void tst_Channel::userEnvironmentNeverReachesBubblewrap()
{
    // A library that, loaded anywhere it can see the host, leaves a mark there.
    const QString marker = m_host.path() + QStringLiteral("/preloaded");
    const QString source = m_host.path() + QStringLiteral("/preload.c");
    const QString library = m_host.path() + QStringLiteral("/preload.so");
    {
        QFile c(source);
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write(QStringLiteral("#include <stdio.h>\n#include <unistd.h>\n"
                               "__attribute__((constructor)) static void mark(void) {\n"
                               "  FILE *f = fopen(\"%1\", \"a\");\n"
                               "  if (f) { fprintf(f, \"%d\\n\", (int)getpid()); fclose(f); }\n}\n")
                    .arg(marker)
                    .toUtf8());
    }
    QProcess cc;
    cc.start(QStringLiteral("cc"), {QStringLiteral("-shared"), QStringLiteral("-fPIC"),
                                    QStringLiteral("-o"), library, source});
    QVERIFY(cc.waitForFinished(60000));
    QVERIFY2(cc.exitCode() == 0, cc.readAllStandardError().constData());
    ::chmod(QFile::encodeName(library).constData(), 0755);

    QJsonObject env{{QStringLiteral("SANDBOX_TEST_SECRET"), QStringLiteral("s3cret")},
                    {QStringLiteral("LD_PRELOAD"), library}};
    QString id = create(m_engine, {{QStringLiteral("env"), env}});
    if (id.isEmpty()) {
        // The API refuses LD_* outright: fine, the rest must hold without it too.
        QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32602);
        env.remove(QStringLiteral("LD_PRELOAD"));
        id = create(m_engine, {{QStringLiteral("env"), env}});
    }
    QVERIFY(!id.isEmpty());
    // The sandbox's commands get the environment ...
    QCOMPARE(stdoutOf(id, QStringLiteral("printenv SANDBOX_TEST_SECRET")),
             QStringLiteral("s3cret\n"));
    // ... bubblewrap and the supervisor do not: PATH and LANG (and bwrap's PWD), nothing else.
    int checked = 0;
    for (int pid : sandboxProcesses(id)) {
        const QString exe
            = QFileInfo(QFile::symLinkTarget(QStringLiteral("/proc/%1/exe").arg(pid))).fileName();
        if (exe != QLatin1String("bwrap") && exe != QLatin1String("sandbox-supervisor"))
            continue;
        ++checked;
        const QStringList names = environmentNames(pid);
        // bwrap adds PWD for its --chdir.
        QVERIFY2(names == (QStringList{QStringLiteral("LANG"), QStringLiteral("PATH")})
                     || names
                            == (QStringList{QStringLiteral("LANG"), QStringLiteral("PATH"),
                                            QStringLiteral("PWD")}),
                 qPrintable(
                     QStringLiteral("%1 (pid %2): %3").arg(exe).arg(pid).arg(names.join(u' '))));
    }
    QVERIFY2(checked >= 2, "bwrap and the supervisor were not found in the sandbox's cgroup");
    QVERIFY2(!QFileInfo::exists(marker),
             "the creation env's LD_PRELOAD ran outside the sandbox's namespaces");
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 120000);
}

// Attack 10: /proc/1/cmdline used to show bwrap's arguments, with the host paths of the data dir
// and the supervisor.
void tst_Channel::noHostPathOnAnyCommandLine()
{
    const QString all = stdoutOf(m_sandbox, QStringLiteral("for f in /proc/[0-9]*/cmdline; do "
                                                           "tr '\\0' ' ' < $f; echo; done"));
    QVERIFY2(all.contains(QLatin1String("sandbox-supervisor")), qPrintable(all));
    for (const QString &host :
         {m_engine.process().dataDir(), QStringLiteral(SANDBOXD_BIN).section(u'/', 0, -3),
          QStringLiteral("--bind"), QStringLiteral("--ro-bind")}) {
        QVERIFY2(!all.contains(host), qPrintable(QStringLiteral("'%1' in: %2").arg(host, all)));
    }
    const QString init = stdoutOf(m_sandbox, QStringLiteral("tr '\\0' ' ' < /proc/1/cmdline"));
    QVERIFY2(QRegularExpression(QStringLiteral("^(/usr/bin/)?bwrap --args 4 "
                                               "/run/sandbox/sandbox-supervisor --channel-fd 3 $"))
                 .match(init)
                 .hasMatch(),
             qPrintable(init));
}

// Attack 10: the sandbox used to see the host's whole /etc.
void tst_Channel::etcIsCurated()
{
    const QStringList etc
        = stdoutOf(m_sandbox, QStringLiteral("ls -A /etc")).split(u'\n', Qt::SkipEmptyParts);
    for (const char *hostOnly :
         {"shadow", "gshadow", "passwd-", "machine-id", "npmrc", "pip.conf", "gitconfig",
          "postgresql", "apt", "sudoers", "ssh", "environment", "cron.d", "fstab"}) {
        QVERIFY2(!etc.contains(QLatin1String(hostOnly)),
                 qPrintable(QStringLiteral("/etc/%1 is visible: %2")
                                .arg(QLatin1String(hostOnly), etc.join(u' '))));
    }
    const QString uid = stdoutOf(m_sandbox, QStringLiteral("id -u")).trimmed();
    QVERIFY(!uid.isEmpty());
    const QString passwd = stdoutOf(m_sandbox, QStringLiteral("cat /etc/passwd"));
    QCOMPARE(passwd.count(u'\n'), uid == QLatin1String("0") ? 2 : 3);
    QVERIFY2(passwd.contains(QStringLiteral("sandbox:x:%1:").arg(uid)) || uid == QLatin1String("0"),
             qPrintable(passwd));
    // What tools need is there: the user by name, certificates, the host name, a read-only /etc.
    QCOMPARE(stdoutOf(m_sandbox, QStringLiteral("whoami")).trimmed(),
             uid == QLatin1String("0") ? QStringLiteral("root") : QStringLiteral("sandbox"));
    QCOMPARE(stdoutOf(m_sandbox, QStringLiteral("test -s /etc/ssl/certs/ca-certificates.crt && "
                                                "getent hosts localhost >/dev/null && echo named; "
                                                "touch /etc/x 2>/dev/null || echo ro")),
             QStringLiteral("named\nro\n"));
}

// Attack 10: no seccomp filter used to stand between the sandbox and the kernel.
void tst_Channel::seccompRefusesWhatASandboxNeverNeeds()
{
    // perl's syscall() reaches each call directly; x86_64 numbers.
    const QString script = QStringLiteral(
        "use Errno; my $sup = 0;"
        "for (glob '/proc/[0-9]*/comm') { open my $f, '<', $_; my $c = <$f>;"
        "  if ($c =~ /^sandbox-superv/) { ($sup) = m{/proc/(\\d+)/}; last } }"
        "my %c = (keyctl => [250, 0, -2, 1], unshare_user => [272, 0x10000000],"
        " unshare_net => [272, 0x40000000], setns => [308, 0, 0], bpf => [321, 0, 0, 0],"
        " userfaultfd => [323, 0], perf_event_open => [298, 0, 0, -1, -1, 0],"
        " ptrace_attach => [101, 16, $sup, 0, 0], process_vm_readv => [310, $sup, 0, 0, 0, 0, 0],"
        " mount => [165, 0, 0, 0, 0, 0], pidfd_getfd => [438, 0, 3, 0]);"
        "for my $n (sort keys %c) { my ($nr, @a) = @{$c{$n}}; $! = 0;"
        "  my $r = syscall($nr, @a); print \"$n=\", ($r == -1 ? ($!{EPERM} ? 'EPERM' : 0+$!) : "
        "'ok'), \"\\n\" }");
    const QString out = stdoutOf(m_sandbox,
                                 QJsonArray{QStringLiteral("perl"), QStringLiteral("-e"), script});
    for (const char *call :
         {"keyctl", "unshare_user", "unshare_net", "setns", "bpf", "userfaultfd", "perf_event_open",
          "ptrace_attach", "process_vm_readv", "mount", "pidfd_getfd"}) {
        QVERIFY2(out.contains(QStringLiteral("%1=EPERM\n").arg(QLatin1String(call))),
                 qPrintable(QStringLiteral("%1 not refused: %2").arg(QLatin1String(call), out)));
    }
    // The filter is there (the sandbox's and the supervisor's, stacked), and ordinary work goes on.
    const QString status = stdoutOf(m_sandbox,
                                    QStringLiteral("grep -E '^Seccomp(_filters)?:' "
                                                   "/proc/self/status | tr -s '\\t ' ' '"));
    QVERIFY2(status.startsWith(QLatin1String("Seccomp: 2\n")), qPrintable(status));
    QCOMPARE(stdoutOf(m_sandbox, QStringLiteral("unshare -U true 2>/dev/null || echo refused; "
                                                "(sleep 0.1 & wait) && echo forked")),
             QStringLiteral("refused\nforked\n"));
}

// Attack 4: code inside used to take the supervisor's channel with pidfd_getfd (same uid,
// dumpable, no seccomp) and write frames to the engine, or the log pipe and write log lines.
void tst_Channel::channelCannotBeTakenFromInside()
{
    const QString script = QStringLiteral(
        "my $sup = 0;"
        "for (glob '/proc/[0-9]*/comm') { open my $f, '<', $_; my $c = <$f>;"
        "  if ($c =~ /^sandbox-superv/) { ($sup) = m{/proc/(\\d+)/}; last } }"
        "print \"sup=$sup\\n\"; my $pidfd = syscall(434, $sup, 0); print \"pidfd=$pidfd\\n\";"
        "for my $fd (0 .. 5) { my $r = syscall(438, $pidfd, $fd, 0); print \"fd$fd=$r\\n\" if $r "
        ">= 0 }"
        "print opendir(my $d, \"/proc/$sup/fd\") ? \"fds visible\\n\" : \"fds hidden\\n\";"
        "print open(my $e, '<', \"/proc/$sup/environ\") ? \"environ visible\\n\" : \"environ "
        "hidden\\n\";"
        // bubblewrap's pid 1 holds the engine's log pipe as its stderr.
        "my $init = syscall(434, 1, 0); my $log = $init >= 0 ? syscall(438, $init, 2, 0) : -1;"
        "print \"init log=$log\\n\" if $log >= 0;"
        "print open(my $l, '>', '/proc/1/fd/2') ? \"init log writable\\n\" : \"init log "
        "closed\\n\";");
    const QString out = stdoutOf(m_sandbox,
                                 QJsonArray{QStringLiteral("perl"), QStringLiteral("-e"), script});
    QVERIFY2(!out.contains(QLatin1String("sup=0\n")), qPrintable(out));
    const QRegularExpression taken(QStringLiteral("^fd\\d="), QRegularExpression::MultilineOption);
    QVERIFY2(!out.contains(taken),
             qPrintable(QStringLiteral("the supervisor's descriptors were taken: ") + out));
    QVERIFY2(out.contains(QLatin1String("fds hidden\n"))
                 && out.contains(QLatin1String("environ hidden\n")),
             qPrintable(out));
    // Nor can it forge the engine's log lines (or a sandbox's exit reason) through pid 1.
    QVERIFY2(!out.contains(QLatin1String("init log=")), qPrintable(out));
    QVERIFY2(out.contains(QLatin1String("init log closed\n")), qPrintable(out));
}

// Attack 4: output is counted by the engine, and a flood does not grow the engine.
void tst_Channel::outputIsBoundedByTheEngine()
{
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    const QJsonObject r = exec(m_engine.rpc(), m_sandbox,
                               QStringLiteral("head -c 200000000 /dev/zero | tr '\\0' a; "
                                              "head -c 200000000 /dev/zero | tr '\\0' b >&2"),
                               120000, {{QStringLiteral("maxOutputBytes"), 1024 * 1024}});
    probe.stop();
    const QJsonObject result = r.value(QStringLiteral("result")).toObject();
    QVERIFY2(!result.isEmpty(), dump(r).constData());
    QCOMPARE(result.value(QStringLiteral("stdout")).toString().size(), 1024 * 1024);
    QCOMPARE(result.value(QStringLiteral("stderr")).toString().size(), 1024 * 1024);
    QCOMPARE(result.value(QStringLiteral("truncated")).toBool(), true);
    qInfo("engine RSS %lld -> max %lld KiB while 400 MB of output was dropped", probe.startRssKb(),
          probe.maxRssKb());
    QVERIFY2(probe.maxRssKb() - probe.startRssKb() < 64 * 1024, qPrintable(probe.summary()));
    checkHealth(probe, "a sandbox floods its output");
}

// Attack 8: a fork bomb used to survive its exec's timeout at pids.max, and every later exec
// failed to fork. In the background (the exec answers at once, the bomb holds its output) or in
// the foreground (the exec runs into its timeout), the timeout ends it. The foreground shell waits
// in a loop of builtins: a `sleep` needs a fork, which the bomb may have made impossible by then
// (pids.max).
void tst_Channel::forkBombDiesAtTheTimeout_data()
{
    QTest::addColumn<QString>("command");
    QTest::newRow("background") << QStringLiteral("f(){ f|f& }; f");
    QTest::newRow("foreground") << QStringLiteral("f(){ f|f& }; f; while :; do :; done");
}

void tst_Channel::forkBombDiesAtTheTimeout()
{
    QFETCH(QString, command);
    const QString id = create(m_engine);
    QVERIFY(!id.isEmpty());
    HealthProbe probe(m_engine.process().url(), m_engine.process().pid(), 10);
    probe.start();
    QElapsedTimer timer;
    timer.start();
    const QJsonObject r = exec(m_engine.rpc(), id, command, 3000);
    const QJsonObject result = r.value(QStringLiteral("result")).toObject();
    QVERIFY2(!result.isEmpty(), dump(r).left(300).constData());
    // When the exec answers is not what the rows check: in the background the shell that starts
    // the bomb shares the sandbox's CPU with it from its first fork and was starved until the
    // timeout in a full run; the foreground shell, which should run into the timeout, ended before
    // it in two full runs (not seen alone or under load since; its answer is logged to find out
    // why). What they check is that the bomb dies at the timeout and the sandbox answers again.
    const bool timedOut = result.value(QStringLiteral("timedOut")).toBool();
    qInfo("fork bomb with a 3 s timeout answered after %lld ms (timed out: %s)%s", timer.elapsed(),
          timedOut ? "yes" : "no",
          timedOut ? ""
                   : qPrintable(QStringLiteral(": ") + QString::fromUtf8(dump(result).left(400))));
    // Once its timeout has passed, the sandbox runs commands again.
    QString alive;
    (void)QTest::qWaitFor(
        [&] {
            alive = exec(m_engine.rpc(), id, QStringLiteral("echo alive"), 10000)
                        .value(QStringLiteral("result"))
                        .toObject()
                        .value(QStringLiteral("stdout"))
                        .toString();
            return alive == QLatin1String("alive\n");
        },
        30000);
    qInfo("the sandbox answered again %lld ms after the bomb started", timer.elapsed());
    probe.stop();
    QCOMPARE(alive, QStringLiteral("alive\n"));
    // A background bomb may still be running when `echo alive` first answers: it dies at the
    // exec's timeout (or the cancel), which may be a moment later — but then it must be gone.
    QTRY_VERIFY2_WITH_TIMEOUT(sandboxProcesses(id).size() < 10,
                              qPrintable(QStringLiteral("%1 processes left")
                                             .arg(sandboxProcesses(id).size())),
                              15000);
    checkHealth(probe, "a fork bomb runs into its timeout");
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 120000);
}

// Attack 8 through stream.cancel: the exec's whole tree goes, the sandbox carries on.
void tst_Channel::cancelKillsTheWholeTree()
{
    const QString id = create(m_engine);
    QVERIFY(!id.isEmpty());
    m_engine.rpc().sendText(
        QJsonDocument(QJsonObject{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                                  {QStringLiteral("id"), 7},
                                  {QStringLiteral("method"), QStringLiteral("agents.exec")},
                                  {QStringLiteral("params"),
                                   QJsonObject{{QStringLiteral("id"), id},
                                               {QStringLiteral("command"),
                                                QStringLiteral("f(){ f|f& }; f; sleep 1000")},
                                               {QStringLiteral("options"),
                                                QJsonObject{{QStringLiteral("stream"), true}}}}}})
            .toJson(QJsonDocument::Compact));
    // The first answer carries the stream id (or the exec's notifications name it).
    QString streamId;
    (void)QTest::qWaitFor(
        [&] {
            for (const QJsonObject &n : std::as_const(m_engine.rpc().notifications)) {
                const QString s = n.value(QStringLiteral("params"))
                                      .toObject()
                                      .value(QStringLiteral("streamId"))
                                      .toString();
                if (!s.isEmpty())
                    streamId = s;
            }
            for (const QJsonValue &m : std::as_const(m_engine.rpc().messages)) {
                const QString s = m.toObject()
                                      .value(QStringLiteral("result"))
                                      .toObject()
                                      .value(QStringLiteral("streamId"))
                                      .toString();
                if (!s.isEmpty())
                    streamId = s;
            }
            return !streamId.isEmpty();
        },
        60000);
    if (streamId.isEmpty())
        QSKIP("this engine names no stream before the exec ends");
    // The bomb is at work (half of its pids.max in use).
    const qsizetype most = mostSandboxProcesses(id, 64, 10000);
    QVERIFY2(most >= 64, qPrintable(QStringLiteral("at most %1 processes").arg(most)));
    const QJsonObject cancelled = m_engine.rpc().call(QStringLiteral("stream.cancel"),
                                                      {{QStringLiteral("streamId"), streamId}},
                                                      60000);
    QVERIFY2(cancelled.contains(QStringLiteral("result")), dump(cancelled).constData());
    QDeadlineTimer again(20000);
    QString alive;
    while (!again.hasExpired() && alive != QLatin1String("alive\n")) {
        alive = exec(m_engine.rpc(), id, QStringLiteral("echo alive"), 10000)
                    .value(QStringLiteral("result"))
                    .toObject()
                    .value(QStringLiteral("stdout"))
                    .toString();
    }
    QCOMPARE(alive, QStringLiteral("alive\n"));
    // A background bomb may still be running when `echo alive` first answers: it dies at the
    // exec's timeout (or the cancel), which may be a moment later — but then it must be gone.
    QTRY_VERIFY2_WITH_TIMEOUT(sandboxProcesses(id).size() < 10,
                              qPrintable(QStringLiteral("%1 processes left")
                                             .arg(sandboxProcesses(id).size())),
                              15000);
    m_engine.rpc().result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 120000);
}

bool tst_Channel::startHostileEngine()
{
    if (m_hostile)
        return true;
    // The script must be readable by the sandbox's uid through the whole path (bwrap binds it).
    const QString script = m_host.path() + QStringLiteral("/hostile-supervisor");
    QFile::remove(script);
    if (!QFile::copy(QStringLiteral(SANDBOX_SOURCE_DIR "/tests/security/hostilesupervisor.pl"),
                     script))
        return false;
    ::chmod(QFile::encodeName(script).constData(), 0755);
    m_hostile = std::make_unique<EngineFixture>();
    if (!m_hostile->start({QStringLiteral("--supervisor"), script})) {
        qWarning("%s", qPrintable(m_hostile->process().log()));
        return false;
    }
    return true;
}

void tst_Channel::hostileSupervisorEndsOnlyItsSandbox_data()
{
    QTest::addColumn<QString>("command");
    QTest::newRow("second HELLO") << QStringLiteral("echo FORGE_HELLO");
    QTest::newRow("oversized frame") << QStringLiteral("echo OVERSIZED");
    QTest::newRow("unknown request id") << QStringLiteral("echo UNKNOWN_ID");
    QTest::newRow("hangs mid-request") << QStringLiteral("echo HANG");
    QTest::newRow("dies mid-request") << QStringLiteral("echo DIE");
}

void tst_Channel::hostileSupervisorEndsOnlyItsSandbox()
{
    QFETCH(QString, command);
    QVERIFY(startHostileEngine());
    RpcTestClient &rpc = m_hostile->rpc();
    const QString victim = create(*m_hostile);
    const QString bystander = create(*m_hostile);
    QVERIFY(!victim.isEmpty() && !bystander.isEmpty());
    HealthProbe probe(m_hostile->process().url(), m_hostile->process().pid(), 10);
    probe.start();
    QElapsedTimer timer;
    timer.start();
    // A 1 s timeout: the engine's deadline for it is 1 s + 15 s.
    const QJsonObject r = exec(rpc, victim, command, 1000);
    const qint64 tookMs = timer.elapsed();
    qInfo("%s: answered after %lld ms: %s", qPrintable(command), tookMs, dump(r).constData());
    QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(),
             -32011);
    QVERIFY(tookMs < 1000 + 15000 + 5000);
    // The victim is no longer running (once its processes and disk are cleaned up, off the event
    // loop: a few ms); the bystander and the engine carry on.
    QJsonObject state;
    QTRY_VERIFY2_WITH_TIMEOUT((state = rpc.result(QStringLiteral("agents.get"),
                                                  {{QStringLiteral("id"), victim}}))
                                      .value(QStringLiteral("status"))
                                      .toString()
                                  != QLatin1String("running"),
                              dump(state).constData(), 10000);
    const QJsonObject other = exec(rpc, bystander, QStringLiteral("echo still here"), 10000);
    QTest::qWait(1000); // the probe also covers the victim's clean-up
    QCOMPARE(other.value(QStringLiteral("result"))
                 .toObject()
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("fake:echo still here"));
    probe.stop();
    QVERIFY2(probe.maxRssKb() - probe.startRssKb() < 64 * 1024, qPrintable(probe.summary()));
    checkHealth(probe, qPrintable(QStringLiteral("a supervisor does '%1'").arg(command)));
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), victim}}, 120000);
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), bystander}}, 120000);
}

// Attack 4: forged output frames beyond maxOutputBytes with a lying truncated:false.
void tst_Channel::forgedOutputIsCountedByTheEngine()
{
    QVERIFY(startHostileEngine());
    RpcTestClient &rpc = m_hostile->rpc();
    const QString id = create(*m_hostile);
    QVERIFY(!id.isEmpty());
    const QJsonObject r = exec(rpc, id, QStringLiteral("echo FORGE_OUTPUT"), 10000,
                               {{QStringLiteral("maxOutputBytes"), 100000}});
    const QJsonObject result = r.value(QStringLiteral("result")).toObject();
    QVERIFY2(!result.isEmpty(), dump(r).left(300).constData());
    QCOMPARE(result.value(QStringLiteral("stdout")).toString().size(), 100000);
    QCOMPARE(result.value(QStringLiteral("truncated")).toBool(), true);
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), id}}, 120000);
}

// A watch's events come from inside: a path outside the watched folder ends that sandbox.
void tst_Channel::hostileWatchEndsOnlyItsSandbox()
{
    QVERIFY(startHostileEngine());
    RpcTestClient &rpc = m_hostile->rpc();
    const QString victim = create(*m_hostile);
    const QString bystander = create(*m_hostile);
    QVERIFY(!victim.isEmpty() && !bystander.isEmpty());
    HealthProbe probe(m_hostile->process().url(), m_hostile->process().pid(), 10);
    probe.start();
    const QJsonObject watch = rpc.result(QStringLiteral("sandbox.watch"),
                                         {{QStringLiteral("id"), victim},
                                          {QStringLiteral("path"), QStringLiteral("/workspace")}});
    const QString streamId = watch.value(QStringLiteral("streamId")).toString();
    QVERIFY2(!streamId.isEmpty(), dump(rpc.lastError()).constData());
    QJsonObject end;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            for (const QJsonObject &n : rpc.notifications) {
                const QJsonObject p = n.value(QStringLiteral("params")).toObject();
                if (n.value(QStringLiteral("method")) == QLatin1String("stream.end")
                    && p.value(QStringLiteral("streamId")) == streamId)
                    end = p;
            }
            return !end.isEmpty();
        }(),
        10000);
    const QJsonObject error = end.value(QStringLiteral("error")).toObject();
    QCOMPARE(error.value(QStringLiteral("code")).toInt(), -32011);
    QVERIFY2(error.value(QStringLiteral("message"))
                 .toString()
                 .contains(QLatin1String("below /workspace")),
             dump(error).constData());
    for (const QJsonObject &n : rpc.notifications)
        QVERIFY2(!QJsonDocument(n).toJson().contains("/etc/shadow"),
                 "the forged event is passed on");
    QJsonObject state;
    QTRY_VERIFY2_WITH_TIMEOUT((state = rpc.result(QStringLiteral("agents.get"),
                                                  {{QStringLiteral("id"), victim}}))
                                      .value(QStringLiteral("status"))
                                      .toString()
                                  != QLatin1String("running"),
                              dump(state).constData(), 10000);
    const QJsonObject other = exec(rpc, bystander, QStringLiteral("echo still here"), 10000);
    QCOMPARE(other.value(QStringLiteral("result"))
                 .toObject()
                 .value(QStringLiteral("stdout"))
                 .toString(),
             QStringLiteral("fake:echo still here"));
    probe.stop();
    checkHealth(probe, "a supervisor forges a watch event");
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), victim}}, 120000);
    rpc.result(QStringLiteral("agents.delete"), {{QStringLiteral("id"), bystander}}, 120000);
}

QTEST_GUILESS_MAIN(tst_Channel)
#include "tst_channel.moc"
