// What a run changed (docs/protocol.md 4.7.2) without a sandbox: the engine's records of a
// workspace directory before and after, their unified diffs (checked against GNU diff and patch),
// revert, and the bounds — files over the cap, contents over the cap, links never followed.
#include "agents/linediff.h"
#include "agents/turnsnapshots.h"
#include "runtime/hostfs.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <unistd.h>

using namespace Sandbox::Engine;

namespace {

void writeFile(const QString &path, const QByteArray &data)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
}

// GNU diff -u of two texts, with a/NAME b/NAME labels.
QByteArray gnuDiff(const QByteArray &before, const QByteArray &after)
{
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("a")), before);
    writeFile(dir.filePath(QStringLiteral("b")), after);
    QProcess p;
    p.start(QStringLiteral("diff"),
            {QStringLiteral("-u"), QStringLiteral("--label"), QStringLiteral("a/f.txt"),
             QStringLiteral("--label"), QStringLiteral("b/f.txt"),
             dir.filePath(QStringLiteral("a")), dir.filePath(QStringLiteral("b"))});
    p.waitForFinished();
    return p.readAllStandardOutput();
}

// `patch` applies the diff to `before`: what comes out.
QByteArray patched(const QByteArray &before, const QByteArray &diff)
{
    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("f.txt")), before);
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.start(QStringLiteral("patch"), {QStringLiteral("-s"), QStringLiteral("-p1")});
    p.write(diff);
    p.closeWriteChannel();
    p.waitForFinished();
    return readFile(dir.filePath(QStringLiteral("f.txt")));
}

int changedLines(const QByteArray &diff)
{
    int n = 0;
    for (const QByteArray &l : diff.split('\n')) {
        if ((l.startsWith('+') && !l.startsWith("+++"))
            || (l.startsWith('-') && !l.startsWith("---")))
            ++n;
    }
    return n;
}

QJsonObject fileIn(const QJsonObject &changes, const QString &path)
{
    for (const QJsonValue &v : changes.value(QStringLiteral("files")).toArray()) {
        if (v.toObject().value(QStringLiteral("path")).toString() == path)
            return v.toObject();
    }
    return {};
}

} // namespace

class tst_TurnSnapshots : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void diffIsGnuDiffs_data();
    void diffIsGnuDiffs();
    void randomDiffsApplyAndAreMinimal();
    void tooManyEditsAreNotSearched();

    void changesAndRevert();
    void boundsAreSaid();
    void linksAreNeverFollowed();
    void emptyDirectoriesAreBoundedToo();

