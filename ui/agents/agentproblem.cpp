#include "agentproblem.h"

#include <protocol/sandboxenums.h>

#include <QCoreApplication>
#include <QRegularExpression>

namespace Sandbox::Ui {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("Sandbox::Ui::AgentProblem", text);
}

// An HTTP status of the model's API in a CLI's error line: "API Error: 429 {...}",
// "unexpected status 503 Service Unavailable", "status code 500".
bool hasStatus(const QString &lower, const QString &statuses)
{
    const QRegularExpression re(
        QStringLiteral("(api error|status|http)\\D{0,12}\\b(%1)\\b").arg(statuses));
    return re.match(lower).hasMatch();
}

} // namespace

QString AgentProblem::keyVariable(const QString &agentType)
{
    const SandboxType type = fromWire<SandboxType>(agentType);
    if (type == SandboxType::Codex || type == SandboxType::OpenCode)
        return QStringLiteral("OPENAI_API_KEY");
    return QStringLiteral("ANTHROPIC_API_KEY");
}

AgentProblem AgentProblem::deniedHosts(const QStringList &entries)
{
    AgentProblem p;
    p.kind = Kind::HostDenied;
    p.hosts = entries;
    const QString hosts = entries.join(QStringLiteral(", "));
    p.title = entries.size() == 1 ? tr("The network refused a host")
                                  : tr("The network refused %1 hosts").arg(entries.size());
    p.text = tr("This sandbox's network refused %1 during the run. Allow it here (added to the "
                "sandbox's allow-list; its Network page shows the rest), then send the prompt "
                "again.")
                 .arg(hosts);
    p.fix = entries.size() == 1 ? tr("Allow %1").arg(entries.first()) : tr("Allow These Hosts");
    return p;
}

AgentProblem AgentProblem::explain(const QString &message, const QString &agentType,
                                   const QStringList &deniedHosts)
{
    AgentProblem p;
    const QString m = message.toLower();
    const auto has = [&m](const char *s) { return m.contains(QLatin1String(s)); };
    if (has("has no network") || has("network: true")) {
        p.kind = Kind::NoNetwork;
        p.title = tr("The sandbox has no network");
        p.text = tr("This sandbox has no network, so the agent cannot reach its model's API. "
                    "Turn its network on here (its Network page says what exactly it may "
                    "reach), then send the prompt again.");
        p.fix = tr("Turn Network On");
        return p;
    }
    if (has("model gateway")
        && (has("cannot resolve") || has("cannot connect") || has("timed out"))) {
        p.kind = Kind::ModelUnreachable;
        p.title = tr("The model's API could not be reached");
        p.text = tr("The engine could not reach the model's API for this agent. Check this "
                    "computer's internet connection, or the model's base URL.");
        return p;
    }
    if (has("/login") || has("api key") || has("api_key") || has("x-api-key")
        || has("authentication") || has("401") || has("unauthorized")) {
        p.kind = Kind::NoModelKey;
        p.title = tr("No valid model key");
        p.text = tr("The agent has no valid key for its model's API (%1). Set the key here: it "
                    "is kept in the desktop keyring and used for this sandbox's next runs, never "
                    "shown.")
                     .arg(keyVariable(agentType));
        p.fix = tr("Set the Model Key…");
        return p;
    }
    if (has("cli is not installed") || has("is not installed on this engine")
        || has("started before")) {
        p.kind = Kind::NoCli;
        p.title = tr("The agent's program is not installed");
        p.text = tr("The agent's program is not installed with the engine yet. Install it (from "
                    "npm, once for every sandbox of this kind); the sandbox then restarts with "
                    "it.");
        p.fix = tr("Install the Agent's Program…");
        return p;
    }
    if (has("permission denied:") || has("was not permitted")) {
        p.kind = Kind::ToolRefused;
        p.title = tr("A tool was not allowed");
        p.text = tr("The permission mode did not let the agent use one of its tools, so it "
                    "stopped there. Allow the tool (Allow and continue), or pick another "
                    "permission mode and send the prompt again.");
        return p;
    }
    if (hasStatus(m, QStringLiteral("429")) || has("rate limit") || has("rate_limit")
        || has("too many requests") || has("quota")) {
        p.kind = Kind::RateLimited;
        p.title = tr("The model's API is limiting requests");
        p.text = tr("The model's API refused more requests for now (a rate limit or the "
                    "account's quota). Wait a minute and send the prompt again, or check the "
                    "plan of the key's account.");
        return p;
    }
    if (hasStatus(m, QStringLiteral("5\\d\\d")) || has("overloaded") || has("internal server error")
        || has("service unavailable") || has("bad gateway")) {
        p.kind = Kind::ModelFailed;
        p.title = tr("The model's API failed");
        p.text = tr("The model's API failed on its side (a server error or an overload), not "
                    "this sandbox. Send the prompt again in a moment.");
        return p;
    }
    // A host refused during the run explains the failures that follow it (the CLI's connection
    // to a model API the allow-list does not name); a model API that answered (a key, a limit,
    // a server error) is not one of them.
    if (!deniedHosts.isEmpty())
        return AgentProblem::deniedHosts(deniedHosts);
    if (has("econnrefused") || has("connection refused") || has("connection error")
        || has("model api is unreachable") || has("unable to connect") || has("could not connect")
        || has("enotfound") || has("etimedout")) {
        p.kind = Kind::ModelUnreachable;
        p.title = tr("The model's API could not be reached");
        p.text = tr("The agent could not reach the model's API (the connection was refused, the "
                    "name not found or the wait too long). Check the model's base URL and this "
                    "computer's internet connection, then send the prompt again.");
        return p;
    }
    p.title = tr("The agent reported an error");
    p.text = message;
    return p;
}

} // namespace Sandbox::Ui
