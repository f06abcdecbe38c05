#include "tableexport.h"

#include "calldeadlines.h"
#include "databasebackend.h"
#include "databasehost.h"
#include "databasesettings.h"
#include "pagetext.h"
#include "protocol/fieldreader.h"
#include "timedcall.h"

#include <QDir>
#include <QJsonDocument>
#include <QPointer>
#include <QRandomGenerator>
#include <QTimer>

#include <limits>
#include <memory>

namespace Sandbox::Engine {

namespace {

using Reply = Methods::Reply;

constexpr qint64 kMaxExportBytes = 12 * 1024 * 1024;
// A file export (the server writes it) may take longer than a statement's default.
constexpr qint64 kFileExportTimeoutMs = kMaxTimeoutMs / 12;

struct ExportCall
{
    QString id;
    QString select; // SELECT * FROM the table
    QString format; // csv | json | parquet
    QString path;   // inside /workspace; empty: the content comes back
};

// The server writes the file (COPY ... TO) inside the sandbox; without a path the bytes come back
// through sandbox.readFile and the file is removed.
void exportFile(DatabaseHost *host, CallDeadlines *deadlines, const ExportCall &call,
                const CallContext &ctx, const Reply &reply)
{
    QString target = call.path;
    if (!target.isEmpty() && !target.startsWith(QLatin1String("/workspace/")))
        target = QStringLiteral("/workspace/") + target;
    if (!target.isEmpty() && QDir::cleanPath(target) != target)
        return reply(Error{ErrorCode::PathNotAllowed,
                           QStringLiteral("the export path must stay inside /workspace"),
                           {}});
    const bool temporary = target.isEmpty();
    if (temporary)
        target = QStringLiteral("/workspace/.export-%1.%2")
                     .arg(QRandomGenerator::system()->generate(), 0, 16)
                     .arg(call.format);
    const QString id = call.id, format = call.format, select = call.select;
    host->withBackend(
        ctx, id,
        [host, deadlines, id, select, format, target, temporary, c = ctx,
         reply](Result<DatabaseBackend *> b, ActivityToken token) {
            if (!b)
                return reply(b.error());
            QPointer<DatabaseBackend> backend = *b;
            runTimed(
                deadlines, kFileExportTimeoutMs, kCancelGraceMs, c,
                [backend, select, format, target](PageDone d) {
                    return backend->exportFile(select, format, target, std::move(d));
                },
                [host, id, format, target, temporary, c, reply,
                 activity = share(std::move(token))](Result<Page> r) {
                    activity->end();
                    if (!r)
                        return reply(r.error());
                    const double rowCount = r->value(QStringLiteral("rowCount")).toDouble();
                    if (!temporary)
                        return reply(
                            QJsonValue(QJsonObject{{QStringLiteral("format"), format},
                                                   {QStringLiteral("path"), target},
                                                   {QStringLiteral("rowCount"), rowCount}}));
                    // Read the file back through the supervisor (16 MiB per call), then remove it.
                    host->call(QStringLiteral("sandbox.readFile"),
                               {{QStringLiteral("id"), id},
                                {QStringLiteral("path"), target},
                                {QStringLiteral("encoding"), QStringLiteral("base64")}},
                               c,
                               [host, id, format, target, rowCount, c,
                                reply](Result<QJsonValue> file) {
                                   host->call(QStringLiteral("sandbox.deleteFile"),
                                              {{QStringLiteral("id"), id},
                                               {QStringLiteral("path"), target}},
                                              c, [](Result<QJsonValue>) {});
                                   if (!file)
                                       return reply(file.error());
                                   const QJsonObject f = file->toObject();
                                   if (f.value(QStringLiteral("truncated")).toBool())
                                       return reply(
                                           Error{ErrorCode::PayloadTooLarge,
                                                 QStringLiteral("the export is over 16 MiB; give a "
                                                                "path to write it into /workspace"),
                                                 {}});
                                   QJsonObject out{{QStringLiteral("format"), format},
                                                   {QStringLiteral("rowCount"), rowCount}};
                                   if (format == QLatin1String("parquet"))
                                       out.insert(QStringLiteral("contentBase64"),
                                                  f.value(QStringLiteral("content")));
                                   else
                                       out.insert(QStringLiteral("content"),
                                                  QString::fromUtf8(QByteArray::fromBase64(
                                                      f.value(QStringLiteral("content"))
                                                          .toString()
                                                          .toLatin1())));
                                   reply(QJsonValue(out));
                               });
                });
        });
}

// CSV and JSON text, built page by page as the rows come.
class TextExport
{
public:
    explicit TextExport(bool csv)
        : m_csv(csv)
    {}

