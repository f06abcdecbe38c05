#include "terminalsession.h"

#include "execstream.h"
#include "rpcclient.h"

#include <protocol/utf8.h>

#include <QTimer>

namespace Sandbox {

TerminalSession::TerminalSession(RpcClient *client, const QString &method,
                                 const QJsonObject &params, int cols, int rows, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_cols(cols)
    , m_rows(rows)
{
    m_stream = client->startStream(method, params, this);
    connect(m_stream, &ExecStream::started, this, [this](const QString &id) {
        Q_EMIT started(id);
        if (!m_pendingInput.isEmpty())
            input(std::exchange(m_pendingInput, {}));
    });
    connect(m_stream, &ExecStream::output, this,
            [this](const QString &, const QByteArray &data) { Q_EMIT output(data); });
    connect(m_stream, &ExecStream::gap, this, &TerminalSession::onGap);
    connect(m_stream, &ExecStream::finished, this, [this](const ExecResult &r) {
        m_done = true;
        Q_EMIT finished(r);
    });
    connect(m_stream, &ExecStream::failed, this, [this](const Error &e) {
        m_done = true;
        Q_EMIT failed(e);
    });
}

TerminalSession::~TerminalSession() = default;

QString TerminalSession::streamId() const
{
    return m_stream ? m_stream->streamId() : QString();
}

void TerminalSession::input(const QByteArray &bytes)
{
    if (m_done || bytes.isEmpty() || !m_client)
        return;
    if (streamId().isEmpty()) {
        m_pendingInput += bytes;
        return;
    }
    QJsonObject params{{QStringLiteral("streamId"), streamId()}};
    if (Utf8::isValid(bytes))
        params.insert(QStringLiteral("data"), QString::fromUtf8(bytes));
    else
        params.insert(QStringLiteral("dataBase64"), QString::fromLatin1(bytes.toBase64()));
    m_inputInFlight += bytes.size();
    const qint64 size = bytes.size();
    m_client
        ->call(QStringLiteral("stream.input"), params, this,
               [this, size](Result<QJsonValue> r) {
                   m_inputInFlight -= size;
                   if (!r && r.error().code != ErrorCode::ConnectionError)
                       Q_EMIT controlFailed(r.error());
               })
        .detach();
}

void TerminalSession::resize(int cols, int rows)
{
    m_cols = qBound(1, cols, 1000);
    m_rows = qBound(1, rows, 500);
    if (m_done || streamId().isEmpty() || !m_client)
        return;
    m_client
        ->call(QStringLiteral("stream.resize"),
               {{QStringLiteral("streamId"), streamId()},
                {QStringLiteral("cols"), m_cols},
                {QStringLiteral("rows"), m_rows}},
               this,
               [this](Result<QJsonValue> r) {
                   if (!r && r.error().code != ErrorCode::ConnectionError
                       && r.error().code != ErrorCode::NotFound)
                       Q_EMIT controlFailed(r.error());
               })
        .detach();
}

void TerminalSession::close()
{
    if (m_stream && !m_done)
        m_stream->cancel();
}

void TerminalSession::onGap()
{
    // The engine said which modes the terminal is in; the view starts over with them, then the
    // replay follows, then the program redraws its screen.
    const QJsonObject terminal = m_stream->terminalState();
    Q_EMIT reset(terminal.value(QStringLiteral("modes")).toString().toLatin1());
    QTimer::singleShot(0, this, [this] { resize(m_cols, m_rows); });
}

} // namespace Sandbox
