// The one field reader of both sides: a method's params answer -32602 naming the field (the
// engine), a malformed answer from the server is an InternalError naming object and field (the
// client).
#include "protocol/fieldreader.h"
#include "protocol/json.h"

#include <QTest>

using namespace Sandbox;

namespace {

QJsonObject object(const char *json)
{
    return Json::parse(QByteArrayView(json)).value.toObject();
}

} // namespace

class tst_FieldReader final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void params_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("message"); // empty: no error

        QTest::newRow("all good") << QByteArray(R"({"id":"sb_1","timeout":5,"stream":true})")
                                  << QString();
        QTest::newRow("id missing") << QByteArray(R"({})") << QStringLiteral("id: is required");
        QTest::newRow("id empty") << QByteArray(R"({"id":""})")
                                  << QStringLiteral("id: must be a non-empty string");
        QTest::newRow("id a number")
            << QByteArray(R"({"id":3})") << QStringLiteral("id: must be a non-empty string");
        QTest::newRow("timeout a fraction")
            << QByteArray(R"({"id":"x","timeout":1.5})")
            << QStringLiteral("options.timeout: must be an integer");
        QTest::newRow("timeout text") << QByteArray(R"({"id":"x","timeout":"5"})")
                                      << QStringLiteral("options.timeout: must be an integer");
        QTest::newRow("timeout too big")
            << QByteArray(R"({"id":"x","timeout":1e12})")
            << QStringLiteral("options.timeout: must be between 0 and 3600000");
        QTest::newRow("stream not a bool")
            << QByteArray(R"({"id":"x","stream":1})")
            << QStringLiteral("options.stream: must be true or false");
        QTest::newRow("first problem wins") << QByteArray(R"({"id":"","timeout":"x"})")
                                            << QStringLiteral("id: must be a non-empty string");
    }

    void params()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, message);
        const QJsonObject o = object(json.constData());
        FieldReader p(o);
        const QString id = p.requiredString(QStringLiteral("id"));
        FieldReader opt(o, QStringLiteral("options"));
        const qint64 timeout = opt.optionalInteger(QStringLiteral("timeout"), 1000, 0, 3600000);
        const bool stream = opt.optionalBool(QStringLiteral("stream"), false);
        p.merge(opt);
        if (message.isEmpty()) {
            QVERIFY(p.ok());
            QCOMPARE(id, QStringLiteral("sb_1"));
            QCOMPARE(timeout, 5);
            QVERIFY(stream);
            return;
        }
        QVERIFY(p.failed());
        QCOMPARE(p.error().code, ErrorCode::InvalidParams);
        QCOMPARE(p.error().message, message);
        QCOMPARE(p.error().data.toObject().value(QStringLiteral("field")).toString(),
                 message.section(u':', 0, 0));
    }

    void env_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("field"); // empty: no error
        QTest::newRow("plain") << QByteArray(R"({"env":{"A_1":"x","TMPDIR":"/tmp"}})") << QString();
        QTest::newRow("loader") << QByteArray(R"({"env":{"LD_PRELOAD":"/x.so"}})")
                                << QStringLiteral("env.LD_PRELOAD");
        QTest::newRow("glibc's list")
            << QByteArray(R"({"env":{"GCONV_PATH":"/x"}})") << QStringLiteral("env.GCONV_PATH");
        QTest::newRow("bad name") << QByteArray(R"({"env":{"BAD NAME":"x"}})")
                                  << QStringLiteral("env.BAD NAME");
        QTest::newRow("number value")
            << QByteArray(R"({"env":{"A":1}})") << QStringLiteral("env.A");
        QTest::newRow("not an object") << QByteArray(R"({"env":[]})") << QStringLiteral("env");
    }

    void env()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, field);
        FieldReader p(object(json.constData()));
        const QMap<QString, QString> env = p.optionalEnv(QStringLiteral("env"));
        if (field.isEmpty()) {
            QVERIFY(p.ok());
            QCOMPARE(env.value(QStringLiteral("A_1")), QStringLiteral("x"));
            return;
        }
        QCOMPARE(p.error().code, ErrorCode::InvalidParams);
        QCOMPARE(p.error().data.toObject().value(QStringLiteral("field")).toString(), field);
    }

    void boundedStrings()
    {
        FieldReader p(QJsonObject{
            {QStringLiteral("path"), QString(FieldReader::MaxPathBytes + 1, u'a')},
        });
        p.requiredPath(QStringLiteral("path"));
        QCOMPARE(p.error().message, QStringLiteral("path: must be a path of at most 4096 bytes"));
        FieldReader z(
            QJsonObject{{QStringLiteral("path"), QString(QStringLiteral("a") + QChar(0))}});
        z.optionalPath(QStringLiteral("path"));
        QCOMPARE(z.error().message,
                 QStringLiteral("path: must not contain a NUL character (U+0000)"));
        FieldReader n(QJsonObject{{QStringLiteral("name"), QStringLiteral("two\nlines")}});
        n.optionalName(QStringLiteral("name"));
        QCOMPARE(n.error().data.toObject().value(QStringLiteral("field")).toString(),
                 QStringLiteral("name"));
        FieldReader c(QJsonObject{{QStringLiteral("size"), QStringLiteral("xl")}});
        c.optionalChoice(QStringLiteral("size"), {QStringLiteral("s"), QStringLiteral("m")},
                         QStringLiteral("s"));
        QCOMPARE(c.error().message, QStringLiteral("size: must be one of: s, m"));
        // SQL text: anything but a NUL, nested fields named with their prefix.
        const QString withNul = QStringLiteral("SELECT 1") + QChar(0) + QStringLiteral("x");
        FieldReader s(QJsonObject{{QStringLiteral("sql"), QStringLiteral("SELECT '✓'\n;")},
                                  {QStringLiteral("table"), withNul}},
                      QStringLiteral("statements[2]"));
        QCOMPARE(s.requiredSqlText(QStringLiteral("sql")), QStringLiteral("SELECT '✓'\n;"));
        QCOMPARE(s.optionalSqlText(QStringLiteral("schema"), QStringLiteral("main")),
                 QStringLiteral("main"));
        QVERIFY(s.ok());
        s.optionalSqlText(QStringLiteral("table"));
        QCOMPARE(s.error().data.toObject().value(QStringLiteral("field")).toString(),
                 QStringLiteral("statements[2].table"));
        QVERIFY2(s.error().message.contains(QLatin1String("NUL")), qPrintable(s.error().message));
    }

    void answer_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("message"); // empty: no error

        QTest::newRow("good") << QByteArray(
            R"({"id":"sb_1","size":3,"createdAt":"2026-11-29T09:00:00.000Z"})")
                              << QString();
        QTest::newRow("not an object")
            << QByteArray(R"([1])")
            << QStringLiteral("malformed Sandbox from server: expected an object");
        QTest::newRow("id missing")
            << QByteArray(R"({"size":3,"createdAt":"2026-11-29T09:00:00.000Z"})")
            << QStringLiteral(R"(malformed Sandbox from server: "id" is missing (string expected))");
        QTest::newRow("size a fraction")
            << QByteArray(R"({"id":"a","size":1.5,"createdAt":"2026-11-29T09:00:00.000Z"})")
            << QStringLiteral(R"(malformed Sandbox from server: "size" must be an integer)");
        QTest::newRow("time not ISO")
            << QByteArray(R"({"id":"a","size":1,"createdAt":"yesterday"})")
            << QStringLiteral(
                   R"(malformed Sandbox from server: "createdAt" must be an ISO 8601 time)");
    }

    void answer()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, message);
        FieldReader r = FieldReader::answer(Json::parse(json).value, QStringLiteral("Sandbox"));
        const QString id = r.string(QStringLiteral("id"));
        const qint64 size = r.integer(QStringLiteral("size"));
        const QDateTime created = r.dateTime(QStringLiteral("createdAt"));
        const bool gateway = r.optionalBool(QStringLiteral("gateway"));
        if (message.isEmpty()) {
            QVERIFY(r.ok());
            QCOMPARE(id, QStringLiteral("sb_1"));
            QCOMPARE(size, 3);
            QCOMPARE(created, QDateTime(QDate(2026, 11, 29), QTime(9, 0), Qt::UTC));
            QVERIFY(!gateway);
            return;
        }
        QCOMPARE(r.error().code, ErrorCode::InternalError);
        QCOMPARE(r.error().message, message);
        QCOMPARE(r.error().data.toObject().value(QStringLiteral("object")).toString(),
                 QStringLiteral("Sandbox"));
    }
};

QTEST_GUILESS_MAIN(tst_FieldReader)
#include "tst_fieldreader.moc"
