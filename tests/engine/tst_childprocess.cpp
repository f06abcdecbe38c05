// A sandbox's bubblewrap as the engine starts it: fork/exec with a modifier, its end seen through
// a pidfd on the engine's one poller (no notifier per process), its exit code or signal, a
// program that cannot run refused at once, and a child left running killed with its owner.

#include "egress/fdpoller.h"
#include "runtime/childprocess.h"

#include <QtCore/QFile>
#include <QtTest/QSignalSpy>
#include <QtTest/QtTest>

#include <csignal>
#include <fcntl.h>
#include <memory>
#include <unistd.h>
#include <vector>

using namespace Sandbox::Engine;

class TestChildProcess : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void exitCodesOfManyChildrenOnOnePoller()
    {
        FdPoller poller;
        constexpr int count = 50;
        std::vector<std::unique_ptr<ChildProcess>> children;
        QList<int> codes(count, -1);
        for (int i = 0; i < count; ++i) {
            children.push_back(std::make_unique<ChildProcess>(&poller));
            connect(children.back().get(), &ChildProcess::finished, this,
                    [&codes, i](int code, bool crashed) { codes[i] = crashed ? 1000 : code; });
            const auto started = children.back()->start(
                {QStringLiteral("/bin/sh"),
                 {QStringLiteral("-c"), QStringLiteral("exit $CODE")},
                 {QStringLiteral("CODE=%1").arg(i)},
                 {},
                 {}});
            QVERIFY2(started, qPrintable(started ? QString() : started.error().message));
            QVERIFY(children.back()->pid() > 0);
        }
        QCOMPARE(poller.count(), count);
        QTRY_VERIFY(std::none_of(codes.cbegin(), codes.cend(), [](int c) { return c < 0; }));
        for (int i = 0; i < count; ++i) {
            QCOMPARE(codes[i], i);
            QVERIFY(!children[i]->isRunning());
        }
        QCOMPARE(poller.count(), 0);
    }

    void theModifierRunsInTheChild()
    {
        // What the modifier does between fork and exec holds for the program: here, its stdout
        // on a file that the program writes.
        QTemporaryDir dir;
        const QByteArray path = QFile::encodeName(dir.filePath(QStringLiteral("out")));
        ChildProcess child;
        QSignalSpy finished(&child, &ChildProcess::finished);
        QVERIFY(child.start({QStringLiteral("/bin/sh"),
                             {QStringLiteral("-c"), QStringLiteral("echo \"$PWD\"")},
                             {},
                             dir.path(),
                             [path] {
                                 const int fd = ::open(path.constData(),
                                                       O_WRONLY | O_CREAT | O_TRUNC, 0600);
                                 if (fd < 0 || ::dup2(fd, STDOUT_FILENO) < 0)
                                     ::_exit(125);
                             }}));
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.first().value(0).toInt(), 0);
        QFile out(QString::fromLocal8Bit(path));
        QVERIFY(out.open(QIODevice::ReadOnly));
        QCOMPARE(out.readAll().trimmed(), QFile::encodeName(dir.path()));
    }

    void killedIsACrash()
    {
        ChildProcess child;
        QSignalSpy finished(&child, &ChildProcess::finished);
        QVERIFY(child.start({QStringLiteral("/bin/sleep"), {QStringLiteral("60")}, {}, {}, {}}));
        QVERIFY(child.isRunning());
        child.kill();
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.first().value(1).toBool(), true);
        QVERIFY(!child.isRunning());
    }

    void aProgramThatCannotRunIsRefused()
    {
        ChildProcess child;
        QSignalSpy finished(&child, &ChildProcess::finished);
        const auto started = child.start({QStringLiteral("/nonexistent/bwrap"), {}, {}, {}, {}});
        QVERIFY(!started);
        QVERIFY2(started.error().message.contains(QStringLiteral("No such file")),
                 qPrintable(started.error().message));
        QVERIFY(!child.isRunning());
        QCOMPARE(child.pid(), 0);
        QCOMPARE(finished.size(), 0);
    }

    void aChildStillRunningDiesWithItsOwner()
    {
        qint64 pid = 0;
        {
            ChildProcess child;
            QVERIFY(child.start({QStringLiteral("/bin/sleep"), {QStringLiteral("60")}, {}, {}, {}}));
            pid = child.pid();
            QVERIFY(::kill(pid_t(pid), 0) == 0);
        }
        // Killed and reaped: the pid names no process (not even a zombie of ours).
        QVERIFY(::kill(pid_t(pid), 0) != 0);
    }
};

QTEST_GUILESS_MAIN(TestChildProcess)
#include "tst_childprocess.moc"
