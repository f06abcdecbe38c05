#pragma once

#include <protocol/error.h>

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <QStringList>

#include <optional>

namespace Sandbox::Internal {

// Reads the fields of one object of a server answer and remembers the first problem, so that
// fromJson() can say exactly what was malformed ("Sandbox: \"status\" must be a string").
// Not part of the public API.
class JsonReader final
{
public:
    JsonReader(const QJsonValue &value, const QString &what);

    bool ok() const { return !m_error.has_value(); }
    // ErrorCode::InternalError with data {"field": ...}: the server's answer is malformed.
    Error error() const;
    const QJsonObject &object() const { return m_object; }

    QString string(const QString &key);
    QString optionalString(const QString &key, const QString &fallback = {}); // absent or null ok
    qint64 integer(const QString &key);
    qint64 optionalInteger(const QString &key, qint64 fallback = 0);
    double number(const QString &key);
    bool boolean(const QString &key);
    bool optionalBoolean(const QString &key, bool fallback = false);
    QDateTime dateTime(const QString &key);
    QDateTime optionalDateTime(const QString &key);
    QJsonObject object(const QString &key);
    QJsonArray array(const QString &key);
    QStringList stringList(const QString &key, bool optional);
    // One of `allowed`.
    QString oneOf(const QString &key, const QStringList &allowed);

    // Records a problem found by the caller (e.g. inside a nested object).
    void fail(const QString &field, const QString &why);
    void failWith(const Error &nested);

private:
    QJsonValue field(const QString &key, const char *type);

    QJsonObject m_object;
    QString m_what;
    std::optional<Error> m_error;
};

} // namespace Sandbox::Internal
