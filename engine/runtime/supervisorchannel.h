#pragma once

#include "protocol/result.h"
#include "supervisor/wire.h"

#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

#include <functional>

class QIODevice;

namespace Sandbox::Engine {

// The engine's end of engine/supervisor/PROTOCOL.md: frames over the supervisor's stdin/stdout.
// Requests get ids; each answer goes to the callback registered for it. Not thread-safe; lives
// in the engine's thread.
class SupervisorChannel final : public QObject
{
    Q_OBJECT

public:
    struct Reply
    {
        QJsonObject json;
        QByteArray data; // raw bytes after the JSON (readFile)
    };
    using ReplyHandler = std::function<void(Result<Reply>)>;
    using OutputHandler = std::function<void(int channel, QByteArrayView bytes)>; // 1 out, 2 err

    // `in` is the supervisor's stdin, `out` its stdout (for a QProcess both are the process).
    SupervisorChannel(QIODevice *in, QIODevice *out, QObject *parent = nullptr);
    ~SupervisorChannel() override;

    bool isReady() const { return m_ready; }

    // Sends a request; `data` follows the JSON after a 0x00 byte when not empty. Returns its id.
    quint32 request(const QJsonObject &json, const QByteArray &data, ReplyHandler onReply,
                    OutputHandler onOutput = {});
    void sendStdin(quint32 id, QByteArrayView bytes);
    void cancel(quint32 id);

    // Fails every pending request (the supervisor is gone).
    void failAll(const Error &error);

Q_SIGNALS:
    void ready(const QJsonObject &hello);
    void protocolError(const QString &why);

private:
    void onReadyRead();
    void writeFrame(SupervisorWire::FrameType type, quint32 id, QByteArrayView a,
                    QByteArrayView b = {});
    void dispatch(SupervisorWire::FrameType type, quint32 id, QByteArrayView payload);

    struct Pending
    {
        ReplyHandler onReply;
        OutputHandler onOutput;
    };

    QPointer<QIODevice> m_in;  // not owned
    QPointer<QIODevice> m_out; // not owned
    QByteArray m_buffer;
    qsizetype m_bufferPos = 0;
    QHash<quint32, Pending> m_pending;
    quint32 m_nextId = 1;
    bool m_ready = false;
};

// Maps a supervisor error object ({"code":"not_found",...}) to the protocol's Error.
Error supervisorError(const QJsonObject &error);

} // namespace Sandbox::Engine
