#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QUrl>

#include <functional>

class QTcpServer;
class QTcpSocket;

namespace Sandbox::Mocks {

// A small local stand-in for a model provider's HTTP API, speaking its real wire protocol with
// server-sent events: Anthropic Messages (`POST /v1/messages`), OpenAI Responses
// (`POST /v1/responses`) and OpenAI Chat Completions (`POST /v1/chat/completions`). One server
// answers all three, so one instance serves Claude Code, Codex and OpenCode alike.
//
// What the "model" does is scripted by directives in the latest user prompt:
//   [[write:PATH|CONTENT]]  call the request's file-writing tool (Claude Code's `Write`,
//                           OpenCode's `write`, Codex's `apply_patch`) to create PATH with CONTENT
//                           (`\n` in CONTENT is a newline); after the tool result, a final text
//   [[think:TEXT]]          a thinking block before the answer (Anthropic only)
//   [[sleep:MS]]            hold the response MS milliseconds after its first event
//   [[hold]]                hold the response after its first event until releaseHeld() (once
//                           that was called, hold nothing more)
//   [[fail:STATUS]]         answer the HTTP status STATUS with a provider-shaped error body
//   [[remember:WORD]]       nothing special: recall finds it later in the history
//   [[recall]]              the answer lists every WORD remembered earlier in the conversation
//                           (proves the CLI sent the earlier turns: the session continued)
// Without directives the answer is "Mock reply." A request without tools (a title request) is
// answered with a short title. Only 127.0.0.1 is listened on.
class MockModelServer final : public QObject
{
    Q_OBJECT

public:
    struct Request
    {
        QByteArray method;
        QByteArray path;
        QHash<QByteArray, QByteArray> headers; // names lower-case
        QByteArray body;
        QJsonObject json;
    };

    explicit MockModelServer(QObject *parent = nullptr);
    ~MockModelServer() override;

    // Listens on 127.0.0.1 (port 0: any free port).
    bool listen(quint16 port = 0);
    quint16 port() const;
    // http://127.0.0.1:PORT (no path).
    QUrl baseUrl() const;

    // Every request received so far (model calls and others, e.g. Claude Code's `HEAD /`).
    const QList<Request> &requests() const { return m_requests; }
    // Model calls only (POST to one of the three endpoints).
    int modelCallCount() const;
    // Connections open right now (a killed client's connection closes).
    int openConnections() const { return int(m_sockets.size()); }
    void clear() { m_requests.clear(); }

    // Serves the files below `dir` for GET /files/PATH (e.g. a bare git repository after
    // `git update-server-info`, for git's dumb HTTP protocol). Empty: none.
    void setStaticRoot(const QString &dir) { m_staticRoot = dir; }

    // The text of the final answer after a tool result (default "Done: the file is written.").
    void setFinalText(const QString &text) { m_finalText = text; }

    // Model calls must carry this key (`x-api-key`, or `Authorization: Bearer`), as a provider
    // wants: others are answered 401 with the provider's "invalid x-api-key" error. Empty: any.
    void setRequiredKey(const QByteArray &key) { m_requiredKey = key; }

    // Sends the rest of every response a [[hold]] holds; later ones are not held.
    void releaseHeld();

Q_SIGNALS:
    void requestReceived(const QByteArray &method, const QByteArray &path);
    void connectionClosed();

private:
    struct Connection;
    void onNewConnection();
    void onReadyRead(QTcpSocket *socket);
    void handle(QTcpSocket *socket, const Request &request);
    void sendSse(QTcpSocket *socket, const QList<QByteArray> &events, int sleepMs);
    void sendJson(QTcpSocket *socket, int status, const QJsonObject &body);

    QTcpServer *m_server;                      // owned (child)
    QHash<QTcpSocket *, QByteArray> m_sockets; // open connections and their unread bytes
    QList<Request> m_requests;
    QString m_finalText = QStringLiteral("Done: the file is written.");
    QString m_staticRoot;
    QByteArray m_requiredKey;
    int m_nextId = 1;
    QList<std::function<void()>> m_held; // the rest of each response a [[hold]] holds
    bool m_released = false;             // releaseHeld() was called: [[hold]] holds nothing
};

} // namespace Sandbox::Mocks
