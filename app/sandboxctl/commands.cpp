#include "commands.h"

#include <client/execstream.h>

#include <QCommandLineParser>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

#include <cstdio>
#include <unistd.h>

using namespace Sandbox;

namespace {

const QStringList kAgentTypes{QStringLiteral("claude-code"), QStringLiteral("opencode"),
                              QStringLiteral("codex")};
const QStringList kDatabaseTypes{QStringLiteral("postgres"), QStringLiteral("sqlite"),
                                 QStringLiteral("duckdb")};

void writeAll(FILE *f, const QByteArray &bytes)
{
    std::fwrite(bytes.constData(), 1, size_t(bytes.size()), f);
    std::fflush(f);
}

void printLine(const QString &line)
{
    writeAll(stdout, line.toUtf8() + '\n');
}

// KEY=VALUE pairs of repeated --env options.
bool parseEnv(const QStringList &pairs, QMap<QString, QString> *env, QString *error)
{
    for (const QString &p : pairs) {
        const qsizetype eq = p.indexOf(u'=');
        if (eq <= 0) {
            *error = QStringLiteral("--env wants NAME=VALUE, not '%1'").arg(p);
            return false;
        }
        env->insert(p.left(eq), p.mid(eq + 1));
    }
    return true;
}

QByteArray readAllStdin()
{
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return {};
    return in.readAll();
}

} // namespace

Commands::Commands(Client *client, Options options, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_options(options)
{}

void Commands::fail(const Error &error)
{
    writeAll(stderr, QStringLiteral("sandboxctl: %1: %2\n")
                         .arg(errorCodeName(error.code), error.message)
                         .toUtf8());
    Q_EMIT done(error.code == ErrorCode::Unauthorized ? 3 : 1);
}

void Commands::printJson(const QJsonValue &value)
{
    const QByteArray text = value.isArray()
                                ? QJsonDocument(value.toArray()).toJson(QJsonDocument::Indented)
                                : QJsonDocument(value.toObject()).toJson(QJsonDocument::Indented);
    writeAll(stdout, text);
}

void Commands::printSandboxes(const QList<SandboxInfo> &list)
{
    printLine(QStringLiteral("%1 %2 %3 %4 %5 %6")
                  .arg(QStringLiteral("ID"), -16)
                  .arg(QStringLiteral("KIND"), -9)
                  .arg(QStringLiteral("TYPE"), -12)
                  .arg(QStringLiteral("SIZE"), -11)
                  .arg(QStringLiteral("STATUS"), -9)
                  .arg(QStringLiteral("CREATED")));
    for (const SandboxInfo &s : list) {
        printLine(
            QStringLiteral("%1 %2 %3 %4 %5 %6")
                .arg(s.id, -16)
                .arg(s.kind, -9)
                .arg(s.type, -12)
                .arg(s.size, -11)
                .arg(s.status + (s.network ? QStringLiteral("+net") : QString()), -9)
                .arg(s.createdAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))));
    }
}

void Commands::call(const QString &method, const QJsonObject &params)
{
    m_call = m_client->rpc()->call(method, params, this, [this](Result<QJsonValue> r) {
        if (!r)
            return fail(r.error());
        printJson(r.value());
        Q_EMIT done(0);
    });
}

void Commands::exec(const QString &id, const QStringList &command, const ExecOptions &options)
{
    const Command cmd = command.size() == 1 ? Command(command.first()) : Command(command);
    ExecStream *stream = m_client->sandboxes().execStreaming(id, cmd, options, this);
    connect(stream, &ExecStream::output, this, [](const QString &channel, const QByteArray &data) {
        writeAll(channel == QLatin1String("stderr") ? stderr : stdout, data);
    });
    connect(stream, &ExecStream::gap, this, [](qint64 first, qint64 last) {
        writeAll(stderr, QStringLiteral("sandboxctl: output %1 to %2 was lost while disconnected\n")
                             .arg(first)
                             .arg(last)
                             .toUtf8());
    });
    connect(stream, &ExecStream::failed, this, &Commands::fail);
    connect(stream, &ExecStream::finished, this, [this](const ExecResult &result) {
        if (result.timedOut)
            writeAll(stderr, "sandboxctl: the command timed out and was killed\n");
        if (result.truncated)
            writeAll(stderr, "sandboxctl: the output was truncated\n");
        Q_EMIT done(result.exitCode);
    });
}

