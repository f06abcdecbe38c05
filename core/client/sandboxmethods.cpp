#include "sandboxmethods.h"

#include "execstream.h"
#include "protocol/fieldreader.h"
#include "rpcclient.h"
#include "terminalsession.h"

namespace Sandbox {

namespace Internal {
Result<QString> stringField(const QJsonValue &value, const QString &key)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("answer"));
    const QString s = r.string(key);
    if (!r.ok())
        return r.error();
    return s;
}
} // namespace Internal

namespace {

QJsonObject execParams(const QString &id, const Command &command, const ExecOptions &options,
                       bool stream)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("command"), command.json}};
    const QJsonObject o = options.toJson(stream);
    if (!o.isEmpty())
        params.insert(QStringLiteral("options"), o);
    return params;
}

template<typename T>
JsonCallback parsed(Callback<T> callback)
{
    return Internal::typedCallback<T>(std::move(callback),
                                      [](const QJsonValue &v) { return T::fromJson(v); });
}

JsonCallback field(Callback<QString> callback, const QString &key)
{
    return Internal::typedCallback<QString>(std::move(callback), [key](const QJsonValue &v) {
        return Internal::stringField(v, key);
    });
}

} // namespace

SandboxMethods::SandboxMethods(ApiCaller *caller, const QString &prefix)
    : m_caller(caller)
    , m_prefix(prefix)
{}

QString SandboxMethods::method(const char *name) const
{
    return m_prefix + u'.' + QLatin1StringView(name);
}

RpcCall SandboxMethods::callFor(const char *name, const QJsonObject &params, QObject *context,
                                JsonCallback callback, CallOptions options)
{
    return m_caller->call(method(name), params, context, std::move(callback), options);
}

RpcCall SandboxMethods::exec(const QString &id, const Command &command, const ExecOptions &options,
                             QObject *context, Callback<ExecResult> callback)
{
    CallOptions callOptions;
    callOptions.timeoutMs = int(options.timeoutMs.value_or(300000) + ExecGraceMs);
    return callFor("exec", execParams(id, command, options, false), context,
                   parsed<ExecResult>(std::move(callback)), callOptions);
}

ExecStream *SandboxMethods::execStreaming(const QString &id, const Command &command,
                                          const ExecOptions &options, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    return rpc->startStream(method("exec"), execParams(id, command, options, true), parent);
}

TerminalSession *SandboxMethods::openTerminal(const QString &id, const Command &command,
                                              const TerminalOptions &options, QObject *parent)
{
    RpcClient *rpc = m_caller->streamClient();
    if (!rpc)
        return nullptr;
    QJsonObject o{{QStringLiteral("stream"), true},
                  {QStringLiteral("pty"), QJsonObject{{QStringLiteral("cols"), options.cols},
                                                      {QStringLiteral("rows"), options.rows},
                                                      {QStringLiteral("term"), options.term}}}};
    if (!options.cwd.isEmpty())
        o.insert(QStringLiteral("cwd"), options.cwd);
    if (options.timeoutMs)
        o.insert(QStringLiteral("timeout"), double(*options.timeoutMs));
    if (!options.env.isEmpty()) {
        QJsonObject env;
        for (auto it = options.env.cbegin(); it != options.env.cend(); ++it)
            env.insert(it.key(), it.value());
        o.insert(QStringLiteral("env"), env);
    }
    return new TerminalSession(rpc, method("exec"),
                               {{QStringLiteral("id"), id},
                                {QStringLiteral("command"), command.json},
                                {QStringLiteral("options"), o}},
                               options.cols, options.rows, parent);
}

RpcCall SandboxMethods::writeFile(const QString &id, const QString &path, const QByteArray &content,
                                  const WriteFileOptions &options, QObject *context,
                                  Callback<WriteFileResult> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("path"), path}};
    // Text goes as is; anything that is not valid UTF-8 as base64.
    const QString text = QString::fromUtf8(content);
    if (text.toUtf8() == content) {
        params.insert(QStringLiteral("content"), text);
        params.insert(QStringLiteral("encoding"), QStringLiteral("utf8"));
    } else {
        params.insert(QStringLiteral("content"), QString::fromLatin1(content.toBase64()));
        params.insert(QStringLiteral("encoding"), QStringLiteral("base64"));
    }
    if (options.mode)
        params.insert(QStringLiteral("mode"), *options.mode);
    if (!options.parents)
        params.insert(QStringLiteral("parents"), false);
    return callFor("writeFile", params, context, parsed<WriteFileResult>(std::move(callback)));
}

RpcCall SandboxMethods::readFile(const QString &id, const QString &path,
                                 const ReadFileOptions &options, QObject *context,
                                 Callback<FileContent> callback)
{
    QJsonObject params{{QStringLiteral("id"), id},
                       {QStringLiteral("path"), path},
                       {QStringLiteral("encoding"), QStringLiteral("base64")}};
    if (options.offset)
        params.insert(QStringLiteral("offset"), double(*options.offset));
    if (options.length)
        params.insert(QStringLiteral("length"), double(*options.length));
    return callFor("readFile", params, context, parsed<FileContent>(std::move(callback)));
}

RpcCall SandboxMethods::listFiles(const QString &id, const QString &path, bool recursive,
                                  QObject *context, Callback<FileListing> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}};
    if (!path.isEmpty())
        params.insert(QStringLiteral("path"), path);
    if (recursive)
        params.insert(QStringLiteral("recursive"), true);
    return callFor("listFiles", params, context, parsed<FileListing>(std::move(callback)));
}

RpcCall SandboxMethods::mkdir(const QString &id, const QString &path, bool parents,
                              QObject *context, Callback<QString> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("path"), path}};
    if (parents)
        params.insert(QStringLiteral("parents"), true);
    return callFor("mkdir", params, context, field(std::move(callback), QStringLiteral("path")));
}

RpcCall SandboxMethods::deleteFile(const QString &id, const QString &path, bool recursive,
                                   QObject *context, Callback<QString> callback)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("path"), path}};
    if (recursive)
        params.insert(QStringLiteral("recursive"), true);
    return callFor("deleteFile", params, context,
                   field(std::move(callback), QStringLiteral("path")));
}

RpcCall SandboxMethods::stat(const QString &id, const QString &path, QObject *context,
                             Callback<FileEntry> callback)
{
    return callFor("stat", {{QStringLiteral("id"), id}, {QStringLiteral("path"), path}}, context,
                   parsed<FileEntry>(std::move(callback)));
}

RpcCall SandboxMethods::rename(const QString &id, const QString &from, const QString &to,
                               QObject *context, Callback<QString> callback)
{
    return callFor("rename",
                   {{QStringLiteral("id"), id},
                    {QStringLiteral("from"), from},
                    {QStringLiteral("to"), to}},
                   context, field(std::move(callback), QStringLiteral("to")));
}

RpcCall SandboxMethods::stop(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return callFor("stop", {{QStringLiteral("id"), id}}, context,
                   parsed<SandboxInfo>(std::move(callback)));
}

RpcCall SandboxMethods::start(const QString &id, QObject *context, Callback<SandboxInfo> callback)
{
    return callFor("start", {{QStringLiteral("id"), id}}, context,
                   parsed<SandboxInfo>(std::move(callback)));
}

RpcCall SandboxMethods::remove(const QString &id, QObject *context, Callback<QString> callback)
{
    return callFor("delete", {{QStringLiteral("id"), id}}, context,
                   field(std::move(callback), QStringLiteral("id")));
}

} // namespace Sandbox
