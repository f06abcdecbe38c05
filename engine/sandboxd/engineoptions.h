#pragma once

#include "api/connectiongate.h"
#include "protocol/result.h"
#include "service/sandboxmanager.h"

#include <QHostAddress>
#include <QList>
#include <QPair>
#include <QSslCertificate>
#include <QString>

class QCommandLineParser;

namespace Sandbox::Engine {

// What sandboxd's command line asks for (`sandboxd --help`), read and checked. What depends on
// the host (cgroups, the supervisor's place, the open-file limit) is main.cpp's.
struct EngineOptions
{
    QHostAddress address; // --listen
    quint16 port = 0;
    QString dataDir;          // --data-dir, absolute
    QString supervisor;       // --supervisor as given; empty: found beside the program
    QString agentsDir;        // --agents-dir, absolute; empty: the default places
    bool inContainer = false; // --isolation container
    bool noCgroups = false;   // --no-cgroups
    bool noDiskLimit = false; // --no-disk-limit
    bool prepare = false;     // --prepare postgres: prepare the template cluster, then exit
    bool verbose = false;     // --verbose
    // Per key: running sandboxes, memory, sandboxes; the spares, the database pool, the default
    // idle time and the uid base. The rest of the engine's configuration is left at its default.
    EngineConfig engine;
    QString egressHosts;                           // --egress-hosts FILE, or empty
    QList<QPair<QHostAddress, quint16>> egressDns; // --egress-dns; empty: /etc/resolv.conf's
    QList<QSslCertificate> egressCa;               // --egress-ca's certificates
    ConnectionGate::Limits connections; // --max-connections, --max-connections-per-address
};

// Adds the engine's options to `cli` (the help and version options are the caller's), in the
// order `sandboxd --help` lists them.
void addEngineOptions(QCommandLineParser &cli, const QString &defaultDataDir);

// Reads the options `cli` has parsed. The first option that is wrong is the error, its message
// naming the option and what it wants.
Result<EngineOptions> readEngineOptions(const QCommandLineParser &cli);

} // namespace Sandbox::Engine
