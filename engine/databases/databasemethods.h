#pragma once

#include "api/methods.h"
#include "calldeadlines.h"
#include "cursorregistry.h"

#include <QHash>
#include <QObject>
#include <QString>

#include <memory>
#include <utility>

class QTimer;

namespace Sandbox::Engine {

class DatabaseHost;

// The databases.* methods on a database's server (docs/protocol.md 4.3): SQL with cursors and
// statement timeouts, single-call and interactive transactions, the catalog and export. Reads
// each call's params into a typed call, gets the server from its DatabaseHost and shapes the
// answer. The adapter registers them and keeps the lifecycle.
class DatabaseMethods final : public QObject
{
    Q_OBJECT

public:
    struct Limits
    {
        CursorRegistry::Limits cursors;
        int transactionsPerDatabase = 4;
        qint64 cancelGraceMs = 5000; // after a timeout's cancel, the server's time to give up
        int sweepMs = 30000;         // how often idle cursors and transactions are looked for
    };
    using Reply = Methods::Reply;

    explicit DatabaseMethods(DatabaseHost *host, QObject *parent = nullptr);
    DatabaseMethods(DatabaseHost *host, Limits limits, QObject *parent = nullptr);
    ~DatabaseMethods() override;

    // Every method by name, for Methods::add.
    QList<std::pair<QString, Methods::Handler>> handlers();

    // The server of `databaseId` stopped or died: its transactions are gone, its cursors close.
    void serverGone(const QString &databaseId);
    // The database was deleted: its cursors and transactions are forgotten.
    void removed(const QString &databaseId);
    // Closes idle cursors and rolls back idle transactions (also every Limits::sweepMs).
    void sweep();

private:
    struct QueryCall;
    struct OpenTransaction;

    void query(const QString &method, const QJsonObject &params, const CallContext &ctx,
               const Reply &reply);
    void runQuery(const QueryCall &call, const CallContext &ctx, const Reply &reply);
    void fetch(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Asks the cursor's server for its next page now, before the client's fetch.
    void readAhead(const QString &cursorId);
    // The next page of a cursor for a fetch of `pageSize` rows: rows read ahead, the page on its
    // way, or a new fetch from the server.
    CancelFn nextPage(const QString &cursorId, int pageSize, PageDone done);
    void closeCursor(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    void transaction(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Interactive transactions: databases.begin, then calls with `transaction`, then commit or
    // rollback (docs/protocol.md 4.3.2). Each holds one session of the server and keeps the
    // database awake; an idle one is rolled back.
    void begin(const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    void finish(bool commit, const QJsonObject &params, const CallContext &ctx, const Reply &reply);
    // Forgets an interactive transaction that ended (its backend session is gone or released).
    void forgetTransaction(const QString &txId);
    void expireTransactions();
    OpenTransaction *transactionOf(const QString &txId, const CallContext &ctx,
                                   const QString &databaseId) const;

    DatabaseHost *m_host; // not owned
    Limits m_limits;
    CursorRegistry m_cursors;
    QHash<QString, std::shared_ptr<OpenTransaction>> m_transactions; // by transaction id
    QTimer *m_sweep;                                                 // owned (child)
    CallDeadlines m_deadlines; // the statement timeouts of the calls in flight
};

} // namespace Sandbox::Engine
