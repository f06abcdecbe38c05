// sandbox-desktop: the desktop app. Everything but the wiring lives in ui/.
#include <client/allocatortuning.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <mainwindow/mainwindow.h>
#include <mainwindow/preferencesdialog.h>
#include <workspace/sandboxpageregistry.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QIcon>
#include <QTimer>

#include <cstdio>
#include <cstring>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {

struct Options
{
    QCommandLineOption url{QStringLiteral("url"),
                           QStringLiteral(
                               "The local engine's address (default http://127.0.0.1:7465)."),
                           QStringLiteral("url")};
    QCommandLineOption
        dataDir{QStringLiteral("data-dir"),
                QStringLiteral(
                    "The local engine's data directory (its API key is read from there)."),
                QStringLiteral("dir")};
    QCommandLineOption engine{
        QStringLiteral("engine"),
        QStringLiteral(
            "The sandboxd to start when none runs (default: next to this program, then PATH)."),
        QStringLiteral("path")};
    QCommandLineOption profile{QStringLiteral("profile"),
                               QStringLiteral("Connect with this saved profile (its id or name)."),
                               QStringLiteral("name")};
    QCommandLineOption quitWhenReady{
        QStringLiteral("quit-when-ready"),
        QStringLiteral(
            "Quit once connected with the sandboxes listed, printing the time (for benchmarks).")};

    void addTo(QCommandLineParser &parser)
    {
        parser.setApplicationDescription(
            QStringLiteral("Sandbox Desktop: coding agents and databases in isolated sandboxes."));
        parser.addHelpOption();
        parser.addVersionOption();
        quitWhenReady.setFlags(QCommandLineOption::HiddenFromHelp);
        parser.addOptions({url, dataDir, engine, profile, quitWhenReady});
    }
};

bool onlyWantsText(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        for (const char *flag : {"--version", "-v", "--help", "-h", "--help-all", "-?"}) {
            if (std::strcmp(argv[i], flag) == 0)
                return true;
        }
    }
    return false;
}

bool hasDisplay()
{
    return !qEnvironmentVariableIsEmpty("DISPLAY")
           || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           || !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

void setIdentity(QCoreApplication &app)
{
    app.setOrganizationName(QStringLiteral("sandbox-desktop"));
    app.setApplicationName(QStringLiteral("sandbox-desktop"));
    app.setApplicationVersion(QStringLiteral(SANDBOX_VERSION));
}

} // namespace

int main(int argc, char **argv)
{
    QElapsedTimer sinceStart;
    sinceStart.start();

    // --version and --help need no display (the .deb's test runs them on a headless machine).
    if (onlyWantsText(argc, argv)) {
        QCoreApplication app(argc, argv);
        setIdentity(app);
        QCommandLineParser parser;
        Options options;
        options.addTo(parser);
        parser.process(app);
        PreferencesDialog::applySaved();
        return 0;
    }
    if (!hasDisplay()) {
        std::fprintf(
            stderr,
            "sandbox-desktop: no graphical display (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
            "Run it in a desktop session, or over `ssh -X`; without a display use the engine "
            "directly:\n"
            "  sandboxd            (the local engine, http://127.0.0.1:7465)\n"
            "  sandboxctl --help   (its command line)\n");
        return 2;
    }

    tuneAllocatorForStreams(); // before the first allocation it is meant for
    QApplication app(argc, argv);
    setIdentity(app);
    app.setDesktopFileName(QStringLiteral("dev.sandboxdesktop.SandboxDesktop"));
    QIcon icon;
    for (int size : {32, 64, 256})
        icon.addFile(QStringLiteral(":/icons/sandbox-desktop-%1.png").arg(size), QSize(size, size));
    app.setWindowIcon(icon);

    QCommandLineParser parser;
    Options options;
    options.addTo(parser);
    parser.process(app);

    ConnectionManager connection;
    if (parser.isSet(options.engine))
        connection.setEngineProgram(parser.value(options.engine));
    SecretStore secrets;
    ProfileStore profiles;
    SandboxPageRegistry registry;
    registerDefaultPages(registry);

    MainWindow window(&connection, &registry, &profiles, &secrets);
    window.restoreWindowState();
    window.show();
    if (!parser.isSet(options.quitWhenReady))
        window.checkSystemOnFirstRun();

    if (parser.isSet(options.quitWhenReady)) {
        QObject::connect(&window, &MainWindow::sandboxesListed, &app, [&] {
            std::printf("sandbox-desktop: ready in %lld ms\n",
                        static_cast<long long>(sinceStart.elapsed()));
            std::fflush(stdout);
            QTimer::singleShot(0, &app, &QCoreApplication::quit);
        });
        QObject::connect(&connection, &ConnectionManager::stateChanged, &app,
                         [&](ConnectionManager::State s) {
                             if (s == ConnectionManager::State::Failed
                                 || s == ConnectionManager::State::Unauthorized) {
                                 std::fprintf(stderr, "sandbox-desktop: %s\n",
                                              qPrintable(connection.stateText()));
                                 QCoreApplication::exit(1);
                             }
                         });
    }

    // Which connection: the options, else the profile used last, else the local engine.
    StoredProfile chosen;
    if (parser.isSet(options.url) || parser.isSet(options.dataDir)) {
        chosen = ProfileStore::localProfile();
        chosen.url = QUrl(parser.value(options.url));
        chosen.dataDir = parser.value(options.dataDir);
    } else if (parser.isSet(options.profile)) {
        const QString wanted = parser.value(options.profile);
        for (const StoredProfile &p : profiles.profiles()) {
            if (p.id == wanted || p.name == wanted)
                chosen = p;
        }
        if (!chosen.isValid()) {
            std::fprintf(stderr, "sandbox-desktop: no saved profile named %s\n", qPrintable(wanted));
            return 2;
        }
    } else {
        chosen = profiles.profile(profiles.lastUsedId());
        if (!chosen.isValid())
            chosen = ProfileStore::localProfile();
    }
    window.connectToProfile(chosen);
    return app.exec();
}
