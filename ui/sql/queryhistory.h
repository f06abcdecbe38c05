#pragma once

#include <QDateTime>
#include <QList>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>

namespace Sandbox::Ui {

// The statements run on one database, newest first, kept across restarts in a JSON-lines file
// (one per database under the app's data dir) and searchable through filtered().
class QueryHistory final : public QObject
{
    Q_OBJECT

public:
    struct Entry
    {
        QString sql;
        QDateTime at;
        qint64 durationMs = 0;
        bool ok = true;
    };

    // `dir` empty: <AppDataLocation>/sql-history.
    QueryHistory(const QString &databaseId, const QString &dir = {}, QObject *parent = nullptr);

    void add(const QString &sql, qint64 durationMs, bool ok);
    const QList<Entry> &entries() const { return m_entries; }
    QString filePath() const { return m_path; }

    // Display model (newest first) and its search filter.
    QStandardItemModel *model() { return &m_model; }
    QSortFilterProxyModel *filtered() { return &m_filter; }
    void setSearch(const QString &text);

private:
    void load();
    QStandardItem *itemFor(const Entry &e) const;

    QString m_path;
    QList<Entry> m_entries; // oldest first
    QStandardItemModel m_model;
    QSortFilterProxyModel m_filter;
};

} // namespace Sandbox::Ui
