// sandboxctl: the command line over core/ for people and scripts.
#include "commands.h"

#include <client/allocatortuning.h>
#include <client/connectionprofile.h>
#include <client/restclient.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonDocument>
#include <QLoggingCategory>

#include <cstdio>

using namespace Sandbox;

namespace {

const char kHelp[]
    = R"(Usage: sandboxctl [--url URL] [--key KEY] [--data-dir DIR] [--json] COMMAND [ARGS]

Talks to a Sandbox engine: --url and --key (or SANDBOX_URL and SANDBOX_API_KEY), else the local
engine, whose key is read from DATA_DIR/api-key (and which is started if it is not running).

Commands:
  health                          is the engine there? (no key needed)
  session | quota                 who am I, and how much of my quota is in use
  create TYPE [--size S] [--env NAME=VALUE]... [--network] [--allow ENTRY]... [--name N]
         [--database D]           TYPE: claude-code, opencode, codex (postgres, sqlite, duckdb);
                                  --network: the internet; --allow: only ENTRY (a host, host:port,
                                  address or CIDR; 127.0.0.1:PORT needs an admin key), or with
                                  --network that too (an agent reaches its model API through the
                                  engine either way); prints the new sandbox's id (--json: its
                                  Sandbox object)
  list [agents|databases]         the sandboxes of this key
  status|stop|start|delete ID     one sandbox's lifecycle
  exec ID [--cwd DIR] [--timeout MS] [--env NAME=VALUE]... [--stdin] [--max-output BYTES]
       -- COMMAND [ARGS...]       runs a command with live output; exits with its exit code
                                  (one argument: a shell command line; several: an argv);
                                  passes on up to 64M of each of stdout and stderr, or BYTES
                                  (K, M: KiB, MiB), and says so on stderr when it cut one
  shell ID [--cwd DIR] [--env NAME=VALUE]... [-- COMMAND [ARGS...]]
                                  a terminal in the sandbox (bash, or COMMAND) in this one:
                                  raw keys, window size followed; exits with its exit code
  read ID PATH                    a file's bytes to stdout
  write ID PATH [LOCAL|-]         a file from a local file or stdin (missing folders made)
  ls ID [PATH] [-r]               list a directory of /workspace
  mkdir ID PATH [-p] | rm ID PATH [-r]
  run ID [--model M] [--permission-mode MODE] [--new-session] [--base-url URL] [--timeout MS]
      [--env NAME=VALUE]... PROMPT
                                  runs the agent on PROMPT (continuing its conversation), its
                                  events as they come; exits 1 when the run fails
  runs ID                         an agent sandbox's kept runs, newest first
  transcript ID RUN_ID            one run's events, as they were streamed
  query ID SQL [--param V]... [--page-size N]
                                  a statement's rows as tab-separated lines, every page of them
  execute ID SQL [--param V]...   statements without rows; prints the command and rows affected
  agents clis                     the agent CLIs the engine runs, and whether each is installed
  agents install-cli TYPE         installs TYPE's CLI (pinned version, from npm) on the engine,
                                  with its progress (needs an admin key)
  keys list | keys create NAME [--admin] | keys revoke KEY_ID
                                  (managing keys needs an admin key)

Exit status: the command's own for exec; 0 on success; 1 on an error; 2 on bad usage;
3 when the key is refused.
)";

} // namespace

