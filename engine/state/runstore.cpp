#include "runstore.h"

#include "sqlitestatement.h"
#include "statedb.h"

#include <QJsonDocument>
#include <QLoggingCategory>
#include <QRandomGenerator>

#include <vector>

Q_LOGGING_CATEGORY(lcRunStore, "sandboxd.runs")

namespace Sandbox::Engine {

namespace {

constexpr qsizetype kListedResultChars = 4000;

QByteArray compact(const QJsonValue &v)
{
    if (v.isObject())
        return QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
    if (v.isArray())
        return QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact);
    return {};
}

QJsonValue parsed(const QString &text)
{
    if (text.isEmpty())
        return QJsonValue::Null;
    const QJsonDocument d = QJsonDocument::fromJson(text.toUtf8());
    if (d.isObject())
        return d.object();
    if (d.isArray())
        return d.array();
    return QJsonValue::Null;
}

QString isoTime(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs);
}

QString cut(const QString &text, qsizetype chars, bool *truncated = nullptr)
{
    if (text.size() <= chars)
        return text;
    if (truncated)
        *truncated = true;
    return text.left(chars);
}

// The answer as a run's record keeps it: no raw stdout, the final texts cut.
QJsonObject keptAnswer(QJsonObject answer, qsizetype resultChars)
{
    answer.remove(QStringLiteral("stdout"));
    answer.remove(QStringLiteral("stdoutTruncated"));
    bool truncated = false;
    answer.insert(QStringLiteral("result"),
                  cut(answer.value(QStringLiteral("result")).toString(), resultChars, &truncated));
    if (truncated)
        answer.insert(QStringLiteral("resultTruncated"), true);
    if (answer.contains(QStringLiteral("turns"))) {
        QJsonArray turns;
        for (const QJsonValue &t : answer.value(QStringLiteral("turns")).toArray())
            turns.append(keptAnswer(t.toObject(), kListedResultChars));
        answer.insert(QStringLiteral("turns"), turns);
    }
    return answer;
}

} // namespace

struct RunStore::Live
{
    QString runId;
    QString sandboxId;
    qint64 eventCount = 0; // stored or pending
    qint64 eventBytes = 0;
    qint64 dropped = 0;
    qint64 lastEventAt = 0;
    QString lastEventType;
    QJsonObject usage;
    QJsonValue costUsd = QJsonValue::Null;
    QString sessionId;
    std::vector<std::pair<qint64, QByteArray>> pending; // seq, event JSON
    bool dirty = false;
};

Result<std::unique_ptr<RunStore>> RunStore::open(const QString &path, Limits limits)
{
    Result<sqlite3 *> db = StateDb::open(
        path, QStringLiteral("runs"),
        {
            "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL,"
            " method TEXT NOT NULL, prompts TEXT NOT NULL, options TEXT NOT NULL,"
            " status TEXT NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER,"
            " answer TEXT, error TEXT, session_id TEXT NOT NULL DEFAULT '', usage TEXT,"
            " cost_usd REAL, needs_input TEXT, event_count INTEGER NOT NULL DEFAULT 0,"
            " event_bytes INTEGER NOT NULL DEFAULT 0, events_dropped INTEGER NOT NULL DEFAULT 0,"
            " last_event_at INTEGER, last_event_type TEXT NOT NULL DEFAULT '',"
            " stream_id TEXT NOT NULL DEFAULT '')",
            "CREATE INDEX IF NOT EXISTS runs_by_sandbox ON runs (sandbox_id, started_at)",
            "CREATE TABLE IF NOT EXISTS run_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " event TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
        });
    if (!db)
        return db.error();
    std::unique_ptr<RunStore> store(new RunStore(*db, limits));
    // Runs the previous engine left running ended with it.
    if (auto ok = store->exec("UPDATE runs SET status = 'interrupted', ended_at ="
                              " COALESCE(last_event_at, started_at) WHERE status = 'running'");
        !ok)
        return ok.error();
    return store;
}

Result<std::unique_ptr<RunStore>> RunStore::open(const QString &path)
{
    return open(path, Limits{});
}

