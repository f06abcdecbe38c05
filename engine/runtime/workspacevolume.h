#pragma once

#include "cgroup.h"
#include "protocol/result.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>
#include <sys/types.h>

namespace Sandbox::Engine {

// Everything a sandbox can write on the host's disk, in one place: STATE/volume holds its
// `workspace/` (bound at /workspace), `home/` (/home/agent) and `run/` (/run/db). Where the engine
// can mount images (root and loop devices), STATE/volume is the mount point of an ext4 image of
// the sandbox's size, so that the three count against one disk limit (docs/protocol.md, 6); the
// image's root and its lost+found stay root's and are never seen inside the sandbox. Elsewhere
// STATE/volume is a plain directory and the disk limit is not enforced.
//
// Every step that touches a tree the sandbox could have written is fd-relative and never follows
// a link (HostFs), and runs off the event loop. Images are sparse: they take the space their files
// take, up to the cap.
class WorkspaceVolume final : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(Result<bool>)>;

    enum class Tree { Workspace, Home, Run };
    // STATE/volume/workspace, .../home, .../run.
    static QString treePath(const QString &volumeDir, Tree tree);

    // True when this process can make and mount images (root and /dev/loop-control).
    static bool isSupported();
    // The image's size for a sandbox of these limits: its disk limit less what its two tmpfs
    // mounts (/tmp and /dev/shm) may hold, so that all it can write stays within diskMb.
    static qint64 imageMb(const ResourceLimits &limits);
    // Whether the sandbox in `stateDir` has, or gets on its next start, an image (when images are
    // supported): yes unless it kept its files in plain directories before images existed.
    static bool usesImage(const QString &stateDir);
    // The image file of the sandbox in `stateDir`.
    static QString imagePath(const QString &stateDir);

    struct Layout
    {
        QString stateDir;  // the sandbox's own directory (root's)
        QString volumeDir; // STATE/volume
        QString image;     // the ext4 image; empty: plain directories
        qint64 imageMb = 0;
        uid_t uid = 0; // the owner of the three trees
        gid_t gid = 0;
        QString poolDir; // formatted spare images wait here, one per size
    };

    explicit WorkspaceVolume(Layout layout, QObject *parent = nullptr);
    ~WorkspaceVolume() override;

    // Creates the image on first use and mounts it, then makes sure the three trees are there,
    // owned by the sandbox's uid (moving what an older engine kept elsewhere). Asynchronous.
    void mount(Done done);
    // True while mount() is in progress.
    bool isBusy() const { return m_busy; }
    // Detaches the mount (lazily, so that it goes even while a process still holds it).
    void unmount();
    // Hands the mount over to the caller, who unmounts it (off the event loop: the file system's
    // final flush can take a while): the mount point, or empty when nothing is mounted.
    QString release();

    // Formats a spare image of `sizeMb` in `poolDir` in the background unless one is there
    // (the mkfs process is a child of `owner`).
    static void refillPool(const QString &poolDir, qint64 sizeMb, QObject *owner);
    // Removes spare images of sizes not in `sizesMb` (made by an older engine).
    static void prunePool(const QString &poolDir, const QList<qint64> &sizesMb);

    // Unmounts whatever is mounted on `mountPoint` (after a crash of the engine).
    static void forceUnmount(const QString &mountPoint);
    static bool isMounted(const QString &mountPoint);

    // Moves the directory `stateDir` into `trashDir` at once and deletes it there off the event
    // loop, fd-relative, never following a link; `done` gets the outcome (in `context`'s thread).
    // Whatever a crash leaves in `trashDir` goes with emptyTrash().
    static void discard(const QString &stateDir, const QString &trashDir, QObject *context,
                        std::function<void(Result<bool>)> done);
    static void emptyTrash(const QString &trashDir, QObject *context);

private:
    void prepare(Done done);
    void run(const QString &program, const QStringList &args,
             std::function<void(Result<bool>)> next);
    static void makeSpare(const QString &poolDir, qint64 sizeMb, int n, QObject *owner);

    Layout m_layout;
    bool m_mounted = false;
    bool m_busy = false;
    // Set when this object goes while a mount runs on another thread: that mount is undone.
    std::shared_ptr<std::atomic<bool>> m_abandoned = std::make_shared<std::atomic<bool>>(false);
    QPointer<QThread> m_worker; // the mount's thread while it runs (it deletes itself)
};

} // namespace Sandbox::Engine
