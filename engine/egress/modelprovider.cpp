#include "modelprovider.h"

#include "protocol/sandboxenums.h"

namespace Sandbox::Engine {

namespace {

ModelProvider anthropic()
{
    return ModelProvider{QStringLiteral("anthropic"),
                         QUrl(QStringLiteral("https://api.anthropic.com")),
                         QStringLiteral("ANTHROPIC_BASE_URL"),
                         {QStringLiteral("ANTHROPIC_API_KEY"),
                          QStringLiteral("ANTHROPIC_AUTH_TOKEN")}};
}

} // namespace

QList<ModelProvider> ModelProvider::all()
{
    return {anthropic(), *forAgentType(toWire(SandboxType::Codex))};
}

std::optional<ModelProvider> ModelProvider::forAgentType(const QString &type,
                                                         const QString &runProvider)
{
    const SandboxType agent = fromWire<SandboxType>(type);
    if (agent == SandboxType::OpenCode && runProvider == QLatin1String("anthropic"))
        return anthropic();
    if (agent == SandboxType::ClaudeCode)
        return ModelProvider{QStringLiteral("anthropic"),
                             QUrl(QStringLiteral("https://api.anthropic.com")),
                             QStringLiteral("ANTHROPIC_BASE_URL"),
                             {QStringLiteral("ANTHROPIC_API_KEY"),
                              QStringLiteral("ANTHROPIC_AUTH_TOKEN")}};
    if (agent == SandboxType::Codex || agent == SandboxType::OpenCode)
        return ModelProvider{QStringLiteral("openai"),
                             QUrl(QStringLiteral("https://api.openai.com/v1")),
                             QStringLiteral("OPENAI_BASE_URL"),
                             {QStringLiteral("OPENAI_API_KEY")}};
    return std::nullopt;
}

QUrl ModelProvider::base(const QMap<QString, QString> &env, const QString &baseUrl) const
{
    QUrl url(baseUrl.isEmpty() ? env.value(baseVariable) : baseUrl, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty()
        || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")))
        url = defaultBase;
    url.setQuery(QString());
    url.setFragment(QString());
    url.setUserInfo(QString());
    QString path = url.path();
    while (path.endsWith(u'/'))
        path.chop(1);
    if (name == QLatin1String("openai") && !path.endsWith(QLatin1String("/v1"))
        && !path.contains(QLatin1String("/v1/")))
        path += QStringLiteral("/v1");
    url.setPath(path);
    return url;
}

GatewayRoute ModelProvider::route(const QMap<QString, QString> &env, const QString &baseUrl) const
{
    GatewayRoute r;
    r.provider = name;
    r.upstream = base(env, baseUrl);
    r.sandboxBasePath = r.upstream.path();
    if (name == QLatin1String("anthropic")) {
        // An API key goes as x-api-key; a bearer token (ANTHROPIC_AUTH_TOKEN) as Authorization.
        const QString key = env.value(QStringLiteral("ANTHROPIC_API_KEY"));
        const QString token = env.value(QStringLiteral("ANTHROPIC_AUTH_TOKEN"));
        if (!token.isEmpty() && key.isEmpty()) {
            r.authHeader = "Authorization";
            r.authValue = "Bearer " + token.toUtf8();
        } else {
            r.authHeader = "x-api-key";
            r.authValue = key.toUtf8();
        }
    } else {
        r.authHeader = "Authorization";
        const QString key = env.value(QStringLiteral("OPENAI_API_KEY"));
        r.authValue = key.isEmpty() ? QByteArray() : "Bearer " + key.toUtf8();
    }
    return r;
}

QString ModelProvider::sandboxBase(const QUrl &base, quint16 gatewayPort) const
{
    return QStringLiteral("http://127.0.0.1:%1").arg(gatewayPort) + base.path();
}

} // namespace Sandbox::Engine
