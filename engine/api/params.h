#pragma once

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
    explicit Params(const QJsonObject &object, const QString &prefix = {})
        : m_object(object)
        , m_prefix(prefix)
    {}

    QString requiredString(const QString &name);
    QString optionalString(const QString &name, const QString &fallback = {});
    qint64 optionalInteger(const QString &name, qint64 fallback, qint64 min, qint64 max);
    bool optionalBool(const QString &name, bool fallback);
    QMap<QString, QString> optionalStringMap(const QString &name);
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
