// sandbox.archive / sandbox.restore (docs/protocol.md 4.5) through a real sandboxd: a stopped
// sandbox's workspace out in chunks and into another sandbox, exactly, by tar running as the
// sandbox's uid; running sandboxes, bad offsets and archives that reach out are refused.
#include "enginefixture.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

class tst_WorkspaceArchive : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void roundTripIntoAnotherSandbox();
    void runningSandboxIsRefused();
    void restoreChecksItsOffsets();
    void archiveCannotReachOutOfTheWorkspace();

private:
    QString create();
    QString exec(const QString &id, const QString &command);
    QByteArray archive(const QString &id, qint64 chunk);
    bool restore(const QString &id, const QByteArray &bytes, qint64 chunk);

    EngineFixture m_engine;
};

void tst_WorkspaceArchive::initTestCase()
{
    QVERIFY2(m_engine.start({QStringLiteral("--no-disk-limit")}),
             qPrintable(m_engine.process().log()));
}

void tst_WorkspaceArchive::cleanupTestCase()
{
    m_engine.cleanup();
}

QString tst_WorkspaceArchive::create()
{
    return m_engine.createAgent(QStringLiteral("claude-code"), QStringLiteral("lite"));
}

QString tst_WorkspaceArchive::exec(const QString &id, const QString &command)
{
    return m_engine.exec(id, command).value(QStringLiteral("stdout")).toString();
}

QByteArray tst_WorkspaceArchive::archive(const QString &id, qint64 chunk)
{
    QByteArray out;
    for (qint64 offset = 0;;) {
        const QJsonObject r = m_engine.rpc().result(QStringLiteral("sandbox.archive"),
                                                    {{QStringLiteral("id"), id},
                                                     {QStringLiteral("offset"), double(offset)},
                                                     {QStringLiteral("length"), double(chunk)}});
        if (r.isEmpty()) {
            qWarning() << dump(m_engine.rpc().lastError());
            return {};
        }
        const QByteArray bytes = QByteArray::fromBase64(
            r.value(QStringLiteral("contentBase64")).toString().toLatin1());
        if (r.value(QStringLiteral("offset")).toDouble() != double(offset)
            || r.value(QStringLiteral("length")).toDouble() != double(bytes.size()))
            return {};
        out += bytes;
        offset += bytes.size();
        if (r.value(QStringLiteral("done")).toBool()) {
            if (r.value(QStringLiteral("size")).toDouble() != double(out.size()))
                return {};
            return out;
        }
    }
}

bool tst_WorkspaceArchive::restore(const QString &id, const QByteArray &bytes, qint64 chunk)
{
    for (qint64 offset = 0; offset < bytes.size() || offset == 0;) {
        const QByteArray part = bytes.mid(offset, chunk);
        const bool last = offset + part.size() >= bytes.size();
        const QJsonObject r = m_engine.rpc().result(QStringLiteral("sandbox.restore"),
                                                    {{QStringLiteral("id"), id},
                                                     {QStringLiteral("offset"), double(offset)},
                                                     {QStringLiteral("contentBase64"),
                                                      QString::fromLatin1(part.toBase64())},
                                                     {QStringLiteral("done"), last}});
        if (r.isEmpty()) {
            qWarning() << dump(m_engine.rpc().lastError());
            return false;
        }
        offset += part.size();
        if (last)
            return r.value(QStringLiteral("restored")).toBool();
    }
    return false;
}

void tst_WorkspaceArchive::roundTripIntoAnotherSandbox()
{
    const QString a = create();
    QVERIFY2(!a.isEmpty(), dump(m_engine.rpc().lastError()).constData());
    exec(a, QStringLiteral("mkdir -p src/deep && printf 'print(1)\\n' > src/app.py && chmod 755 "
                           "src/app.py && ln -s app.py src/link.py && head -c 300000 /dev/urandom "
                           "> src/deep/blob.bin && echo hidden > .env"));
    const QString before = exec(a, QStringLiteral("find . -printf '%p %y %m %s\\n' | sort; "
                                                  "sha256sum src/deep/blob.bin"));
    QVERIFY(before.contains(QLatin1String("./src/link.py l")));
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.stop"), {{QStringLiteral("id"), a}})
                 .isEmpty());
    // Small chunks: several calls, each answering its offset.
    const QByteArray tgz = archive(a, 64 * 1024);
    QVERIFY(tgz.size() > 64 * 1024);
    QCOMPARE(tgz.left(2), QByteArray("\x1f\x8b")); // gzip

    const QString b = create();
    exec(b, QStringLiteral("echo old > stale.txt"));
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.stop"), {{QStringLiteral("id"), b}})
                 .isEmpty());
    QVERIFY(restore(b, tgz, 100 * 1024));
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.start"), {{QStringLiteral("id"), b}})
                 .isEmpty());
    // The same tree, modes, link and bytes; what was there before is gone; files are the
    // sandbox's own.
    QCOMPARE(exec(b, QStringLiteral("find . -printf '%p %y %m %s\\n' | sort; "
                                    "sha256sum src/deep/blob.bin")),
             before);
    QCOMPARE(exec(b, QStringLiteral("test -e stale.txt; echo $?")), QStringLiteral("1\n"));
    QCOMPARE(exec(b, QStringLiteral("test \"$(stat -c %u src/app.py)\" = \"$(id -u)\"; echo $?")),
             QStringLiteral("0\n"));
}

