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

// One GET /health over a fresh connection; the latency in ms, or -1.
qint64 probeOnce(const QByteArray &host, int port)
{
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::seconds(5);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(quint16(port));
    ::inet_pton(AF_INET, host.constData(), &addr.sin_addr);
    auto waitFor = [&](short events) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline
                                                                                - Clock::now());
        if (left.count() <= 0)
            return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, int(left.count())) > 0;
    };
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0
        || (errno == EINPROGRESS && waitFor(POLLOUT))) {
        const QByteArray request = "GET /health HTTP/1.1\r\nHost: " + host
                                   + "\r\nConnection: close\r\n\r\n";
        if (::send(fd, request.constData(), size_t(request.size()), MSG_NOSIGNAL)
            == ssize_t(request.size())) {
            QByteArray answer;
            char buf[4096];
            while (waitFor(POLLIN)) {
                const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                if (n <= 0)
                    break;
                answer.append(buf, n);
                if (answer.contains("\r\n\r\n") && answer.contains("}"))
                    break;
            }
            ok = answer.startsWith("HTTP/1.1 200");
        }
    }
    ::close(fd);
    if (!ok)
        return -1;
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
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
    while (m_running) {
        const qint64 latency = probeOnce(host, m_port);
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

qint64 HealthProbe::maxLatencyMs() const
{
    std::lock_guard lock(m_mutex);
    return m_latencies.isEmpty() ? -1 : *std::max_element(m_latencies.begin(), m_latencies.end());
}

qint64 HealthProbe::medianLatencyMs() const
{
    std::lock_guard lock(m_mutex);
    if (m_latencies.isEmpty())
        return -1;
    QList<qint64> sorted = m_latencies;
    std::sort(sorted.begin(), sorted.end());
    return sorted.at(sorted.size() / 2);
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
    return QStringLiteral("health: %1 samples, median %2 ms, max %3 ms, failures %4; engine RSS "
                          "%5 -> max %6 MiB")
        .arg(samples())
        .arg(medianLatencyMs())
        .arg(maxLatencyMs())
        .arg(failures())
        .arg(double(startRssKb()) / 1024, 0, 'f', 1)
        .arg(double(maxRssKb()) / 1024, 0, 'f', 1);
}
