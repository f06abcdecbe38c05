#pragma once

#include "databasetypes.h"
#include "rpccall.h"

#include <QJsonArray>
#include <QObject>

namespace Sandbox {

class DatabasesService;

// A result read page by page, for views: start() runs the query and delivers its first page;
// fetchMore() asks for the next one. The feed keeps no rows itself (the view decides what to
// keep); its cursor in the engine is closed when the feed is destroyed or cancelled. One page in
// flight at a time.
//
//   auto *feed = new RowFeed(&client->databases(), dbId, sql, {}, this);
//   connect(feed, &RowFeed::rowsArrived, model, &Model::append);
//   feed->start();
class RowFeed final : public QObject
{
    Q_OBJECT

public:
    RowFeed(DatabasesService *service, QString databaseId, QString sql, QJsonArray params,
            QObject *parent = nullptr);
    ~RowFeed() override;

    void setPageSize(int rows) { m_pageSize = rows; }
    void setTimeoutMs(int ms) { m_timeoutMs = ms; }
    int pageSize() const { return m_pageSize; }

    void start();
    bool canFetchMore() const { return !m_cursor.isEmpty() && !m_failed; }
    bool isFetching() const { return m_call.isPending(); }
    bool isFinished() const { return m_started && m_cursor.isEmpty() && !m_call.isPending(); }
    void fetchMore();
    // Stops the running call (the server cancels the statement) and closes the cursor.
    void cancel();

    const QList<SqlField> &fields() const { return m_fields; }
    QString command() const { return m_command; }
    qint64 rowsAffected() const { return m_rowsAffected; }
    qint64 rowsDelivered() const { return m_delivered; }
    QString sql() const { return m_sql; }
    QString databaseId() const { return m_databaseId; }

Q_SIGNALS:
    // The first page arrived: fields(), command() and rowsAffected() are known.
    void started();
    void rowsArrived(const Sandbox::SqlRows &rows);
    // No more rows will come.
    void finished();
    void failed(const Sandbox::Error &error);

private:
    void onPage(Result<QueryPage> page);
    void closeCursor();

    DatabasesService *m_service; // not owned
    QString m_databaseId;
    QString m_sql;
    QJsonArray m_params;
    int m_pageSize = 1000;
    int m_timeoutMs = 60000;
    RpcCall m_call;
    QString m_cursor;
    QList<SqlField> m_fields;
    QString m_command;
    qint64 m_rowsAffected = 0;
    qint64 m_delivered = 0;
    bool m_started = false;
    bool m_failed = false;
    bool m_gotFirst = false;
};

} // namespace Sandbox
