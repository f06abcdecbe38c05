#pragma once

#include "protocol/result.h"

#include <QHash>
#include <QObject>
#include <QString>

#include <functional>
#include <sys/types.h>

class QProcess;

namespace Sandbox::Engine {

class Methods;
class SandboxManager;

// `sandbox.archive` and `sandbox.restore` (docs/protocol.md 4.5): a stopped sandbox's /workspace
// as one gzip'd tar, handed out and taken back in chunks. The Worker saves a container's
// workspace this way before the container sleeps (a container's disk does not outlive it) and
// puts it back into the next one.
//
// tar runs as the sandbox's uid in a clean environment, and changes into the workspace only
// after dropping privileges: the engine never walks the sandbox's tree itself. The archive
// (and a restore's upload) is an engine-owned file in the sandbox's state directory, bounded by
// the sandbox's disk size.
class WorkspaceArchiver final : public QObject
{
    Q_OBJECT

public:
    WorkspaceArchiver(Methods *methods, SandboxManager *sandboxes, QObject *parent = nullptr);
    ~WorkspaceArchiver() override;

    static constexpr qint64 kMaxChunk = 8 * 1024 * 1024;
    static constexpr qint64 kDefaultChunk = 4 * 1024 * 1024;

private:
    struct Target
    {
        QString id;
        QString workspace;
        QString stateDir;
        uid_t uid = 0;
        gid_t gid = 0;
        bool drop = false;
        qint64 maxBytes = 0;
    };
    using Done = std::function<void(Result<QJsonValue>)>;

    // The sandbox whose workspace an archive or a restore may start on: stopped, its workspace a
    // plain directory, and no tar of this service running for it now.
    Result<Target> idleSandbox(const QString &keyId, const QString &id) const;
    void archive(const QJsonObject &params, const QString &keyId, Done done);
    void restore(const QJsonObject &params, const QString &keyId, Done done);
    // Runs `script` with /bin/sh as the sandbox's uid inside its workspace; stdin from `input`
    // (or /dev/null), stdout into `output` (or discarded), at most target.maxBytes of it.
    void runAsSandbox(const Target &target, const QString &script, const QString &input,
                      const QString &output, std::function<void(Result<bool>)> done);

    Methods *m_methods;                   // not owned
    SandboxManager *m_sandboxes;          // not owned
    QHash<QString, QProcess *> m_running; // sandbox id -> its tar (owned, children)
};

} // namespace Sandbox::Engine
