// The typed values' fromJson(): accept what docs/protocol.md shows, reject malformed answers
// with an error that names the field.
#include <client/types.h>

#include <QJsonDocument>
#include <QTest>

using namespace Sandbox;

namespace {

QJsonValue parse(const QByteArray &text)
{
    return QJsonDocument::fromJson("[" + text + "]").array().first();
}

template<typename T>
QString check(const QByteArray &text)
{
    const Result<T> r = T::fromJson(parse(text));
    if (r)
        return QString();
    return r.error().data.toObject().value(QStringLiteral("field")).toString(QStringLiteral("?"));
}

} // namespace

class tst_Types final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sandboxFromJson_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("badField"); // empty: valid; "?": rejected as a whole

        const QByteArray doc =
            R"({"id":"sb_2b7c1e0a9d4f","kind":"agent","type":"claude-code","size":"standard-1","status":"running",
 "createdAt":"2026-11-29T09:00:00.000Z","lastActiveAt":"2026-11-29T09:00:03.120Z",
 "sleepAfter":600000,"network":false,"env":["DEBUG"],
 "limits":{"memoryMb":4096,"pids":512,"cpus":0.5,"diskMb":8192}})";
        QTest::newRow("the example of the protocol") << doc << QString();
        QTest::newRow("only the required fields") << QByteArray(
            R"({"id":"sb_1","kind":"database","type":"sqlite","status":"stopped","createdAt":"2026-01-01T00:00:00Z"})")
                                                  << QString();
        QTest::newRow("not an object") << QByteArray(R"(["sb_1"])") << QStringLiteral("?");
        QTest::newRow("id missing")
            << QByteArray(doc).replace(R"("id":"sb_2b7c1e0a9d4f",)", "") << QStringLiteral("id");
        QTest::newRow("id empty") << QByteArray(doc).replace("sb_2b7c1e0a9d4f", "")
                                  << QStringLiteral("id");
        QTest::newRow("status unknown")
            << QByteArray(doc).replace(R"("running")", R"("dancing")") << QStringLiteral("status");
        QTest::newRow("kind a number")
            << QByteArray(doc).replace(R"("agent")", "1") << QStringLiteral("kind");
        QTest::newRow("createdAt not a time")
            << QByteArray(doc).replace("2026-11-29T09:00:00.000Z", "yesterday")
            << QStringLiteral("createdAt");
        QTest::newRow("sleepAfter a fraction")
            << QByteArray(doc).replace("600000", "1.5") << QStringLiteral("sleepAfter");
        QTest::newRow("network a string")
            << QByteArray(doc).replace(R"("network":false)", R"("network":"no")")
            << QStringLiteral("network");
        QTest::newRow("env with a number")
            << QByteArray(doc).replace(R"(["DEBUG"])", R"(["DEBUG",3])") << QStringLiteral("env");
        QTest::newRow("limits without pids")
            << QByteArray(doc).replace(R"("pids":512,)", "") << QStringLiteral("pids");
    }

    void sandboxFromJson()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, badField);
        QCOMPARE(check<SandboxInfo>(json), badField);
        const Result<SandboxInfo> r = SandboxInfo::fromJson(parse(json));
        if (badField.isEmpty()) {
            QVERIFY(!r->id.isEmpty());
            QVERIFY(r->createdAt.isValid());
        } else {
            QCOMPARE(r.error().code, ErrorCode::InternalError);
            QVERIFY(r.error().message.startsWith(QStringLiteral("malformed ")));
        }
    }

    void sandboxValues()
    {
        const Result<SandboxInfo> r = SandboxInfo::fromJson(parse(
            R"({"id":"sb_1","kind":"agent","type":"codex","status":"error","error":"boom","createdAt":"2026-11-29T09:00:00.000Z","sleepAfter":1000,"network":true,"env":["A","B"],"limits":{"memoryMb":256,"pids":128,"cpus":0.0625,"diskMb":2048}})"));
        QVERIFY(r);
        QCOMPARE(r->status, QStringLiteral("error"));
        QCOMPARE(r->error, QStringLiteral("boom"));
        QCOMPARE(r->sleepAfterMs, 1000);
        QVERIFY(r->network);
        QCOMPARE(r->env, QStringList({QStringLiteral("A"), QStringLiteral("B")}));
        QCOMPARE(r->limits.cpus, 0.0625);
        QCOMPARE(r->createdAt, QDateTime(QDate(2026, 11, 29), QTime(9, 0), Qt::UTC));
    }

    // 3.1 limits.enforced / limits.enforcement: which limits hold (issue 9, item 9).
    void sandboxLimitsEnforcement()
    {
        const QByteArray base
            = R"({"id":"sb_1","kind":"agent","type":"codex","status":"running","createdAt":"2026-11-29T09:00:00.000Z","limits":{"memoryMb":256,"pids":128,"cpus":0.0625,"diskMb":2048LIMITS}})";
        const Result<SandboxInfo> noClaim = SandboxInfo::fromJson(
            parse(QByteArray(base).replace("LIMITS", "")));
        QVERIFY(noClaim);
        QVERIFY(!noClaim->limits.enforced.has_value());
        QVERIFY(noClaim->limits.enforcement.isEmpty());

        const Result<SandboxInfo> r = SandboxInfo::fromJson(parse(QByteArray(base).replace(
            "LIMITS",
            R"(,"enforced":false,"enforcement":{"memory":{"enforced":true,"by":"cgroup v2"},"disk":{"enforced":false,"reason":"no loop devices"}})")));
        QVERIFY(r);
        QCOMPARE(r->limits.enforced, std::optional<bool>(false));
        QVERIFY(r->limits.enforcement.value(QStringLiteral("memory")).enforced);
        QCOMPARE(r->limits.enforcement.value(QStringLiteral("memory")).by,
                 QStringLiteral("cgroup v2"));
        QVERIFY(!r->limits.enforcement.value(QStringLiteral("disk")).enforced);
        QCOMPARE(r->limits.enforcement.value(QStringLiteral("disk")).reason,
                 QStringLiteral("no loop devices"));

        QCOMPARE(check<SandboxInfo>(QByteArray(base).replace("LIMITS", R"(,"enforced":"no")")),
                 QStringLiteral("enforced"));
        QCOMPARE(check<SandboxInfo>(
                     QByteArray(base).replace("LIMITS",
                                              R"(,"enforcement":{"cpu":{"by":"cgroup v2"}})")),
                 QStringLiteral("enforced"));
    }

    void execResultFromJson_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("badField");
        QTest::newRow("the example of the protocol") << QByteArray(
            R"({"exitCode":0,"signal":null,"stdout":"hi\n","stderr":"","durationMs":4,"truncated":false,"timedOut":false,"streamId":null})")
                                                     << QString();
        QTest::newRow("the result of a stream.end")
            << QByteArray(R"({"exitCode":137,"durationMs":3,"truncated":false,"timedOut":true})")
            << QString();
        QTest::newRow("exitCode missing")
            << QByteArray(R"({"stdout":""})") << QStringLiteral("exitCode");
        QTest::newRow("exitCode a string")
            << QByteArray(R"({"exitCode":"0"})") << QStringLiteral("exitCode");
        QTest::newRow("stdout a number")
            << QByteArray(R"({"exitCode":0,"stdout":5})") << QStringLiteral("stdout");
        QTest::newRow("timedOut a string")
            << QByteArray(R"({"exitCode":0,"timedOut":"yes"})") << QStringLiteral("timedOut");
        QTest::newRow("null") << QByteArray("null") << QStringLiteral("?");
    }

    void execResultFromJson()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, badField);
        QCOMPARE(check<ExecResult>(json), badField);
    }

    void fileEntryFromJson_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("badField");
        QTest::addColumn<int>("type");
        QTest::newRow("the example of the protocol") << QByteArray(
            R"({"name":"main.py","path":"/workspace/src/main.py","type":"file","size":120,"mode":420,"mtime":"2026-11-29T09:00:00.000Z","target":null})")
                                                     << QString() << int(FileEntry::Type::File);
        QTest::newRow("a symlink") << QByteArray(
            R"({"name":"l","path":"/workspace/l","type":"symlink","size":0,"target":"x"})")
                                   << QString() << int(FileEntry::Type::Symlink);
        QTest::newRow("an unknown type")
            << QByteArray(R"({"name":"l","path":"/workspace/l","type":"fifo","size":0})")
            << QStringLiteral("type") << 0;
        QTest::newRow("a negative size")
            << QByteArray(R"({"name":"l","path":"/workspace/l","type":"file","size":-1})")
            << QStringLiteral("size") << 0;
        QTest::newRow("no path") << QByteArray(R"({"name":"l","type":"file","size":1})")
                                 << QStringLiteral("path") << 0;
    }

    void fileEntryFromJson()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, badField);
        QFETCH(int, type);
        QCOMPARE(check<FileEntry>(json), badField);
        if (badField.isEmpty())
            QCOMPARE(int(FileEntry::fromJson(parse(json))->type), type);
    }

    void listsFailOnTheFirstBadElement()
    {
        const Result<FileListing> ok = FileListing::fromJson(parse(
            R"({"path":"/workspace","entries":[{"name":"a","path":"/workspace/a","type":"directory","size":0}],"truncated":false})"));
        QVERIFY(ok);
        QCOMPARE(ok->entries.size(), 1);
        QCOMPARE(ok->entries.first().type, FileEntry::Type::Directory);
        const Result<FileListing> bad = FileListing::fromJson(parse(
            R"({"path":"/workspace","entries":[{"name":"a","path":"/workspace/a","type":"directory","size":0},{"name":"b"}]})"));
        QVERIFY(!bad);
        QCOMPARE(bad.error().data.toObject().value(QStringLiteral("field")).toString(),
                 QStringLiteral("path"));
        const Result<QList<SandboxInfo>> notArray
            = listFromJson<SandboxInfo>(parse(R"({"agents":{}})"), QStringLiteral("agents"));
        QVERIFY(!notArray);
    }

    void fileContentDecodes_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("badField");
        QTest::newRow("utf8") << QByteArray(
            R"({"path":"a","content":"h\u00e9","encoding":"utf8","size":3,"truncated":false})")
                              << QByteArray("h\xc3\xa9") << QString();
        QTest::newRow("base64") << QByteArray(
            R"({"path":"a","content":"AP8=","encoding":"base64","size":2,"truncated":false})")
                                << QByteArray("\x00\xff", 2) << QString();
        QTest::newRow("invalid base64")
            << QByteArray(R"({"path":"a","content":"*!","encoding":"base64"})") << QByteArray()
            << QStringLiteral("content");
        QTest::newRow("unknown encoding")
            << QByteArray(R"({"path":"a","content":"x","encoding":"rot13"})") << QByteArray()
            << QStringLiteral("encoding");
    }

    void fileContentDecodes()
    {
        QFETCH(QByteArray, json);
        QFETCH(QByteArray, content);
        QFETCH(QString, badField);
        QCOMPARE(check<FileContent>(json), badField);
        if (badField.isEmpty())
            QCOMPARE(FileContent::fromJson(parse(json))->content, content);
    }

    void sessionAndQuota_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<bool>("isQuota");
        QTest::addColumn<QString>("badField");
        QTest::newRow("session") << QByteArray(
            R"({"id":"key_1","name":"default","createdAt":"2026-11-29T09:00:00.000Z","backend":"local","version":"0.1.0","sandboxes":{"total":2,"running":1}})")
                                 << false << QString();
        QTest::newRow("session with an unknown backend") << QByteArray(
            R"({"id":"key_1","backend":"mainframe","sandboxes":{"total":2,"running":1}})")
                                                         << false << QStringLiteral("backend");
        QTest::newRow("session without sandboxes.running")
            << QByteArray(R"({"id":"key_1","backend":"cloudflare","sandboxes":{"total":2}})")
            << false << QStringLiteral("running");
        QTest::newRow("quota") << QByteArray(
            R"({"running":{"used":1,"limit":8},"memoryMb":{"used":4096,"limit":16384},"sandboxes":{"used":3,"limit":100}})")
                               << true << QString();
        QTest::newRow("quota with a string limit") << QByteArray(
            R"({"running":{"used":1,"limit":"8"},"memoryMb":{"used":4096,"limit":16384},"sandboxes":{"used":3,"limit":100}})")
                                                   << true << QStringLiteral("limit");
        QTest::newRow("quota without memoryMb")
            << QByteArray(R"({"running":{"used":1,"limit":8},"sandboxes":{"used":3,"limit":100}})")
            << true << QStringLiteral("memoryMb");
    }

    void sessionAndQuota()
    {
        QFETCH(QByteArray, json);
        QFETCH(bool, isQuota);
        QFETCH(QString, badField);
        QCOMPARE(isQuota ? check<Quota>(json) : check<SessionInfo>(json), badField);
    }

    void execOptionsToJson()
    {
        ExecOptions o;
        QCOMPARE(o.toJson(), QJsonObject());
        o.cwd = QStringLiteral("/workspace/src");
        o.timeoutMs = 5000;
        o.env.insert(QStringLiteral("A"), QStringLiteral("1"));
        o.stdinText = QStringLiteral("in");
        const QJsonObject j = o.toJson(true);
        QCOMPARE(j.value(QStringLiteral("cwd")).toString(), QStringLiteral("/workspace/src"));
        QCOMPARE(j.value(QStringLiteral("timeout")).toInt(), 5000);
        QCOMPARE(j.value(QStringLiteral("env")).toObject().value(QStringLiteral("A")).toString(),
                 QStringLiteral("1"));
        QCOMPARE(j.value(QStringLiteral("stream")).toBool(), true);
        QCOMPARE(j.value(QStringLiteral("stdin")).toString(), QStringLiteral("in"));
        QCOMPARE(
            Command(QStringList{QStringLiteral("ls"), QStringLiteral("-l")}).json.toArray().size(),
            2);
    }
};

QTEST_GUILESS_MAIN(tst_Types)
#include "tst_types.moc"