    void header(const QJsonArray &fields)
    {
        for (const QJsonValue &f : fields)
            m_names.append(f.toObject().value(QStringLiteral("name")).toString());
        if (m_csv) {
            QStringList header;
            for (const QString &n : std::as_const(m_names))
                header.append(csvCell(n));
            m_content = header.join(u',') + QStringLiteral("\r\n");
        }
    }
    void add(const QJsonArray &rows)
    {
        for (const QJsonValue &row : rows) {
            const QJsonArray a = row.toArray();
            if (m_csv) {
                QStringList cells;
                for (const QJsonValue &v : a)
                    cells.append(csvCell(v));
                m_content += cells.join(u',') + QStringLiteral("\r\n");
            } else {
                QJsonObject o;
                for (qsizetype i = 0; i < a.size() && i < m_names.size(); ++i)
                    o.insert(m_names[i], a[i]);
                m_content += (m_rowCount == 0 ? QString() : QStringLiteral(",\n"))
                             + QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
            }
            ++m_rowCount;
        }
    }
    bool tooLarge() const { return m_content.size() * 2 > kMaxExportBytes; }
    qint64 rowCount() const { return m_rowCount; }
    QString content() const
    {
        if (m_csv)
            return m_content;
        return u'[' + m_content + (m_rowCount == 0 ? QStringLiteral("]") : QStringLiteral("\n]"));
    }

private:
    bool m_csv;
    QString m_content;
    QStringList m_names;
    qint64 m_rowCount = 0;
};

// The engine pages through the table and formats as it goes, within kMaxExportBytes.
void exportText(DatabaseHost *host, CallDeadlines *deadlines, const ExportCall &call,
                const CallContext &ctx, const Reply &reply)
{
    auto ex = std::make_shared<TextExport>(call.format == QLatin1String("csv"));
    const QString select = call.select, format = call.format;
    host->withBackend(
        ctx, call.id,
        [deadlines, select, ex, format, reply](Result<DatabaseBackend *> b, ActivityToken token) {
            if (!b)
                return reply(b.error());
            QPointer<DatabaseBackend> backend = *b;
            auto step = std::make_shared<std::function<void(const QString &)>>();
            auto finish = [deadlines, ex, format, reply, step,
                           activity = share(std::move(token))](Result<bool> r) {
                // step -> step: broken once the call that finishes has returned.
                QTimer::singleShot(0, deadlines, [step] { *step = nullptr; });
                activity->end();
                if (!r)
                    return reply(r.error());
                reply(QJsonValue(QJsonObject{{QStringLiteral("format"), format},
                                             {QStringLiteral("content"), ex->content()},
                                             {QStringLiteral("rowCount"), double(ex->rowCount())}}));
            };
            *step = [backend, ex, finish, step](const QString &cursor) {
                if (!backend)
                    return finish(Error{ErrorCode::SandboxNotRunning,
                                        QStringLiteral("the database stopped"),
                                        {}});
                backend->fetch(cursor, PageLimits::kExportRows, PageLimits::kMaxBytes,
                               [backend, ex, finish, step, cursor](Result<Page> r) {
                                   if (!r)
                                       return finish(r.error());
                                   ex->add(PageText::rowsOf(*r));
                                   if (ex->tooLarge()) {
                                       if (backend)
                                           backend->closeCursor(cursor);
                                       return finish(
                                           Error{ErrorCode::PayloadTooLarge,
                                                 QStringLiteral(
                                                     "the export is over %1 MiB; export to a "
                                                     "file (DuckDB) or page with query/fetch")
                                                     .arg(kMaxExportBytes / 1048576),
                                                 {}});
                                   }
                                   if (r->value(QStringLiteral("done")).toBool())
                                       return finish(true);
                                   if (*step)
                                       (*step)(cursor);
                               });
            };
            SqlRequest req;
            req.sql = select;
            req.pageSize = PageLimits::kExportRows;
            req.pageBytes = PageLimits::kMaxBytes;
            backend->query(req, [ex, finish, step](Result<Page> r) {
                if (!r)
                    return finish(r.error());
                ex->header(r->value(QStringLiteral("fields")).toArray());
                ex->add(PageText::rowsOf(*r));
                const QString cursor = r->value(QStringLiteral("cursor")).toString();
                if (cursor.isEmpty())
                    return finish(true);
                (*step)(cursor);
            });
        });
}

} // namespace

QString csvCell(const QJsonValue &v)
{
    QString s;
    switch (v.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        return {};
    case QJsonValue::Bool:
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double: {
        const qint64 i = v.toInteger(std::numeric_limits<qint64>::min());
        return i != std::numeric_limits<qint64>::min() ? QString::number(i)
                                                       : QString::number(v.toDouble(), 'g', 17);
    }
    case QJsonValue::String:
        s = v.toString();
        break;
    case QJsonValue::Object: {
        const QJsonObject o = v.toObject();
        if (o.size() == 1
            && (o.contains(QStringLiteral("$int")) || o.contains(QStringLiteral("$float"))
                || o.contains(QStringLiteral("$bytes"))))
            s = o.begin().value().toString();
        else
            s = QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
        break;
    }
    case QJsonValue::Array:
        s = QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact));
        break;
    }
    if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n') || s.contains(u'\r'))
        s = u'"' + QString(s).replace(u'"', QStringLiteral("\"\"")) + u'"';
    return s;
}

