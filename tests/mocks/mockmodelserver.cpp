#include "mockmodelserver.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

Q_LOGGING_CATEGORY(lcMock, "sandbox.mocks.model", QtWarningMsg)

namespace Sandbox::Mocks {

namespace {

constexpr qsizetype kMaxRequestBytes = 64 * 1024 * 1024;

enum class Provider { Anthropic, Responses, Chat, None };

Provider providerFor(const QByteArray &path)
{
    const QByteArray p = path.left(path.indexOf('?') < 0 ? path.size() : path.indexOf('?'));
    if (p.endsWith("/messages"))
        return Provider::Anthropic;
    if (p.endsWith("/responses"))
        return Provider::Responses;
    if (p.endsWith("/chat/completions"))
        return Provider::Chat;
    return Provider::None;
}

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// Text of a content value: a string, or an array of parts with "text".
QString textOf(const QJsonValue &content)
{
    if (content.isString())
        return content.toString();
    QString out;
    for (const QJsonValue &part : content.toArray()) {
        const QJsonObject p = part.toObject();
        const QString type = p.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("text") || type == QLatin1String("input_text")
            || type == QLatin1String("output_text"))
            out += p.value(QStringLiteral("text")).toString() + u'\n';
    }
    return out;
}

// What the request asks of the "model".
struct Turn
{
    bool afterToolResult = false;
    bool toolFailed = false;
    QString prompt;     // the latest user text
    QString everything; // all text of the conversation, for [[recall]]
    bool hasTools = false;
    QString writeTool;            // name of the file-writing tool offered, if any
    QString pathKey;              // its path parameter
    bool customPatchTool = false; // Codex's apply_patch as a free-form ("custom") tool
    QString patchKey;             // apply_patch as a function: its argument's name
};

QString pathKeyOf(const QJsonObject &properties)
{
    for (const char *k : {"file_path", "filePath", "path"}) {
        if (properties.contains(QLatin1String(k)))
            return QLatin1String(k);
    }
    return QStringLiteral("file_path");
}

Turn readTurn(Provider provider, const QJsonObject &json, const QByteArray &body)
{
    Turn t;
    t.everything = QString::fromUtf8(body);
    const QJsonArray tools = json.value(QStringLiteral("tools")).toArray();
    t.hasTools = !tools.isEmpty();
    for (const QJsonValue &v : tools) {
        const QJsonObject tool = v.toObject();
        const QJsonObject fn = tool.value(QStringLiteral("function")).toObject();
        const QString name = tool.contains(QStringLiteral("name"))
                                 ? tool.value(QStringLiteral("name")).toString()
                                 : fn.value(QStringLiteral("name")).toString();
        if (name == QLatin1String("apply_patch")) {
            t.writeTool = name;
            t.customPatchTool = tool.value(QStringLiteral("type")).toString()
                                == QLatin1String("custom");
            const QJsonObject schema = tool.contains(QStringLiteral("parameters"))
                                           ? tool.value(QStringLiteral("parameters")).toObject()
                                           : fn.value(QStringLiteral("parameters")).toObject();
            const QJsonObject props = schema.value(QStringLiteral("properties")).toObject();
            t.patchKey = props.contains(QStringLiteral("patchText")) ? QStringLiteral("patchText")
                         : props.isEmpty() || props.contains(QStringLiteral("input"))
                             ? QStringLiteral("input")
                             : props.keys().constFirst();
        } else if (name.compare(QLatin1String("write"), Qt::CaseInsensitive) == 0
                   && t.writeTool.isEmpty()) {
            t.writeTool = name;
            const QJsonObject schema = tool.contains(QStringLiteral("input_schema"))
                                           ? tool.value(QStringLiteral("input_schema")).toObject()
                                           : fn.value(QStringLiteral("parameters")).toObject();
            t.pathKey = pathKeyOf(schema.value(QStringLiteral("properties")).toObject());
        }
    }

    if (provider == Provider::Anthropic) {
        const QJsonArray messages = json.value(QStringLiteral("messages")).toArray();
        // Claude Code 2.1.3xx ends the list with a `system` message (its context reminders):
        // the turn is the last message that is not one.
        qsizetype lastIndex = messages.size() - 1;
        while (lastIndex >= 0
               && messages.at(lastIndex).toObject().value(QStringLiteral("role")).toString()
                      == QLatin1String("system"))
            --lastIndex;
        if (lastIndex >= 0) {
            const QJsonObject last = messages.at(lastIndex).toObject();
            if (last.value(QStringLiteral("role")).toString() == QLatin1String("user")) {
                for (const QJsonValue &block : last.value(QStringLiteral("content")).toArray()) {
                    const QJsonObject b = block.toObject();
                    if (b.value(QStringLiteral("type")).toString() == QLatin1String("tool_result")) {
                        t.afterToolResult = true;
                        t.toolFailed = t.toolFailed || b.value(QStringLiteral("is_error")).toBool();
                    }
                }
                t.prompt = textOf(last.value(QStringLiteral("content")));
            }
        }
    } else if (provider == Provider::Responses) {
        const QJsonArray input = json.value(QStringLiteral("input")).toArray();
        if (!input.isEmpty()) {
            const QString lastType
                = input.last().toObject().value(QStringLiteral("type")).toString();
            t.afterToolResult = lastType.endsWith(QLatin1String("_call_output"));
            for (qsizetype i = input.size() - 1; i >= 0; --i) {
                const QJsonObject item = input.at(i).toObject();
                if (item.value(QStringLiteral("role")).toString() != QLatin1String("user"))
                    break;
                t.prompt.prepend(textOf(item.value(QStringLiteral("content"))));
            }
        }
    } else {
        const QJsonArray messages = json.value(QStringLiteral("messages")).toArray();
        if (!messages.isEmpty()) {
            const QJsonObject last = messages.last().toObject();
            const QString role = last.value(QStringLiteral("role")).toString();
            t.afterToolResult = role == QLatin1String("tool");
            if (role == QLatin1String("user"))
                t.prompt = textOf(last.value(QStringLiteral("content")));
        }
    }
    return t;
}

constexpr int kHold = -1; // Directives::sleepMs of [[hold]]: until releaseHeld()

struct Directives
{
    QString writePath;
    QString writeContent;
    QString thinking;
    int sleepMs = 0;
    int failStatus = 0;
    bool recall = false;
};

Directives directivesIn(const QString &text)
{
    static const QRegularExpression re(QStringLiteral("\\[\\[(\\w+)(?::(.*?))?\\]\\]"),
                                       QRegularExpression::DotMatchesEverythingOption);
    Directives d;
    for (auto it = re.globalMatch(text); it.hasNext();) {
        const auto m = it.next();
        const QString name = m.captured(1);
        const QString arg = m.captured(2);
        if (name == QLatin1String("write")) {
            d.writePath = arg.section(u'|', 0, 0);
            d.writeContent = arg.section(u'|', 1);
            d.writeContent.replace(QLatin1String("\\n"), QLatin1String("\n"));
        } else if (name == QLatin1String("think")) {
            d.thinking = arg;
        } else if (name == QLatin1String("sleep")) {
            d.sleepMs = arg.toInt();
        } else if (name == QLatin1String("hold")) {
            d.sleepMs = kHold;
        } else if (name == QLatin1String("fail")) {
            d.failStatus = arg.toInt();
        } else if (name == QLatin1String("recall")) {
            d.recall = true;
        }
    }
    return d;
}

QString recalled(const QString &conversation)
{
    static const QRegularExpression re(QStringLiteral("\\[\\[remember:(\\w+)\\]\\]"));
    QStringList words;
    for (auto it = re.globalMatch(conversation); it.hasNext();) {
        const QString w = it.next().captured(1);
        if (!words.contains(w))
            words.append(w);
    }
    return words.isEmpty()
               ? QStringLiteral("I remember nothing.")
               : QStringLiteral("I remember: ") + words.join(QStringLiteral(", ")) + u'.';
}

QByteArray sse(const QByteArray &event, const QJsonObject &data)
{
    QByteArray out;
    if (!event.isEmpty())
        out += "event: " + event + '\n';
    out += "data: " + compact(data) + "\n\n";
    return out;
}

QString applyPatchFor(const QString &path, const QString &content)
{
    QString patch = QStringLiteral("*** Begin Patch\n*** Add File: ") + path + u'\n';
    const QStringList lines = content.split(u'\n');
    for (qsizetype i = 0; i < lines.size(); ++i) {
        if (i == lines.size() - 1 && lines[i].isEmpty())
            break;
        patch += u'+' + lines[i] + u'\n';
    }
    patch += QStringLiteral("*** End Patch\n");
    return patch;
}

} // namespace

