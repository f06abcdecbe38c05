#pragma once

#include <client/databasetypes.h>
#include <client/rowfeed.h>

#include <QAbstractTableModel>
#include <QHash>
#include <QJsonArray>
#include <QList>
#include <QPointer>
#include <QTemporaryFile>

#include <functional>

namespace Sandbox::Ui {

// The rows of one result, fetched lazily from a RowFeed as the view scrolls (canFetchMore /
// fetchMore), never counted in advance. Memory stays bounded whatever the result's size: each
// page that arrives is appended to a temporary spill file and only a few pages are kept decoded
// (an LRU cache); rows scrolled back to are read from the spill. So the whole result can also be
// exported without running the query again.
class ResultModel final : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Role {
        IsNullRole = Qt::UserRole + 1, // bool: the value is SQL NULL
        JsonRole,                      // the value as the engine sent it (QJsonValue)
    };
    enum class Format { Csv, Json };

    explicit ResultModel(QObject *parent = nullptr);
    ~ResultModel() override;

    // Shows the rows of `feed` (taken over: the model owns it); starts it if it has not started.
    void setFeed(RowFeed *feed);
    RowFeed *feed() const { return m_feed; }
    void clear();

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

    const QList<SqlField> &fields() const { return m_fields; }
    bool isComplete() const;
    bool isFetching() const;
    QJsonArray rowAt(int row) const;
    // One value of rowAt(), without the rest of its row.
    QJsonValue valueAt(int row, int column) const;
    // Tab-separated text of the given cells (rows in order, a row per line), for the clipboard.
    QString copyText(const QModelIndexList &indexes, bool withHeader = false) const;

    enum class CopyFormat { Csv, Json, Insert };
    // The given cells (their rows, the columns from the leftmost to the rightmost selected) as
    // CSV with a header (RFC 4180), a JSON array of objects (values as the engine sent them), or
    // INSERT statements into `table`, for the clipboard.
    QString copyAs(const QModelIndexList &indexes, CopyFormat format,
                   const QString &table = QStringLiteral("result")) const;
    // The whole value of a cell, for the cell viewer: JSON pretty-printed, bytes as a hex dump
    // (at most `maxBytes` of them), text as it is.
    QString fullText(const QModelIndex &index, int maxBytes = 64 * 1024) const;
    // Writes every row — fetching the rest of the result first — to `path`. `done` gets the
    // number of rows written. The query is not run again: earlier rows come from the spill.
    void exportTo(const QString &path, Format format, QObject *context,
                  std::function<void(Result<qint64>)> done);

    void setMaxCachedPages(int pages) { m_maxCachedPages = qMax(1, pages); }
    int cachedPages() const { return int(m_cache.size()); }
    qint64 spillBytes() const { return m_spillBytes; }

Q_SIGNALS:
    void started();
    void finished();
    void failed(const Sandbox::Error &error);
    void fetchingChanged(bool fetching);

private:
    struct Page
    {
        qint64 offset = 0;
        qint64 bytes = 0;
        int firstRow = 0;
        int rows = 0;
    };

    void append(const SqlRows &rows);
    int pageOf(int row) const;
    const SqlRows *loadPage(int page) const;
    void continueExport();

    QPointer<RowFeed> m_feed; // owned (child)
    quint64 m_generation = 0;
    QList<SqlField> m_fields;
    QList<Page> m_pages;
    int m_rows = 0;
    QTemporaryFile *m_spill = nullptr; // owned (child)
    qint64 m_spillBytes = 0;
    int m_maxCachedPages = 8;
    mutable QHash<int, SqlRows> m_cache;
    mutable QList<int> m_lru; // most recently used last

    struct Export
    {
        QString path;
        Format format = Format::Csv;
        QPointer<QObject> context;
        std::function<void(Result<qint64>)> done;
    };
    QList<Export> m_exports;
};

} // namespace Sandbox::Ui
