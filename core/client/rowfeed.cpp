#include "rowfeed.h"

#include "databasesservice.h"

namespace Sandbox {

RowFeed::RowFeed(DatabasesService *service, QString databaseId, QString sql, QJsonArray params,
                 QObject *parent)
    : QObject(parent)
    , m_service(service)
    , m_databaseId(std::move(databaseId))
    , m_sql(std::move(sql))
    , m_params(std::move(params))
{}

RowFeed::~RowFeed()
{
    m_call.cancel();
    closeCursor();
}

void RowFeed::start()
{
    if (m_started)
        return;
    m_started = true;
    QueryOptions options;
    options.pageSize = m_pageSize;
    options.timeoutMs = m_timeoutMs;
    m_call = m_service->queryPage(m_databaseId, m_sql, m_params, options, this,
                                  [this](Result<QueryPage> page) { onPage(std::move(page)); });
}

void RowFeed::fetchMore()
{
    if (!canFetchMore() || m_call.isPending())
        return;
    m_call = m_service->fetch(m_databaseId, m_cursor, m_pageSize, m_timeoutMs, this,
                              [this](Result<QueryPage> page) { onPage(std::move(page)); });
}

void RowFeed::cancel()
{
    m_call.cancel();
    closeCursor();
}

void RowFeed::closeCursor()
{
    if (m_cursor.isEmpty())
        return;
    // Fire and forget: the engine also closes idle cursors after a while.
    m_service->closeCursor(m_databaseId, std::exchange(m_cursor, {}), nullptr, [](Result<bool>) {})
        .detach();
}

void RowFeed::onPage(Result<QueryPage> page)
{
    if (!page) {
        m_failed = true;
        m_cursor.clear(); // the engine closes a cursor whose fetch failed
        Q_EMIT failed(page.error());
        return;
    }
    m_cursor = page->cursor;
    if (!m_gotFirst) {
        m_gotFirst = true;
        m_fields = page->fields;
        m_command = page->command;
        m_rowsAffected = page->rowsAffected;
        Q_EMIT started();
    }
    m_delivered += page->rows.size();
    if (!page->rows.isEmpty())
        Q_EMIT rowsArrived(page->rows);
    if (m_cursor.isEmpty())
        Q_EMIT finished();
}

} // namespace Sandbox