MockModelServer::MockModelServer(QObject *parent)
    : QObject(parent)
    , m_server(new QTcpServer(this))
{
    connect(m_server, &QTcpServer::newConnection, this, &MockModelServer::onNewConnection);
}

MockModelServer::~MockModelServer()
{
    const auto sockets = m_sockets.keys();
    for (QTcpSocket *s : sockets) {
        s->disconnect(this);
        s->abort();
        delete s;
    }
}

bool MockModelServer::listen(quint16 port)
{
    return m_server->listen(QHostAddress::LocalHost, port);
}

quint16 MockModelServer::port() const
{
    return m_server->serverPort();
}

QUrl MockModelServer::baseUrl() const
{
    return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(port()));
}

int MockModelServer::modelCallCount() const
{
    int n = 0;
    for (const Request &r : m_requests) {
        if (r.method == "POST" && providerFor(r.path) != Provider::None)
            ++n;
    }
    return n;
}

void MockModelServer::onNewConnection()
{
    while (QTcpSocket *socket = m_server->nextPendingConnection()) {
        m_sockets.insert(socket, {});
        connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket] {
            m_sockets.remove(socket);
            socket->deleteLater();
            Q_EMIT connectionClosed();
        });
    }
}

void MockModelServer::onReadyRead(QTcpSocket *socket)
{
    auto it = m_sockets.find(socket);
    if (it == m_sockets.end())
        return;
    QByteArray &buf = it.value();
    buf += socket->readAll();
    if (buf.size() > kMaxRequestBytes) {
        socket->abort();
        return;
    }
    const qsizetype headerEnd = buf.indexOf("\r\n\r\n");
    if (headerEnd < 0)
        return;
    Request r;
    const QList<QByteArray> lines = buf.left(headerEnd).split('\n');
    const QList<QByteArray> requestLine = lines.value(0).trimmed().split(' ');
    r.method = requestLine.value(0);
    r.path = requestLine.value(1);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const qsizetype colon = lines[i].indexOf(':');
        if (colon > 0)
            r.headers.insert(lines[i].left(colon).trimmed().toLower(),
                             lines[i].mid(colon + 1).trimmed());
    }
    QByteArray rest = buf.mid(headerEnd + 4);
    if (r.headers.value("transfer-encoding").toLower().contains("chunked")) {
        QByteArray body;
        qsizetype pos = 0;
        for (;;) {
            const qsizetype eol = rest.indexOf("\r\n", pos);
            if (eol < 0)
                return; // wait for more
            bool ok = false;
            const qsizetype size
                = rest.mid(pos, eol - pos).split(';').value(0).trimmed().toLongLong(&ok, 16);
            if (!ok) {
                socket->abort();
                return;
            }
            if (size == 0)
                break;
            if (rest.size() < eol + 2 + size + 2)
                return;
            body += rest.mid(eol + 2, size);
            pos = eol + 2 + size + 2;
        }
        r.body = body;
    } else {
        const qsizetype length = r.headers.value("content-length", "0").toLongLong();
        if (rest.size() < length)
            return;
        r.body = rest.left(length);
    }
    buf.clear();
    socket->disconnect(this, nullptr); // one request per connection; keep the disconnect handler
    connect(socket, &QTcpSocket::disconnected, this, [this, socket] {
        m_sockets.remove(socket);
        socket->deleteLater();
        Q_EMIT connectionClosed();
    });
    r.json = QJsonDocument::fromJson(r.body).object();
    m_requests.append(r);
    Q_EMIT requestReceived(r.method, r.path);
    handle(socket, r);
}

