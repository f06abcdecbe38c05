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
#include <optional>
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

// The options of every command; each command reads those it knows.
struct OptionSpec
{
    const char *name;
    const char *shortName; // or null
    const char *valueName; // null for a switch
};
constexpr OptionSpec kOptions[] = {
    {"size", nullptr, "size"},
    {"env", nullptr, "NAME=VALUE"},
    {"network", nullptr, nullptr},
    {"allow", nullptr, "entry"},
    {"name", nullptr, "name"},
    {"cwd", nullptr, "dir"},
    {"timeout", nullptr, "ms"},
    {"stdin", nullptr, nullptr},
    {"recursive", "r", nullptr},
    {"parents", "p", nullptr},
    {"admin", nullptr, nullptr},
    {"model", nullptr, "model"},
    {"permission-mode", nullptr, "mode"},
    {"new-session", nullptr, nullptr},
    {"param", nullptr, "value"},
    {"page-size", nullptr, "rows"},
    {"base-url", nullptr, "url"},
    {"database", nullptr, "name"},
    {"max-output", nullptr, "bytes"},
};

// --timeout MS into `ms`, where it is given.
bool parseTimeout(const QCommandLineParser &parser, std::optional<qint64> *ms, QString *error)
{
    if (!parser.isSet(QStringLiteral("timeout")))
        return true;
    bool ok = false;
    *ms = parser.value(QStringLiteral("timeout")).toLongLong(&ok);
    if (!ok)
        *error = QStringLiteral("--timeout wants milliseconds");
    return ok;
}

// --max-output BYTES (a number, or with K or M for KiB or MiB): how much of each channel (stdout,
// stderr) a streamed exec passes on. sandboxctl asks for the most the protocol allows (2.2), not
// its default of 1 MiB: output that streams live to a terminal or a file (`exec ID -- cat log >
// log`) should not stop at a mebibyte.
constexpr qint64 kExecMaxOutput = 64 * 1024 * 1024;

bool parseMaxOutput(const QCommandLineParser &parser, std::optional<qint64> *bytes, QString *error)
{
    *bytes = kExecMaxOutput;
    if (!parser.isSet(QStringLiteral("max-output")))
        return true;
    QString text = parser.value(QStringLiteral("max-output")).trimmed();
    qint64 unit = 1;
    if (text.endsWith(u'K', Qt::CaseInsensitive))
        unit = 1024;
    else if (text.endsWith(u'M', Qt::CaseInsensitive))
        unit = 1024 * 1024;
    if (unit != 1)
        text.chop(1);
    bool ok = false;
    const qint64 n = text.toLongLong(&ok);
    if (!ok || n < 0 || n > kExecMaxOutput / unit) {
        *error = QStringLiteral("--max-output wants bytes (or K, M), at most 64M");
        return false;
    }
    *bytes = n * unit;
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

void Commands::printRuns(const QList<AgentRunRecord> &runs)
{
    printLine(QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                  .arg(QStringLiteral("RUN"), -20)
                  .arg(QStringLiteral("STATUS"), -11)
                  .arg(QStringLiteral("STARTED"), -19)
                  .arg(QStringLiteral("SECONDS"), 7)
                  .arg(QStringLiteral("TOKENS IN/OUT"), 15)
                  .arg(QStringLiteral("COST"), 8)
                  .arg(QStringLiteral("PROMPT")));
    for (const AgentRunRecord &run : runs) {
        const QString status = run.needsInput.isNeeded() ? QStringLiteral("needs-input")
                                                         : run.statusName;
        printLine(
            QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
                .arg(run.runId, -20)
                .arg(status, -11)
                .arg(run.startedAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                     -19)
                .arg(run.durationMs ? QString::number(*run.durationMs / 1000.0, 'f', 1)
                                    : QStringLiteral("-"),
                     7)
                .arg(QStringLiteral("%1/%2").arg(run.usage.inputTokens).arg(run.usage.outputTokens),
                     15)
                .arg(run.usage.costUsd ? QStringLiteral("$%1").arg(*run.usage.costUsd, 0, 'f', 4)
                                       : QStringLiteral("-"),
                     8)
                .arg(run.prompt.simplified().left(60)));
    }
}

void Commands::printListing(const FileListing &listing)
{
    for (const FileEntry &e : listing.entries) {
        const char kind = e.type == FileEntry::Type::Directory ? 'd'
                          : e.type == FileEntry::Type::Symlink ? 'l'
                                                               : '-';
        printLine(
            QStringLiteral("%1 %2 %3 %4%5")
                .arg(QChar::fromLatin1(kind))
                .arg(e.size, 10)
                .arg(e.mtime.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
                .arg(e.path, e.target.isEmpty() ? QString() : QStringLiteral(" -> ") + e.target));
    }
    if (listing.truncated)
        writeAll(stderr, "sandboxctl: the listing was truncated\n");
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

void Commands::execStreaming(const QString &id, const QStringList &command,
                             const ExecOptions &options)
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
            writeAll(stderr, "sandboxctl: the output was truncated at --max-output\n");
        Q_EMIT done(result.exitCode);
    });
}

