// sandbox-dbhost on its own (engine/databases/dbhost/PROTOCOL.md), started as a plain process on a
// temporary directory and spoken to over its socket as the engine does: what the engine cannot
// reach through its own limits (the host's cursor cap) is checked here, with real SQLite.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalSocket>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {

QString dbhostBinary(const QString &engine)
{
    return QStringLiteral(SANDBOX_BINARY_DIR "/libexec/sandbox-dbhost/")
           + (engine == QLatin1String("duckdb") ? QStringLiteral("sandbox-dbhost-duckdb")
                                                : QStringLiteral("sandbox-dbhost"));
}

// One sandbox-dbhost process and one connection to it.
class DbHost
{
public:
    bool start(const QString &engine, const QString &dir)
    {
        m_socketPath = dir + QStringLiteral("/dbhost.sock");
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(dbhostBinary(engine),
                        {QStringLiteral("--engine"), engine, QStringLiteral("--database"),
                         dir
                             + (engine == QLatin1String("duckdb") ? QStringLiteral("/main.duckdb")
                                                                  : QStringLiteral("/main.db")),
                         QStringLiteral("--socket"), m_socketPath});
        if (!m_process.waitForStarted(5000))
            return false;
        return QTest::qWaitFor(
            [this] {
                m_socket.connectToServer(m_socketPath);
                return m_socket.waitForConnected(100);
            },
            10000);
    }
    ~DbHost() { stop(); }
    void stop()
    {
        if (m_process.state() == QProcess::NotRunning)
            return;
        m_process.kill();
        m_process.waitForFinished(5000);
    }
    // Sends one request and answers its answer line (an object; empty when none came).
    QJsonObject ask(QJsonObject request)
    {
        request.insert(QStringLiteral("id"), ++m_id);
        m_socket.write(QJsonDocument(request).toJson(QJsonDocument::Compact) + '\n');
        while (!m_socket.canReadLine())
            if (!m_socket.waitForReadyRead(10000))
                return {};
        return QJsonDocument::fromJson(m_socket.readLine()).object();
    }
    QJsonObject execute(const QString &sql)
    {
        return ask(
            {{QStringLiteral("op"), QStringLiteral("execute")}, {QStringLiteral("sql"), sql}});
    }

    // Every row of `sql`, read as the engine reads a result: a query whose first page leaves a
    // cursor, then fetches of `pageSize` rows until done. On a failure, `*error` says what came.
    QList<QJsonArray> readAll(const QString &sql, int pageSize, QString *error)
    {
        QList<QJsonArray> rows;
        QJsonObject page = ask({{QStringLiteral("op"), QStringLiteral("query")},
                                {QStringLiteral("sql"), sql},
                                {QStringLiteral("pageSize"), pageSize}});
        const QString cursor = page.value(QStringLiteral("cursor")).toString();
        for (;;) {
            if (cursor.isEmpty() || !page.contains(QStringLiteral("rows"))) {
                *error = QString::fromUtf8(QJsonDocument(page).toJson(QJsonDocument::Compact));
                return rows;
            }
            for (const QJsonValue &r : page.value(QStringLiteral("rows")).toArray())
                rows.append(r.toArray());
            if (page.value(QStringLiteral("done")).toBool())
                return rows;
            page = ask({{QStringLiteral("op"), QStringLiteral("fetch")},
                        {QStringLiteral("cursor"), cursor},
                        {QStringLiteral("pageSize"), pageSize}});
        }
    }

private:
    QProcess m_process;
    QLocalSocket m_socket;
    QString m_socketPath;
    int m_id = 0;
};

// "row N: got, not want" for a row that differs.
QByteArray rowDiffers(qsizetype row, const QJsonArray &got, const QJsonArray &want)
{
    return QByteArray("row ") + QByteArray::number(row) + ": "
           + QJsonDocument(got).toJson(QJsonDocument::Compact) + ", not "
           + QJsonDocument(want).toJson(QJsonDocument::Compact);
}

} // namespace

class tst_DbHost : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theConnectionOfARefusedCursorSeesNewRows();
    void aRepeatedQuerySeesItsTableAsItIsNow_data();
    void aRepeatedQuerySeesItsTableAsItIsNow();
    void everyValueOfAPagedResultArrivesAsStored();
    void everySqliteValueArrivesAsStored();
};

