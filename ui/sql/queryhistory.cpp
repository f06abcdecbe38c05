#include "queryhistory.h"

#include "../common/uistyle.h"

#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

namespace Sandbox::Ui {

namespace {
constexpr int kMaxEntries = 1000;
constexpr qint64 kMaxSqlChars = 100000;
} // namespace

QueryHistory::QueryHistory(const QString &databaseId, const QString &dir, QObject *parent)
    : QObject(parent)
{
    const QString base = dir.isEmpty()
                             ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)
                                   + QStringLiteral("/sql-history")
                             : dir;
    QDir().mkpath(base);
    QString safeId = databaseId;
    safeId.replace(u'/', u'_');
    m_path = base + u'/' + safeId + QStringLiteral(".jsonl");
    m_filter.setSourceModel(&m_model);
    m_filter.setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_filter.setFilterRole(Qt::ToolTipRole);
    load();
}

QStandardItem *QueryHistory::itemFor(const Entry &e) const
{
    QString firstLine = e.sql.simplified();
    if (firstLine.size() > 120)
        firstLine = firstLine.left(120) + QStringLiteral("…");
    auto *item = new QStandardItem(
        QStringLiteral("%1  %2").arg(e.at.toLocalTime().toString(QStringLiteral("MM-dd HH:mm")),
                                     firstLine));
    item->setToolTip(e.sql);
    item->setData(e.sql, Qt::UserRole);
    item->setEditable(false);
    if (!e.ok)
        item->setForeground(Style::color(Style::Tone::Error, QGuiApplication::palette()));
    return item;
}

void QueryHistory::load()
{
    QFile f(m_path);
    if (!f.open(QIODevice::ReadOnly))
        return;
    while (!f.atEnd()) {
        const QJsonObject o = QJsonDocument::fromJson(f.readLine()).object();
        if (o.isEmpty())
            continue;
        m_entries.append(
            {o.value(QStringLiteral("sql")).toString(),
             QDateTime::fromString(o.value(QStringLiteral("at")).toString(), Qt::ISODateWithMs),
             qint64(o.value(QStringLiteral("durationMs")).toDouble()),
             o.value(QStringLiteral("ok")).toBool(true)});
    }
    if (m_entries.size() > kMaxEntries)
        m_entries = m_entries.mid(m_entries.size() - kMaxEntries);
    for (const Entry &e : std::as_const(m_entries))
        m_model.insertRow(0, itemFor(e));
}

void QueryHistory::add(const QString &sql, qint64 durationMs, bool ok)
{
    const Entry e{sql.left(kMaxSqlChars), QDateTime::currentDateTimeUtc(), durationMs, ok};
    m_entries.append(e);
    m_model.insertRow(0, itemFor(e));
    QFile f(m_path);
    const bool rewrite = m_entries.size() > kMaxEntries * 2;
    if (rewrite)
        m_entries = m_entries.mid(m_entries.size() - kMaxEntries);
    if (!f.open(rewrite ? QIODevice::WriteOnly | QIODevice::Truncate : QIODevice::Append))
        return;
    const auto write = [&f](const Entry &x) {
        f.write(QJsonDocument(QJsonObject{{QStringLiteral("sql"), x.sql},
                                          {QStringLiteral("at"), x.at.toString(Qt::ISODateWithMs)},
                                          {QStringLiteral("durationMs"), double(x.durationMs)},
                                          {QStringLiteral("ok"), x.ok}})
                    .toJson(QJsonDocument::Compact)
                + '\n');
    };
    if (rewrite) {
        for (const Entry &x : std::as_const(m_entries))
            write(x);
    } else {
        write(e);
    }
}

void QueryHistory::setSearch(const QString &text)
{
    m_filter.setFilterFixedString(text);
}

} // namespace Sandbox::Ui
