#pragma once

#include "protocol/result.h"

#include <QObject>
#include <QString>

#include <functional>
#include <sys/types.h>

class QProcess;

namespace Sandbox::Engine {

// A sandbox's bounded disk: its /workspace is an ext4 image of the size's diskMb, loop-mounted
// on the workspace directory while the sandbox runs (docs/protocol.md, 6). Needs root; where
// loop devices are not available the workspace is a plain directory and only /tmp is capped.
// Images are sparse: they take the space their files take, up to the cap.
class WorkspaceVolume final : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(Result<bool>)>;

    // True when this process can make and mount images (root and /dev/loop-control).
    static bool isSupported();

    // `poolDir` keeps one formatted spare image per size, so that a new sandbox need not wait
    // for mkfs.
    WorkspaceVolume(QString imagePath, QString mountPoint, qint64 sizeMb, uid_t uid, gid_t gid,
                    QString poolDir, QObject *parent = nullptr);
    ~WorkspaceVolume() override;

    // Creates the image on first use, then mounts it on the mount point. Asynchronous.
    void mount(Done done);
    // Detaches the mount (lazily, so that it goes even while a process still holds it).
    void unmount();

    // Formats a spare image of `sizeMb` in `poolDir` in the background unless one is there
    // (the mkfs process is a child of `owner`).
    static void refillPool(const QString &poolDir, qint64 sizeMb, QObject *owner);

    // Unmounts whatever is mounted on `mountPoint` (after a crash of the engine).
    static void forceUnmount(const QString &mountPoint);
    static bool isMounted(const QString &mountPoint);

private:
    void run(const QString &program, const QStringList &args,
             std::function<void(Result<bool>)> next);
    Result<bool> attach();
    static void makeSpare(const QString &poolDir, qint64 sizeMb, int n, QObject *owner);

    QString m_image;
    QString m_mountPoint;
    qint64 m_sizeMb;
    uid_t m_uid;
    gid_t m_gid;
    QString m_poolDir;
    bool m_mounted = false;
};

} // namespace Sandbox::Engine