void Commands::transcriptFrom(const QString &id, const QString &runId, qint64 after)
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
                                                  return transcriptFrom(id, runId, r->seqs.last());
                                              Q_EMIT done(0);
                                          });
}

void Commands::printRows(const SqlRows &rows)
{
    QByteArray out;
    for (qsizetype r = 0; r < rows.size(); ++r) {
        QStringList cells;
        for (qsizetype c = 0; c < rows.columnCount(r); ++c)
            cells.append(cellText(rows.value(r, c)).replace(u'\t', u' ').replace(u'\n', u' '));
        out += cells.join(u'\t').toUtf8() + '\n';
    }
    writeAll(stdout, out);
}

void Commands::queryPaged(const QString &id, const QString &sql, const QJsonArray &params,
                          int pageSize)
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

// The parsed command line of one command: its positional arguments (the command first) and the
// options, read by name.
struct Commands::Invocation
{
    QStringList args;
    const QCommandLineParser &parser;

    const QString &command() const { return args.first(); }
    bool isSet(const char *option) const { return parser.isSet(QLatin1String(option)); }
    QString value(const char *option) const { return parser.value(QLatin1String(option)); }
    QStringList values(const char *option) const { return parser.values(QLatin1String(option)); }
};

// A command: its names ("a|b"), the arguments it needs after its name and its usage line when
// they are missing (0 and null: it checks its arguments itself), and what runs it.
struct Commands::Spec
{
    const char *names;
    int arguments;
    const char *usage;
    Handler handler;
};

const Commands::Spec Commands::kSpecs[] = {
    {"session", 0, nullptr, &Commands::session},
    {"quota", 0, nullptr, &Commands::quota},
    {"list|ls-sandboxes", 0, nullptr, &Commands::list},
    {"create", 1, "create TYPE [--size SIZE] [--env NAME=VALUE]... [--network] [--name NAME]",
     &Commands::create},
    {"status|stop|start|delete", 1, "status|stop|start|delete ID", &Commands::lifecycle},
    {"exec", 2,
     "exec ID [--cwd DIR] [--timeout MS] [--env NAME=VALUE]... [--stdin] [--max-output BYTES] -- "
     "COMMAND [ARGS...]",
     &Commands::exec},
    {"query|execute", 2, "query|execute ID SQL [--param VALUE]... [--page-size ROWS]",
     &Commands::query},
    {"shell", 1, "shell ID [--cwd DIR] [--env NAME=VALUE]... [-- COMMAND [ARGS...]]",
     &Commands::shell},
    {"read|cat", 2, "read ID PATH", &Commands::read},
    {"write", 2, "write ID PATH [LOCAL_FILE|-]", &Commands::write},
    {"ls", 1, "ls ID [PATH] [-r]", &Commands::ls},
    {"mkdir|rm", 2, "mkdir ID PATH [-p] | rm ID PATH [-r]", &Commands::mkdirOrRm},
    {"runs", 1, "runs ID", &Commands::runs},
    {"run", 2,
     "run ID [--model M] [--permission-mode MODE] [--new-session] [--base-url URL] "
     "[--timeout MS] [--env NAME=VALUE]... PROMPT",
     &Commands::runAgent},
    {"transcript", 2, "transcript ID RUN_ID", &Commands::transcript},
    {"keys", 0, nullptr, &Commands::keys},
    {"agents", 0, nullptr, &Commands::agents},
};

bool Commands::run(const QStringList &args, QString *usageError)
{
    QCommandLineParser parser;
    for (const OptionSpec &o : kOptions) {
        QStringList names{QLatin1String(o.name)};
        if (o.shortName)
            names.prepend(QLatin1String(o.shortName));
        parser.addOption(o.valueName
                             ? QCommandLineOption(names, names.last(), QLatin1String(o.valueName))
                             : QCommandLineOption(names, names.last()));
    }
    if (!parser.parse(QStringList{QStringLiteral("sandboxctl")} + args)) {
        *usageError = parser.errorText();
        return false;
    }
    const Invocation in{parser.positionalArguments(), parser};
    if (in.args.isEmpty()) {
        *usageError = QStringLiteral("no command given");
        return false;
    }
    for (const Spec &spec : kSpecs) {
        if (!QString::fromLatin1(spec.names).split(u'|').contains(in.command()))
            continue;
        if (in.args.size() < spec.arguments + 1) {
            *usageError = QStringLiteral("usage: sandboxctl %1").arg(QLatin1String(spec.usage));
            return false;
        }
        return (this->*spec.handler)(in, usageError);
    }
    *usageError = QStringLiteral("unknown command '%1'").arg(in.command());
    return false;
}