RunStore::RunStore(sqlite3 *db, Limits limits)
    : m_db(db)
    , m_limits(limits)
{
    m_flushTimer.setSingleShot(true);
    m_flushTimer.setInterval(m_limits.flushIntervalMs);
    connect(&m_flushTimer, &QTimer::timeout, this, &RunStore::flush);
}

RunStore::~RunStore()
{
    flush();
    sqlite3_close(m_db);
}

Result<bool> RunStore::exec(const char *sql) const
{
    return StateDb::exec(m_db, sql, QStringLiteral("runs"));
}

QString RunStore::begin(const NewRun &run)
{
    prune(run.sandboxId);
    quint64 r;
    QRandomGenerator::system()->fillRange(&r, 1);
    const QString runId = QStringLiteral("run_") + QString::number(r, 16).rightJustified(16, u'0');
    QJsonArray prompts;
    for (const QString &p : run.prompts)
        prompts.append(cut(p, m_limits.promptChars));
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    SqliteStatement s(m_db,
                      "INSERT INTO runs (run_id, sandbox_id, method, prompts, options, status,"
                      " started_at, stream_id) VALUES (?,?,?,?,?,'running',?,?)");
    s.bind(1, runId);
    s.bind(2, run.sandboxId);
    s.bind(3, run.method);
    s.bind(4, QString::fromUtf8(compact(prompts)));
    s.bind(5, QString::fromUtf8(compact(run.options)));
    s.bind(6, now);
    s.bind(7, run.streamId);
    if (!s.ok() || s.step() != SQLITE_DONE)
        qCWarning(lcRunStore) << "cannot record a run:" << sqlite3_errmsg(m_db);
    auto live = std::make_shared<Live>();
    live->runId = runId;
    live->sandboxId = run.sandboxId;
    m_live.insert(runId, live);
    return runId;
}

void RunStore::event(const QString &runId, const QJsonObject &event)
{
    const auto live = m_live.value(runId);
    if (!live)
        return;
    const QString type = event.value(QStringLiteral("type")).toString();
    live->lastEventAt = QDateTime::currentMSecsSinceEpoch();
    live->lastEventType = type;
    live->dirty = true;
    if (type == QLatin1String("usage")) {
        QJsonObject usage = event;
        usage.remove(QStringLiteral("type"));
        usage.remove(QStringLiteral("turn"));
        live->costUsd = usage.take(QStringLiteral("costUsd"));
        live->usage = usage;
    } else if (type == QLatin1String("session")) {
        live->sessionId = event.value(QStringLiteral("sessionId")).toString();
    }
    QByteArray json = compact(event);
    if (live->eventCount >= m_limits.eventsPerRun
        || live->eventBytes + json.size() > m_limits.eventBytesPerRun) {
        ++live->dropped;
    } else {
        live->eventBytes += json.size();
        live->pending.emplace_back(++live->eventCount, std::move(json));
    }
    if (!m_flushTimer.isActive())
        m_flushTimer.start();
}

void RunStore::writeLive(Live &live)
{
    if (!live.dirty)
        return;
    if (!live.pending.empty()) {
        SqliteStatement ins(m_db, "INSERT OR REPLACE INTO run_events (run_id, seq, event) "
                                  "VALUES (?,?,?)");
        for (auto &[seq, json] : live.pending) {
            ins.reset();
            ins.bind(1, live.runId);
            ins.bind(2, seq);
            ins.bind(3, QString::fromUtf8(json));
            if (!ins.ok() || ins.step() != SQLITE_DONE) {
                qCWarning(lcRunStore) << "cannot store an event:" << sqlite3_errmsg(m_db);
                break;
            }
        }
        live.pending.clear();
    }
    SqliteStatement up(m_db, "UPDATE runs SET event_count = ?, event_bytes = ?, events_dropped = ?,"
                             " last_event_at = ?, last_event_type = ?, usage = ?, cost_usd = ?,"
                             " session_id = ? WHERE run_id = ?");
    up.bind(1, live.eventCount);
    up.bind(2, live.eventBytes);
    up.bind(3, live.dropped);
    up.bind(4, live.lastEventAt);
    up.bind(5, live.lastEventType);
    up.bind(6, QString::fromUtf8(compact(live.usage)));
    if (live.costUsd.isDouble())
        up.bind(7, live.costUsd.toDouble());
    else
        up.bindNull(7);
    up.bind(8, live.sessionId);
    up.bind(9, live.runId);
    if (!up.ok() || up.step() != SQLITE_DONE)
        qCWarning(lcRunStore) << "cannot update a run:" << sqlite3_errmsg(m_db);
    live.dirty = false;
}

