#include "commands.h"

#include <client/agentrun.h>
#include <client/execstream.h>
#include <client/terminalsession.h>
#include <protocol/json.h>

#include "shell.h"

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

// A query's parameters from repeated --param options: JSON values where they parse as JSON
// (42, true, null, "text"), else the text itself.
QJsonArray parseParams(const QStringList &values)
{
    QJsonArray out;
    for (const QString &v : values) {
        const QByteArray text = v.toUtf8();
        const Json::Parsed parsed = Json::parse(text);
        out.append(parsed.error ? QJsonValue(v) : parsed.value);
    }
    return out;
}

// One cell of a row as text: strings as they are, anything else as JSON, NULL for null.
QString cellText(const QJsonValue &v)
{
    if (v.isNull() || v.isUndefined())
        return QStringLiteral("NULL");
    if (v.isString())
        return v.toString();
    if (v.isBool())
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 17);
    return QString::fromUtf8(
        QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact).mid(1).chopped(1));
}

QByteArray readAllStdin()
{
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return {};
    return in.readAll();
}

// One event of an agent run as a line of text; empty for events not worth a line.
QString eventLine(const AgentEvent &e)
{
    QString line;
    switch (e.type) {
    case AgentEvent::Type::Text:
        line = e.text;
        break;
    case AgentEvent::Type::Thinking:
        line = QStringLiteral("(thinking) ") + e.text;
        break;
    case AgentEvent::Type::ToolCall:
        line = QStringLiteral("> %1 %2").arg(e.name, QString::fromUtf8(
                                                         QJsonDocument(e.input.toObject())
                                                             .toJson(QJsonDocument::Compact)));
        break;
    case AgentEvent::Type::ToolResult:
        line = QStringLiteral("< %1%2: %3")
                   .arg(e.name, e.isError ? QStringLiteral(" (error)") : QString(),
                        e.output.left(2000));
        break;
    case AgentEvent::Type::FileChange:
        line = QStringLiteral("~ %1 %2%3")
                   .arg(e.changeKind, e.path, e.isError ? QStringLiteral(" (failed)") : QString());
        break;
    case AgentEvent::Type::Error:
        line = QStringLiteral("! ") + e.text;
        break;
    case AgentEvent::Type::Result:
        line = e.isError ? QStringLiteral("= failed: ") + e.output : QStringLiteral("= done");
        if (e.needsInput.reason == AgentNeedsInput::Reason::Permission)
            line += QStringLiteral(" (needs permission for %1)")
                        .arg(e.needsInput.toolNames().join(QStringLiteral(", ")));
        else if (e.needsInput.reason == AgentNeedsInput::Reason::Question)
            line += QStringLiteral(" (asks: %1)").arg(e.needsInput.question);
        break;
    case AgentEvent::Type::Usage:
    case AgentEvent::Type::Session:
    case AgentEvent::Type::Other:
        return {};
    }
    return QStringLiteral("[%1] %2").arg(e.turn).arg(line);
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
    printLine(QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                  .arg(QStringLiteral("ID"), -16)
                  .arg(QStringLiteral("NAME"), -20)
                  .arg(QStringLiteral("KIND"), -9)
                  .arg(QStringLiteral("TYPE"), -12)
                  .arg(QStringLiteral("SIZE"), -11)
                  .arg(QStringLiteral("STATUS"), -9)
                  .arg(QStringLiteral("CREATED")));
    for (const SandboxInfo &s : list) {
        printLine(
            QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                .arg(s.id, -16)
                .arg(s.name.isEmpty() ? QStringLiteral("-") : s.name.left(20), -20)
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

void Commands::clis()
{
    m_call = m_client->agents().clis(this, [this](Result<QList<AgentCliInfo>> r) {
        if (!r)
            return fail(r.error());
        if (m_options.json) {
            QJsonArray out;
            for (const AgentCliInfo &c : r.value())
                out.append(QJsonObject{{QStringLiteral("type"), c.type},
                                       {QStringLiteral("name"), c.name},
                                       {QStringLiteral("version"), c.version},
                                       {QStringLiteral("installed"), c.installed},
                                       {QStringLiteral("dir"), c.dir}});
            printJson(out);
            Q_EMIT done(0);
            return;
        }
        for (const AgentCliInfo &c : r.value())
            printLine(QStringLiteral("%1 %2 %3")
                          .arg(c.type, -12)
                          .arg(c.version, -10)
                          .arg(c.installed ? QStringLiteral("installed in ") + c.dir
                               : c.installing
                                   ? QStringLiteral("installing")
                                   : QStringLiteral("not installed (sandboxctl agents install-cli "
                                                    "%1; ~%2 MB from npm)")
                                         .arg(c.type)
                                         .arg(c.downloadBytes / 1000000)));
        Q_EMIT done(0);
    });
}

void Commands::installCli(const QString &type)
{
    ExecStream *stream = m_client->agents().installCli(type, this);
    if (!stream)
        return fail(Error{ErrorCode::NotImplemented,
                          QStringLiteral("installing a CLI needs the WebSocket API"),
                          {}});
    auto lastMb = std::make_shared<qint64>(-1);
    connect(stream, &ExecStream::event, this, [lastMb](const QJsonObject &e) {
        if (e.value(QStringLiteral("type")).toString() != QLatin1String("progress"))
            return;
        const qint64 mb = qint64(e.value(QStringLiteral("downloadedBytes")).toDouble() / 1e6);
        const qint64 of = qint64(e.value(QStringLiteral("expectedBytes")).toDouble() / 1e6);
        if (mb == *lastMb
            && e.value(QStringLiteral("phase")).toString() != QLatin1String("finishing"))
            return;
        *lastMb = mb;
        writeAll(stderr, (e.value(QStringLiteral("phase")).toString() == QLatin1String("finishing")
                              ? QStringLiteral("downloaded %1 MB; putting it in place\n").arg(mb)
                              : QStringLiteral("downloading %1 / ~%2 MB\n").arg(mb).arg(of))
                             .toUtf8());
    });
    connect(stream, &ExecStream::failed, this, &Commands::fail);
    connect(stream, &ExecStream::ended, this, [this](const QJsonValue &result) {
        const QJsonObject o = result.toObject();
        if (m_options.json) {
            printJson(o);
        } else {
            printLine(QStringLiteral("%1 %2 %3 %4")
                          .arg(o.value(QStringLiteral("name")).toString(),
                               o.value(QStringLiteral("version")).toString(),
                               o.value(QStringLiteral("alreadyInstalled")).toBool()
                                   ? QStringLiteral("was already installed in")
                                   : QStringLiteral("installed in"),
                               o.value(QStringLiteral("dir")).toString()));
        }
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

void Commands::transcript(const QString &id, const QString &runId, qint64 after)
{
    // Page by page, each printed as it comes.
    m_call = m_client->agents().runEvents(id, runId, after, 1000, this,
                                          [this, id, runId](Result<AgentRunEvents> r) {
                                              if (!r)
                                                  return fail(r.error());
                                              for (qsizetype i = 0; i < r->events.size(); ++i) {
                                                  const AgentEvent &e = r->events.at(i);
                                                  if (m_options.json) {
                                                      writeAll(stdout, QJsonDocument(e.raw).toJson(
                                                                           QJsonDocument::Compact)
                                                                           + '\n');
                                                      continue;
                                                  }
                                                  const QString line = eventLine(e);
                                                  if (!line.isEmpty())
                                                      printLine(line);
                                              }
                                              if (r->more && !r->seqs.isEmpty())
                                                  return transcript(id, runId, r->seqs.last());
                                              Q_EMIT done(0);
                                          });
}

void Commands::printRows(const QList<QJsonArray> &rows)
{
    QByteArray out;
    for (const QJsonArray &row : rows) {
        QStringList cells;
        for (const QJsonValue &v : row)
            cells.append(cellText(v).replace(u'\t', u' ').replace(u'\n', u' '));
        out += cells.join(u'\t').toUtf8() + '\n';
    }
    writeAll(stdout, out);
}

void Commands::query(const QString &id, const QString &sql, const QJsonArray &params, int pageSize)
{
    QueryOptions o;
    o.pageSize = pageSize;
    m_call = m_client->databases()
                 .queryPage(id, sql, params, o, this, [this, id, pageSize](Result<QueryPage> r) {
                     if (!r)
                         return fail(r.error());
                     QStringList header;
                     for (const SqlField &f : r->fields)
                         header.append(f.name);
                     if (!header.isEmpty())
                         printLine(header.join(u'\t'));
                     printRows(r->rows);
                     if (r->cursor.isEmpty()) {
                         writeAll(stderr, QStringLiteral("(%1 rows, 1 page; %2 %3)\n")
                                              .arg(r->rows.size())
                                              .arg(r->command)
                                              .arg(r->rowsAffected)
                                              .toUtf8());
                         return Q_EMIT done(0);
                     }
                     fetchRest(id, r->cursor, pageSize, r->rows.size(), 1);
                 });
}

void Commands::fetchRest(const QString &id, const QString &cursor, int pageSize, qint64 rows,
                         int pages)
{
    m_call = m_client->databases().fetch(
        id, cursor, pageSize, 60000, this,
        [this, id, cursor, pageSize, rows, pages](Result<QueryPage> r) {
            if (!r)
                return fail(r.error());
            printRows(r->rows);
            const qint64 total = rows + r->rows.size();
            if (r->done || r->cursor.isEmpty()) {
                writeAll(stderr,
                         QStringLiteral("(%1 rows, %2 pages)\n").arg(total).arg(pages + 1).toUtf8());
                return Q_EMIT done(0);
            }
            fetchRest(id, r->cursor, pageSize, total, pages + 1);
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
    const QCommandLineOption allowOpt(QStringLiteral("allow"), QStringLiteral("allow"),
                                      QStringLiteral("entry"));
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
    const QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("model"),
                                      QStringLiteral("model"));
    const QCommandLineOption permissionOpt(QStringLiteral("permission-mode"),
                                           QStringLiteral("permission mode"),
                                           QStringLiteral("mode"));
    const QCommandLineOption newSessionOpt(QStringLiteral("new-session"),
                                           QStringLiteral("new session"));
    const QCommandLineOption paramOpt(QStringLiteral("param"), QStringLiteral("param"),
                                      QStringLiteral("value"));
    const QCommandLineOption pageSizeOpt(QStringLiteral("page-size"), QStringLiteral("page-size"),
                                         QStringLiteral("rows"));
    const QCommandLineOption baseUrlOpt(QStringLiteral("base-url"), QStringLiteral("base-url"),
                                        QStringLiteral("url"));
    const QCommandLineOption databaseOpt(QStringLiteral("database"), QStringLiteral("database"),
                                         QStringLiteral("name"));
    p.addOptions({sizeOpt, envOpt, networkOpt, allowOpt, nameOpt, cwdOpt, timeoutOpt, stdinOpt,
                  recursiveOpt, parentsOpt, adminOpt, modelOpt, permissionOpt, newSessionOpt,
                  paramOpt, pageSizeOpt, baseUrlOpt, databaseOpt});
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
        // The new sandbox's id alone; with --json its whole Sandbox object as the engine said it.
        const auto printCreated = [this](Result<SandboxInfo> r) {
            if (!r)
                return fail(r.error());
            printLine(r->id);
            Q_EMIT done(0);
        };
        if (kDatabaseTypes.contains(type)) {
            DatabaseCreateOptions o;
            o.type = type;
            o.size = p.value(sizeOpt);
            o.name = p.value(nameOpt);
            o.database = p.value(databaseOpt);
            if (m_options.json)
                call(QStringLiteral("databases.create"), o.toJson());
            else
                m_call = m_client->databases().create(o, this, printCreated);
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
        // --allow ENTRY...: only those (docs/protocol.md 3.5); with --network, the internet too.
        if (p.isSet(allowOpt))
            o.networkPolicy = NetworkPolicy{o.network ? NetworkPolicy::Mode::Public
                                                      : NetworkPolicy::Mode::List,
                                            p.values(allowOpt),
                                            {}};
        o.name = p.value(nameOpt);
        if (m_options.json)
            call(QStringLiteral("agents.create"), o.toJson());
        else
            m_call = m_client->agents().create(o, this, printCreated);
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
    if (cmd == QLatin1String("query") || cmd == QLatin1String("execute")) {
        if (!need(2, "query|execute ID SQL [--param VALUE]... [--page-size ROWS]"))
            return false;
        const QJsonArray params = parseParams(p.values(paramOpt));
        if (cmd == QLatin1String("execute")) {
            m_call = m_client->databases().executeScript(a.at(1), a.at(2), params, 60000, this,
                                                         [this](Result<ExecuteResult> r) {
                                                             if (!r)
                                                                 return fail(r.error());
                                                             printLine(QStringLiteral("%1 %2")
                                                                           .arg(r->command)
                                                                           .arg(r->rowsAffected));
                                                             Q_EMIT done(0);
                                                         });
            return true;
        }
        bool ok = true;
        const int pageSize = p.isSet(pageSizeOpt) ? p.value(pageSizeOpt).toInt(&ok) : 1000;
        if (!ok || pageSize < 1 || pageSize > 100000) {
            *usageError = QStringLiteral("--page-size wants 1 to 100000 rows");
            return false;
        }
        query(a.at(1), a.at(2), params, pageSize);
        return true;
    }
    if (cmd == QLatin1String("shell")) {
        if (!need(1, "shell ID [--cwd DIR] [--env NAME=VALUE]... [-- COMMAND [ARGS...]]"))
            return false;
        TerminalOptions o;
        Shell::localSize(&o.cols, &o.rows);
        const QString term = qEnvironmentVariable("TERM");
        if (!term.isEmpty() && term != QLatin1String("dumb"))
            o.term = term;
        o.cwd = p.value(cwdOpt);
        if (!parseEnv(p.values(envOpt), &o.env, usageError))
            return false;
        QStringList command = a.mid(2);
        // Without a command: the user's login shell of choice, bash where there is one.
        const Command cmd = command.isEmpty()     ? Command(QStringLiteral(
                                    "if command -v bash >/dev/null 2>&1; then exec bash -l; "
                                        "else exec sh -l; fi"))
                            : command.size() == 1 ? Command(command.first())
                                                  : Command(command);
        TerminalSession *session = m_client->sandboxes().openTerminal(a.at(1), cmd, o, this);
        auto *shell = new Shell(this);
        shell->attach(session);
        connect(shell, &Shell::done, this, &Commands::done);
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
        if (!need(2, "write ID PATH [LOCAL_FILE|-]"))
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
        WriteFileOptions o; // missing folders are made, as over the API (-p changes nothing)
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
    if (cmd == QLatin1String("runs")) {
        if (!need(1, "runs ID"))
            return false;
        if (m_options.json) {
            call(QStringLiteral("agents.runs"), {{QStringLiteral("id"), a.at(1)}});
            return true;
        }
        m_call = m_client->agents().runs(a.at(1), 0, this, [this](Result<QList<AgentRunRecord>> r) {
            if (!r)
                return fail(r.error());
            printLine(QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                          .arg(QStringLiteral("RUN"), -20)
                          .arg(QStringLiteral("STATUS"), -11)
                          .arg(QStringLiteral("STARTED"), -19)
                          .arg(QStringLiteral("SECONDS"), 7)
                          .arg(QStringLiteral("TOKENS IN/OUT"), 15)
                          .arg(QStringLiteral("COST"), 8)
                          .arg(QStringLiteral("PROMPT")));
            for (const AgentRunRecord &run : r.value()) {
                QString status = run.statusName;
                if (run.needsInput.isNeeded())
                    status = QStringLiteral("needs-input");
                printLine(QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                              .arg(run.runId, -20)
                              .arg(status, -11)
                              .arg(run.startedAt.toLocalTime().toString(
                                       QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                                   -19)
                              .arg(run.durationMs ? QString::number(*run.durationMs / 1000.0, 'f', 1)
                                                  : QStringLiteral("-"),
                                   7)
                              .arg(QStringLiteral("%1/%2")
                                       .arg(run.usage.inputTokens)
                                       .arg(run.usage.outputTokens),
                                   15)
                              .arg(run.usage.costUsd
                                       ? QStringLiteral("$%1").arg(*run.usage.costUsd, 0, 'f', 4)
                                       : QStringLiteral("-"),
                                   8)
                              .arg(run.prompt.simplified().left(60)));
            }
            Q_EMIT done(0);
        });
        return true;
    }
    if (cmd == QLatin1String("run")) {
        if (!need(2, "run ID [--model M] [--permission-mode MODE] [--new-session] [--base-url URL] "
                     "[--timeout MS] [--env NAME=VALUE]... PROMPT"))
            return false;
        Sandbox::AgentRunOptions o;
        o.model = p.value(modelOpt);
        o.permissionMode = p.value(permissionOpt);
        o.newSession = p.isSet(newSessionOpt);
        o.baseUrl = p.value(baseUrlOpt);
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
        AgentRun *run = m_client->agents().runStreaming(a.at(1), a.mid(2).join(u' '), o, this);
        connect(run, &AgentRun::event, this, [this](const AgentEvent &e) {
            if (m_options.json) {
                writeAll(stdout, QJsonDocument(e.raw).toJson(QJsonDocument::Compact) + '\n');
                return;
            }
            const QString line = eventLine(e);
            if (!line.isEmpty())
                printLine(line);
        });
        connect(run, &AgentRun::failed, this, &Commands::fail);
        connect(run, &AgentRun::finished, this, [this](const AgentRunResult &r) {
            if (!r.success)
                writeAll(stderr,
                         QStringLiteral("sandboxctl: the run failed: %1\n").arg(r.error).toUtf8());
            Q_EMIT done(r.success ? 0 : 1);
        });
        return true;
    }
    if (cmd == QLatin1String("transcript")) {
        if (!need(2, "transcript ID RUN_ID"))
            return false;
        transcript(a.at(1), a.at(2), 0);
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
    if (cmd == QLatin1String("agents")) {
        const QString sub = a.value(1, QStringLiteral("clis"));
        if (sub == QLatin1String("clis") && a.size() <= 2) {
            clis();
        } else if (sub == QLatin1String("install-cli") && a.size() == 3) {
            installCli(a.at(2));
        } else {
            *usageError = QStringLiteral("usage: sandboxctl agents clis | agents install-cli TYPE");
            return false;
        }
        return true;
    }
    *usageError = QStringLiteral("unknown command '%1'").arg(cmd);
    return false;
}
