#include "supervisorchannel.h"

#include <QIODevice>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QtEndian>

Q_LOGGING_CATEGORY(lcSupervisor, "sandboxd.supervisor")

namespace Sandbox::Engine {

using SupervisorWire::FrameType;

namespace {
constexpr qsizetype kHeader = 4 + SupervisorWire::HeaderBytes; // u32 length, u8 type, u32 id
} // namespace

Error supervisorError(const QJsonObject &error)
{
    const QString code = error.value(QStringLiteral("code")).toString();
    const QString message = error.value(QStringLiteral("message")).toString();
    const QString err = error.value(QStringLiteral("errno")).toString();
    QJsonObject data;
    if (!err.isEmpty())
        data.insert(QStringLiteral("errno"), err);
    ErrorCode c = ErrorCode::SandboxError;
    if (code == QLatin1String("not_found"))
        c = ErrorCode::NotFound;
    else if (code == QLatin1String("path_not_allowed"))
        c = ErrorCode::PathNotAllowed;
    else if (code == QLatin1String("already_exists"))
        c = ErrorCode::AlreadyExists;
    else if (code == QLatin1String("file_error"))
        c = ErrorCode::FileError;
    else if (code == QLatin1String("too_large"))
        c = ErrorCode::PayloadTooLarge;
    else if (code == QLatin1String("bad_request"))
        c = ErrorCode::InvalidParams;
    return Error{c, message, data.isEmpty() ? QJsonValue() : QJsonValue(data)};
}

SupervisorChannel::SupervisorChannel(QIODevice *in, QIODevice *out, QObject *parent)
    : QObject(parent)
    , m_in(in)
    , m_out(out)
{
    connect(out, &QIODevice::readyRead, this, &SupervisorChannel::onReadyRead);
}

SupervisorChannel::~SupervisorChannel()
{
    failAll(Error{ErrorCode::SandboxNotRunning, QStringLiteral("the sandbox stopped"), {}});
}

quint32 SupervisorChannel::request(const QJsonObject &json, const QByteArray &data,
                                   ReplyHandler onReply, OutputHandler onOutput)
{
    const quint32 id = m_nextId++;
    if (m_nextId == 0)
        m_nextId = 1;
    m_pending.insert(id, Pending{std::move(onReply), std::move(onOutput)});
    const QByteArray text = QJsonDocument(json).toJson(QJsonDocument::Compact);
    if (data.isEmpty()) {
        writeFrame(FrameType::Request, id, text);
    } else {
        writeFrame(FrameType::Request, id, QByteArray(text + '\0'), data);
    }
    return id;
}

void SupervisorChannel::sendStdin(quint32 id, QByteArrayView bytes)
{
    writeFrame(FrameType::Stdin, id, bytes);
}

void SupervisorChannel::cancel(quint32 id)
{
    if (m_pending.contains(id))
        writeFrame(FrameType::Cancel, id, {});
}

void SupervisorChannel::failAll(const Error &error)
{
    const auto pending = std::exchange(m_pending, {});
    for (const Pending &p : pending) {
        if (p.onReply)
            p.onReply(error);
    }
}

void SupervisorChannel::writeFrame(FrameType type, quint32 id, QByteArrayView a, QByteArrayView b)
{
    if (!m_in)
        return;
    char header[kHeader];
    qToLittleEndian<quint32>(quint32(5 + a.size() + b.size()), header);
    header[4] = char(type);
    qToLittleEndian<quint32>(id, header + 5);
    m_in->write(header, kHeader);
    if (!a.isEmpty())
        m_in->write(a.data(), a.size());
    if (!b.isEmpty())
        m_in->write(b.data(), b.size());
}

void SupervisorChannel::onReadyRead()
{
    if (!m_out)
        return;
    if (m_bufferPos > 0 && m_bufferPos == m_buffer.size()) {
        m_buffer.clear();
        m_bufferPos = 0;
    }
    m_buffer.append(m_out->readAll());
    while (m_buffer.size() - m_bufferPos >= kHeader) {
        const char *p = m_buffer.constData() + m_bufferPos;
        const quint32 length = qFromLittleEndian<quint32>(p);
        if (length < SupervisorWire::HeaderBytes || length > SupervisorWire::MaxLength) {
            const QString why
                = QStringLiteral("bad frame length %1 from the supervisor").arg(length);
            qCWarning(lcSupervisor) << why;
            m_buffer.clear();
            m_bufferPos = 0;
            Q_EMIT protocolError(why);
            return;
        }
        if (m_buffer.size() - m_bufferPos < qsizetype(4 + length))
            break;
        const auto type = FrameType(quint8(p[4]));
        const quint32 id = qFromLittleEndian<quint32>(p + 5);
        const QByteArrayView payload(p + kHeader, length - SupervisorWire::HeaderBytes);
        m_bufferPos += 4 + length;
        dispatch(type, id, payload);
    }
    // Compact once the consumed part dominates, so the buffer does not grow without bound.
    if (m_bufferPos > 0 && m_bufferPos >= m_buffer.size() / 2) {
        m_buffer.remove(0, m_bufferPos);
        m_bufferPos = 0;
    }
}

void SupervisorChannel::dispatch(FrameType type, quint32 id, QByteArrayView payload)
{
    switch (type) {
    case FrameType::Hello: {
        m_ready = true;
        Q_EMIT ready(QJsonDocument::fromJson(payload.toByteArray()).object());
        return;
    }
    case FrameType::Stdout:
    case FrameType::Stderr: {
        const auto it = m_pending.constFind(id);
        if (it != m_pending.constEnd() && it->onOutput)
            it->onOutput(type == FrameType::Stdout ? 1 : 2, payload);
        return;
    }
    case FrameType::Response: {
        const Pending p = m_pending.take(id);
        if (!p.onReply)
            return;
        const qsizetype nul = payload.indexOf('\0');
        const QByteArrayView jsonPart = nul < 0 ? payload : payload.first(nul);
        Reply reply;
        QJsonParseError perr;
        reply.json = QJsonDocument::fromJson(jsonPart.toByteArray(), &perr).object();
        if (perr.error != QJsonParseError::NoError) {
            p.onReply(Error{ErrorCode::SandboxError,
                            QStringLiteral("malformed answer from the supervisor"),
                            {}});
            return;
        }
        if (nul >= 0)
            reply.data = payload.sliced(nul + 1).toByteArray();
        const QJsonValue err = reply.json.value(QStringLiteral("error"));
        if (err.isObject())
            p.onReply(supervisorError(err.toObject()));
        else
            p.onReply(std::move(reply));
        return;
    }
    default:
        qCWarning(lcSupervisor) << "unknown frame type" << int(type);
    }
}

} // namespace Sandbox::Engine
