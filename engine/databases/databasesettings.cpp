#include "databasesettings.h"

#include "postgresbackend.h"
#include "protocol/fieldreader.h"
#include "protocol/sandboxenums.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSaveFile>

namespace Sandbox::Engine {

namespace {

const QString kSettingsFile = QStringLiteral("/database.json");

// A file inside /workspace: "app.db", "data/app.db" or "/workspace/data/app.db". Any other
// absolute path, as the original design's "/data/app.db", names the same path below /workspace
// ("/workspace/data/app.db"): a database's files live in its workspace. Empty when it is none.
QString workspaceFile(QString file)
{
    if (file.startsWith(QLatin1String("/workspace/")))
        file = file.mid(11);
    else if (file.startsWith(u'/'))
        file = file.mid(1);
    const QString clean = QDir::cleanPath(file);
    if (file.isEmpty() || file.startsWith(u'/') || clean.startsWith(QLatin1String(".."))
        || clean != file || file.contains(QChar(0)) || file.size() > 200)
        return {};
    return file;
}

} // namespace

bool isValidSqlName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z_][A-Za-z0-9_$-]{0,62}$"));
    return re.match(name).hasMatch();
}

QString quoteIdent(const QString &name)
{
    QString q = name;
    q.replace(u'"', QStringLiteral("\"\""));
    return u'"' + q + u'"';
}

QJsonObject DatabaseSettings::toJson(bool withPassword) const
{
    QJsonObject o{{QStringLiteral("type"), type},
                  {QStringLiteral("database"), database},
                  {QStringLiteral("username"), username},
                  {QStringLiteral("initialized"), initialized}};
    if (withPassword && !password.isEmpty())
        o.insert(QStringLiteral("password"), password);
    return o;
}

DatabaseSettings DatabaseSettings::fromJson(const QJsonObject &o)
{
    DatabaseSettings s;
    s.type = o.value(QStringLiteral("type")).toString();
    s.database = o.value(QStringLiteral("database")).toString();
    s.username = o.value(QStringLiteral("username")).toString();
    s.password = o.value(QStringLiteral("password")).toString();
    s.initialized = o.value(QStringLiteral("initialized")).toBool();
    return s;
}

DatabaseSettings DatabaseSettings::defaults(const QString &type)
{
    DatabaseSettings s;
    s.type = type;
    const SandboxType server = fromWire<SandboxType>(type);
    s.database = server == SandboxType::Postgres ? QStringLiteral("postgres")
                 : server == SandboxType::Sqlite ? QStringLiteral("main.db")
                                                 : QStringLiteral("main.duckdb");
    if (server == SandboxType::Postgres)
        s.username = QStringLiteral("sandbox");
    return s;
}

DatabaseSettings DatabaseSettings::fromCreateParams(FieldReader &p, const QString &type)
{
    DatabaseSettings s = defaults(type);
    s.database = p.optionalString(QStringLiteral("database"), s.database);
    s.username = p.optionalString(QStringLiteral("username"), s.username);
    s.password = p.optionalString(QStringLiteral("password"));
    return s;
}

void DatabaseSettings::validate(FieldReader &p)
{
    if (p.failed())
        return;
    DatabaseSettings &s = *this;
    if (fromWire<SandboxType>(type) == SandboxType::Postgres) {
        if (!isValidSqlName(s.database) || s.database.startsWith(QLatin1String("template")))
            p.fail(QStringLiteral("database"),
                   QStringLiteral(
                       "must be a name of letters, digits, _ $ - (at most 63), not template0/1"));
        else if (!isValidSqlName(s.username)
                 || s.username == QLatin1String(PostgresBackend::kAdminRole)
                 || s.username.startsWith(QLatin1String("pg_")))
            p.fail(
                QStringLiteral("username"),
                QStringLiteral(
                    "must be a name of letters, digits, _ $ - (at most 63), not a reserved role"));
        else if (s.password.size() > 1000 || s.password.contains(QChar(0)))
            p.fail(QStringLiteral("password"), QStringLiteral("must be at most 1000 characters"));
        return;
    }
    s.database = workspaceFile(s.database);
    if (s.database.isEmpty())
        p.fail(QStringLiteral("database"),
               QStringLiteral("must be a file name inside /workspace, e.g. \"app.db\" or "
                              "\"/data/app.db\" (/workspace/data/app.db)"));
    s.username.clear();
}

DatabaseSettings DatabaseSettings::load(const QString &stateDir)
{
    QFile f(stateDir + kSettingsFile);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return fromJson(QJsonDocument::fromJson(f.readAll()).object());
}

bool DatabaseSettings::save(const QString &stateDir, const DatabaseSettings &settings)
{
    QSaveFile f(stateDir + kSettingsFile);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    f.write(QJsonDocument(settings.toJson(true)).toJson());
    return f.commit();
}

} // namespace Sandbox::Engine
