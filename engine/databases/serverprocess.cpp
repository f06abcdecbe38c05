#include "serverprocess.h"

#include "runtime/supervisorchannel.h"

#include <QPointer>

namespace Sandbox::Engine {

namespace {
constexpr qsizetype kLogTail = 4096;
constexpr int kMaxOutputBytes = 1024 * 1024;
} // namespace

ServerProcess::ServerProcess(QString what, int reasonLines, QObject *parent)
    : QObject(parent)
    , m_what(std::move(what))
    , m_reasonLines(reasonLines)
{}

void ServerProcess::start(SupervisorChannel *channel, QJsonObject exec)
{
    m_log.clear();
    exec.insert(QStringLiteral("op"), QStringLiteral("exec"));
    exec.insert(QStringLiteral("timeoutMs"), 0); // as long as the server runs
    exec.insert(QStringLiteral("maxOutputBytes"), kMaxOutputBytes);
    exec.insert(QStringLiteral("stdin"), false);
    QPointer<ServerProcess> self(this);
    channel->request(
        exec, {},
        [self](Result<SupervisorChannel::Reply> r) {
            if (!self)
                return;
            Q_EMIT self->exited(
                self->withLog(r ? QStringLiteral("%1 exited with status %2")
                                      .arg(self->m_what)
                                      .arg(r->json.value(QStringLiteral("exitCode")).toInt())
                                : r.error().message));
        },
        [self](int, QByteArrayView bytes) {
            if (!self)
                return;
            self->m_log.append(bytes);
            if (self->m_log.size() > kLogTail)
                self->m_log.remove(0, self->m_log.size() - kLogTail);
        });
}

QString ServerProcess::logTail(int lines) const
{
    return QString::fromUtf8(m_log).trimmed().section(u'\n', -lines);
}

QString ServerProcess::withLog(const QString &prefix) const
{
    const QString log = logTail(m_reasonLines);
    return log.isEmpty() ? prefix : prefix + QStringLiteral(": ") + log;
}

} // namespace Sandbox::Engine
