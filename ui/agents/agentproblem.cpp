#include "agentproblem.h"

#include <protocol/sandboxenums.h>

#include <QCoreApplication>

namespace Sandbox::Ui {

namespace {
QString tr(const char *text)
{
    return QCoreApplication::translate("Sandbox::Ui::AgentProblem", text);
}
} // namespace

QString AgentProblem::keyVariable(const QString &agentType)
{
    const SandboxType type = fromWire<SandboxType>(agentType);
    if (type == SandboxType::Codex || type == SandboxType::OpenCode)
        return QStringLiteral("OPENAI_API_KEY");
    return QStringLiteral("ANTHROPIC_API_KEY");
}

AgentProblem AgentProblem::explain(const QString &message, const QString &agentType)
{
    AgentProblem p;
    const QString m = message.toLower();
    if (m.contains(QLatin1String("has no network")) || m.contains(QLatin1String("network: true"))) {
        p.kind = Kind::NoNetwork;
        p.text = tr("This sandbox has no network, so the agent cannot reach its model's API. "
                    "Turn its network on here (its Network page says what exactly it may "
                    "reach), then send the prompt again.");
        p.fix = tr("Turn Network On");
        return p;
    }
    if (m.contains(QLatin1String("model gateway"))
        && (m.contains(QLatin1String("cannot resolve"))
            || m.contains(QLatin1String("cannot connect"))
            || m.contains(QLatin1String("timed out")))) {
        p.kind = Kind::ModelUnreachable;
        p.text = tr("The engine could not reach the model's API for this agent. Check this "
                    "computer's internet connection, or the model's base URL.");
        return p;
    }
    if (m.contains(QLatin1String("/login")) || m.contains(QLatin1String("api key"))
        || m.contains(QLatin1String("api_key")) || m.contains(QLatin1String("x-api-key"))
        || m.contains(QLatin1String("authentication")) || m.contains(QLatin1String("401"))
        || m.contains(QLatin1String("unauthorized"))) {
        p.kind = Kind::NoModelKey;
        p.text = tr("The agent has no valid key for its model's API (%1). Set the key here: it "
                    "is kept in the desktop keyring and used for this sandbox's next runs, never "
                    "shown.")
                     .arg(keyVariable(agentType));
        p.fix = tr("Set the Model Key…");
        return p;
    }
    if (m.contains(QLatin1String("cli is not installed"))
        || m.contains(QLatin1String("is not installed on this engine"))
        || m.contains(QLatin1String("started before"))) {
        p.kind = Kind::NoCli;
        p.text = tr("The agent's program is not installed with the engine yet. Install it (from "
                    "npm, once for every sandbox of this kind); the sandbox then restarts with "
                    "it.");
        p.fix = tr("Install the Agent's Program…");
        return p;
    }
    p.text = message;
    return p;
}

} // namespace Sandbox::Ui
