// Writes the REST route table of core/protocol (Rest::routes()) as JSON to the file named by its
// argument, at build time: the Worker's tests walk it (worker/test/routes.test.ts and
// conformance.test.ts) as tst_conformance walks it against sandboxd.
#include "protocol/restroutes.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT.json\n", argv[0]);
        return 2;
    }
    QFile out(QString::fromLocal8Bit(argv[1]));
    const QJsonObject doc{{QStringLiteral("version"), 1},
                          {QStringLiteral("routes"), Sandbox::Rest::routesToJson()}};
    if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate)
        || out.write(QJsonDocument(doc).toJson(QJsonDocument::Indented)) < 0) {
        std::fprintf(stderr, "cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
