#pragma once

#include "networktypes.h"

#include <protocol/result.h>

#include <QByteArray>
#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QMap>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <optional>

// The protocol's objects as C++ values (docs/protocol.md, sections 3 and 4). Every type read from
// the server has `static Result<T> fromJson(const QJsonValue &)`, which checks the fields' types
// and reports the first malformed field as an ErrorCode::InternalError with data {object, field}.
namespace Sandbox {

// Whether one limit holds (3.1 `limits.enforcement`): how, or why not.
struct LimitHold
{
    bool enforced = false;
    QString by;
    QString reason;
};

struct SandboxLimits
{
    qint64 memoryMb = 0;
    qint64 pids = 0;
    double cpus = 0;
    qint64 diskMb = 0;
    // Whether every limit holds; nullopt when the backend makes no claim.
    std::optional<bool> enforced;
    // "memory", "pids", "cpu", "disk" -> whether it holds (empty when no claim).
    QMap<QString, LimitHold> enforcement;
};

// A sandbox (3.1): an agent or a database.
struct SandboxInfo
{
    QString id;
    QString kind;   // "agent" | "database"
    QString type;   // "claude-code", "opencode", "codex", "postgres", "sqlite", "duckdb"
    QString size;   // "lite" ... "standard-4"
    QString status; // "creating" | "running" | "sleeping" | "stopped" | "error"
    QString name;
    QString error; // set when status is "error"
    QDateTime createdAt;
    QDateTime lastActiveAt;
    qint64 sleepAfterMs = 0;
    bool network = false;        // any way out at all (the policy is not `false`)
    NetworkPolicy networkPolicy; // the policy itself (3.5)
    bool gateway = false;        // an agent's model calls go through the engine (4.7)
    QStringList env;             // names only; values are never returned
    SandboxLimits limits;

    static Result<SandboxInfo> fromJson(const QJsonValue &value);
};

// A command: a string run by /bin/sh -c, or an argv run without a shell (4.1).
struct Command
{
    Command(const QString &shellCommand)
        : json(shellCommand)
    {}
    Command(const QStringList &argv)
        : json(QJsonArray::fromStringList(argv))
    {}
    QJsonValue json;
};

// `options` of agents.exec / sandbox.exec (4.1).
struct ExecOptions
{
    QString cwd;                     // default /workspace
    std::optional<qint64> timeoutMs; // server default 300 000, at most 3 600 000
    QMap<QString, QString> env;      // added to the sandbox's environment
    std::optional<qint64> maxOutputBytes;
    std::optional<QString> stdinText; // fed to stdin (closed otherwise)

    QJsonObject toJson(bool stream = false) const;
};

// The result of an exec (3.2), also the `result` of a `stream.end`.
struct ExecResult
{
    int exitCode = 0;
    QString signal;            // e.g. "SIGKILL" when killed by a signal
    QByteArray standardOutput; // empty for a streamed exec
    QByteArray standardError;
    qint64 durationMs = 0;
    bool truncated = false;
    bool timedOut = false;
    QString streamId; // set for a streamed exec

    static Result<ExecResult> fromJson(const QJsonValue &value);
};

// A file or directory (3.3).
struct FileEntry
{
    enum class Type { File, Directory, Symlink, Other };

    QString name;
    QString path;
    Type type = Type::Other;
    qint64 size = 0;
    int mode = 0;
    QDateTime mtime;
    QString target; // a symlink's target

    static Result<FileEntry> fromJson(const QJsonValue &value);
};

// agents.listFiles.
struct FileListing
{
    QString path;
    QList<FileEntry> entries;
    bool truncated = false;

    static Result<FileListing> fromJson(const QJsonValue &value);
};

// agents.readFile, with `content` already decoded from utf8 or base64.
struct FileContent
{
    QString path;
    QByteArray content;
    QString encoding; // as sent: "utf8" | "base64"
    qint64 size = 0;  // the file's whole size
    bool truncated = false;

    static Result<FileContent> fromJson(const QJsonValue &value);
};

// agents.writeFile.
struct WriteFileResult
{
    QString path;
    qint64 size = 0;

    static Result<WriteFileResult> fromJson(const QJsonValue &value);
};

struct WriteFileOptions
{
    std::optional<int> mode; // e.g. 0755
    bool parents = true;     // create missing parent directories (false: refuse them)
};

struct ReadFileOptions
{
    std::optional<qint64> offset;
    std::optional<qint64> length;
};

struct CloneOptions
{
    QString branch;
    bool shallow = false;
    QString path;
};

// agents.create.
struct AgentCreateOptions
{
    QString type = QStringLiteral("claude-code");
    QString size; // default standard-1
    QMap<QString, QString> env;
    bool network = false; // true: the public internet (networkPolicy, when set, wins)
    std::optional<NetworkPolicy> networkPolicy;
    std::optional<bool> gateway; // the engine's default: true
    std::optional<qint64> sleepAfterMs;
    QString name;

    QJsonObject toJson() const;
};

// databases.create.
struct DatabaseCreateOptions
{
    QString type = QStringLiteral("sqlite");
    QString size;
    QString database;
    QString username;
    QString password;
    QString name;
    std::optional<qint64> sleepAfterMs;

    QJsonObject toJson() const;
};

// databases.query: rows as the server sent them.
struct QueryResult
{
    QJsonArray rows;
    qint64 rowCount = 0;
    QJsonArray fields;
    QString command;

    static Result<QueryResult> fromJson(const QJsonValue &value);
};

// sessions.current (4.4).
struct SessionInfo
{
    QString id; // the key's id
    QString name;
    QDateTime createdAt;
    QString backend; // "local" | "cloudflare"
    QString version;
    qint64 sandboxesTotal = 0;
    qint64 sandboxesRunning = 0;

    static Result<SessionInfo> fromJson(const QJsonValue &value);
};

// sessions.quota (4.4).
struct Quota
{
    struct Usage
    {
        qint64 used = 0;
        qint64 limit = 0;
    };
    Usage running;
    Usage memoryMb;
    Usage sandboxes;

    static Result<Quota> fromJson(const QJsonValue &value);
};

// Reads `{key: [T...]}` (e.g. {agents:[Sandbox]}), failing on the first malformed element.
template<typename T>
Result<QList<T>> listFromJson(const QJsonValue &value, const QString &key)
{
    const QJsonValue list = value.toObject().value(key);
    if (!value.isObject() || !list.isArray())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("malformed answer from server: \"%1\" must be an array").arg(key),
                     QJsonObject{{QStringLiteral("field"), key}}};
    QList<T> out;
    const QJsonArray array = list.toArray();
    out.reserve(array.size());
    for (const QJsonValue &item : array) {
        Result<T> r = T::fromJson(item);
        if (!r)
            return r.error();
        out.append(std::move(r).value());
    }
    return out;
}

} // namespace Sandbox

Q_DECLARE_METATYPE(Sandbox::ExecResult)
Q_DECLARE_METATYPE(Sandbox::Error)
