#pragma once

#include "protocol/jsonrpc.h"

#include <QHash>
#include <QJsonArray>
#include <QObject>

#include <functional>
#include <memory>

class QWebSocket;

namespace Sandbox::Engine {

class Methods;
class StreamHub;

// One authenticated WebSocket at /rpc: JSON-RPC 2.0 per docs/protocol.md section 2, including
// batches, limits, rpc.cancel and stream.resume. Deletes itself when the socket closes.
class RpcSession final : public QObject
{
    Q_OBJECT

public:
    static constexpr int MaxInFlight = 256;

    RpcSession(QWebSocket *socket, QString keyId, Methods *methods, StreamHub *streams,
               QObject *parent = nullptr);
    ~RpcSession() override;

    const QString &keyId() const { return m_keyId; }
    void close(int code, const QString &reason);

private:
    struct Batch;
    void onText(const QString &text);
    void onBinary(const QByteArray &data);
    void handle(const JsonRpc::Message &m, const std::shared_ptr<Batch> &batch);
    void answer(const QJsonObject &response, const std::shared_ptr<Batch> &batch);
    void send(const QByteArray &text);
    QString inFlightKey(const QJsonValue &id) const;

    QWebSocket *m_socket; // owned
    QString m_keyId;
    Methods *m_methods;   // not owned
    StreamHub *m_streams; // not owned
    // Requests in flight by id (as JSON text): their cancel functions.
    QHash<QString, std::shared_ptr<std::function<void()>>> m_inFlight;
};

} // namespace Sandbox::Engine
