#pragma once

#include "egress/networkpolicy.h"
#include "protocol/error.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QMap>
#include <QStringList>

#include <optional>

namespace Sandbox::Engine {

// Reads a method's named params and remembers the first problem, so that handlers read like
// a list of fields and answer -32602 naming the offending field (docs/protocol.md, 2).
class Params final
{
public:
    // docs/protocol.md 2.2: what the engine takes at its door.
    static constexpr qsizetype MaxPathBytes = 4096; // PATH_MAX
    static constexpr qsizetype MaxNameBytes = 256;  // a sandbox's or a key's name
    static constexpr int MaxEnvVariables = 1024;
    static constexpr qsizetype MaxEnvBytes = 256 * 1024; // every NAME=VALUE of one env together
    static constexpr qsizetype MaxArgumentBytes = 131071; // one argument or NAME=VALUE (the kernel's)
    static constexpr qsizetype MaxArgvBytes = 1024
                                              * 1024; // a whole argv, 8 bytes a pointer included

    explicit Params(const QJsonObject &object, const QString &prefix = {})
        : m_object(object)
        , m_prefix(prefix)
    {}

    QString requiredString(const QString &name);
    QString optionalString(const QString &name, const QString &fallback = {});
    qint64 optionalInteger(const QString &name, qint64 fallback, qint64 min, qint64 max);
    bool optionalBool(const QString &name, bool fallback);
    // An environment for processes in a sandbox: names of letters, digits and '_' (not starting
    // with a digit), none that the dynamic loader or glibc act on (isRefusedEnvName), string
    // values, sizes within the limits above. A bad variable is named in the field ("env.LD_PRELOAD").
    QMap<QString, QString> optionalEnv(const QString &name);
    // A path in a sandbox: at most MaxPathBytes of UTF-8, no NUL.
    QString requiredPath(const QString &name);
    QString optionalPath(const QString &name, const QString &fallback = {});
    // A name people read (a sandbox's, a key's): at most MaxNameBytes, no control characters.
    QString optionalName(const QString &name, const QString &fallback = {});
    // LD_* (the dynamic loader) and glibc's list of variables it drops for setuid programs
    // (GCONV_PATH, LOCPATH, MALLOC_TRACE, ...; TMPDIR excepted): docs/protocol.md 3.1.
    static bool isRefusedEnvName(QStringView name);
    // A sandbox's network policy (docs/protocol.md 3.5): false (also when absent), true or
    // {allow, deny} of at most NetworkPolicy::MaxEntries entries of MaxEntryChars each; a bad
    // entry is named in the field ("network.allow[2]").
    NetworkPolicy optionalNetworkPolicy(const QString &name);
    QJsonObject optionalObject(const QString &name);
    // One of a fixed set of strings.
    QString optionalChoice(const QString &name, const QStringList &choices, const QString &fallback);

    bool has(const QString &name) const { return m_object.contains(name); }
    QJsonValue raw(const QString &name) const { return m_object.value(name); }

    void fail(const QString &name, const QString &why);
    bool failed() const { return m_error.has_value(); }
    const Error &error() const { return *m_error; }
    // Adopts the first error of a nested reader.
    void merge(const Params &nested);

private:
    QString field(const QString &name) const
    {
        return m_prefix.isEmpty() ? name : m_prefix + u'.' + name;
    }

    QJsonObject m_object;
    QString m_prefix;
    std::optional<Error> m_error;
};

} // namespace Sandbox::Engine
