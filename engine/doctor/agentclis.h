#pragma once

#include <QList>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>

namespace Sandbox::Engine {

// One coding-agent CLI at its pinned version (engine/agents/agent-clis.txt, the list
// scripts/setup.sh installs from too).
struct AgentCliPin
{
    QString type;       // "claude-code"
    QString package;    // "@anthropic-ai/claude-code"
    QString version;    // "2.1.332"
    int downloadMb = 0; // what npm fetches for it (linux-x64), for the user to know
    QString name;       // "Claude Code"

    QString spec() const { return package + u'@' + version; }
    // The executable below its type's directory: node_modules/.bin/claude.
    QString executable() const;
};

// Where an engine finds the agent CLIs, one directory per type below each (TYPE/node_modules/...),
// and the one function that looks there: the engine (AgentService) and `sandboxd doctor` alike.
class AgentClis final
{
public:
    static const QList<AgentCliPin> &pins();
    static std::optional<AgentCliPin> pin(const QString &type);

    // The directories searched, in order: `explicitDir` (sandboxd --agents-dir) if given, else the
    // build tree's (BIN/../agents, where scripts/setup.sh installs); then DATA_DIR/agents (what
    // agents.installCli installs); then, without an explicit dir, the package's
    // (BIN/../libexec/sandbox-desktop/agents).
    static QStringList searchDirs(const QString &applicationDir, const QString &dataDir,
                                  const QString &explicitDir = {});
    // Where agents.installCli installs: DATA_DIR/agents.
    static QString installDir(const QString &dataDir);

    // The directory of `pin`'s type (DIR/TYPE) in the first of `dirs` that holds its CLI at the
    // pinned version (an install that names another version in its `.installed` file does not
    // count); empty when none does. `exists` and `read` see paths as the caller does (the doctor
    // reads under another root).
    using Exists = std::function<bool(const QString &path)>;
    using ReadMarker = std::function<std::optional<QString>(const QString &path)>;
    static QString find(const QStringList &dirs, const AgentCliPin &pin, const Exists &exists,
                        const ReadMarker &readMarker);
    // The same on this host's own file system.
    static QString find(const QStringList &dirs, const AgentCliPin &pin);

    // The marker an install leaves in DIR/TYPE: "PACKAGE@VERSION".
    static QString markerName() { return QStringLiteral(".installed"); }
};

} // namespace Sandbox::Engine