void tst_DbHost::theConnectionOfARefusedCursorSeesNewRows()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    DbHost host;
    QVERIFY(host.start(QStringLiteral("sqlite"), dir.path()));
    QVERIFY(!host.execute(QStringLiteral("CREATE TABLE t(n INTEGER); INSERT INTO t VALUES "
                                         "(1), (2), (3)"))
                 .contains(QStringLiteral("error")));
    // Cursors up to the host's cap, then one more: refused, and its connection goes back to the
    // pool.
    const QJsonObject page{{QStringLiteral("op"), QStringLiteral("query")},
                           {QStringLiteral("sql"), QStringLiteral("SELECT n FROM t")},
                           {QStringLiteral("pageSize"), 1}};
    QString refused;
    for (int i = 0; i < 64 && refused.isEmpty(); ++i) {
        const QJsonObject r = host.ask(page);
        QVERIFY2(!r.isEmpty(), "no answer");
        refused
            = r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString();
        if (refused.isEmpty())
            QVERIFY(r.value(QStringLiteral("cursor")).isString());
    }
    QCOMPARE(refused, QStringLiteral("too_large"));
    // Another writer (a process of the sandbox) adds a row: the next query, on that connection,
    // sees it (a statement left open on the connection would pin it to the old snapshot).
    QProcess writer;
    writer.start(QStringLiteral("sqlite3"), {dir.path() + QStringLiteral("/main.db"),
                                             QStringLiteral("INSERT INTO t VALUES (4)")});
    QVERIFY(writer.waitForFinished(10000));
    QCOMPARE(writer.exitCode(), 0);
    const QJsonObject r = host.ask(
        {{QStringLiteral("op"), QStringLiteral("query")},
         {QStringLiteral("sql"), QStringLiteral("SELECT max(n) FROM t")}});
    QCOMPARE(r.value(QStringLiteral("rows")).toArray().at(0).toArray().at(0).toInt(), 4);
}

void tst_DbHost::aRepeatedQuerySeesItsTableAsItIsNow_data()
{
    QTest::addColumn<QString>("engine");
    QTest::addColumn<QString>("noTable"); // what the engine says of a table that is not there
    QTest::newRow("duckdb") << QStringLiteral("duckdb") << QStringLiteral("does not exist");
    QTest::newRow("sqlite") << QStringLiteral("sqlite") << QStringLiteral("no such table");
}

