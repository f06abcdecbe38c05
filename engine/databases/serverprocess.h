#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>

namespace Sandbox::Engine {

class SupervisorChannel;

// A database server run through its sandbox's supervisor (PostgreSQL, sandbox-dbhost): one exec
// that lasts as long as the server, its output kept as a log tail for error messages, and why
// it ended. The one place a backend starts its server.
class ServerProcess final : public QObject
{
    Q_OBJECT

public:
    // `what` names the server in messages ("the PostgreSQL server"); `reasonLines`: how many of
    // its last log lines an exit reason quotes.
    ServerProcess(QString what, int reasonLines, QObject *parent = nullptr);

    // Runs `exec` (a supervisor exec op: argv or shell, cwd; no timeout, no stdin) in `channel`.
    void start(SupervisorChannel *channel, QJsonObject exec);
    // The last `lines` lines of the server's output, trimmed (empty when it wrote none).
    QString logTail(int lines) const;
    // `prefix` + the last reasonLines lines of its log, after ": " when there are any.
    QString withLog(const QString &prefix) const;

Q_SIGNALS:
    // The server's exec ended: "<what> exited with status N: <last log lines>", or why the
    // supervisor could not run it.
    void exited(const QString &why);

private:
    QString m_what;
    int m_reasonLines;
    QByteArray m_log; // the last kLogTail bytes of its output
};

} // namespace Sandbox::Engine
