#pragma once

#include <QJsonObject>
#include <QString>

namespace Sandbox::Engine {

// Whether one of a sandbox's limits holds, and how or why not (docs/protocol.md 3.1,
// `limits.enforcement`). The engine never reports a limit as enforced that nothing enforces.
struct LimitEnforcement
{
    bool enforced = false;
    QString by;     // how it is enforced, e.g. "cgroup v2"
    QString reason; // why it is not, with the fix

    static LimitEnforcement yes(const QString &by) { return {true, by, {}}; }
    static LimitEnforcement no(const QString &reason) { return {false, {}, reason}; }

    QJsonObject toJson() const
    {
        return enforced
                   ? QJsonObject{{QStringLiteral("enforced"), true}, {QStringLiteral("by"), by}}
                   : QJsonObject{{QStringLiteral("enforced"), false},
                                 {QStringLiteral("reason"), reason}};
    }
};

struct LimitsEnforcement
{
    LimitEnforcement memory;
    LimitEnforcement pids;
    LimitEnforcement cpu;
    LimitEnforcement disk;

    bool allEnforced() const
    {
        return memory.enforced && pids.enforced && cpu.enforced && disk.enforced;
    }

    // Adds `enforced` and `enforcement` to a Sandbox object's `limits`.
    void addTo(QJsonObject &limits) const
    {
        limits.insert(QStringLiteral("enforced"), allEnforced());
        limits.insert(QStringLiteral("enforcement"),
                      QJsonObject{{QStringLiteral("memory"), memory.toJson()},
                                  {QStringLiteral("pids"), pids.toJson()},
                                  {QStringLiteral("cpu"), cpu.toJson()},
                                  {QStringLiteral("disk"), disk.toJson()}});
    }
};

} // namespace Sandbox::Engine
