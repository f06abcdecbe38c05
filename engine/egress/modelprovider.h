#pragma once

#include "egresstypes.h"

#include <QMap>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <optional>

namespace Sandbox::Engine {

// What the engine knows of an agent type's model API: where it is, which environment names
// carry its endpoint and key, and how the key goes on a request. Used for the model gateway
// and for the provider host an agent sandbox may reach by default (docs/protocol.md 3.5, 4.7).
struct ModelProvider
{
    QString name;             // anthropic | openai
    QUrl defaultBase;         // https://api.anthropic.com | https://api.openai.com/v1
    QString baseVariable;     // ANTHROPIC_BASE_URL | OPENAI_BASE_URL
    QStringList keyVariables; // the variables that hold its credentials

    // claude-code -> anthropic; codex, opencode -> openai (opencode with the run option
    // `provider: "anthropic"` -> anthropic); anything else: nullopt.
    static std::optional<ModelProvider> forAgentType(const QString &type,
                                                     const QString &runProvider = {});
    // Every provider (their key variables never reach a sandbox that has the gateway).
    static QList<ModelProvider> all();

    // The model API's base URL: `baseUrl` if given, else the environment's, else the default
    // (OpenAI bases end in /v1, as the CLIs use them).
    QUrl base(const QMap<QString, QString> &env, const QString &baseUrl = {}) const;
    // The gateway route for that base and the credentials in `env` (a run's env over the
    // sandbox's). Without a key the requests go without one (the provider answers 401).
    GatewayRoute route(const QMap<QString, QString> &env, const QString &baseUrl = {}) const;
    // The base URL the CLI uses inside the sandbox: http://127.0.0.1:PORT + the base's path.
    QString sandboxBase(const QUrl &base, quint16 gatewayPort) const;
    // The value that stands for the key inside the sandbox (the CLIs want one to be set).
    static QString placeholderKey() { return QStringLiteral("sandbox-model-gateway"); }
};

} // namespace Sandbox::Engine
