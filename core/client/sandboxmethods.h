#pragma once

#include "apicaller.h"
#include "types.h"

#include <QString>

namespace Sandbox {

class ExecStream;
class TerminalSession;
struct TerminalOptions;

// The methods every sandbox offers under a prefix: `agents.*` (AgentsService) and `sandbox.*`
// (SandboxService) take the same params (docs/protocol.md 4.1, 4.5). Each call returns an RpcCall
// handle (keep it, or detach() it) and reports through a typed callback; `context` guards the
// callback's lifetime like ApiCaller::call().
class SandboxMethods
{
public:
    // The exec's own `timeout` (or the server default of 300 s) plus this much is the call's
    // client-side timeout.
    static constexpr qint64 ExecGraceMs = 30000;

    RpcCall exec(const QString &id, const Command &command, const ExecOptions &options,
                 QObject *context, Callback<ExecResult> callback);
    // Streamed exec (2.3): output as it comes, finished() from `stream.end`, across reconnects.
    // Returns nullptr when the caller cannot stream (REST). The stream is owned by `parent`.
    ExecStream *execStreaming(const QString &id, const Command &command, const ExecOptions &options,
                              QObject *parent);

    // A terminal (4.8): `command` on a pseudo-terminal, its output live, input and resize.
    // Returns nullptr when the caller cannot stream (REST). Owned by `parent`.
    TerminalSession *openTerminal(const QString &id, const Command &command,
                                  const TerminalOptions &options, QObject *parent);

    RpcCall writeFile(const QString &id, const QString &path, const QByteArray &content,
                      const WriteFileOptions &options, QObject *context,
                      Callback<WriteFileResult> callback);
    RpcCall readFile(const QString &id, const QString &path, const ReadFileOptions &options,
                     QObject *context, Callback<FileContent> callback);
    RpcCall listFiles(const QString &id, const QString &path, bool recursive, QObject *context,
                      Callback<FileListing> callback);
    // Answers the path created.
    RpcCall mkdir(const QString &id, const QString &path, bool parents, QObject *context,
                  Callback<QString> callback);
    // Answers the path deleted.
    RpcCall deleteFile(const QString &id, const QString &path, bool recursive, QObject *context,
                       Callback<QString> callback);
    RpcCall stat(const QString &id, const QString &path, QObject *context,
                 Callback<FileEntry> callback);
    // Answers the new path.
    RpcCall rename(const QString &id, const QString &from, const QString &to, QObject *context,
                   Callback<QString> callback);
    RpcCall stop(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    RpcCall start(const QString &id, QObject *context, Callback<SandboxInfo> callback);
    // `PREFIX.delete`: removes the sandbox and its /workspace. Answers the id.
    RpcCall remove(const QString &id, QObject *context, Callback<QString> callback);

protected:
    SandboxMethods(ApiCaller *caller, const QString &prefix);
    ~SandboxMethods() = default;

    QString method(const char *name) const;
    RpcCall callFor(const char *name, const QJsonObject &params, QObject *context,
                    JsonCallback callback, CallOptions options = {});

    ApiCaller *m_caller; // not owned
    QString m_prefix;
};

namespace Internal {
// Reads one string field of an answer object.
Result<QString> stringField(const QJsonValue &value, const QString &key);
} // namespace Internal

} // namespace Sandbox