private:
    struct Store
    {
        QTemporaryDir root;
        QString workspace() const { return root.filePath(QStringLiteral("workspace")); }
        QString store() const { return root.filePath(QStringLiteral("turns")); }
        int fd() const
        {
            return ::open(QFile::encodeName(workspace()).constData(),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
    };
};

void tst_TurnSnapshots::diffIsGnuDiffs_data()
{
    QTest::addColumn<QByteArray>("before");
    QTest::addColumn<QByteArray>("after");
    QTest::newRow("equal") << QByteArray("a\nb\n") << QByteArray("a\nb\n");
    QTest::newRow("new file") << QByteArray() << QByteArray("one\ntwo\n");
    QTest::newRow("deleted file") << QByteArray("one\ntwo\n") << QByteArray();
    QTest::newRow("one line changed") << QByteArray("a\nb\nc\n") << QByteArray("a\nB\nc\n");
    QTest::newRow("no newline at the end") << QByteArray("a\nb") << QByteArray("a\nb\nc\n");
    QTest::newRow("far apart: two hunks")
        << QByteArray("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n")
        << QByteArray("1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\nFOURTEEN\n15\n");
    QTest::newRow("close: one hunk")
        << QByteArray("1\n2\n3\n4\n5\n6\n7\n8\n9\n") << QByteArray("1\nX\n3\n4\n5\n6\n7\nY\n9\n");
    QTest::newRow("inserted in the middle")
        << QByteArray("a\nb\nc\nd\ne\nf\ng\nh\n") << QByteArray("a\nb\nc\nd\nnew\ne\nf\ng\nh\n");
}

void tst_TurnSnapshots::diffIsGnuDiffs()
{
    QFETCH(QByteArray, before);
    QFETCH(QByteArray, after);
    const auto diff = LineDiff::unified(before, after, "f.txt");
    QVERIFY(diff);
    QCOMPARE(diff->text, gnuDiff(before, after));
}

void tst_TurnSnapshots::randomDiffsApplyAndAreMinimal()
{
    // Texts from a few distinct lines, so that many lines repeat (the hard case for a diff).
    QRandomGenerator rng(1234);
    const auto text = [&rng] {
        QByteArray t;
        const int lines = int(rng.bounded(40));
        for (int i = 0; i < lines; ++i)
            t += "line " + QByteArray::number(rng.bounded(6)) + '\n';
        return t;
    };
    for (int round = 0; round < 200; ++round) {
        const QByteArray a = text();
        const QByteArray b = text();
        const auto diff = LineDiff::unified(a, b, "f.txt");
        QVERIFY(diff);
        QCOMPARE(patched(a, diff->text), b);
        QCOMPARE(diff->added + diff->removed, changedLines(gnuDiff(a, b)));
    }
}

void tst_TurnSnapshots::tooManyEditsAreNotSearched()
{
    QByteArray a, b;
    for (int i = 0; i < 3000; ++i) {
        a += "a" + QByteArray::number(i) + '\n';
        b += "b" + QByteArray::number(i) + '\n';
    }
    QVERIFY(!LineDiff::unified(a, b, "f.txt"));
    LineDiff::Limits generous;
    generous.maxEdits = 7000;
    const auto diff = LineDiff::unified(a, b, "f.txt", generous);
    QVERIFY(diff);
    QCOMPARE(diff->added, 3000);
}

void tst_TurnSnapshots::changesAndRevert()
{
    Store s;
    writeFile(s.workspace() + QStringLiteral("/src/main.c"), "int main() {\n  return 0;\n}\n");
    writeFile(s.workspace() + QStringLiteral("/README"), "hello\n");
    writeFile(s.workspace() + QStringLiteral("/old.txt"), "to go\n");
    writeFile(s.workspace() + QStringLiteral("/.git/HEAD"), "ref: refs/heads/feature/x\n");
    writeFile(s.workspace() + QStringLiteral("/.git/index"), "binary");
    const TurnSnapshots snapshots(s.store(), ::getuid(), ::getgid());
    const QString run = QStringLiteral("run_00000000000000a1");
    HostFs::Fd fd(s.fd());
    QVERIFY(snapshots.take(fd.get(), run, TurnSnapshots::Phase::Before,
                           QStringLiteral("/workspace/src")));
    QCOMPARE(snapshots.changes(run)->value(QStringLiteral("done")).toBool(), false);

    writeFile(s.workspace() + QStringLiteral("/src/main.c"), "int main() {\n  return 1;\n}\n");
    writeFile(s.workspace() + QStringLiteral("/src/new.h"), "#pragma once\n");
    writeFile(s.workspace() + QStringLiteral("/.git/index"), "other binary");
    writeFile(s.workspace() + QStringLiteral("/data.bin"), QByteArray("\0\1\2", 3));
    QFile::remove(s.workspace() + QStringLiteral("/old.txt"));
    QVERIFY(snapshots.take(fd.get(), run, TurnSnapshots::Phase::After,
                           QStringLiteral("/workspace/src")));

    const QJsonObject c = snapshots.changes(run).value();
    QVERIFY(c.value(QStringLiteral("done")).toBool());
    QCOMPARE(c.value(QStringLiteral("files")).toArray().size(), 4); // not README, not .git
    QCOMPARE(c.value(QStringLiteral("git")).toObject().value(QStringLiteral("branch")).toString(),
             QStringLiteral("feature/x"));
    QCOMPARE(c.value(QStringLiteral("git")).toObject().value(QStringLiteral("root")).toString(),
             QStringLiteral("/workspace"));
    const QJsonObject main = fileIn(c, QStringLiteral("/workspace/src/main.c"));
    QCOMPARE(main.value(QStringLiteral("kind")).toString(), QStringLiteral("update"));
    QVERIFY(main.value(QStringLiteral("diff"))
                .toString()
                .contains(QLatin1String("-  return 0;\n+  return 1;\n")));
    QCOMPARE(fileIn(c, QStringLiteral("/workspace/src/new.h"))
                 .value(QStringLiteral("kind"))
                 .toString(),
             QStringLiteral("add"));
    QCOMPARE(fileIn(c, QStringLiteral("/workspace/old.txt")).value(QStringLiteral("kind")).toString(),
             QStringLiteral("delete"));
    const QJsonObject bin = fileIn(c, QStringLiteral("/workspace/data.bin"));
    QVERIFY(bin.value(QStringLiteral("binary")).toBool());
    QVERIFY(bin.value(QStringLiteral("diff")).isNull());

    for (const char *path : {"/workspace/src/main.c", "/workspace/src/new.h", "/workspace/old.txt"})
        QVERIFY2(snapshots.revert(fd.get(), run, QString::fromLatin1(path)), path);
    QCOMPARE(readFile(s.workspace() + QStringLiteral("/src/main.c")),
             QByteArray("int main() {\n  return 0;\n}\n"));
    QVERIFY(!QFile::exists(s.workspace() + QStringLiteral("/src/new.h")));
    QCOMPARE(readFile(s.workspace() + QStringLiteral("/old.txt")), QByteArray("to go\n"));
    // The records stay what the run did.
    QCOMPARE(snapshots.changes(run)->value(QStringLiteral("files")).toArray().size(), 4);
    QCOMPARE(snapshots.revert(fd.get(), run, QStringLiteral("/workspace/../x")).error().code,
             Sandbox::ErrorCode::PathNotAllowed);
    QCOMPARE(snapshots.changes(QStringLiteral("run_00000000000000b2")).error().code,
             Sandbox::ErrorCode::NotFound);
}

void tst_TurnSnapshots::boundsAreSaid()
{
    Store s;
    TurnSnapshots::Limits limits;
    limits.maxFiles = 5;
    limits.maxFileBytes = 100;
    for (int i = 0; i < 4; ++i)
        writeFile(s.workspace() + QStringLiteral("/f%1.txt").arg(i), "small\n");
    writeFile(s.workspace() + QStringLiteral("/big.txt"), QByteArray(500, 'x'));
    writeFile(s.workspace() + QStringLiteral("/zz-over.txt"), "beyond the count\n");
    const TurnSnapshots snapshots(s.store(), ::getuid(), ::getgid(), limits);
    const QString run = QStringLiteral("run_00000000000000c3");
    HostFs::Fd fd(s.fd());
    QVERIFY(
        snapshots.take(fd.get(), run, TurnSnapshots::Phase::Before, QStringLiteral("/workspace")));
    writeFile(s.workspace() + QStringLiteral("/big.txt"), QByteArray(600, 'y'));
    QVERIFY(
        snapshots.take(fd.get(), run, TurnSnapshots::Phase::After, QStringLiteral("/workspace")));
    const QJsonObject c = snapshots.changes(run).value();
    QCOMPARE(c.value(QStringLiteral("truncated")).toString(), QStringLiteral("files"));
    const QJsonObject big = fileIn(c, QStringLiteral("/workspace/big.txt"));
    QCOMPARE(big.value(QStringLiteral("kind")).toString(), QStringLiteral("update"));
    QCOMPARE(big.value(QStringLiteral("diffOmitted")).toString(), QStringLiteral("large"));
    QCOMPARE(big.value(QStringLiteral("revertible")).toBool(), false);
    QCOMPARE(snapshots.revert(fd.get(), run, QStringLiteral("/workspace/big.txt")).error().code,
             Sandbox::ErrorCode::PayloadTooLarge);
    QCOMPARE(readFile(s.workspace() + QStringLiteral("/big.txt")), QByteArray(600, 'y'));
}

// A workspace of empty directories holds no file, so the file count never stopped the walk: the
// engine opened and read every one of them on every turn. Now the walk stops at the bound.
void tst_TurnSnapshots::emptyDirectoriesAreBoundedToo()
{
    Store s;
    TurnSnapshots::Limits limits;
    limits.maxDirectories = 50;
    for (int i = 0; i < 200; ++i)
        QVERIFY(QDir().mkpath(s.workspace() + QStringLiteral("/d%1/e").arg(i, 3, 10, QChar(u'0'))));
    writeFile(s.workspace() + QStringLiteral("/a.txt"), "kept\n");
    const TurnSnapshots snapshots(s.store(), ::getuid(), ::getgid(), limits);
    const QString run = QStringLiteral("run_00000000000000d4");
    HostFs::Fd fd(s.fd());
    for (auto phase : {TurnSnapshots::Phase::Before, TurnSnapshots::Phase::After})
        QVERIFY(snapshots.take(fd.get(), run, phase, QStringLiteral("/workspace")));
    const QJsonObject c = snapshots.changes(run).value();
    QCOMPARE(c.value(QStringLiteral("truncated")).toString(), QStringLiteral("directories"));
}

void tst_TurnSnapshots::linksAreNeverFollowed()
{
    Store s;
    QTemporaryDir outside;
    writeFile(outside.filePath(QStringLiteral("secret")), "host file\n");
    writeFile(s.workspace() + QStringLiteral("/a.txt"), "a\n");
    QVERIFY(QFile::link(outside.path(), s.workspace() + QStringLiteral("/escape")));
    const TurnSnapshots snapshots(s.store(), ::getuid(), ::getgid());
    const QString run = QStringLiteral("run_00000000000000d4");
    HostFs::Fd fd(s.fd());
    QVERIFY(
        snapshots.take(fd.get(), run, TurnSnapshots::Phase::Before, QStringLiteral("/workspace")));
    writeFile(outside.filePath(QStringLiteral("secret")), "changed\n");
    writeFile(s.workspace() + QStringLiteral("/a.txt"), "b\n");
    QVERIFY(
        snapshots.take(fd.get(), run, TurnSnapshots::Phase::After, QStringLiteral("/workspace")));
    const QJsonObject c = snapshots.changes(run).value();
    // The link is a link: what it points at is not the workspace's.
    QCOMPARE(c.value(QStringLiteral("files")).toArray().size(), 1);
    QVERIFY(!fileIn(c, QStringLiteral("/workspace/a.txt")).isEmpty());
    // A revert through the link is refused; the file behind it stays.
    QVERIFY(!snapshots.revert(fd.get(), run, QStringLiteral("/workspace/escape/secret")));
    QCOMPARE(readFile(outside.filePath(QStringLiteral("secret"))), QByteArray("changed\n"));
}

QTEST_GUILESS_MAIN(tst_TurnSnapshots)
#include "tst_turnsnapshots.moc"
