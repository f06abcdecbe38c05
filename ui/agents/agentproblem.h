#pragma once

#include <QString>

namespace Sandbox::Ui {

// What stopped an agent's run, in the user's terms, from the engine's or the CLI's message (the
// API's wording: "network: true", "Please run /login", "invalid x-api-key"), and the fix the
// agent page offers in place.
struct AgentProblem
{
    enum class Kind {
        None,             // not one we know: the message is shown as it is
        NoNetwork,        // the sandbox has no network: the CLI cannot reach its model's API
        NoModelKey,       // the CLI has no key (or a refused one) for its model's API
        NoCli,            // the agent's CLI is not installed with the engine
        ModelUnreachable, // the engine's model gateway could not reach the model's API
        HostDenied,       // the sandbox's policy refused a host during the run (never from
                          // explain(): from the run's network.denied events)
    };
    Kind kind = Kind::None;
    QString text; // what happened and what to do, one or two sentences
    QString fix;  // the text of the button that does it ("" for none)

    // `agentType`: claude-code, opencode, codex (for the name of the key).
    static AgentProblem explain(const QString &message, const QString &agentType);
    // The environment variable the agent's CLI reads its key from.
    static QString keyVariable(const QString &agentType);
};

} // namespace Sandbox::Ui
