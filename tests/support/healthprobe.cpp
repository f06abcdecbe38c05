#include "healthprobe.h"

#include <QFile>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

// The length of the whole response at the start of `data` (head and Content-Length body), or -1
// while it is incomplete.
qsizetype responseLength(const QByteArray &data)
{
    const qsizetype end = data.indexOf("\r\n\r\n");
    if (end < 0)
        return -1;
    qsizetype body = 0;
    for (const QByteArray &line : data.left(end).split('\n')) {
        if (line.toLower().startsWith("content-length:"))
            body = line.mid(15).trimmed().toLongLong();
    }
    return data.size() >= end + 4 + body ? end + 4 + body : -1;
}

// One GET /health over `fd` (connected first if it is -1, from `from` if that is not empty);
// the latency in ms, or -1. `fd` stays open for the next request if `keep`, else it is closed.
double probeOnce(int &fd, const QByteArray &host, int port, const QByteArray &from, bool keep)
{
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::seconds(5);
    auto waitFor = [&](short events) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline
                                                                                - Clock::now());
        if (left.count() <= 0)
            return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, int(left.count())) > 0;
    };
    bool connected = fd >= 0;
    if (!connected) {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -1;
        sockaddr_in local{};
        local.sin_family = AF_INET;
        ::inet_pton(AF_INET, from.constData(), &local.sin_addr);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(quint16(port));
        ::inet_pton(AF_INET, host.constData(), &addr.sin_addr);
        connected = (from.isEmpty()
                     || ::bind(fd, reinterpret_cast<sockaddr *>(&local), sizeof local) == 0)
                    && (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0
                        || (errno == EINPROGRESS && waitFor(POLLOUT)));
    }
    bool ok = false;
    const QByteArray request = "GET /health HTTP/1.1\r\nHost: " + host
                               + "\r\nConnection: " + (keep ? "keep-alive" : "close") + "\r\n\r\n";
    if (connected
        && ::send(fd, request.constData(), size_t(request.size()), MSG_NOSIGNAL)
               == ssize_t(request.size())) {
        QByteArray answer;
        char buf[4096];
        while (responseLength(answer) < 0 && waitFor(POLLIN)) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            answer.append(buf, n);
        }
        ok = responseLength(answer) == answer.size() && answer.startsWith("HTTP/1.1 200");
    }
    if (!ok || !keep) {
        ::close(fd);
        fd = -1;
    }
    if (!ok)
        return -1;
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace

HealthProbe::HealthProbe(const QUrl &engine, qint64 enginePid, int intervalMs)
    : m_host(engine.host())
    , m_port(engine.port())
    , m_pid(enginePid)
    , m_intervalMs(intervalMs)
{}

HealthProbe::~HealthProbe()
{
    stop();
}

qint64 HealthProbe::rssKb(qint64 pid)
{
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    if (!status.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : status.readAll().split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong();
    }
    return 0;
}

void HealthProbe::keepOneConnectionFrom(const QString &from)
{
    m_keepFrom = from;
}

void HealthProbe::start()
{
    stop();
    {
        std::lock_guard lock(m_mutex);
        m_latencies.clear();
        m_failures = 0;
        m_startRss = m_maxRss = rssKb(m_pid);
    }
    m_running = true;
    m_thread = std::thread([this] { run(); });
}

void HealthProbe::stop()
{
    m_running = false;
    if (m_thread.joinable())
        m_thread.join();
}

void HealthProbe::run()
{
    const QByteArray host = m_host.toLatin1();
    const QByteArray from = m_keepFrom.toLatin1();
    int fd = -1;
    while (m_running) {
        const double latency = probeOnce(fd, host, m_port, from, !from.isEmpty());
        const qint64 rss = rssKb(m_pid);
        {
            std::lock_guard lock(m_mutex);
            if (latency < 0)
                ++m_failures;
            else
                m_latencies.append(latency);
            m_maxRss = std::max(m_maxRss, rss);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(m_intervalMs));
    }
    if (fd >= 0)
        ::close(fd);
}

int HealthProbe::samples() const
{
    std::lock_guard lock(m_mutex);
    return int(m_latencies.size()) + m_failures;
}

int HealthProbe::failures() const
{
    std::lock_guard lock(m_mutex);
    return m_failures;
}

double HealthProbe::maxLatencyMs() const
{
    std::lock_guard lock(m_mutex);
    return m_latencies.isEmpty() ? -1 : *std::max_element(m_latencies.begin(), m_latencies.end());
}

double HealthProbe::medianLatencyMs() const
{
    return percentileLatencyMs(50);
}

double HealthProbe::percentileLatencyMs(int percent) const
{
    std::lock_guard lock(m_mutex);
    if (m_latencies.isEmpty())
        return -1;
    QList<double> sorted = m_latencies;
    std::sort(sorted.begin(), sorted.end());
    return sorted.at(std::min(sorted.size() - 1, sorted.size() * std::clamp(percent, 0, 100) / 100));
}

qint64 HealthProbe::maxRssKb() const
{
    std::lock_guard lock(m_mutex);
    return m_maxRss;
}

qint64 HealthProbe::startRssKb() const
{
    std::lock_guard lock(m_mutex);
    return m_startRss;
}

QString HealthProbe::summary() const
{
    return QStringLiteral("health: %1 samples, median %2 ms, p95 %3 ms, max %4 ms, failures %5; "
                          "engine RSS %6 -> max %7 MiB")
        .arg(samples())
        .arg(medianLatencyMs(), 0, 'f', 1)
        .arg(percentileLatencyMs(95), 0, 'f', 1)
        .arg(maxLatencyMs(), 0, 'f', 1)
        .arg(failures())
        .arg(double(startRssKb()) / 1024, 0, 'f', 1)
        .arg(double(maxRssKb()) / 1024, 0, 'f', 1);
}

QString HealthProbe::stall() const
{
    constexpr double kMedianMs = 100;
    constexpr double kP95Ms = 300;
    constexpr double kMaxMs = 1000;
    QString why;
    if (samples() == 0)
        why = QStringLiteral("no answer at all");
    else if (failures() > 0)
        why = QStringLiteral("%1 requests not answered within 5 s").arg(failures());
    else if (medianLatencyMs() > kMedianMs)
        why = QStringLiteral("median over %1 ms").arg(kMedianMs);
    else if (percentileLatencyMs(95) > kP95Ms)
        why = QStringLiteral("95th percentile over %1 ms").arg(kP95Ms);
    else if (maxLatencyMs() >= kMaxMs)
        why = QStringLiteral("an answer took %1 s or more").arg(kMaxMs / 1000, 0, 'f', 0);
    return why.isEmpty() ? why : why + QStringLiteral(" (") + summary() + QLatin1Char(')');
}
