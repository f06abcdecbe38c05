#pragma once

#include "activitytoken.h"
#include "databasebackend.h"

#include <QHash>
#include <QJsonArray>
#include <QString>

#include <functional>
#include <memory>
#include <optional>

namespace Sandbox::Engine {

// A handle callers cannot guess: `prefix` and 96 random bits in hex (cur_…, tx_…).
QString newHandleId(const QString &prefix);

// The open cursors of databases.query (docs/protocol.md 4.3.1), by cursor id: a few per database
// (the least recently used closes first), closed when idle too long. Each keeps its database awake
// (its ActivityToken) until it closes.
class CursorRegistry
{
public:
    struct Limits
    {
        int perDatabase = 16;
        qint64 idleMs = 5 * 60 * 1000;
    };
    // The next page of a cursor, asked from its server as soon as the previous page was
    // answered, so that the server reads while the client takes the page it has: at most one
    // page (within PageLimits) per cursor.
    struct ReadAhead
    {
        bool running = true;
        std::optional<Result<Page>> page; // arrived, not taken yet
        PageDone waiter;                  // a fetch that came before the page
        CancelFn cancel;                  // while running
    };
    struct Cursor
    {
        QString id;
        QString keyId;
        QString databaseId;
        QString backendCursor;
        QJsonArray fields;
        bool objectRows = true;
        qint64 lastUsed = 0;
        bool fetching = false;
        ActivityToken activity;
        int pageSize = PageLimits::kDefaultRows; // of the last call: the page read ahead
        std::shared_ptr<ReadAhead> ahead;
        QJsonArray carry;        // rows read ahead beyond a smaller fetch's pageSize
        bool serverDone = false; // the server's cursor has no more rows (carry may)
    };
    // The server a cursor's database has now (null: none); a cursor closes on it.
    using BackendOf = std::function<DatabaseBackend *(const QString &databaseId)>;

    CursorRegistry(Limits limits, BackendOf backendOf);
    ~CursorRegistry();
    CursorRegistry(const CursorRegistry &) = delete;
    CursorRegistry &operator=(const CursorRegistry &) = delete;

    // Registers the cursor (a fresh id, used now) and answers its id; when its database has
    // perDatabase cursors already, the least recently used ones close first.
    QString open(Cursor cursor);
    // The cursor `id` if it is the caller's and its database's, else null.
    Cursor *find(const QString &id, const QString &keyId, const QString &databaseId) const;
    Cursor *get(const QString &id) const { return m_cursors.value(id).get(); }
    void touch(Cursor *cursor) const;
    // Closes it on its server (if there is one) and ends its activity.
    void close(const QString &id);
    QStringList idsOf(const QString &databaseId) const;
    // Forgets the cursors of a deleted database: no server to tell.
    void drop(const QString &databaseId);
    // Closes the cursors idle for longer than Limits::idleMs (a fetch running is not idle).
    void expire();

private:
    Limits m_limits;
    BackendOf m_backendOf;
    QHash<QString, std::shared_ptr<Cursor>> m_cursors;
};

} // namespace Sandbox::Engine
