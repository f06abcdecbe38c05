#include "supervisorlog.h"

#include "egress/fdpoller.h"

#include <QLoggingCategory>
#include <QTimer>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcSupervisorLog, "sandboxd.supervisor.log")

namespace Sandbox::Engine {

namespace {

constexpr int kTailLines = 4;

QString escaped(QByteArrayView line)
{
    QString out;
    out.reserve(line.size());
    const QString text = QString::fromUtf8(line);
    for (const QChar c : text) {
        if (c.isPrint() || c == u' ')
            out.append(c);
        else if (c == u'\t')
            out.append(QLatin1String("\\t"));
        else
            out.append(QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QLatin1Char('0')));
    }
    return out;
}

} // namespace

SupervisorLog::SupervisorLog(UniqueFd pipe, QString sandboxId, FdPoller *poller, QObject *parent)
    : QObject(parent)
    , m_pipe(std::move(pipe))
    , m_id(std::move(sandboxId))
    , m_poller(poller ? poller : new FdPoller(this))
{
    ::fcntl(m_pipe.get(), F_SETFL, ::fcntl(m_pipe.get(), F_GETFL) | O_NONBLOCK);
    watch(true);
    m_second = new QTimer(this);
    m_second->setInterval(1000);
    connect(m_second, &QTimer::timeout, this, &SupervisorLog::onSecond);
}

SupervisorLog::~SupervisorLog()
{
    closePipe();
}

void SupervisorLog::watch(bool on)
{
    if (on == m_watched || !m_poller || !m_pipe.isValid())
        return;
    m_watched = on;
    // Paused, out of the poller: a hang-up would be reported for ever.
    if (!on)
        return m_poller->remove(m_pipe.get());
    if (!m_poller->add(m_pipe.get(), EPOLLIN, [this](uint32_t) { onReadable(); })) {
        m_watched = false;
        qCWarning(lcSupervisorLog) << "cannot watch the supervisor's log:" << std::strerror(errno);
    }
}

void SupervisorLog::closePipe()
{
    watch(false); // before it closes (see FdPoller)
    m_pipe.reset();
}

void SupervisorLog::onReadable()
{
    if (!m_second->isActive())
        m_second->start();
    const qsizetype room = kBytesPerSecond - m_bytesThisSecond;
    if (room <= 0) {
        watch(false); // the pipe fills up; onSecond() reads on
        return;
    }
    char buf[16384];
    const ssize_t n = ::read(m_pipe.get(), buf, size_t(qMin<qsizetype>(room, sizeof buf)));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        if (!m_partial.isEmpty())
            takeLine(m_partial, false);
        m_partial.clear();
        closePipe();
        return;
    }
    m_bytesThisSecond += n;
    QByteArrayView data(buf, n);
    while (!data.isEmpty()) {
        const qsizetype nl = data.indexOf('\n');
        const QByteArrayView piece = nl < 0 ? data : data.first(nl);
        if (!m_skipping) {
            const qsizetype take = qMin(piece.size(), kMaxLine - m_partial.size());
            m_partial.append(piece.first(take));
            if (take < piece.size()) {
                takeLine(m_partial, true);
                m_partial.clear();
                m_skipping = true;
            }
        }
        if (nl < 0)
            break;
        if (!m_skipping && !m_partial.isEmpty())
            takeLine(m_partial, false);
        m_partial.clear();
        m_skipping = false;
        data = data.sliced(nl + 1);
    }
}

void SupervisorLog::takeLine(QByteArrayView line, bool cut)
{
    const QString text = escaped(line) + (cut ? QStringLiteral(" [...]") : QString());
    m_tail.append(text);
    if (m_tail.size() > kTailLines)
        m_tail.removeFirst();
    if (m_linesThisSecond >= kLinesPerSecond) {
        ++m_droppedThisSecond;
        ++m_droppedTotal;
        return;
    }
    ++m_linesThisSecond;
    qCInfo(lcSupervisorLog).noquote() << m_id << text;
}

void SupervisorLog::onSecond()
{
    if (m_droppedThisSecond > 0)
        qCWarning(lcSupervisorLog).noquote()
            << m_id
            << QStringLiteral("%1 log lines dropped (more than %2 per second)")
                   .arg(m_droppedThisSecond)
                   .arg(kLinesPerSecond);
    const bool idle = m_bytesThisSecond == 0 && m_droppedThisSecond == 0;
    m_bytesThisSecond = 0;
    m_linesThisSecond = 0;
    m_droppedThisSecond = 0;
    watch(true);
    if (idle)
        m_second->stop();
}

} // namespace Sandbox::Engine
