#include "protocol/json.h"
#include "protocol/jsonrpc.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace Sandbox;
using Kind = JsonRpc::Message::Kind;

class tst_JsonRpc : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void single_data();
    void single();
    void batch();
    void emptyBatch();
    void oversizeBatch();
    void oversizeMessage();
    void arrayParams();
    void responses_data();
    void responses();
    void jsonStringEscaping_data();
    void jsonStringEscaping();
    void byteOrderMarksInStringsAreKept();
    void errorCodesMapToRestStatus_data();
    void errorCodesMapToRestStatus();
};

void tst_JsonRpc::single_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("errorCode"); // 0: no error
    QTest::addColumn<QJsonValue>("id");

    QTest::newRow("request with number id")
        << QByteArray(R"({"jsonrpc":"2.0","id":1,"method":"a.b","params":{}})")
        << int(Kind::Request) << 0 << QJsonValue(1);
    QTest::newRow("request with string id")
        << QByteArray(R"({"jsonrpc":"2.0","id":"x","method":"a.b"})") << int(Kind::Request) << 0
        << QJsonValue(QStringLiteral("x"));
    QTest::newRow("request with null id")
        << QByteArray(R"({"jsonrpc":"2.0","id":null,"method":"a.b"})") << int(Kind::Request) << 0
        << QJsonValue();
    QTest::newRow("notification") << QByteArray(
        R"({"jsonrpc":"2.0","method":"a.b","params":{"x":1}})")
                                  << int(Kind::Notification) << 0 << QJsonValue();
    QTest::newRow("not json") << QByteArray("{nope") << -1 << -32700 << QJsonValue();
    QTest::newRow("truncated json")
        << QByteArray(R"({"jsonrpc":"2.0","method":"a")") << -1 << -32700 << QJsonValue();
    QTest::newRow("empty text") << QByteArray("") << -1 << -32700 << QJsonValue();
    QTest::newRow("top-level number") << QByteArray("42") << -1 << -32600 << QJsonValue();
    QTest::newRow("top-level string") << QByteArray(R"("hello")") << -1 << -32600 << QJsonValue();
    QTest::newRow("wrong version") << QByteArray(R"({"jsonrpc":"1.0","id":3,"method":"a"})")
                                   << int(Kind::Invalid) << -32600 << QJsonValue(3);
    QTest::newRow("missing version")
        << QByteArray(R"({"id":3,"method":"a"})") << int(Kind::Invalid) << -32600 << QJsonValue(3);
    QTest::newRow("method not a string") << QByteArray(R"({"jsonrpc":"2.0","id":4,"method":1})")
                                         << int(Kind::Invalid) << -32600 << QJsonValue(4);
    QTest::newRow("id an object: id unreadable")
        << QByteArray(R"({"jsonrpc":"2.0","id":{"a":1},"method":"m"})") << int(Kind::Invalid)
        << -32600 << QJsonValue();
    QTest::newRow("params a string")
        << QByteArray(R"({"jsonrpc":"2.0","id":5,"method":"m","params":"x"})") << int(Kind::Invalid)
        << -32600 << QJsonValue(5);
    QTest::newRow("neither method nor result") << QByteArray(R"({"jsonrpc":"2.0","id":6})")
                                               << int(Kind::Invalid) << -32600 << QJsonValue(6);
}

void tst_JsonRpc::single()
{
    QFETCH(QByteArray, text);
    QFETCH(int, kind);
    QFETCH(int, errorCode);
    QFETCH(QJsonValue, id);

    const JsonRpc::Incoming in = JsonRpc::parse(text);
    if (kind < 0) {
        QVERIFY(in.error.has_value());
        QCOMPARE(int(in.error->code), errorCode);
        QVERIFY(!in.error->message.isEmpty());
        return;
    }
    QVERIFY(!in.error);
    QVERIFY(!in.batch);
    QCOMPARE(in.messages.size(), 1);
    const JsonRpc::Message &m = in.messages.first();
    QCOMPARE(int(m.kind), kind);
    QCOMPARE(m.id, id);
    if (errorCode) {
        QVERIFY(m.error.has_value());
        QCOMPARE(int(m.error->code), errorCode);
    } else {
        QVERIFY(!m.error);
        QCOMPARE(m.method, QStringLiteral("a.b"));
    }
}