void MockModelServer::sendJson(QTcpSocket *socket, int status, const QJsonObject &body)
{
    const QByteArray payload = body.isEmpty() ? QByteArray() : compact(body);
    socket->write("HTTP/1.1 " + QByteArray::number(status) + (status < 400 ? " OK" : " Error")
                  + "\r\nContent-Type: application/json\r\nContent-Length: "
                  + QByteArray::number(payload.size()) + "\r\nConnection: close\r\n\r\n" + payload);
    socket->disconnectFromHost();
}

void MockModelServer::sendSse(QTcpSocket *socket, const QList<QByteArray> &events, int sleepMs)
{
    socket->write(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Connection: close\r\n\r\n");
    if (events.isEmpty()) {
        socket->disconnectFromHost();
        return;
    }
    socket->write(events.first());
    QPointer<QTcpSocket> guard(socket);
    const auto rest = [guard, events] {
        if (!guard || guard->state() != QAbstractSocket::ConnectedState)
            return;
        for (qsizetype i = 1; i < events.size(); ++i)
            guard->write(events[i]);
        guard->disconnectFromHost();
    };
    if (sleepMs == kHold && !m_released)
        m_held.append(rest);
    else if (sleepMs == kHold)
        rest();
    else if (sleepMs > 0)
        QTimer::singleShot(sleepMs, socket, rest);
    else
        rest();
}

void MockModelServer::releaseHeld()
{
    m_released = true;
    for (const auto &rest : std::exchange(m_held, {}))
        rest();
}

void MockModelServer::handle(QTcpSocket *socket, const Request &request)
{
    const Provider provider = providerFor(request.path);
    if (request.method == "GET" && request.path.startsWith("/files/") && !m_staticRoot.isEmpty()) {
        QString rel = QString::fromUtf8(
            QByteArray::fromPercentEncoding(request.path.mid(7).split('?').value(0)));
        if (rel.isEmpty() || rel.endsWith(u'/'))
            rel += QStringLiteral("index.html"); // a directory's page (a package index)
        QFile f(QDir::cleanPath(m_staticRoot + u'/' + rel));
        const bool inside
            = QDir::cleanPath(f.fileName()).startsWith(QDir::cleanPath(m_staticRoot) + u'/');
        if (!inside || rel.contains(QLatin1String("..")) || !f.open(QIODevice::ReadOnly)) {
            socket->write(
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            socket->disconnectFromHost();
            return;
        }
        const QByteArray body = f.readAll();
        const QByteArray type = rel.endsWith(QLatin1String(".html")) ? "text/html"
                                                                     : "application/octet-stream";
        socket->write("HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: "
                      + QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        socket->disconnectFromHost();
        return;
    }
    if (request.method == "HEAD" || request.method == "GET") {
        if (request.path.endsWith("/models"))
            return sendJson(socket, 200,
                            {{QStringLiteral("object"), QStringLiteral("list")},
                             {QStringLiteral("data"),
                              QJsonArray{
                                  QJsonObject{{QStringLiteral("id"), QStringLiteral("mock-model")},
                                              {QStringLiteral("object"),
                                               QStringLiteral("model")}}}},
                             {QStringLiteral("models"), QJsonArray{}}});
        return sendJson(socket, 404, {});
    }
    if (request.method != "POST" || provider == Provider::None)
        return sendJson(socket, 404, {{QStringLiteral("error"), QStringLiteral("not found")}});

    if (!m_requiredKey.isEmpty() && request.headers.value("x-api-key") != m_requiredKey
        && request.headers.value("authorization") != "Bearer " + m_requiredKey) {
        if (provider == Provider::Anthropic)
            return sendJson(socket, 401,
                            {{QStringLiteral("type"), QStringLiteral("error")},
                             {QStringLiteral("error"),
                              QJsonObject{{QStringLiteral("type"),
                                           QStringLiteral("authentication_error")},
                                          {QStringLiteral("message"),
                                           QStringLiteral("invalid x-api-key")}}}});
        return sendJson(
            socket, 401,
            {{QStringLiteral("error"),
              QJsonObject{{QStringLiteral("message"), QStringLiteral("Incorrect API key provided")},
                          {QStringLiteral("type"), QStringLiteral("invalid_request_error")},
                          {QStringLiteral("code"), QStringLiteral("invalid_api_key")}}}});
    }
    const Turn turn = readTurn(provider, request.json, request.body);
    const Directives d = directivesIn(turn.prompt);
    const QString model
        = request.json.value(QStringLiteral("model")).toString(QStringLiteral("mock-model"));
    const bool stream = request.json.value(QStringLiteral("stream")).toBool();
    const int id = m_nextId++;

    if (d.failStatus > 0 && turn.hasTools && !turn.afterToolResult) {
        const QString msg = QStringLiteral("mock failure %1").arg(d.failStatus);
        if (provider == Provider::Anthropic)
            return sendJson(socket, d.failStatus,
                            {{QStringLiteral("type"), QStringLiteral("error")},
                             {QStringLiteral("error"),
                              QJsonObject{{QStringLiteral("type"), QStringLiteral("api_error")},
                                          {QStringLiteral("message"), msg}}}});
        return sendJson(socket, d.failStatus,
                        {{QStringLiteral("error"),
                          QJsonObject{{QStringLiteral("message"), msg},
                                      {QStringLiteral("type"), QStringLiteral("server_error")}}}});
    }

    // Decide the answer: a text, or a call of the write tool.
    QString text;
    bool callTool = false;
    if (!turn.hasTools) {
        text = QStringLiteral("Mock session");
    } else if (turn.afterToolResult) {
        text = turn.toolFailed ? QStringLiteral("The write failed.") : m_finalText;
    } else if (!d.writePath.isEmpty() && !turn.writeTool.isEmpty()) {
        callTool = true;
    } else if (d.recall) {
        text = recalled(turn.everything);
    } else if (!d.writePath.isEmpty()) {
        text = QStringLiteral("No file-writing tool was offered.");
    } else {
        text = QStringLiteral("Mock reply.");
    }
    const int sleepMs = turn.hasTools && !turn.afterToolResult ? d.sleepMs : 0;
    const int inputTokens = int(request.body.size() / 4);
    const int outputTokens = int(text.size() / 4) + (callTool ? 40 : 1);
    const QString callId = QStringLiteral("call_mock_%1").arg(id);

    QList<QByteArray> events;
    if (provider == Provider::Anthropic) {
        const QString msgId = QStringLiteral("msg_mock_%1").arg(id);
        QJsonObject input;
        if (callTool) {
            input.insert(turn.pathKey.isEmpty() ? QStringLiteral("file_path") : turn.pathKey,
                         d.writePath);
            input.insert(QStringLiteral("content"), d.writeContent);
        }
        if (!stream) {
            QJsonArray content;
            if (callTool)
                content.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("tool_use")},
                                           {QStringLiteral("id"), callId},
                                           {QStringLiteral("name"), turn.writeTool},
                                           {QStringLiteral("input"), input}});
            else
                content.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                           {QStringLiteral("text"), text}});
            return sendJson(socket, 200,
                            {{QStringLiteral("id"), msgId},
                             {QStringLiteral("type"), QStringLiteral("message")},
                             {QStringLiteral("role"), QStringLiteral("assistant")},
                             {QStringLiteral("model"), model},
                             {QStringLiteral("content"), content},
                             {QStringLiteral("stop_reason"),
                              callTool ? QStringLiteral("tool_use") : QStringLiteral("end_turn")},
                             {QStringLiteral("stop_sequence"), QJsonValue()},
                             {QStringLiteral("usage"),
                              QJsonObject{{QStringLiteral("input_tokens"), inputTokens},
                                          {QStringLiteral("output_tokens"), outputTokens}}}});
        }
        events << sse("message_start",
                      {{QStringLiteral("type"), QStringLiteral("message_start")},
                       {QStringLiteral("message"),
                        QJsonObject{{QStringLiteral("id"), msgId},
                                    {QStringLiteral("type"), QStringLiteral("message")},
                                    {QStringLiteral("role"), QStringLiteral("assistant")},
                                    {QStringLiteral("model"), model},
                                    {QStringLiteral("content"), QJsonArray{}},
                                    {QStringLiteral("stop_reason"), QJsonValue()},
                                    {QStringLiteral("stop_sequence"), QJsonValue()},
                                    {QStringLiteral("usage"),
                                     QJsonObject{{QStringLiteral("input_tokens"), inputTokens},
                                                 {QStringLiteral("cache_creation_input_tokens"), 0},
                                                 {QStringLiteral("cache_read_input_tokens"), 0},
                                                 {QStringLiteral("output_tokens"), 1}}}}}});
        int index = 0;
        const auto block = [&](const QJsonObject &start, const QList<QJsonObject> &deltas) {
            events << sse("content_block_start",
                          {{QStringLiteral("type"), QStringLiteral("content_block_start")},
                           {QStringLiteral("index"), index},
                           {QStringLiteral("content_block"), start}});
            for (const QJsonObject &delta : deltas)
                events << sse("content_block_delta",
                              {{QStringLiteral("type"), QStringLiteral("content_block_delta")},
                               {QStringLiteral("index"), index},
                               {QStringLiteral("delta"), delta}});
            events << sse("content_block_stop",
                          {{QStringLiteral("type"), QStringLiteral("content_block_stop")},
                           {QStringLiteral("index"), index}});
            ++index;
        };
        if (!d.thinking.isEmpty() && !turn.afterToolResult)
            block({{QStringLiteral("type"), QStringLiteral("thinking")},
                   {QStringLiteral("thinking"), QString()}},
                  {{{QStringLiteral("type"), QStringLiteral("thinking_delta")},
                    {QStringLiteral("thinking"), d.thinking}},
                   {{QStringLiteral("type"), QStringLiteral("signature_delta")},
                    {QStringLiteral("signature"), QStringLiteral("bW9jaw==")}}});
        if (callTool) {
            block({{QStringLiteral("type"), QStringLiteral("tool_use")},
                   {QStringLiteral("id"), callId},
                   {QStringLiteral("name"), turn.writeTool},
                   {QStringLiteral("input"), QJsonObject{}}},
                  {{{QStringLiteral("type"), QStringLiteral("input_json_delta")},
                    {QStringLiteral("partial_json"), QString::fromUtf8(compact(input))}}});
        } else {
            const qsizetype half = text.size() / 2;
            block({{QStringLiteral("type"), QStringLiteral("text")},
                   {QStringLiteral("text"), QString()}},
                  {{{QStringLiteral("type"), QStringLiteral("text_delta")},
                    {QStringLiteral("text"), text.left(half)}},
                   {{QStringLiteral("type"), QStringLiteral("text_delta")},
                    {QStringLiteral("text"), text.mid(half)}}});
        }
        events << sse("message_delta",
                      {{QStringLiteral("type"), QStringLiteral("message_delta")},
                       {QStringLiteral("delta"),
                        QJsonObject{{QStringLiteral("stop_reason"),
                                     callTool ? QStringLiteral("tool_use")
                                              : QStringLiteral("end_turn")},
                                    {QStringLiteral("stop_sequence"), QJsonValue()}}},
                       {QStringLiteral("usage"),
                        QJsonObject{{QStringLiteral("output_tokens"), outputTokens}}}});
        events << sse("message_stop", {{QStringLiteral("type"), QStringLiteral("message_stop")}});
        return sendSse(socket, events, sleepMs);
    }

    if (provider == Provider::Responses) {
        const QString respId = QStringLiteral("resp_mock_%1").arg(id);
        int seq = 0;
        const auto ev = [&](const char *type, QJsonObject data) {
            data.insert(QStringLiteral("type"), QLatin1String(type));
            data.insert(QStringLiteral("sequence_number"), seq++);
            events << sse(type, data);
        };
        const QJsonObject created{{QStringLiteral("id"), respId},
                                  {QStringLiteral("object"), QStringLiteral("response")},
                                  {QStringLiteral("created_at"),
                                   double(QDateTime::currentSecsSinceEpoch())},
                                  {QStringLiteral("status"), QStringLiteral("in_progress")},
                                  {QStringLiteral("model"), model},
                                  {QStringLiteral("output"), QJsonArray{}}};
        ev("response.created", {{QStringLiteral("response"), created}});
        QJsonObject item;
        if (callTool) {
            const QString patch = applyPatchFor(d.writePath, d.writeContent);
            if (turn.customPatchTool) {
                item = {{QStringLiteral("type"), QStringLiteral("custom_tool_call")},
                        {QStringLiteral("id"), QStringLiteral("ctc_mock_%1").arg(id)},
                        {QStringLiteral("call_id"), callId},
                        {QStringLiteral("name"), turn.writeTool},
                        {QStringLiteral("status"), QStringLiteral("completed")},
                        {QStringLiteral("input"), patch}};
            } else {
                item = {{QStringLiteral("type"), QStringLiteral("function_call")},
                        {QStringLiteral("id"), QStringLiteral("fc_mock_%1").arg(id)},
                        {QStringLiteral("call_id"), callId},
                        {QStringLiteral("name"), turn.writeTool},
                        {QStringLiteral("status"), QStringLiteral("completed")},
                        {QStringLiteral("arguments"),
                         QString::fromUtf8(compact({{turn.patchKey, patch}}))}};
            }
            QJsonObject added = item;
            added.insert(QStringLiteral("status"), QStringLiteral("in_progress"));
            ev("response.output_item.added",
               {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), added}});
            ev("response.output_item.done",
               {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), item}});
        } else {
            const QString itemId = QStringLiteral("msg_mock_%1").arg(id);
            const QJsonObject part{{QStringLiteral("type"), QStringLiteral("output_text")},
                                   {QStringLiteral("text"), text},
                                   {QStringLiteral("annotations"), QJsonArray{}}};
            item = {{QStringLiteral("type"), QStringLiteral("message")},
                    {QStringLiteral("id"), itemId},
                    {QStringLiteral("status"), QStringLiteral("completed")},
                    {QStringLiteral("role"), QStringLiteral("assistant")},
                    {QStringLiteral("content"), QJsonArray{part}}};
            ev("response.output_item.added",
               {{QStringLiteral("output_index"), 0},
                {QStringLiteral("item"),
                 QJsonObject{{QStringLiteral("type"), QStringLiteral("message")},
                             {QStringLiteral("id"), itemId},
                             {QStringLiteral("status"), QStringLiteral("in_progress")},
                             {QStringLiteral("role"), QStringLiteral("assistant")},
                             {QStringLiteral("content"), QJsonArray{}}}}});
            QJsonObject emptyPart = part;
            emptyPart.insert(QStringLiteral("text"), QString());
            ev("response.content_part.added", {{QStringLiteral("item_id"), itemId},
                                               {QStringLiteral("output_index"), 0},
                                               {QStringLiteral("content_index"), 0},
                                               {QStringLiteral("part"), emptyPart}});
            const qsizetype half = text.size() / 2;
            for (const QString &delta : {text.left(half), text.mid(half)})
                ev("response.output_text.delta", {{QStringLiteral("item_id"), itemId},
                                                  {QStringLiteral("output_index"), 0},
                                                  {QStringLiteral("content_index"), 0},
                                                  {QStringLiteral("delta"), delta}});
            ev("response.output_text.done", {{QStringLiteral("item_id"), itemId},
                                             {QStringLiteral("output_index"), 0},
                                             {QStringLiteral("content_index"), 0},
                                             {QStringLiteral("text"), text}});
            ev("response.content_part.done", {{QStringLiteral("item_id"), itemId},
                                              {QStringLiteral("output_index"), 0},
                                              {QStringLiteral("content_index"), 0},
                                              {QStringLiteral("part"), part}});
            ev("response.output_item.done",
               {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), item}});
        }
        QJsonObject done = created;
        done.insert(QStringLiteral("status"), QStringLiteral("completed"));
        done.insert(QStringLiteral("output"), QJsonArray{item});
        done.insert(QStringLiteral("usage"),
                    QJsonObject{{QStringLiteral("input_tokens"), inputTokens},
                                {QStringLiteral("input_tokens_details"),
                                 QJsonObject{{QStringLiteral("cached_tokens"), 0}}},
                                {QStringLiteral("output_tokens"), outputTokens},
                                {QStringLiteral("output_tokens_details"),
                                 QJsonObject{{QStringLiteral("reasoning_tokens"), 0}}},
                                {QStringLiteral("total_tokens"), inputTokens + outputTokens}});
        ev("response.completed", {{QStringLiteral("response"), done}});
        return sendSse(socket, events, sleepMs);
    }

    // Chat Completions.
    const QString chatId = QStringLiteral("chatcmpl-mock-%1").arg(id);
    const double created = double(QDateTime::currentSecsSinceEpoch());
    const auto chunk = [&](const QJsonObject &delta, const QJsonValue &finish) {
        events << sse({}, {{QStringLiteral("id"), chatId},
                           {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                           {QStringLiteral("created"), created},
                           {QStringLiteral("model"), model},
                           {QStringLiteral("choices"),
                            QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                                   {QStringLiteral("delta"), delta},
                                                   {QStringLiteral("finish_reason"), finish}}}}});
    };
    QJsonObject input;
    if (callTool && turn.writeTool == QLatin1String("apply_patch")) {
        input.insert(turn.patchKey, applyPatchFor(d.writePath, d.writeContent));
    } else if (callTool) {
        input.insert(turn.pathKey.isEmpty() ? QStringLiteral("filePath") : turn.pathKey,
                     d.writePath);
        input.insert(QStringLiteral("content"), d.writeContent);
    }
    if (!stream) {
        QJsonObject message{{QStringLiteral("role"), QStringLiteral("assistant")},
                            {QStringLiteral("content"), text}};
        if (callTool)
            message.insert(QStringLiteral("tool_calls"),
                           QJsonArray{
                               QJsonObject{{QStringLiteral("id"), callId},
                                           {QStringLiteral("type"), QStringLiteral("function")},
                                           {QStringLiteral("function"),
                                            QJsonObject{{QStringLiteral("name"), turn.writeTool},
                                                        {QStringLiteral("arguments"),
                                                         QString::fromUtf8(compact(input))}}}}});
        return sendJson(socket, 200,
                        {{QStringLiteral("id"), chatId},
                         {QStringLiteral("object"), QStringLiteral("chat.completion")},
                         {QStringLiteral("created"), created},
                         {QStringLiteral("model"), model},
                         {QStringLiteral("choices"),
                          QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                                 {QStringLiteral("message"), message},
                                                 {QStringLiteral("finish_reason"),
                                                  callTool ? QStringLiteral("tool_calls")
                                                           : QStringLiteral("stop")}}}},
                         {QStringLiteral("usage"),
                          QJsonObject{{QStringLiteral("prompt_tokens"), inputTokens},
                                      {QStringLiteral("completion_tokens"), outputTokens},
                                      {QStringLiteral("total_tokens"),
                                       inputTokens + outputTokens}}}});
    }
    chunk({{QStringLiteral("role"), QStringLiteral("assistant")},
           {QStringLiteral("content"), QString()}},
          QJsonValue());
    if (callTool) {
        chunk({{QStringLiteral("tool_calls"),
                QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                       {QStringLiteral("id"), callId},
                                       {QStringLiteral("type"), QStringLiteral("function")},
                                       {QStringLiteral("function"),
                                        QJsonObject{{QStringLiteral("name"), turn.writeTool},
                                                    {QStringLiteral("arguments"), QString()}}}}}}},
              QJsonValue());
        chunk({{QStringLiteral("tool_calls"),
                QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                       {QStringLiteral("function"),
                                        QJsonObject{{QStringLiteral("arguments"),
                                                     QString::fromUtf8(compact(input))}}}}}}},
              QJsonValue());
        chunk({}, QStringLiteral("tool_calls"));
    } else {
        const qsizetype half = text.size() / 2;
        chunk({{QStringLiteral("content"), text.left(half)}}, QJsonValue());
        chunk({{QStringLiteral("content"), text.mid(half)}}, QJsonValue());
        chunk({}, QStringLiteral("stop"));
    }
    if (request.json.value(QStringLiteral("stream_options"))
            .toObject()
            .value(QStringLiteral("include_usage"))
            .toBool())
        events << sse({},
                      {{QStringLiteral("id"), chatId},
                       {QStringLiteral("object"), QStringLiteral("chat.completion.chunk")},
                       {QStringLiteral("created"), created},
                       {QStringLiteral("model"), model},
                       {QStringLiteral("choices"), QJsonArray{}},
                       {QStringLiteral("usage"),
                        QJsonObject{{QStringLiteral("prompt_tokens"), inputTokens},
                                    {QStringLiteral("completion_tokens"), outputTokens},
                                    {QStringLiteral("total_tokens"), inputTokens + outputTokens}}}});
    events << QByteArray("data: [DONE]\n\n");
    sendSse(socket, events, sleepMs);
}

} // namespace Sandbox::Mocks
