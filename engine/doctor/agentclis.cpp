#include "agentclis.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace Sandbox::Engine {

namespace {

struct RawPin
{
    const char *type;
    const char *package;
    const char *version;
    int downloadMb;
    const char *name;
};

constexpr RawPin kPins[] = {
#include "agentclipins.inc"
};

} // namespace

QString AgentCliPin::executable() const
{
    return QStringLiteral("node_modules/.bin/")
           + (type == QLatin1String("claude-code") ? QStringLiteral("claude") : type);
}

const QList<AgentCliPin> &AgentClis::pins()
{
    static const QList<AgentCliPin> all = [] {
        QList<AgentCliPin> out;
        for (const RawPin &p : kPins)
            out.append({QString::fromLatin1(p.type), QString::fromLatin1(p.package),
                        QString::fromLatin1(p.version), p.downloadMb, QString::fromUtf8(p.name)});
        return out;
    }();
    return all;
}

std::optional<AgentCliPin> AgentClis::pin(const QString &type)
{
    for (const AgentCliPin &p : pins()) {
        if (p.type == type)
            return p;
    }
    return std::nullopt;
}

QString AgentClis::installDir(const QString &dataDir)
{
    return QDir::cleanPath(dataDir + QStringLiteral("/agents"));
}

QStringList AgentClis::searchDirs(const QString &applicationDir, const QString &dataDir,
                                  const QString &explicitDir)
{
    if (!explicitDir.isEmpty())
        return {QDir::cleanPath(explicitDir), installDir(dataDir)};
    return {QDir::cleanPath(applicationDir + QStringLiteral("/../agents")), installDir(dataDir),
            QDir::cleanPath(applicationDir + QStringLiteral("/../libexec/sandbox-desktop/agents"))};
}

QString AgentClis::find(const QStringList &dirs, const AgentCliPin &pin, const Exists &exists,
                        const ReadMarker &readMarker)
{
    for (const QString &dir : dirs) {
        const QString typeDir = dir + u'/' + pin.type;
        if (!exists(typeDir + u'/' + pin.executable()))
            continue;
        const std::optional<QString> marker = readMarker(typeDir + u'/' + markerName());
        if (marker && !marker->isEmpty() && *marker != pin.spec())
            continue; // another version: a pin changed since
        return typeDir;
    }
    return {};
}

QString AgentClis::find(const QStringList &dirs, const AgentCliPin &pin)
{
    return find(
        dirs, pin, [](const QString &path) { return QFileInfo::exists(path); },
        [](const QString &path) -> std::optional<QString> {
            QFile f(path);
            if (!f.open(QIODevice::ReadOnly))
                return std::nullopt;
            return QString::fromUtf8(f.read(4096)).trimmed();
        });
}

} // namespace Sandbox::Engine
