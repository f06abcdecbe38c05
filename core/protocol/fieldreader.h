#pragma once

#include "error.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace Sandbox {

// Reads the fields of one JSON object and remembers the first problem, so that code reads like
// a list of fields and the error names the offending one. One reader for both sides of the wire,
// with the wording of each:
// - a method's params (the engine): InvalidParams (-32602), data {"field": "options.timeout"},
//   "options.timeout must be an integer" (docs/protocol.md 2);
// - an answer from the server (the client): InternalError, data {"object", "field"},
//   "malformed Sandbox from server: \"status\" must be a string".
class FieldReader final
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
    // The integers a JSON number holds exactly (and JavaScript's Number.MAX_SAFE_INTEGER + 1).
    static constexpr qint64 MaxExactInteger = Q_INT64_C(9007199254740992);

    // A method's params; `prefix` names the object they sit in ("options" for options.timeout).
    explicit FieldReader(const QJsonObject &params, const QString &prefix = {});
    // An answer from the server; `what` names it in messages ("Sandbox"). Fails unless an object.
    static FieldReader answer(const QJsonValue &value, const QString &what);

    bool ok() const { return !m_error.has_value(); }
    bool failed() const { return m_error.has_value(); }
    Error error() const;
    const QJsonObject &object() const { return m_object; }
    bool has(const QString &name) const { return m_object.contains(name); }
    QJsonValue raw(const QString &name) const { return m_object.value(name); }
    // The field as errors name it (with the prefix of params).
    QString fieldName(const QString &name) const;

    // Records a problem found by the caller; the first one stays.
    void fail(const QString &name, const QString &why);
    void failWith(const Error &error);
    // Adopts the first problem of a nested reader.
    void merge(const FieldReader &nested);

    // Required: absent is an error. Optional: absent or null gives the fallback.
    QString string(const QString &name);         // any string, also empty
    QString requiredString(const QString &name); // a non-empty string
    QString optionalString(const QString &name, const QString &fallback = {});
    qint64 integer(const QString &name, qint64 min = -MaxExactInteger, qint64 max = MaxExactInteger);
    qint64 optionalInteger(const QString &name, qint64 fallback = 0, qint64 min = -MaxExactInteger,
                           qint64 max = MaxExactInteger);
    double number(const QString &name);
    bool boolean(const QString &name);
    bool optionalBool(const QString &name, bool fallback = false);
    QDateTime dateTime(const QString &name); // ISO 8601 with milliseconds
    QDateTime optionalDateTime(const QString &name);
    QJsonObject object(const QString &name);
    QJsonObject optionalObject(const QString &name);
    QJsonArray array(const QString &name);
    QStringList stringList(const QString &name, bool optional);
    // One of a fixed set of strings.
    QString oneOf(const QString &name, const QStringList &allowed);
    QString optionalChoice(const QString &name, const QStringList &choices, const QString &fallback);

    // SQL text, or a name the engine puts into SQL (a table's): without NUL, where every
    // database ends such text (one would cut the statement short without a word).
    QString requiredSqlText(const QString &name);
    QString optionalSqlText(const QString &name, const QString &fallback = {});

    // A path in a sandbox: at most MaxPathBytes of UTF-8, no NUL.
    QString requiredPath(const QString &name);
    QString optionalPath(const QString &name, const QString &fallback = {});
    // A name people read (a sandbox's, a key's): at most MaxNameBytes, no control characters.
    QString optionalName(const QString &name, const QString &fallback = {});
    // An environment for processes in a sandbox: names of letters, digits and '_' (not starting
    // with a digit), none that the dynamic loader or glibc act on (isRefusedEnvName), string
    // values, sizes within the limits above. A bad variable is named in the field ("env.LD_PRELOAD").
    QMap<QString, QString> optionalEnv(const QString &name);
    // LD_* (the dynamic loader) and glibc's list of variables it drops for setuid programs
    // (GCONV_PATH, LOCPATH, MALLOC_TRACE, ...; TMPDIR excepted): docs/protocol.md 3.1.
    static bool isRefusedEnvName(QStringView name);

private:
    enum class Side : quint8 { Params, Answer };
    FieldReader(Side side, const QString &name);
    // A required field: fails when absent ("is required" / "is missing (T expected)").
    QJsonValue required(const QString &name, const char *type);
    // Fails unless `path` is at most MaxPathBytes of UTF-8 without NUL, saying which.
    void checkPath(const QString &name, const QString &path);

    Side m_side = Side::Params;
    QJsonObject m_object;
    QString m_name; // Params: the prefix; Answer: what the object is
    std::optional<Error> m_error;
};

} // namespace Sandbox
