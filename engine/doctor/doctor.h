#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <sys/types.h>

namespace Sandbox::Engine {

// What `sandboxd doctor` looks at. Every fact is read under `root` (engine/doctor/hostfacts.h),
// so that the checks run against prepared trees of other distributions in the tests.
struct DoctorOptions
{
    QString root = QStringLiteral("/");
    uid_t uid = 0; // whose engine: root, or the normal user who runs it
    QString dataDir;
    QString bwrapPath = QStringLiteral("/usr/bin/bwrap");
    // The sandboxd binary the engine runs as: the AppArmor profile attaches to /usr/bin/sandboxd.
    QString executable = QStringLiteral("/usr/bin/sandboxd");
    // Where the engine looks for agent CLIs, in order (AgentClis::searchDirs).
    QStringList agentsDirs;
    QString dbhostDir;
    QString postgresBinDir = QStringLiteral("/usr/lib/postgresql/15/bin");
    // Start a real test sandbox (only on the real host, root "/"); as root it runs as probeUid.
    bool probe = true;
    uid_t probeUid = 200000;
};

// One check: a plain verdict and, when it is not ok, the exact fix.
struct DoctorCheck
{
    enum class Verdict { Ok, Warn, Fail, Skip };

    QString id;    // stable: "userns", "apparmor", "bubblewrap", "sandbox", "cgroups", ...
    QString title; // "User namespaces"
    Verdict verdict = Verdict::Skip;
    QString summary; // one sentence a user understands
    QString fix;     // commands to run, empty when nothing is to be done

    static QString verdictName(Verdict v);
};

struct DoctorReport
{
    QString host; // "Ubuntu 24.04 LTS, kernel 6.8.0-31-generic, as a normal user (uid 1000)"
    QList<DoctorCheck> checks;

    const DoctorCheck *check(const QString &id) const;
    int count(DoctorCheck::Verdict v) const;
    bool hasFailures() const { return count(DoctorCheck::Verdict::Fail) > 0; }

    QJsonObject toJson() const;
    QString toText() const;
};

// Runs every check (blocking: a command-line tool; the app runs `sandboxd doctor --json`).
DoctorReport runDoctor(const DoctorOptions &options);

// The verdict on free space (bytes) in the data dir: below 1 GiB fails, below the default
// sandbox's disk (8 GiB) warns.
DoctorCheck freeDiskCheck(qint64 freeBytes, const QString &dir);

} // namespace Sandbox::Engine
