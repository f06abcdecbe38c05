#include "doctorcommand.h"

#include "databases/databaseadapter.h"
#include "databases/postgresbackend.h"
#include "doctor/agentclis.h"
#include "doctor/doctor.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QJsonDocument>

#include <cstdio>
#include <unistd.h>

using namespace Sandbox::Engine;

int runDoctorCommand(const QStringList &arguments, const QString &defaultDataDir)
{
    QCommandLineParser cli;
    cli.setApplicationDescription(
        QStringLiteral("Checks this host for what sandboxes need: user namespaces, AppArmor, "
                       "bubblewrap, cgroups, seccomp, openat2, loop devices, agent CLIs, database "
                       "servers and free disk. Each check has a plain verdict and, when it is not "
                       "ok, the exact fix."));
    cli.addHelpOption();
    const QCommandLineOption jsonOpt(QStringLiteral("json"),
                                     QStringLiteral("Print the report as JSON."));
    const QCommandLineOption rootOpt(QStringLiteral("root"),
                                     QStringLiteral("Read every fact under DIR instead of / (a "
                                                    "prepared tree), as the packaged sandboxd "
                                                    "(/usr/bin) would there; no test sandbox is "
                                                    "started."),
                                     QStringLiteral("dir"), QStringLiteral("/"));
    const QCommandLineOption dataOpt(QStringLiteral("data-dir"),
                                     QStringLiteral("The engine's data dir (default %1).")
                                         .arg(defaultDataDir),
                                     QStringLiteral("dir"), defaultDataDir);
    const QCommandLineOption agentsOpt(QStringLiteral("agents-dir"),
                                       QStringLiteral("Where the agent CLIs are installed."),
                                       QStringLiteral("dir"));
    const QCommandLineOption uidOpt(QStringLiteral("uid"),
                                    QStringLiteral("Check for an engine run by this uid (default: "
                                                   "the caller's)."),
                                    QStringLiteral("uid"));
    const QCommandLineOption noProbeOpt(QStringLiteral("no-probe"),
                                        QStringLiteral("Do not start a test sandbox."));
    cli.addOptions({jsonOpt, rootOpt, dataOpt, agentsOpt, uidOpt, noProbeOpt});
    if (!cli.parse(arguments)) {
        std::fprintf(stderr, "sandboxd doctor: %s\n", qPrintable(cli.errorText()));
        return 2;
    }
    if (cli.isSet(QStringLiteral("help"))) {
        std::printf("%s", qPrintable(cli.helpText()));
        return 0;
    }
    if (!cli.positionalArguments().isEmpty()) {
        std::fprintf(stderr, "sandboxd doctor: unexpected argument '%s'\n",
                     qPrintable(cli.positionalArguments().constLast()));
        return 2;
    }

    const QString appDir = QCoreApplication::applicationDirPath();
    DoctorOptions o;
    o.root = cli.value(rootOpt);
    o.uid = ::geteuid();
    if (cli.isSet(uidOpt)) {
        bool ok = false;
        o.uid = cli.value(uidOpt).toUInt(&ok);
        if (!ok) {
            std::fprintf(stderr, "sandboxd doctor: --uid wants a number\n");
            return 2;
        }
    }
    o.dataDir = QDir::cleanPath(cli.value(dataOpt));
    // Under another root: the packaged layout (packaging/), not this binary's.
    const bool live = QDir::cleanPath(o.root) == QLatin1String("/");
    o.executable = live ? QCoreApplication::applicationFilePath()
                        : QStringLiteral("/usr/bin/sandboxd");
    o.agentsDirs = AgentClis::searchDirs(live ? appDir : QStringLiteral("/usr/bin"), o.dataDir,
                                         cli.isSet(agentsOpt)
                                             ? QDir(cli.value(agentsOpt)).absolutePath()
                                             : QString());
    o.dbhostDir = live ? DatabaseAdapter::findDbHost(appDir)
                       : QStringLiteral("/usr/libexec/sandbox-desktop/dbhost");
    o.postgresBinDir = PostgresBackend::binDir();
    o.probe = !cli.isSet(noProbeOpt) && o.uid == ::geteuid();

    const DoctorReport report = runDoctor(o);
    if (cli.isSet(jsonOpt))
        std::printf("%s\n",
                    QJsonDocument(report.toJson()).toJson(QJsonDocument::Indented).constData());
    else
        std::printf("%s", qPrintable(report.toText()));
    std::fflush(stdout);
    return report.hasFailures() ? 1 : 0;
}
