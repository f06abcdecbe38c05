#pragma once

#include "protocol/result.h"

#include <QDateTime>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <memory>

struct sqlite3;

namespace Sandbox::Engine {

// The transcripts of agent runs (docs/protocol.md 4.7.1: agents.runs, agents.runEvents): every
// run's prompt, options, answer and normalised events, per sandbox, in an SQLite file of the
// engine's own (never a path a sandbox can write). Bounded per run and per sandbox: the oldest
// runs of a sandbox go first, and a run's events beyond its cap are counted, not kept.
//
// Events are buffered and written in one transaction every flushIntervalMs (WAL, synchronous
// NORMAL: no fsync on the event loop; a crash of the engine loses at most that window, a crash of
// the machine at most the last checkpoint). Single-threaded, like the Registry.
class RunStore final : public QObject
{
    Q_OBJECT

public:
    struct Limits
    {
        int runsPerSandbox = 200;
        int eventsPerRun = 20000;
        qint64 eventBytesPerRun = 16 * 1024 * 1024;
        qint64 eventBytesPerSandbox = 64 * 1024 * 1024;
        int flushIntervalMs = 100;
        // How much of each prompt, and of the answer's `result`, a run's record keeps (the
        // events keep the whole final text).
        qsizetype promptChars = 16 * 1024;
        qsizetype resultChars = 64 * 1024;
    };

    struct NewRun
    {
        QString sandboxId;
        QString method; // agents.run | agents.runConversation | agents.runOnRepo
        QStringList prompts;
        QJsonObject options; // what the run asked for, secrets left out by the caller
        QString streamId;    // empty when the run does not stream (REST)
    };

    // `path` is created if missing. Runs left `running` by an engine that died become
    // `interrupted`.
    static Result<std::unique_ptr<RunStore>> open(const QString &path, Limits limits);
    static Result<std::unique_ptr<RunStore>> open(const QString &path);
    ~RunStore() override;

    // A new run of a sandbox; answers its id ("run_" + 16 hex digits).
    QString begin(const NewRun &run);
    // One normalised event, already scrubbed of secrets. Numbered 1, 2, ... per run.
    void event(const QString &runId, const QJsonObject &event);
    // The run's end: status `succeeded`, `failed` or `cancelled`; `answer` as sent (its stdout is
    // not kept), or {} when the request failed (then `error` says why).
    void finish(const QString &runId, const QString &status, const QJsonObject &answer,
                const QJsonObject &error = {});

    // Newest first, at most `limit`. Each: {runId, method, prompt, prompts?, options, status,
    // startedAt, endedAt, durationMs, sessionId, usage, costUsd, needsInput, answer, eventCount,
    // eventsDropped, lastEventAt, lastEventType, streamId}.
    QJsonArray runs(const QString &sandboxId, int limit) const;
    // Events with seq > after, at most `limit` and about `maxBytes`: {runId, events:[{seq,
    // event}], last, done, more}. NotFound for a run of another sandbox.
    Result<QJsonObject> events(const QString &sandboxId, const QString &runId, qint64 after,
                               int limit, qint64 maxBytes = 8 * 1024 * 1024) const;
    // The sandbox's run with that id exists.
    bool hasRun(const QString &sandboxId, const QString &runId) const;

    // Forgets every run of a sandbox (it was deleted).
    void removeSandbox(const QString &sandboxId);
    // Writes the buffered events now.
    void flush();

    const Limits &limits() const { return m_limits; }
    sqlite3 *database() const { return m_db; } // for the turn snapshots kept beside the runs

Q_SIGNALS:
    // Old runs of a sandbox were dropped to stay within the limits.
    void runsPruned(const QString &sandboxId, const QStringList &runIds);

private:
    struct Live; // a run in progress
    RunStore(sqlite3 *db, Limits limits);
    Result<bool> exec(const char *sql) const;
    void prune(const QString &sandboxId);
    void writeLive(Live &live);
    QJsonObject runFromRow(const class SqliteStatement &s) const;

    sqlite3 *m_db = nullptr; // owned
    Limits m_limits;
    QHash<QString, std::shared_ptr<Live>> m_live; // by run id
    QTimer m_flushTimer;
};

} // namespace Sandbox::Engine
