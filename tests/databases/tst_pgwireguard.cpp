// PgWireGuard between libpq's socket and a PostgreSQL server: what a server (a hostile one in a
// sandbox) sends reaches libpq only message by message within the bound, in order and whole; a
// header past the bound, or one that is not PostgreSQL's, ends the connection before a byte of it
// reaches libpq. The server here is a socket of the test's own.
#include "databases/pgwireguard.h"

#include <QTest>

#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace Sandbox::Engine;

namespace {

QByteArray message(char type, const QByteArray &body)
{
    const quint32 length = quint32(body.size()) + 4;
    QByteArray m(1, type);
    m.append(char(length >> 24)).append(char(length >> 16)).append(char(length >> 8));
    m.append(char(length));
    return m + body;
}

QByteArray header(char type, quint32 length)
{
    QByteArray m(1, type);
    m.append(char(length >> 24)).append(char(length >> 16)).append(char(length >> 8));
    return m.append(char(length));
}

// Everything readable on a non-blocking fd now; `eof` set when the stream has ended.
QByteArray drain(int fd, bool *eof = nullptr)
{
    QByteArray all;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            all.append(buf, n);
            continue;
        }
        if (eof)
            *eof = n == 0;
        return all;
    }
}

} // namespace

class tst_PgWireGuard : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void framesPassMessagesSplitAnywhere();
    void framesRefuseALengthPastTheBoundOrBelowItsOwn_data();
    void framesRefuseALengthPastTheBoundOrBelowItsOwn();
    void bytesPassBothWaysInOrder();
    void aServerThatSendsMoreThanLibpqReadsIsHeldBack();
    void aHeaderPastTheBoundEndsTheConnectionBeforeLibpqReadsIt();
    void aMessageOfAnyTypePastTheBoundIsRefusedSayingWhat();
    void theServersEndReachesLibpqAfterItsBytes();

private:
    // A server's end and libpq's fd (guarded): a socket pair, as if libpq had connected.
    bool connectGuard(PgWireGuard &guard, int *server, int *libpq);
};

void tst_PgWireGuard::framesPassMessagesSplitAnywhere()
{
    const QByteArray stream = message('R', QByteArray(4, '\0')) + message('Z', "I")
                              + message('D', QByteArray(70000, 'x')) + message('n', {})
                              + message('C', "SELECT 1");
    for (qsizetype step = 1; step <= 9; ++step) {
        PgServerFrames frames;
        for (qsizetype at = 0; at < stream.size(); at += step)
            QCOMPARE(frames.feed(stream.constData() + at, std::min(step, stream.size() - at)),
                     PgServerFrames::Verdict::Ok);
    }
    PgServerFrames whole;
    QCOMPARE(whole.feed(stream.constData(), stream.size()), PgServerFrames::Verdict::Ok);
}

void tst_PgWireGuard::framesRefuseALengthPastTheBoundOrBelowItsOwn_data()
{
    QTest::addColumn<quint32>("length");
    QTest::addColumn<int>("verdict");
    const auto ok = int(PgServerFrames::Verdict::Ok);
    const auto tooLong = int(PgServerFrames::Verdict::TooLong);
    const auto malformed = int(PgServerFrames::Verdict::Malformed);
    const auto bound = quint32(PgServerFrames::kMaxMessageBytes);
    QTest::newRow("the bound") << bound << ok;
    QTest::newRow("past the bound") << bound + 1 << tooLong;
    QTest::newRow("1 GB") << (quint32(1) << 30) << tooLong;
    QTest::newRow("INT32_MAX") << quint32(0x7fffffff) << tooLong;
    QTest::newRow("negative") << quint32(0x80000000) << malformed;
    QTest::newRow("all ones") << quint32(0xffffffff) << malformed;
    QTest::newRow("3, shorter than itself") << quint32(3) << malformed;
    QTest::newRow("0") << quint32(0) << malformed;
}

void tst_PgWireGuard::framesRefuseALengthPastTheBoundOrBelowItsOwn()
{
    QFETCH(quint32, length);
    QFETCH(int, verdict);
    PgServerFrames frames;
    const QByteArray first = message('Z', "I") + header('D', length);
    QCOMPARE(int(frames.feed(first.constData(), first.size())), verdict);
    if (verdict == int(PgServerFrames::Verdict::Ok))
        return;
    QCOMPARE(frames.refusedType(), 'D');
    QCOMPARE(frames.refusedLength(), qint64(qint32(length)));
    // Refused for good: what follows does not make it right again.
    const QByteArray after = message('Z', "I");
    QCOMPARE(int(frames.feed(after.constData(), after.size())), verdict);
}

bool tst_PgWireGuard::connectGuard(PgWireGuard &guard, int *server, int *libpq)
{
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0)
        return false;
    *server = pair[0];
    *libpq = pair[1];
    return bool(guard.interpose(*libpq));
}