// DuckDB keeps a connection's SELECTs prepared (the same SQL text runs again without parse, bind
// and plan), SQLite its statements: a repeated query must still see its table as it is now,
// whatever changed it.
void tst_DbHost::aRepeatedQuerySeesItsTableAsItIsNow()
{
    QFETCH(QString, engine);
    QFETCH(QString, noTable);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    DbHost host;
    QVERIFY(host.start(engine, dir.path()));
    auto query = [&host](const QJsonArray &params) {
        return host.ask({{QStringLiteral("op"), QStringLiteral("query")},
                         {QStringLiteral("sql"), QStringLiteral("SELECT * FROM t WHERE id = $1")},
                         {QStringLiteral("params"), params}});
    };
    auto names = [](const QJsonObject &answer) {
        QStringList out;
        for (const QJsonValue &f : answer.value(QStringLiteral("fields")).toArray())
            out << f[QStringLiteral("name")].toString() + u':'
                       + f[QStringLiteral("type")].toString();
        return out.join(u',');
    };
    auto rows = [](const QJsonObject &answer) {
        return QJsonDocument(answer.value(QStringLiteral("rows")).toArray())
            .toJson(QJsonDocument::Compact);
    };
    QVERIFY(!host.execute(QStringLiteral("CREATE TABLE t(id INTEGER, v VARCHAR); INSERT INTO t "
                                         "VALUES (1, 'a'), (2, 'b')"))
                 .contains(QStringLiteral("error")));
    for (int key : {1, 2, 1}) {
        const QJsonObject r = query({key});
        QCOMPARE(names(r), QStringLiteral("id:INTEGER,v:VARCHAR"));
        QCOMPARE(rows(r), QByteArray("[[%1,\"%2\"]]")
                              .replace("%1", QByteArray::number(key))
                              .replace("%2", key == 1 ? "a" : "b"));
    }
    // A column more.
    QVERIFY(!host.execute(QStringLiteral("ALTER TABLE t ADD COLUMN w INTEGER DEFAULT 7"))
                 .contains(QStringLiteral("error")));
    QJsonObject r = query({2});
    QCOMPARE(names(r), QStringLiteral("id:INTEGER,v:VARCHAR,w:INTEGER"));
    QCOMPARE(rows(r), QByteArray("[[2,\"b\",7]]"));
    // Another table of the same name, its column of another type.
    QVERIFY(!host.execute(QStringLiteral("DROP TABLE t; CREATE TABLE t(id INTEGER, v DOUBLE); "
                                         "INSERT INTO t VALUES (1, 0.5)"))
                 .contains(QStringLiteral("error")));
    r = query({1});
    QCOMPARE(names(r), QStringLiteral("id:INTEGER,v:DOUBLE"));
    QCOMPARE(rows(r), QByteArray("[[1,0.5]]"));
    if (engine == QLatin1String("sqlite")) {
        // Changed by another program of the sandbox, behind the host's back.
        QProcess other;
        other.start(QStringLiteral("sqlite3"),
                    {dir.path() + QStringLiteral("/main.db"),
                     QStringLiteral("ALTER TABLE t ADD COLUMN x TEXT DEFAULT 'new'")});
        QVERIFY(other.waitForFinished(10000));
        QCOMPARE(other.exitCode(), 0);
        r = query({1});
        QCOMPARE(names(r), QStringLiteral("id:INTEGER,v:DOUBLE,x:TEXT"));
        QCOMPARE(rows(r), QByteArray("[[1,0.5,\"new\"]]"));
    }
    // The wrong number of parameters, then no table at all: the database's errors, as for a new
    // statement.
    r = query({1, 2});
    QCOMPARE(r.value(QStringLiteral("error"))[QStringLiteral("code")].toString(),
             QStringLiteral("bad_request"));
    QVERIFY(!host.execute(QStringLiteral("DROP TABLE t")).contains(QStringLiteral("error")));
    r = query({1});
    QCOMPARE(r.value(QStringLiteral("error"))[QStringLiteral("code")].toString(),
             QStringLiteral("sql"));
    QVERIFY2(r.value(QStringLiteral("error"))[QStringLiteral("message")].toString().contains(
                 noTable),
             QJsonDocument(r).toJson().constData());
}

// DuckDB's pages are written from its data chunks (2,048 rows each) straight to text: every value
// of a result read in pages that cut across chunks arrives as stored — NULLs where they are,
// strings short enough to sit inside DuckDB's value and longer ones, integers beyond 2^53 exact.
void tst_DbHost::everyValueOfAPagedResultArrivesAsStored()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    DbHost host;
    QVERIFY(host.start(QStringLiteral("duckdb"), dir.path()));
    const int count = 5000;
    const QJsonObject made = host.execute(
        QStringLiteral(
            "CREATE TABLE t AS SELECT range AS i, CASE WHEN range % 7 = 3 THEN NULL ELSE "
            "repeat('x', (range % 20)::INTEGER) || range END AS v, CASE WHEN range % 5 "
            "= 0 THEN NULL ELSE 9007199254740993 + range END AS big, range % 3 = 0 AS "
            "even FROM range(%1)")
            .arg(count));
    QVERIFY2(!made.contains(QStringLiteral("error")), QJsonDocument(made).toJson().constData());
    QString error;
    const QList<QJsonArray> rows = host.readAll(QStringLiteral("SELECT * FROM t ORDER BY i"), 777,
                                                &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(rows.size(), count);
    for (int row = 0; row < count; ++row) {
        const QJsonValue v = row % 7 == 3
                                 ? QJsonValue()
                                 : QJsonValue(QString(row % 20, u'x') + QString::number(row));
        const QJsonValue big = row % 5 == 0 ? QJsonValue()
                                            : QJsonValue(QJsonObject{
                                                {QStringLiteral("$int"),
                                                 QString::number(9007199254740993LL + row)}});
        const QJsonArray want{row, v, big, row % 3 == 0};
        QVERIFY2(rows[row] == want, rowDiffers(row, rows[row], want).constData());
    }
}