void RunStore::flush()
{
    m_flushTimer.stop();
    bool any = false;
    for (const auto &live : std::as_const(m_live))
        any = any || live->dirty;
    if (!any)
        return;
    (void)exec("BEGIN");
    for (const auto &live : std::as_const(m_live))
        writeLive(*live);
    (void)exec("COMMIT");
}

void RunStore::finish(const QString &runId, const QString &status, const QJsonObject &answer,
                      const QJsonObject &error)
{
    const auto live = m_live.value(runId);
    if (!live)
        return;
    flush();
    m_live.remove(runId);
    const QJsonObject kept = answer.isEmpty() ? QJsonObject()
                                              : keptAnswer(answer, m_limits.resultChars);
    QJsonObject usage = live->usage;
    QJsonValue cost = live->costUsd;
    if (!kept.isEmpty()) {
        usage = kept.value(QStringLiteral("usage")).toObject();
        cost = kept.value(QStringLiteral("costUsd"));
    }
    const QString sessionId = kept.value(QStringLiteral("sessionId")).toString(live->sessionId);
    SqliteStatement s(m_db,
                      "UPDATE runs SET status = ?, ended_at = ?, answer = ?, error = ?, usage = ?,"
                      " cost_usd = ?, needs_input = ?, session_id = ? WHERE run_id = ?");
    s.bind(1, status);
    s.bind(2, QDateTime::currentMSecsSinceEpoch());
    if (kept.isEmpty())
        s.bindNull(3);
    else
        s.bind(3, QString::fromUtf8(compact(kept)));
    if (error.isEmpty())
        s.bindNull(4);
    else
        s.bind(4, QString::fromUtf8(compact(error)));
    s.bind(5, QString::fromUtf8(compact(usage)));
    if (cost.isDouble())
        s.bind(6, cost.toDouble());
    else
        s.bindNull(6);
    const QJsonValue needs = kept.value(QStringLiteral("needsInput"));
    if (needs.isObject())
        s.bind(7, QString::fromUtf8(compact(needs)));
    else
        s.bindNull(7);
    s.bind(8, sessionId);
    s.bind(9, runId);
    if (!s.ok() || s.step() != SQLITE_DONE)
        qCWarning(lcRunStore) << "cannot finish a run:" << sqlite3_errmsg(m_db);
}

void RunStore::prune(const QString &sandboxId)
{
    // Oldest first, finished runs only: a run in progress is never cut under its client.
    struct Row
    {
        QString runId;
        qint64 bytes;
    };
    std::vector<Row> rows;
    qint64 totalBytes = 0;
    {
        SqliteStatement s(m_db, "SELECT run_id, event_bytes FROM runs WHERE sandbox_id = ?"
                                " ORDER BY started_at, rowid");
        s.bind(1, sandboxId);
        while (s.ok() && s.step() == SQLITE_ROW) {
            rows.push_back({s.text(0), s.integer(1)});
            totalBytes += s.integer(1);
        }
    }
    qint64 count = qint64(rows.size());
    QStringList victims;
    for (const Row &r : rows) {
        if (count < m_limits.runsPerSandbox && totalBytes <= m_limits.eventBytesPerSandbox)
            break;
        if (m_live.contains(r.runId))
            continue;
        victims.append(r.runId);
        --count;
        totalBytes -= r.bytes;
    }
    if (victims.isEmpty())
        return;
    (void)exec("BEGIN");
    for (const QString &runId : std::as_const(victims)) {
        for (const char *sql :
             {"DELETE FROM run_events WHERE run_id = ?", "DELETE FROM runs WHERE run_id = ?"}) {
            SqliteStatement d(m_db, sql);
            d.bind(1, runId);
            if (!d.ok() || d.step() != SQLITE_DONE)
                qCWarning(lcRunStore) << "cannot prune a run:" << sqlite3_errmsg(m_db);
        }
    }
    (void)exec("COMMIT");
    Q_EMIT runsPruned(sandboxId, victims);
}

