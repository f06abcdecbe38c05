#pragma once

#include "error.h"

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>

#include <optional>

// The JSON-RPC 2.0 codec shared by the engine and the client (docs/protocol.md, section 2).
// Pure functions over bytes: no I/O, no state.
namespace Sandbox::JsonRpc {

inline constexpr int MaxBatchSize = 100;
inline constexpr qsizetype MaxMessageBytes = 16 * 1024 * 1024;

struct Message
{
    enum class Kind { Request, Notification, Response, Invalid };

    Kind kind = Kind::Invalid;
    QJsonValue id = QJsonValue::Null; // string, number or null; Null when absent or unreadable
    QString method;
    QJsonObject params;
    QJsonValue result;
    std::optional<Error> error; // a Response's error, or why an Invalid message is invalid

    bool isRequest() const { return kind == Kind::Request; }
    bool isNotification() const { return kind == Kind::Notification; }
    bool isResponse() const { return kind == Kind::Response; }
};

struct Incoming
{
    bool batch = false;
    // Set when the text as a whole cannot be used: not JSON (-32700), an empty batch or a
    // top-level value that is neither object nor array (-32600), a batch too large (-32006).
    std::optional<Error> error;
    QList<Message> messages;
};

// Reads one WebSocket text message: a single message or a batch.
Incoming parse(const QByteArray &text);
// Classifies one JSON value of a message or batch.
Message parseMessage(const QJsonValue &value);

QJsonObject requestObject(const QJsonValue &id, const QString &method, const QJsonObject &params);
QJsonObject notificationObject(const QString &method, const QJsonObject &params);
QJsonObject resultObject(const QJsonValue &id, const QJsonValue &result);
QJsonObject errorObject(const QJsonValue &id, const Error &error);

QByteArray serialize(const QJsonObject &message);

// A JSON string literal for text, escaped per RFC 8259 — a fast path for streamed output,
// where building a QJsonObject per chunk would dominate the cost.
void appendJsonString(QByteArray &out, QByteArrayView utf8);

} // namespace Sandbox::JsonRpc