bool Commands::session(const Invocation &, QString *)
{
    call(QStringLiteral("sessions.current"), {});
    return true;
}

bool Commands::quota(const Invocation &, QString *)
{
    call(QStringLiteral("sessions.quota"), {});
    return true;
}

bool Commands::list(const Invocation &in, QString *)
{
    const bool databases = in.args.value(1).startsWith(QLatin1String("database"));
    auto print = [this](Result<QList<SandboxInfo>> r) {
        if (!r)
            return fail(r.error());
        printSandboxes(r.value());
        Q_EMIT done(0);
    };
    if (m_options.json)
        call(databases ? QStringLiteral("databases.list") : QStringLiteral("agents.list"), {});
    else if (databases)
        m_call = m_client->databases().list(this, print);
    else
        m_call = m_client->agents().list(this, print);
    return true;
}

bool Commands::create(const Invocation &in, QString *usageError)
{
    const QString type = in.args.at(1);
    QMap<QString, QString> env;
    if (!parseEnv(in.values("env"), &env, usageError))
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
        o.size = in.value("size");
        o.name = in.value("name");
        o.database = in.value("database");
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
    o.size = in.value("size");
    o.env = env;
    o.network = in.isSet("network");
    // --allow ENTRY...: only those (docs/protocol.md 3.5); with --network, the internet too.
    if (in.isSet("allow"))
        o.networkPolicy = NetworkPolicy{o.network ? NetworkPolicy::Mode::Public
                                                  : NetworkPolicy::Mode::List,
                                        in.values("allow"),
                                        {}};
    o.name = in.value("name");
    if (m_options.json)
        call(QStringLiteral("agents.create"), o.toJson());
    else
        m_call = m_client->agents().create(o, this, printCreated);
    return true;
}

bool Commands::lifecycle(const Invocation &in, QString *)
{
    call(QStringLiteral("sandbox.") + in.command(), {{QStringLiteral("id"), in.args.at(1)}});
    return true;
}

bool Commands::exec(const Invocation &in, QString *usageError)
{
    ExecOptions o;
    o.cwd = in.value("cwd");
    if (!parseTimeout(in.parser, &o.timeoutMs, usageError)
        || !parseMaxOutput(in.parser, &o.maxOutputBytes, usageError)
        || !parseEnv(in.values("env"), &o.env, usageError))
        return false;
    if (in.isSet("stdin"))
        o.stdinText = QString::fromUtf8(readAllStdin());
    const QStringList command = in.args.mid(2);
    if (command.isEmpty()) {
        *usageError = QStringLiteral("exec needs a command");
        return false;
    }
    execStreaming(in.args.at(1), command, o);
    return true;
}