void tst_PgWireGuard::bytesPassBothWaysInOrder()
{
    PgWireGuard guard;
    int server = -1, libpq = -1;
    QVERIFY(connectGuard(guard, &server, &libpq));
    int arrived = 0;
    guard.arrived = [&] { ++arrived; };
    // libpq's bytes reach the server once pumped out, with no turn of the event loop.
    const QByteArray query = message('Q', "SELECT 1");
    QCOMPARE(::send(libpq, query.constData(), size_t(query.size()), 0), ssize_t(query.size()));
    guard.pumpOut();
    QCOMPARE(drain(server), query);
    // The server's bytes reach libpq's fd, split as the server sends them.
    const QByteArray answer = message('T', QByteArray(30, 'f')) + message('D', QByteArray(9, 'v'))
                              + message('C', "SELECT 1") + message('Z', "I");
    QCOMPARE(::send(server, answer.constData(), 7, 0), ssize_t(7));
    QTRY_COMPARE(arrived, 1);
    QByteArray got = drain(libpq);
    QCOMPARE(::send(server, answer.constData() + 7, size_t(answer.size() - 7), 0),
             ssize_t(answer.size() - 7));
    QTRY_VERIFY(arrived >= 2);
    got += drain(libpq);
    QCOMPARE(got, answer);
    ::close(server);
    ::close(libpq);
}

void tst_PgWireGuard::aServerThatSendsMoreThanLibpqReadsIsHeldBack()
{
    PgWireGuard guard;
    int server = -1, libpq = -1;
    QVERIFY(connectGuard(guard, &server, &libpq));
    // 8 MB of rows while libpq reads none: the server's sending stops at the sockets' buffers and
    // the guard's one chunk; then libpq reads, and every byte comes in order.
    QByteArray rows;
    for (int i = 0; rows.size() < 8'000'000; ++i)
        rows += message('D', QByteArray::number(i).rightJustified(100, '.'));
    qsizetype sent = 0;
    for (int round = 0; round < 50; ++round) {
        const ssize_t n = ::send(server, rows.constData() + sent, size_t(rows.size() - sent),
                                 MSG_DONTWAIT);
        if (n > 0)
            sent += n;
        QTest::qWait(5);
    }
    QVERIFY2(sent < 4'000'000, qPrintable(QString::number(sent)));
    QByteArray got;
    QElapsedTimer clock;
    clock.start();
    while (got.size() < rows.size() && clock.elapsed() < 20000) {
        if (sent < rows.size()) {
            const ssize_t n = ::send(server, rows.constData() + sent, size_t(rows.size() - sent),
                                     MSG_DONTWAIT);
            if (n > 0)
                sent += n;
        }
        got += drain(libpq);
        QTest::qWait(1);
    }
    QCOMPARE(got.size(), rows.size());
    QVERIFY(got == rows);
    ::close(server);
    ::close(libpq);
}

void tst_PgWireGuard::aHeaderPastTheBoundEndsTheConnectionBeforeLibpqReadsIt()
{
    PgWireGuard guard;
    int server = -1, libpq = -1;
    QVERIFY(connectGuard(guard, &server, &libpq));
    QString why;
    bool row = false;
    guard.refused = [&](const QString &w, bool r) {
        why = w;
        row = r;
    };
    // A row's header says 1 GB, and its bytes follow: libpq would size its buffer by it, and read.
    const QByteArray before = message('Z', "I");
    QVERIFY(::send(server, before.constData(), size_t(before.size()), 0) == before.size());
    QByteArray got;
    QTRY_COMPARE((got += drain(libpq)), before);
    const QByteArray huge = header('D', 1u << 30) + QByteArray(60000, 'x');
    QVERIFY(::send(server, huge.constData(), size_t(huge.size()), 0) == huge.size());
    QTRY_VERIFY(!why.isEmpty());
    QVERIFY(row);
    QVERIFY2(why.contains(QLatin1String("row of 1073741824 bytes")), qPrintable(why));
    bool eof = false;
    QCOMPARE(drain(libpq, &eof), QByteArray()); // none of it, and the end
    QVERIFY(eof);
    // Nothing passes any more, either way.
    const QByteArray more = message('Z', "I");
    (void)::send(server, more.constData(), size_t(more.size()), MSG_NOSIGNAL);
    QTest::qWait(50);
    QCOMPARE(drain(libpq), QByteArray());
    ::close(server);
    ::close(libpq);
}

void tst_PgWireGuard::aMessageOfAnyTypePastTheBoundIsRefusedSayingWhat()
{
    // A notice (RAISE NOTICE of 20 MB) is bounded as a row is; the words say which it was.
    PgWireGuard guard;
    int server = -1, libpq = -1;
    QVERIFY(connectGuard(guard, &server, &libpq));
    QString why;
    bool row = true;
    guard.refused = [&](const QString &w, bool r) {
        why = w;
        row = r;
    };
    const QByteArray notice = header('N', 20'000'004) + QByteArray(1000, 'x');
    QVERIFY(::send(server, notice.constData(), size_t(notice.size()), 0) == notice.size());
    QTRY_VERIFY(!why.isEmpty());
    QVERIFY(!row);
    QCOMPARE(why, QStringLiteral("the database server sent a message ('N') of 20000004 bytes: over "
                                 "the 16842752 bytes one message may take"));
    ::close(server);
    ::close(libpq);
}

void tst_PgWireGuard::theServersEndReachesLibpqAfterItsBytes()
{
    PgWireGuard guard;
    int server = -1, libpq = -1;
    QVERIFY(connectGuard(guard, &server, &libpq));
    const QByteArray last = message('E', "SFATAL\0C57P01\0Mterminating\0\0");
    QVERIFY(::send(server, last.constData(), size_t(last.size()), 0) == last.size());
    ::close(server);
    QByteArray got;
    bool eof = false;
    QTRY_VERIFY((got += drain(libpq, &eof), eof));
    QCOMPARE(got, last);
    ::close(libpq);
}

QTEST_GUILESS_MAIN(tst_PgWireGuard)
#include "tst_pgwireguard.moc"