// SQLite's pages are written straight to text, a plain ASCII string in one copy and any other
// through the JSON escaper and the UTF-8 check, each eight bytes at a time: every kind of string
// at every offset from an eight-byte boundary (a prefix of 0-8 bytes) arrives as stored — escapes,
// multi-byte characters, text that is not UTF-8 as $bytes — and integers on both sides of 2^53.
void tst_DbHost::everySqliteValueArrivesAsStored()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    DbHost host;
    QVERIFY(host.start(QStringLiteral("sqlite"), dir.path()));
    struct Text
    {
        QByteArray bytes;
        bool utf8;
    };
    const QList<Text> texts{
        {"", true},
        {"plain ascii text", true},
        {"a \"quoted\" word", true},
        {"back\\slash", true},
        {"tab\there, new\nline, return\r", true},
        {QByteArray("nul\0byte", 8), true},
        {"\x01\x08\x0c\x1f control", true},
        {"delete \x7f tilde ~", true},
        {"caf\xc3\xa9 na\xc3\xafve", true},
        {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", true},
        {"emoji \xf0\x9f\x98\x80 and more", true},
        {QByteArray(70, 'y') + '"' + QByteArray(30, 'z'), true},
        {"bad \xff byte", false},
        {"cut \xc3", false},
        {"surrogate \xed\xa0\x80", false},
        {"overlong \xc0\xaf", false},
        {QByteArray(40, 'w') + "\xfe", false},
    };
    QStringList values;
    QList<QJsonValue> want;
    for (int pad = 0; pad <= 8; ++pad) {
        for (const Text &t : texts) {
            const QByteArray bytes = QByteArray(pad, 'p') + t.bytes;
            values << QStringLiteral("CAST(X'%1' AS TEXT)").arg(QString::fromLatin1(bytes.toHex()));
            want << (t.utf8 ? QJsonValue(QString::fromUtf8(bytes))
                            : QJsonValue(QJsonObject{{QStringLiteral("$bytes"),
                                                      QString::fromLatin1(bytes.toBase64())}}));
        }
    }
    const auto big = [](const char *digits) {
        return QJsonValue(QJsonObject{{QStringLiteral("$int"), QString::fromLatin1(digits)}});
    };
    const QList<std::pair<QString, QJsonValue>> others{
        {QStringLiteral("0"), 0},
        {QStringLiteral("-1"), -1},
        {QStringLiteral("9007199254740991"), 9007199254740991.0},
        {QStringLiteral("-9007199254740991"), -9007199254740991.0},
        {QStringLiteral("9007199254740992"), big("9007199254740992")},
        {QStringLiteral("-9007199254740992"), big("-9007199254740992")},
        {QStringLiteral("9223372036854775807"), big("9223372036854775807")},
        {QStringLiteral("-9223372036854775807 - 1"), big("-9223372036854775808")},
        {QStringLiteral("2.0"), 2.0},
        {QStringLiteral("NULL"), QJsonValue()},
        {QStringLiteral("X'00ff41'"),
         QJsonValue(QJsonObject{{QStringLiteral("$bytes"), QStringLiteral("AP9B")}})},
    };
    for (const auto &[sql, value] : others) {
        values << sql;
        want << value;
    }
    QStringList rows;
    for (qsizetype i = 0; i < values.size(); ++i)
        rows << QStringLiteral("(%1, %2)").arg(i).arg(values[i]);
    const QJsonObject made = host.execute(
        QStringLiteral("CREATE TABLE t(i INTEGER PRIMARY KEY, v); "
                       "INSERT INTO t VALUES ")
        + rows.join(QStringLiteral(", ")));
    QVERIFY2(!made.contains(QStringLiteral("error")), QJsonDocument(made).toJson().constData());
    QString error;
    const QList<QJsonArray> got = host.readAll(QStringLiteral("SELECT i, v FROM t ORDER BY i"), 7,
                                               &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(got.size(), want.size());
    for (qsizetype row = 0; row < got.size(); ++row) {
        const QJsonArray expected{row, want[row]};
        QVERIFY2(got[row] == expected, rowDiffers(row, got[row], expected).constData());
    }
}

QTEST_GUILESS_MAIN(tst_DbHost)
#include "tst_dbhost.moc"