int main(int argc, char **argv)
{
    tuneAllocatorForStreams(); // `exec` and `shell` follow streams of output
    QCoreApplication app(argc, argv);
    app.setApplicationName(QStringLiteral("sandboxctl"));
    app.setApplicationVersion(QStringLiteral(SANDBOX_VERSION));
    QLoggingCategory::setFilterRules(QStringLiteral("*.debug=false\n*.info=false"));

    QCommandLineParser p;
    p.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    const QCommandLineOption urlOpt(QStringLiteral("url"), QStringLiteral("Engine URL."),
                                    QStringLiteral("url"));
    const QCommandLineOption keyOpt(QStringLiteral("key"), QStringLiteral("API key."),
                                    QStringLiteral("key"));
    const QCommandLineOption dataOpt(QStringLiteral("data-dir"),
                                     QStringLiteral("Local engine data dir."),
                                     QStringLiteral("dir"));
    const QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("Print JSON."));
    const QCommandLineOption helpOpt({QStringLiteral("h"), QStringLiteral("help")},
                                     QStringLiteral("Help."));
    const QCommandLineOption versionOpt(QStringLiteral("version"), QStringLiteral("Version."));
    p.addOptions({urlOpt, keyOpt, dataOpt, jsonOpt, helpOpt, versionOpt});
    // Options of the commands themselves are parsed by Commands.
    p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    QStringList args = app.arguments();
    QStringList globalArgs{args.takeFirst()};
    // Global options come before the command.
    while (!args.isEmpty() && args.first().startsWith(u'-')) {
        const QString a = args.takeFirst();
        globalArgs << a;
        if ((a == QLatin1String("--url") || a == QLatin1String("--key")
             || a == QLatin1String("--data-dir"))
            && !args.isEmpty())
            globalArgs << args.takeFirst();
    }
    if (!p.parse(globalArgs)) {
        std::fprintf(stderr, "sandboxctl: %s\n\n%s", qPrintable(p.errorText()), kHelp);
        return 2;
    }
    if (p.isSet(helpOpt) || args.isEmpty()) {
        std::fputs(kHelp, p.isSet(helpOpt) ? stdout : stderr);
        return p.isSet(helpOpt) ? 0 : 2;
    }
    if (p.isSet(versionOpt)) {
        std::printf("sandboxctl %s\n", SANDBOX_VERSION);
        return 0;
    }

    const QString url = p.isSet(urlOpt) ? p.value(urlOpt) : qEnvironmentVariable("SANDBOX_URL");
    const QString key = p.isSet(keyOpt) ? p.value(keyOpt) : qEnvironmentVariable("SANDBOX_API_KEY");
    ConnectionProfile profile = url.isEmpty() ? ConnectionProfile::local(p.value(dataOpt))
                                              : ConnectionProfile::remote(QUrl(url), key);
    if (url.isEmpty()) {
        profile.url = ConnectionProfile::defaultLocalUrl();
        profile.apiKey = key;
    }

    if (args.first() == QLatin1String("health")) {
        RestClient rest(profile.url);
        int code = 1;
        auto call = rest.health(&app, [&](Result<QJsonValue> r) {
            if (r) {
                std::printf("%s",
                            QJsonDocument(r->toObject()).toJson(QJsonDocument::Indented).constData());
                code = 0;
            } else {
                std::fprintf(stderr, "sandboxctl: %s: %s\n",
                             qPrintable(errorCodeName(r.error().code)),
                             qPrintable(r.error().message));
            }
            app.quit();
        });
        app.exec();
        return code;
    }

    Client client(profile);
    Commands commands(&client, Commands::Options{p.isSet(jsonOpt)});
    int exitCode = 0;
    QObject::connect(&commands, &Commands::done, &app, [&](int code) {
        exitCode = code;
        app.quit();
    });
    QObject::connect(&client, &Client::engineFailed, &app, [&](const Error &e) {
        std::fprintf(stderr, "sandboxctl: cannot reach the local engine: %s\n",
                     qPrintable(e.message));
        exitCode = 1;
        app.quit();
    });
    // Commands run once connected; a refused key or an engine that cannot start ends it.
    bool started = false;
    QObject::connect(client.rpc(), &RpcClient::stateChanged, &app, [&](RpcClient::State state) {
        if (state == RpcClient::State::Connected && !started) {
            started = true;
            QString usage;
            if (!commands.run(args, &usage)) {
                std::fprintf(stderr, "sandboxctl: %s\n(see sandboxctl --help)\n", qPrintable(usage));
                exitCode = 2;
                app.quit();
            }
        } else if (state == RpcClient::State::Unauthorized) {
            std::fprintf(stderr, "sandboxctl: unauthorized: the engine refused the API key\n");
            exitCode = 3;
            app.quit();
        } else if (state == RpcClient::State::Reconnecting && !started) {
            std::fprintf(stderr, "sandboxctl: cannot connect to %s\n",
                         qPrintable(profile.url.toDisplayString()));
            exitCode = 1;
            app.quit();
        }
    });
    client.open();
    app.exec();
    return exitCode;
}
