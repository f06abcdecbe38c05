// mock-model-server: the tests' model API stand-in as a program, for the benchmark and for trying
// an agent CLI by hand: `mock-model-server [--port N]` prints its URL and serves until killed.
#include "mockmodelserver.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <cstdio>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.setApplicationDescription(
        QStringLiteral("A local mock of the Anthropic Messages, OpenAI Responses and "
                       "OpenAI Chat Completions APIs (see mockmodelserver.h)."));
    cli.addHelpOption();
    const QCommandLineOption portOpt(QStringLiteral("port"),
                                     QStringLiteral("Port on 127.0.0.1 (default: any free one)."),
                                     QStringLiteral("port"), QStringLiteral("0"));
    cli.addOption(portOpt);
    cli.process(app);
    Sandbox::Mocks::MockModelServer server;
    if (!server.listen(quint16(cli.value(portOpt).toUInt()))) {
        std::fprintf(stderr, "mock-model-server: cannot listen\n");
        return 1;
    }
    std::printf("mock model server listening on %s\n", qPrintable(server.baseUrl().toString()));
    std::fflush(stdout);
    return app.exec();
}