void exportTable(DatabaseHost *host, CallDeadlines *deadlines, const QJsonObject &params,
                 const CallContext &ctx, const Reply &reply)
{
    FieldReader p(params);
    ExportCall call;
    call.id = p.requiredString(QStringLiteral("id"));
    const QString table = p.requiredSqlText(QStringLiteral("table"));
    call.format = p.optionalChoice(QStringLiteral("format"),
                                   {QStringLiteral("csv"), QStringLiteral("json"),
                                    QStringLiteral("parquet")},
                                   QStringLiteral("csv"));
    const QString schema = p.optionalSqlText(QStringLiteral("schema"));
    call.path = p.optionalPath(QStringLiteral("path"));
    if (p.failed())
        return reply(p.error());
    const Result<const SqlDialect *> dialect = host->dialectOf(ctx.keyId, call.id);
    if (!dialect)
        return reply(dialect.error());
    const bool toFile = call.format == QLatin1String("parquet") || !call.path.isEmpty();
    if (toFile && !(*dialect)->writesFiles)
        return reply(Error{ErrorCode::NotImplemented,
                           call.format == QLatin1String("parquet")
                               ? QStringLiteral("parquet export is for DuckDB databases")
                               : QStringLiteral("export to a file (path) is for DuckDB databases"),
                           {}});
    call.select = QStringLiteral("SELECT * FROM ")
                  + (schema.isEmpty() ? QString() : quoteIdent(schema) + u'.') + quoteIdent(table);
    if (toFile)
        return exportFile(host, deadlines, call, ctx, reply);
    exportText(host, deadlines, call, ctx, reply);
}

} // namespace Sandbox::Engine