bool Commands::run(const QStringList &args, QString *usageError)
{
    QCommandLineParser p;
    const QCommandLineOption sizeOpt(QStringLiteral("size"), QStringLiteral("size"),
                                     QStringLiteral("size"));
    const QCommandLineOption envOpt(QStringLiteral("env"), QStringLiteral("env"),
                                    QStringLiteral("NAME=VALUE"));
    const QCommandLineOption networkOpt(QStringLiteral("network"), QStringLiteral("network"));
    const QCommandLineOption nameOpt(QStringLiteral("name"), QStringLiteral("name"),
                                     QStringLiteral("name"));
    const QCommandLineOption cwdOpt(QStringLiteral("cwd"), QStringLiteral("cwd"),
                                    QStringLiteral("dir"));
    const QCommandLineOption timeoutOpt(QStringLiteral("timeout"), QStringLiteral("timeout"),
                                        QStringLiteral("ms"));
    const QCommandLineOption stdinOpt(QStringLiteral("stdin"), QStringLiteral("stdin"));
    const QCommandLineOption recursiveOpt({QStringLiteral("r"), QStringLiteral("recursive")},
                                          QStringLiteral("recursive"));
    const QCommandLineOption parentsOpt({QStringLiteral("p"), QStringLiteral("parents")},
                                        QStringLiteral("parents"));
    const QCommandLineOption adminOpt(QStringLiteral("admin"), QStringLiteral("admin"));
    p.addOptions({sizeOpt, envOpt, networkOpt, nameOpt, cwdOpt, timeoutOpt, stdinOpt, recursiveOpt,
                  parentsOpt, adminOpt});
    if (!p.parse(QStringList{QStringLiteral("sandboxctl")} + args)) {
        *usageError = p.errorText();
        return false;
    }
    const QStringList a = p.positionalArguments();
    if (a.isEmpty()) {
        *usageError = QStringLiteral("no command given");
        return false;
    }
    const QString cmd = a.first();
    auto need = [&](int n, const char *usage) {
        if (a.size() >= n + 1)
            return true;
        *usageError = QStringLiteral("usage: sandboxctl %1").arg(QLatin1String(usage));
        return false;
    };

    if (cmd == QLatin1String("session")) {
        call(QStringLiteral("sessions.current"), {});
        return true;
    }
    if (cmd == QLatin1String("quota")) {
        call(QStringLiteral("sessions.quota"), {});
        return true;
    }
    if (cmd == QLatin1String("list") || cmd == QLatin1String("ls-sandboxes")) {
        const QString what = a.value(1);
        const QString method = what.startsWith(QLatin1String("database"))
                                   ? QStringLiteral("databases.list")
                                   : QStringLiteral("agents.list");
        auto print = [this](Result<QList<SandboxInfo>> r) {
            if (!r)
                return fail(r.error());
            printSandboxes(r.value());
            Q_EMIT done(0);
        };
        if (m_options.json) {
            call(method, {});
        } else if (method == QLatin1String("databases.list")) {
            m_call = m_client->databases().list(this, print);
        } else {
            m_call = m_client->agents().list(this, print);
        }
        return true;
    }
    if (cmd == QLatin1String("create")) {
        if (!need(1, "create TYPE [--size SIZE] [--env NAME=VALUE]... [--network] [--name NAME]"))
            return false;
        const QString type = a.at(1);
        QMap<QString, QString> env;
        if (!parseEnv(p.values(envOpt), &env, usageError))
            return false;
        if (kDatabaseTypes.contains(type)) {
            QJsonObject params{{QStringLiteral("type"), type}};
            if (p.isSet(sizeOpt))
                params.insert(QStringLiteral("size"), p.value(sizeOpt));
            call(QStringLiteral("databases.create"), params);
            return true;
        }
        if (!kAgentTypes.contains(type)) {
            *usageError = QStringLiteral("TYPE is one of: %1")
                              .arg((kAgentTypes + kDatabaseTypes).join(QStringLiteral(", ")));
            return false;
        }
        AgentCreateOptions o;
        o.type = type;
        o.size = p.value(sizeOpt);
        o.env = env;
        o.network = p.isSet(networkOpt);
        o.name = p.value(nameOpt);
        m_call = m_client->agents().create(o, this, [this](Result<SandboxInfo> r) {
            if (!r)
                return fail(r.error());
            if (m_options.json)
                printSandboxes({r.value()});
            else
                printLine(r->id);
            Q_EMIT done(0);
        });
        return true;
    }
    if (cmd == QLatin1String("status") || cmd == QLatin1String("stop")
        || cmd == QLatin1String("start") || cmd == QLatin1String("delete")) {
        if (!need(1, "status|stop|start|delete ID"))
            return false;
        const QString method = cmd == QLatin1String("status") ? QStringLiteral("sandbox.status")
                                                              : QStringLiteral("sandbox.") + cmd;
        call(method, {{QStringLiteral("id"), a.at(1)}});
        return true;
    }
    if (cmd == QLatin1String("exec")) {
        if (!need(2, "exec ID [--cwd DIR] [--timeout MS] [--env NAME=VALUE]... [--stdin] -- "
                     "COMMAND [ARGS...]"))
            return false;
        ExecOptions o;
        o.cwd = p.value(cwdOpt);
        if (p.isSet(timeoutOpt)) {
            bool ok = false;
            o.timeoutMs = p.value(timeoutOpt).toLongLong(&ok);
            if (!ok) {
                *usageError = QStringLiteral("--timeout wants milliseconds");
                return false;
            }
        }
        if (!parseEnv(p.values(envOpt), &o.env, usageError))
            return false;
        if (p.isSet(stdinOpt))
            o.stdinText = QString::fromUtf8(readAllStdin());
        const QStringList command = a.mid(2);
        if (command.isEmpty()) {
            *usageError = QStringLiteral("exec needs a command");
            return false;
        }
        exec(a.at(1), command, o);
        return true;
    }
    if (cmd == QLatin1String("read") || cmd == QLatin1String("cat")) {
        if (!need(2, "read ID PATH"))
            return false;
        m_call = m_client->sandboxes().readFile(
            a.at(1), a.at(2), {}, this, [this](Result<FileContent> r) {
                if (!r)
                    return fail(r.error());
                writeAll(stdout, r->content);
                if (r->truncated)
                    writeAll(stderr,
                             "sandboxctl: the file is larger than one read; output truncated\n");
                Q_EMIT done(0);
            });
        return true;
    }
    if (cmd == QLatin1String("write")) {
        if (!need(2, "write ID PATH [LOCAL_FILE|-] [-p]"))
            return false;
        QByteArray content;
        const QString source = a.value(3, QStringLiteral("-"));
        if (source == QLatin1String("-")) {
            content = readAllStdin();
        } else {
            QFile f(source);
            if (!f.open(QIODevice::ReadOnly)) {
                *usageError = QStringLiteral("cannot read %1: %2").arg(source, f.errorString());
                return false;
            }
            content = f.readAll();
        }
        WriteFileOptions o;
        o.parents = p.isSet(parentsOpt);
        m_call
            = m_client->sandboxes()
                  .writeFile(a.at(1), a.at(2), content, o, this, [this](Result<WriteFileResult> r) {
                      if (!r)
                          return fail(r.error());
                      printLine(QStringLiteral("%1 (%2 bytes)").arg(r->path).arg(r->size));
                      Q_EMIT done(0);
                  });
        return true;
    }
    if (cmd == QLatin1String("ls")) {
        if (!need(1, "ls ID [PATH] [-r]"))
            return false;
        m_call = m_client->sandboxes().listFiles(
            a.at(1), a.value(2, QStringLiteral("/workspace")), p.isSet(recursiveOpt), this,
            [this](Result<FileListing> r) {
                if (!r)
                    return fail(r.error());
                for (const FileEntry &e : r->entries) {
                    const char kind = e.type == FileEntry::Type::Directory ? 'd'
                                      : e.type == FileEntry::Type::Symlink ? 'l'
                                                                           : '-';
                    printLine(
                        QStringLiteral("%1 %2 %3 %4%5")
                            .arg(QChar::fromLatin1(kind))
                            .arg(e.size, 10)
                            .arg(e.mtime.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
                            .arg(e.path, e.target.isEmpty() ? QString()
                                                            : QStringLiteral(" -> ") + e.target));
                }
                if (r->truncated)
                    writeAll(stderr, "sandboxctl: the listing was truncated\n");
                Q_EMIT done(0);
            });
        return true;
    }
    if (cmd == QLatin1String("mkdir") || cmd == QLatin1String("rm")) {
        if (!need(2, "mkdir ID PATH [-p] | rm ID PATH [-r]"))
            return false;
        auto printPath = [this](Result<QString> r) {
            if (!r)
                return fail(r.error());
            Q_EMIT done(0);
        };
        if (cmd == QLatin1String("mkdir"))
            m_call = m_client->sandboxes().mkdir(a.at(1), a.at(2), p.isSet(parentsOpt), this,
                                                 printPath);
        else
            m_call = m_client->sandboxes().deleteFile(a.at(1), a.at(2), p.isSet(recursiveOpt), this,
                                                      printPath);
        return true;
    }
    if (cmd == QLatin1String("keys")) {
        const QString sub = a.value(1, QStringLiteral("list"));
        if (sub == QLatin1String("list")) {
            call(QStringLiteral("keys.list"), {});
        } else if (sub == QLatin1String("create") && a.size() >= 3) {
            call(QStringLiteral("keys.create"),
                 {{QStringLiteral("name"), a.at(2)}, {QStringLiteral("admin"), p.isSet(adminOpt)}});
        } else if (sub == QLatin1String("revoke") && a.size() >= 3) {
            call(QStringLiteral("keys.revoke"), {{QStringLiteral("id"), a.at(2)}});
        } else {
            *usageError = QStringLiteral(
                "usage: sandboxctl keys list | keys create NAME [--admin] | keys revoke KEY_ID");
            return false;
        }
        return true;
    }
    *usageError = QStringLiteral("unknown command '%1'").arg(cmd);
    return false;
}