void tst_JsonRpc::batch()
{
    const JsonRpc::Incoming in = JsonRpc::parse(
        R"([{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","method":"n"},7,{"foo":"boo"}])");
    QVERIFY(!in.error);
    QVERIFY(in.batch);
    QCOMPARE(in.messages.size(), 4);
    QCOMPARE(in.messages[0].kind, Kind::Request);
    QCOMPARE(in.messages[1].kind, Kind::Notification);
    QCOMPARE(in.messages[2].kind, Kind::Invalid);
    QCOMPARE(in.messages[2].id, QJsonValue());
    QCOMPARE(in.messages[3].kind, Kind::Invalid);
}

void tst_JsonRpc::emptyBatch()
{
    const JsonRpc::Incoming in = JsonRpc::parse("[]");
    QVERIFY(in.error.has_value());
    QCOMPARE(in.error->code, ErrorCode::InvalidRequest);
}

void tst_JsonRpc::oversizeBatch()
{
    QJsonArray batch;
    for (int i = 0; i <= JsonRpc::MaxBatchSize; ++i)
        batch.append(JsonRpc::requestObject(i, QStringLiteral("m"), {}));
    const JsonRpc::Incoming in = JsonRpc::parse(QJsonDocument(batch).toJson());
    QVERIFY(in.error.has_value());
    QCOMPARE(in.error->code, ErrorCode::PayloadTooLarge);

    batch.removeLast();
    QVERIFY(!JsonRpc::parse(QJsonDocument(batch).toJson()).error);
}

void tst_JsonRpc::oversizeMessage()
{
    const QByteArray big = R"({"jsonrpc":"2.0","method":"m","params":{"x":")"
                           + QByteArray(JsonRpc::MaxMessageBytes, 'a') + "\"}}";
    const JsonRpc::Incoming in = JsonRpc::parse(big);
    QVERIFY(in.error.has_value());
    QCOMPARE(in.error->code, ErrorCode::PayloadTooLarge);
}

void tst_JsonRpc::arrayParams()
{
    // Valid JSON-RPC, but this protocol takes named params only: -32602, with the id kept.
    const JsonRpc::Incoming in = JsonRpc::parse(
        R"({"jsonrpc":"2.0","id":9,"method":"m","params":[1,2]})");
    QCOMPARE(in.messages.size(), 1);
    QCOMPARE(in.messages[0].kind, Kind::Request);
    QVERIFY(in.messages[0].error.has_value());
    QCOMPARE(in.messages[0].error->code, ErrorCode::InvalidParams);
    QCOMPARE(in.messages[0].id, QJsonValue(9));
}

void tst_JsonRpc::responses_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<bool>("isError");
    QTest::addColumn<int>("code");

    QTest::newRow("result") << QByteArray(R"({"jsonrpc":"2.0","id":1,"result":{"a":1}})") << false
                            << 0;
    QTest::newRow("error") << QByteArray(
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"x"}})")
                           << true << -32002;
    QTest::newRow("malformed error object")
        << QByteArray(R"({"jsonrpc":"2.0","id":1,"error":"boom"})") << true << -32603;
}

void tst_JsonRpc::responses()
{
    QFETCH(QByteArray, text);
    QFETCH(bool, isError);
    QFETCH(int, code);
    const JsonRpc::Incoming in = JsonRpc::parse(text);
    QCOMPARE(in.messages.size(), 1);
    const JsonRpc::Message &m = in.messages[0];
    QCOMPARE(m.kind, Kind::Response);
    QCOMPARE(m.error.has_value(), isError);
    if (isError)
        QCOMPARE(int(m.error->code), code);
    else
        QCOMPARE(m.result.toObject().value(QStringLiteral("a")).toInt(), 1);
}