bool Commands::query(const Invocation &in, QString *usageError)
{
    const QJsonArray params = parseParams(in.values("param"));
    if (in.command() == QLatin1String("execute")) {
        m_call = m_client->databases().executeScript(in.args.at(1), in.args.at(2), params, 60000,
                                                     this, [this](Result<ExecuteResult> r) {
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
    const int pageSize = in.isSet("page-size") ? in.value("page-size").toInt(&ok) : 1000;
    if (!ok || pageSize < 1 || pageSize > 100000) {
        *usageError = QStringLiteral("--page-size wants 1 to 100000 rows");
        return false;
    }
    queryPaged(in.args.at(1), in.args.at(2), params, pageSize);
    return true;
}

bool Commands::shell(const Invocation &in, QString *usageError)
{
    TerminalOptions o;
    Shell::localSize(&o.cols, &o.rows);
    const QString term = qEnvironmentVariable("TERM");
    if (!term.isEmpty() && term != QLatin1String("dumb"))
        o.term = term;
    o.cwd = in.value("cwd");
    if (!parseEnv(in.values("env"), &o.env, usageError))
        return false;
    const QStringList command = in.args.mid(2);
    // Without a command: the user's login shell of choice, bash where there is one.
    const Command cmd = command.isEmpty()
                            ? Command(QStringLiteral("if command -v bash >/dev/null 2>&1; then "
                                                     "exec bash -l; else exec sh -l; fi"))
                        : command.size() == 1 ? Command(command.first())
                                              : Command(command);
    TerminalSession *session = m_client->sandboxes().openTerminal(in.args.at(1), cmd, o, this);
    auto *shell = new Shell(this);
    shell->attach(session);
    connect(shell, &Shell::done, this, &Commands::done);
    return true;
}

bool Commands::read(const Invocation &in, QString *)
{
    m_call
        = m_client->sandboxes()
              .readFile(in.args.at(1), in.args.at(2), {}, this, [this](Result<FileContent> r) {
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

bool Commands::write(const Invocation &in, QString *usageError)
{
    QByteArray content;
    const QString source = in.args.value(3, QStringLiteral("-"));
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
    m_call = m_client->sandboxes()
                 .writeFile(in.args.at(1), in.args.at(2), content, o, this,
                            [this](Result<WriteFileResult> r) {
                                if (!r)
                                    return fail(r.error());
                                printLine(QStringLiteral("%1 (%2 bytes)").arg(r->path).arg(r->size));
                                Q_EMIT done(0);
                            });
    return true;
}

bool Commands::ls(const Invocation &in, QString *)
{
    m_call = m_client->sandboxes().listFiles(in.args.at(1),
                                             in.args.value(2, QStringLiteral("/workspace")),
                                             in.isSet("recursive"), this,
                                             [this](Result<FileListing> r) {
                                                 if (!r)
                                                     return fail(r.error());
                                                 printListing(r.value());
                                                 Q_EMIT done(0);
                                             });
    return true;
}

bool Commands::mkdirOrRm(const Invocation &in, QString *)
{
    auto finished = [this](Result<QString> r) {
        if (!r)
            return fail(r.error());
        Q_EMIT done(0);
    };
    const QString id = in.args.at(1);
    const QString path = in.args.at(2);
    if (in.command() == QLatin1String("mkdir"))
        m_call = m_client->sandboxes().mkdir(id, path, in.isSet("parents"), this, finished);
    else
        m_call = m_client->sandboxes().deleteFile(id, path, in.isSet("recursive"), this, finished);
    return true;
}

bool Commands::runs(const Invocation &in, QString *)
{
    if (m_options.json) {
        call(QStringLiteral("agents.runs"), {{QStringLiteral("id"), in.args.at(1)}});
        return true;
    }
    m_call = m_client->agents().runs(in.args.at(1), 0, this,
                                     [this](Result<QList<AgentRunRecord>> r) {
                                         if (!r)
                                             return fail(r.error());
                                         printRuns(r.value());
                                         Q_EMIT done(0);
                                     });
    return true;
}

bool Commands::runAgent(const Invocation &in, QString *usageError)
{
    Sandbox::AgentRunOptions o;
    o.model = in.value("model");
    o.permissionMode = in.value("permission-mode");
    o.newSession = in.isSet("new-session");
    o.baseUrl = in.value("base-url");
    if (!parseTimeout(in.parser, &o.timeoutMs, usageError)
        || !parseEnv(in.values("env"), &o.env, usageError))
        return false;
    AgentRun *run = m_client->agents().runStreaming(in.args.at(1), in.args.mid(2).join(u' '), o,
                                                    this);
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

bool Commands::transcript(const Invocation &in, QString *)
{
    transcriptFrom(in.args.at(1), in.args.at(2), 0);
    return true;
}

bool Commands::keys(const Invocation &in, QString *usageError)
{
    const QString sub = in.args.value(1, QStringLiteral("list"));
    if (sub == QLatin1String("list")) {
        call(QStringLiteral("keys.list"), {});
    } else if (sub == QLatin1String("create") && in.args.size() >= 3) {
        call(QStringLiteral("keys.create"), {{QStringLiteral("name"), in.args.at(2)},
                                             {QStringLiteral("admin"), in.isSet("admin")}});
    } else if (sub == QLatin1String("revoke") && in.args.size() >= 3) {
        call(QStringLiteral("keys.revoke"), {{QStringLiteral("id"), in.args.at(2)}});
    } else {
        *usageError = QStringLiteral(
            "usage: sandboxctl keys list | keys create NAME [--admin] | keys revoke KEY_ID");
        return false;
    }
    return true;
}

bool Commands::agents(const Invocation &in, QString *usageError)
{
    const QString sub = in.args.value(1, QStringLiteral("clis"));
    if (sub == QLatin1String("clis") && in.args.size() <= 2) {
        clis();
    } else if (sub == QLatin1String("install-cli") && in.args.size() == 3) {
        installCli(in.args.at(2));
    } else {
        *usageError = QStringLiteral("usage: sandboxctl agents clis | agents install-cli TYPE");
        return false;
    }
    return true;
}