QJsonObject RunStore::runFromRow(const SqliteStatement &s) const
{
    // Columns: see the SELECT in runs().
    const QString runId = s.text(0);
    const QJsonArray prompts = parsed(s.text(2)).toArray();
    QJsonObject run{{QStringLiteral("runId"), runId},
                    {QStringLiteral("method"), s.text(1)},
                    {QStringLiteral("prompt"),
                     prompts.isEmpty() ? QJsonValue(QString()) : prompts.last()},
                    {QStringLiteral("options"), parsed(s.text(3))},
                    {QStringLiteral("status"), s.text(4)},
                    {QStringLiteral("startedAt"), isoTime(s.integer(5))},
                    {QStringLiteral("endedAt"),
                     s.isNull(6) ? QJsonValue() : QJsonValue(isoTime(s.integer(6)))},
                    {QStringLiteral("sessionId"),
                     s.text(9).isEmpty() ? QJsonValue() : QJsonValue(s.text(9))},
                    {QStringLiteral("eventCount"), double(s.integer(13))},
                    {QStringLiteral("eventsDropped"), double(s.integer(14))},
                    {QStringLiteral("lastEventAt"),
                     s.isNull(15) ? QJsonValue() : QJsonValue(isoTime(s.integer(15)))},
                    {QStringLiteral("lastEventType"),
                     s.text(16).isEmpty() ? QJsonValue() : QJsonValue(s.text(16))},
                    {QStringLiteral("streamId"),
                     s.text(17).isEmpty() ? QJsonValue() : QJsonValue(s.text(17))}};
    if (prompts.size() > 1 || s.text(1) == QLatin1String("agents.runConversation"))
        run.insert(QStringLiteral("prompts"), prompts);
    QJsonObject answer = parsed(s.text(7)).toObject();
    if (!answer.isEmpty()) {
        bool truncated = false;
        answer.insert(QStringLiteral("result"),
                      cut(answer.value(QStringLiteral("result")).toString(), kListedResultChars,
                          &truncated));
        if (truncated)
            answer.insert(QStringLiteral("resultTruncated"), true);
    }
    run.insert(QStringLiteral("answer"), answer.isEmpty() ? QJsonValue() : QJsonValue(answer));
    run.insert(QStringLiteral("error"), parsed(s.text(8)));
    run.insert(QStringLiteral("usage"), parsed(s.text(10)).toObject());
    run.insert(QStringLiteral("costUsd"), s.isNull(11) ? QJsonValue() : QJsonValue(s.real(11)));
    run.insert(QStringLiteral("needsInput"), parsed(s.text(12)));
    run.insert(QStringLiteral("durationMs"),
               s.isNull(6) ? QJsonValue()
                           : QJsonValue(answer.value(QStringLiteral("durationMs"))
                                            .toDouble(double(s.integer(6) - s.integer(5)))));
    if (const auto live = m_live.value(runId)) {
        run.insert(QStringLiteral("eventCount"), double(live->eventCount));
        run.insert(QStringLiteral("eventsDropped"), double(live->dropped));
        if (live->lastEventAt > 0) {
            run.insert(QStringLiteral("lastEventAt"), isoTime(live->lastEventAt));
            run.insert(QStringLiteral("lastEventType"), live->lastEventType);
        }
        run.insert(QStringLiteral("usage"), live->usage);
        run.insert(QStringLiteral("costUsd"), live->costUsd);
        if (!live->sessionId.isEmpty())
            run.insert(QStringLiteral("sessionId"), live->sessionId);
    }
    return run;
}

