#pragma once

#include <QJsonValue>
#include <QMap>
#include <QString>
#include <QStringList>

namespace Sandbox::Engine {

// Scrubs secret values (API keys, tokens) out of everything an agent run sends back: its events,
// its stdout and its error messages. A CLI may echo its environment or an error that quotes the
// key; the key must still never leave the engine (docs/protocol.md, 4.7).
class SecretRedactor final
{
public:
    static constexpr const char *Mask = "[redacted]";

    // Takes the values of variables whose names look secret (…KEY, …TOKEN, …SECRET, …PASSWORD,
    // …AUTH…) and are long enough not to match ordinary words.
    void addFromEnvironment(const QMap<QString, QString> &env);
    void addSecret(const QString &value);

    QString apply(const QString &text) const;
    QJsonValue apply(const QJsonValue &value) const;

    static bool isSecretName(const QString &name);

private:
    QStringList m_secrets; // longest first, so that a secret containing another is masked whole
};

} // namespace Sandbox::Engine
