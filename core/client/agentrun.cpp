#include "agentrun.h"

#include "execstream.h"
#include "rpcclient.h"

#include <QLoggingCategory>

Q_LOGGING_CATEGORY(lcAgentRun, "sandbox.core.agents", QtWarningMsg)

namespace Sandbox {

AgentRun::AgentRun(RpcClient *client, const QString &method, const QJsonObject &params,
                   QObject *parent)
    : QObject(parent)
{
    follow(client->startStream(method, params, this, ExecStream::ResultKind::Raw));
}

AgentRun::AgentRun(RpcClient *client, const QString &streamId, qint64 after, QObject *parent)
    : QObject(parent)
{
    follow(client->watchStream(streamId, after, this, ExecStream::ResultKind::Raw));
}

void AgentRun::follow(ExecStream *stream)
{
    m_stream = stream;
    connect(m_stream, &ExecStream::started, this, &AgentRun::started);
    connect(m_stream, &ExecStream::event, this, &AgentRun::onEvent);
    connect(m_stream, &ExecStream::ended, this, &AgentRun::onEnded);
    connect(m_stream, &ExecStream::failed, this, &AgentRun::onFailed);
    connect(m_stream, &ExecStream::gap, this, &AgentRun::gap);
}

AgentRun::~AgentRun() = default;

bool AgentRun::isWatched() const
{
    return m_stream && m_stream->isWatching();
}

QString AgentRun::streamId() const
{
    return m_stream ? m_stream->streamId() : QString();
}

void AgentRun::cancel()
{
    if (m_stream && !m_done)
        m_stream->cancel();
}

void AgentRun::onEvent(const QJsonObject &raw)
{
    const Result<AgentEvent> parsed = AgentEvent::fromJson(raw);
    if (!parsed) {
        qCWarning(lcAgentRun).noquote() << parsed.error().message;
        return;
    }
    const AgentEvent &e = parsed.value();
    QPointer<AgentRun> guard(this);
    Q_EMIT event(e);
    if (!guard)
        return;
    switch (e.type) {
    case AgentEvent::Type::Session:
        m_sessionId = e.sessionId;
        Q_EMIT sessionStarted(e.sessionId);
        break;
    case AgentEvent::Type::Text:
        Q_EMIT text(e.text, e.turn);
        break;
    case AgentEvent::Type::Thinking:
        Q_EMIT thinking(e.text, e.turn);
        break;
    case AgentEvent::Type::ToolCall:
        Q_EMIT toolCall(e.id, e.name, e.input, e.turn);
        break;
    case AgentEvent::Type::ToolResult:
        Q_EMIT toolResult(e.id, e.name, e.output, e.isError, e.turn);
        break;
    case AgentEvent::Type::FileChange:
        Q_EMIT fileChange(e.path, e.changeKind, !e.isError, e.diff, e.turn);
        break;
    case AgentEvent::Type::Usage:
        m_usage = e.usage;
        Q_EMIT usageChanged(m_usage);
        break;
    case AgentEvent::Type::Error:
        Q_EMIT errorReported(e.text, e.turn);
        break;
    case AgentEvent::Type::Result:
    case AgentEvent::Type::Other:
        break;
    }
}

void AgentRun::onEnded(const QJsonValue &result)
{
    if (m_done)
        return;
    m_done = true;
    const QJsonObject o = result.toObject();
    if (o.contains(QStringLiteral("error")) && o.value(QStringLiteral("error")).isObject()
        && !o.contains(QStringLiteral("success"))) {
        Q_EMIT failed(Error::fromJson(o.value(QStringLiteral("error"))));
        return;
    }
    const Result<AgentRunResult> r = AgentRunResult::fromJson(result);
    if (!r) {
        Q_EMIT failed(r.error());
        return;
    }
    if (!r->sessionId.isEmpty())
        m_sessionId = r->sessionId;
    m_usage = r->usage;
    Q_EMIT finished(r.value());
}

void AgentRun::onFailed(const Error &error)
{
    if (m_done)
        return;
    m_done = true;
    Q_EMIT failed(error);
}

} // namespace Sandbox