void tst_JsonRpc::jsonStringEscaping_data()
{
    QTest::addColumn<QByteArray>("raw");
    QTest::newRow("plain") << QByteArray("hello world");
    QTest::newRow("quotes and backslashes") << QByteArray(R"(say "hi" \ bye)");
    QTest::newRow("control characters") << QByteArray("a\nb\rc\td\x01\x1f\b\f");
    QTest::newRow("utf-8") << QByteArray("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80");
    QTest::newRow("empty") << QByteArray();
    // Every position relative to the 8-byte words of the fast path, and every special byte.
    for (int pos = 0; pos < 17; ++pos) {
        for (const char special : {'"', '\\', '\n', '\x01', '\x1f'}) {
            QByteArray s(17, 'a');
            s[pos] = special;
            QTest::addRow("byte 0x%02x at %d", int(uchar(special)), pos) << s;
        }
        if (pos < 16) {
            QByteArray utf8(17, 'b');
            utf8.replace(pos, 2, "\xc3\xbc");
            QTest::addRow("utf-8 at %d", pos) << utf8;
        }
    }
}

void tst_JsonRpc::jsonStringEscaping()
{
    QFETCH(QByteArray, raw);
    QByteArray json = "[";
    JsonRpc::appendJsonString(json, raw);
    json += "]";
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    QCOMPARE(err.error, QJsonParseError::NoError);
    QCOMPARE(doc.array().at(0).toString().toUtf8(), raw);
}

// U+FEFF sent as its UTF-8 bytes inside a string (what JSON.stringify writes for a file that
// starts with a byte order mark) is part of the value, in keys and values alike.
void tst_JsonRpc::byteOrderMarksInStringsAreKept()
{
    const QByteArray text = "{\"content\":\"\xEF\xBB\xBFhello\",\"\xEF\xBB\xBFkey\":1,\"id\":2}";
    const Json::Parsed parsed = Json::parse(text);
    QVERIFY(!parsed.error);
    const QJsonObject o = parsed.value.toObject();
    QCOMPARE(o.value(QStringLiteral("content")).toString(), QString(QChar(0xFEFF)) + u"hello");
    QVERIFY(o.contains(QString(QChar(0xFEFF)) + u"key"));
    QVERIFY(!o.contains(QStringLiteral("key")));
    QCOMPARE(o.value(QStringLiteral("id")).toInt(), 2);
    // Written and read again, the same value (what fuzz_jsonrpc checks).
    QCOMPARE(Json::parse(QJsonDocument(o).toJson()).value, parsed.value);
    // Outside a string a byte order mark is still not JSON.
    QVERIFY(Json::parse("\xEF\xBB\xBF{}").error);
}

void tst_JsonRpc::errorCodesMapToRestStatus_data()
{
    QTest::addColumn<int>("code");
    QTest::addColumn<int>("status");
    QTest::newRow("parse error") << -32700 << 400;
    QTest::newRow("method not found") << -32601 << 404;
    QTest::newRow("unauthorized") << -32001 << 401;
    QTest::newRow("not found") << -32002 << 404;
    QTest::newRow("quota exceeded") << -32003 << 429;
    QTest::newRow("sandbox not running") << -32005 << 409;
    QTest::newRow("payload too large") << -32006 << 413;
    QTest::newRow("path not allowed") << -32007 << 403;
    QTest::newRow("stream gap") << -32009 << 410;
    QTest::newRow("not implemented") << -32010 << 501;
}

void tst_JsonRpc::errorCodesMapToRestStatus()
{
    QFETCH(int, code);
    QFETCH(int, status);
    QCOMPARE(httpStatusFor(ErrorCode(code)), status);
    QVERIFY(isKnownErrorCode(code));
}

QTEST_APPLESS_MAIN(tst_JsonRpc)
#include "tst_jsonrpc.moc"