QJsonArray RunStore::runs(const QString &sandboxId, int limit) const
{
    QJsonArray out;
    SqliteStatement s(m_db, "SELECT run_id, method, prompts, options, status, started_at, ended_at,"
                            " answer, error, session_id, usage, cost_usd, needs_input, event_count,"
                            " events_dropped, last_event_at, last_event_type, stream_id FROM runs"
                            " WHERE sandbox_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?");
    s.bind(1, sandboxId);
    s.bind(2, qint64(limit));
    while (s.ok() && s.step() == SQLITE_ROW)
        out.append(runFromRow(s));
    return out;
}

bool RunStore::hasRun(const QString &sandboxId, const QString &runId) const
{
    SqliteStatement s(m_db, "SELECT 1 FROM runs WHERE run_id = ? AND sandbox_id = ?");
    s.bind(1, runId);
    s.bind(2, sandboxId);
    return s.ok() && s.step() == SQLITE_ROW;
}

Result<QJsonObject> RunStore::events(const QString &sandboxId, const QString &runId, qint64 after,
                                     int limit, qint64 maxBytes) const
{
    qint64 last = 0;
    bool done = true;
    {
        SqliteStatement s(m_db, "SELECT event_count, status FROM runs WHERE run_id = ? AND "
                                "sandbox_id = ?");
        s.bind(1, runId);
        s.bind(2, sandboxId);
        if (!s.ok() || s.step() != SQLITE_ROW)
            return Error::notFound(QStringLiteral("run %1 of sandbox %2").arg(runId, sandboxId));
        last = s.integer(0);
        done = s.text(1) != QLatin1String("running");
    }
    const auto live = m_live.value(runId);
    if (live) {
        last = live->eventCount;
        done = false;
    }
    QJsonArray events;
    qint64 bytes = 0;
    qint64 lastSent = after;
    const auto add = [&](qint64 seq, const QByteArray &json) {
        if (events.size() >= limit || (bytes > 0 && bytes + json.size() > maxBytes))
            return false;
        bytes += json.size();
        events.append(QJsonObject{{QStringLiteral("seq"), double(seq)},
                                  {QStringLiteral("event"), parsed(QString::fromUtf8(json))}});
        lastSent = seq;
        return true;
    };
    bool full = false;
    {
        SqliteStatement s(m_db, "SELECT seq, event FROM run_events WHERE run_id = ? AND seq > ?"
                                " ORDER BY seq");
        s.bind(1, runId);
        s.bind(2, after);
        while (s.ok() && s.step() == SQLITE_ROW) {
            if (!add(s.integer(0), s.text(1).toUtf8())) {
                full = true;
                break;
            }
        }
    }
    if (live && !full) {
        for (const auto &[seq, json] : live->pending) {
            if (seq <= lastSent)
                continue;
            if (!add(seq, json))
                break;
        }
    }
    return QJsonObject{{QStringLiteral("runId"), runId},
                       {QStringLiteral("events"), events},
                       {QStringLiteral("last"), double(last)},
                       {QStringLiteral("done"), done},
                       {QStringLiteral("more"), lastSent < last}};
}

void RunStore::removeSandbox(const QString &sandboxId)
{
    for (auto it = m_live.begin(); it != m_live.end();) {
        if ((*it)->sandboxId == sandboxId)
            it = m_live.erase(it);
        else
            ++it;
    }
    (void)exec("BEGIN");
    for (const char *sql : {"DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs "
                            "WHERE sandbox_id = ?)",
                            "DELETE FROM runs WHERE sandbox_id = ?"}) {
        SqliteStatement d(m_db, sql);
        d.bind(1, sandboxId);
        if (!d.ok() || d.step() != SQLITE_DONE)
            qCWarning(lcRunStore) << "cannot forget the runs of" << sandboxId << ":"
                                  << sqlite3_errmsg(m_db);
    }
    (void)exec("COMMIT");
}

} // namespace Sandbox::Engine
