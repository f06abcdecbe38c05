// The strict JSON reader against Qt's lenient one on the same bytes, in the same run:
//   a streamed-output notification (64 KiB of text)   Json::parse  vs  QJsonDocument::fromJson
//   a database page (1 000 rows of mixed values)       Json::parse  vs  QJsonDocument::fromJson
// Json::parse = the RFC 8259 check (Json::validate, also shown alone) + QJsonDocument, so the
// ratio is what strictness costs.
#include "protocol/json.h"
#include "protocol/jsonrpc.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <algorithm>

namespace {

// The fastest of `rounds` runs: on a shared machine the minimum is the figure least disturbed
// by other load, and both sides are measured alike.
double bestMicros(const std::function<void()> &work, int rounds)
{
    QList<double> us;
    for (int i = 0; i < rounds; ++i) {
        QElapsedTimer t;
        t.start();
        work();
        us.append(double(t.nsecsElapsed()) / 1e3);
    }
    return *std::min_element(us.begin(), us.end());
}

void report(const char *name, double value, double baseline, qsizetype bytes)
{
    std::printf("BENCH %-34s best %8.2f us (%6.0f MB/s) | baseline %-22s best %8.2f us | "
                "ratio %.2fx\n",
                name, value, double(bytes) / value, "QJsonDocument::fromJson", baseline,
                value / baseline);
    std::fflush(stdout);
}

QByteArray outputNotification()
{
    QByteArray text;
    for (int i = 0; text.size() < 64 * 1024; ++i)
        text += "line " + QByteArray::number(i) + ": compiling src/module_"
                + QByteArray::number(i % 97) + ".cpp \xc3\xa9\xe2\x9c\x93 [\x1b[32mok\x1b[0m]\n";
    QByteArray out
        = R"({"jsonrpc":"2.0","method":"stream.output","params":{"streamId":"st_1","seq":7,"stream":"stdout","data":)";
    Sandbox::JsonRpc::appendJsonString(out, text);
    out += "}}";
    return out;
}

QByteArray databasePage()
{
    QJsonArray rows;
    for (int i = 0; i < 1000; ++i) {
        rows.append(
            QJsonArray{i, QStringLiteral("user-%1@example.com").arg(i), i * 0.25, i % 2 == 0,
                       QJsonValue(), QStringLiteral("2024-02-29T23:59:%1Z").arg(i % 60),
                       QJsonObject{{QStringLiteral("$int"), QStringLiteral("9007199254740993")}}});
    }
    const QJsonObject page{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                           {QStringLiteral("id"), 12},
                           {QStringLiteral("result"), QJsonObject{{QStringLiteral("rows"), rows}}}};
    return QJsonDocument(page).toJson(QJsonDocument::Compact);
}

} // namespace

class bench_Codec : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parse_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::newRow("output notification") << outputNotification();
        QTest::newRow("database page") << databasePage();
    }

    void parse()
    {
        QFETCH(QByteArray, text);
        QVERIFY(!Sandbox::Json::parse(text).error);
        const int rounds = 400;
        const double check = bestMicros([&] { Sandbox::Json::validate(text); }, rounds);
        const double strict = bestMicros([&] { Sandbox::Json::parse(text); }, rounds);
        const double qt = bestMicros([&] { QJsonDocument::fromJson(text); }, rounds);
        const QByteArray tag(QTest::currentDataTag());
        report(QByteArray("json check: " + tag).constData(), check, qt, text.size());
        report(QByteArray("json parse: " + tag).constData(), strict, qt, text.size());
        QVERIFY(check > 0 && strict > 0 && qt > 0);
    }
};

QTEST_GUILESS_MAIN(bench_Codec)
#include "bench_codec.moc"