void tst_WorkspaceArchive::runningSandboxIsRefused()
{
    const QString id = create();
    m_engine.rpc().result(QStringLiteral("sandbox.archive"), {{QStringLiteral("id"), id}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32005);
    m_engine.rpc().result(QStringLiteral("sandbox.restore"),
                          {{QStringLiteral("id"), id},
                           {QStringLiteral("contentBase64"), QString()}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32005);
    // Another key does not see it at all.
    const QJsonObject other = m_engine.rpc().result(QStringLiteral("keys.create"),
                                                    {{QStringLiteral("name"),
                                                      QStringLiteral("other")}});
    RpcTestClient rpc2;
    QVERIFY(rpc2.open(m_engine.process().wsUrl(), other.value(QStringLiteral("key")).toString()));
    rpc2.result(QStringLiteral("sandbox.archive"), {{QStringLiteral("id"), id}});
    QCOMPARE(rpc2.lastError().value(QStringLiteral("code")).toInt(), -32002);
}

void tst_WorkspaceArchive::restoreChecksItsOffsets()
{
    const QString id = create();
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.stop"), {{QStringLiteral("id"), id}})
                 .isEmpty());
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.restore"),
                         {{QStringLiteral("id"), id},
                          {QStringLiteral("offset"), 0},
                          {QStringLiteral("contentBase64"), QStringLiteral("AAAA")}})
                 .isEmpty());
    // A chunk that does not follow the last one.
    m_engine.rpc().result(QStringLiteral("sandbox.restore"),
                          {{QStringLiteral("id"), id},
                           {QStringLiteral("offset"), 10},
                           {QStringLiteral("contentBase64"), QStringLiteral("AAAA")}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32602);
    // Not base64; not an archive.
    m_engine.rpc().result(QStringLiteral("sandbox.restore"),
                          {{QStringLiteral("id"), id},
                           {QStringLiteral("contentBase64"), QStringLiteral("!!")}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32602);
    m_engine.rpc().result(QStringLiteral("sandbox.restore"),
                          {{QStringLiteral("id"), id},
                           {QStringLiteral("contentBase64"), QStringLiteral("bm90IGEgdGFy")},
                           {QStringLiteral("done"), true}});
    QCOMPARE(m_engine.rpc().lastError().value(QStringLiteral("code")).toInt(), -32011);
}

// A hostile archive (from a sandbox that made its own) cannot place files outside the workspace:
// tar drops "../" and leading "/", and runs as the sandbox's uid, which can write nothing else.
void tst_WorkspaceArchive::archiveCannotReachOutOfTheWorkspace()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile f(dir.filePath(QStringLiteral("x.txt")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("escaped\n");
    f.close();
    QProcess tar;
    tar.setWorkingDirectory(dir.path());
    tar.start(QStringLiteral("tar"),
              {QStringLiteral("-czf"), QStringLiteral("-"), QStringLiteral("--transform"),
               QStringLiteral("s|^x.txt$|../../escaped-%1.txt|")
                   .arg(QCoreApplication::applicationPid()),
               QStringLiteral("x.txt")});
    QVERIFY(tar.waitForFinished(10000));
    const QByteArray hostile = tar.readAllStandardOutput();
    QVERIFY(!hostile.isEmpty());

    const QString id = create();
    QVERIFY(!m_engine.rpc()
                 .result(QStringLiteral("sandbox.stop"), {{QStringLiteral("id"), id}})
                 .isEmpty());
    restore(id, hostile, 1 << 20);
    const QString name = QStringLiteral("escaped-%1.txt").arg(QCoreApplication::applicationPid());
    const QString state = m_engine.process().dataDir() + QStringLiteral("/sandboxes/") + id;
    QVERIFY(!QFileInfo::exists(state + u'/' + name));
    QVERIFY(!QFileInfo::exists(m_engine.process().dataDir() + QStringLiteral("/sandboxes/") + name));
    QVERIFY(!QFileInfo::exists(m_engine.process().dataDir() + u'/' + name));
}

QTEST_GUILESS_MAIN(tst_WorkspaceArchive)
#include "tst_workspacearchive.moc"
