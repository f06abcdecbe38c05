#pragma once

#include <QString>
#include <QStringList>

namespace Sandbox::Ui {

// What stopped an agent's run, in the user's terms, from the engine's or the CLI's message (the
// API's wording: "network: true", "Please run /login", "invalid x-api-key", a 429 or 5xx body,
// ECONNREFUSED), and the fix the agent page offers in place. The one mapping behind the page's
// problem bar and the transcript's error cards.
struct AgentProblem
{
    enum class Kind {
        None,             // not one we know: the message is shown as it is, under a generic title
        NoNetwork,        // the sandbox has no network: the CLI cannot reach its model's API
        NoModelKey,       // the CLI has no key (or a refused one) for its model's API
        NoCli,            // the agent's CLI is not installed with the engine
        ModelUnreachable, // the model's API could not be reached (the gateway's or the CLI's
                          // connection failed: refused, no such name, timed out)
        HostDenied,       // the sandbox's policy refused a host during the run (from the run's
                          // network.denied events, given to explain())
        RateLimited,      // the model's API refused more requests for now (429, quota)
        ModelFailed,      // the model's API failed on its side (5xx, overloaded)
        ToolRefused,      // the permission mode refused a tool (the bar offers to allow it)
    };
    Kind kind = Kind::None;
    QString title;     // a few words: "No valid model key"
    QString text;      // what happened and what to do, one or two sentences (None: the message)
    QString fix;       // the text of the button that does it ("" for none)
    QStringList hosts; // HostDenied: the allow entries refused ("api.example.com:443")

    // `agentType`: claude-code, opencode, codex (for the name of the key). `deniedHosts`: the
    // allow entries the sandbox's network refused during the run; a failure they explain (one
    // that is not a refused key or tool) is HostDenied.
    static AgentProblem explain(const QString &message, const QString &agentType,
                                const QStringList &deniedHosts = {});
    // The network refused these allow entries during a run (whatever the run's outcome).
    static AgentProblem deniedHosts(const QStringList &entries);
    // The environment variable the agent's CLI reads its key from.
    static QString keyVariable(const QString &agentType);
};

} // namespace Sandbox::Ui
