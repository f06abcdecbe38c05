#pragma once

#include "protocol/result.h"

#include <QJsonObject>
#include <QString>

#include <sys/types.h>

namespace Sandbox::Engine {

// What an agent's run changed in /workspace (docs/protocol.md 4.7.2): the engine records the
// workspace before a run and after it, and the difference is the run's changes, whatever the CLI
// reports. The records live in the engine's own directory for the sandbox (`storeDir`, never a
// path the sandbox can write): a manifest per run and phase (path → size, times, mode and the
// SHA-256 of the content) and the contents by their hash, shared between runs, so that an
// unchanged file is read and stored once. The workspace is only read fd-relative, never through
// a link, with the sandbox's own file permissions (HostFs, FsUidGuard).
//
// Bounded: at most `maxFiles` entries and `maxBytes` of content per record, a file's content only
// up to `maxFileBytes` (a larger one is compared by size and times and cannot be reverted), the
// records of the newest `runsKept` runs and at most `storeBytes` of contents per sandbox (older
// runs' records go first). `.git` directories are not recorded.
//
// Every function blocks on the file system: call them off the event loop. Thread-safe as long as
// one sandbox's store is used by one call at a time.
class TurnSnapshots final
{
public:
    struct Limits
    {
        int maxFiles = 10000;
        qint64 maxBytes = 64 * 1024 * 1024;
        qint64 maxFileBytes = 1024 * 1024;
        int maxDepth = 64;
        int maxDirectories = 10000; // walked per record: empty ones cost a walk too
        int runsKept = 50;
        qint64 storeBytes = 256 * 1024 * 1024;
        qint64 diffBytesPerFile = 256 * 1024;
        qint64 diffBytesPerAnswer = 8 * 1024 * 1024;
    };
    enum class Phase { Before, After };

    TurnSnapshots(QString storeDir, uid_t uid, gid_t gid, Limits limits);
    TurnSnapshots(QString storeDir, uid_t uid, gid_t gid)
        : TurnSnapshots(std::move(storeDir), uid, gid, Limits{})
    {}

    static bool isValidRunId(const QString &runId);

    // Records the workspace (`workspaceFd`, its root) for `runId`. `cwd` is the run's working
    // directory (/workspace/...): the git repository it is in is named in the record.
    Result<bool> take(int workspaceFd, const QString &runId, Phase phase, const QString &cwd) const;
    // agents.runChanges' answer: what changed between the run's two records (or, while the run
    // has no "after" yet, an answer with `done: false` and no files).
    Result<QJsonObject> changes(const QString &runId) const;
    // agents.revertFile: puts `path` (/workspace/...) back as it was before the run — its
    // content, or no file when the run made it.
    Result<QJsonObject> revert(int workspaceFd, const QString &runId, const QString &path) const;

private:
    QString manifestPath(const QString &runId, Phase phase) const;
    QString blobPath(const QByteArray &hash) const;
    void prune() const;

    QString m_dir;
    uid_t m_uid;
    gid_t m_gid;
    Limits m_limits;
};

} // namespace Sandbox::Engine
