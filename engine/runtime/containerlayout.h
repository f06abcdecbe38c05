#pragma once

#include "protocol/result.h"

#include <QString>

#include <sys/types.h>

namespace Sandbox::Engine {

struct SandboxSpec;

// --isolation container: the engine runs inside a container that is itself the sandbox's boundary
// (the Worker's images, one sandbox per container), with no mount namespace of its own to give.
// The paths a sandbox expects (/workspace, /opt/agent, /home/agent, /run/db, ...) become symlinks
// to their host directories, made by the engine (root) in root-owned directories that the
// sandbox's uid cannot change, so that commands and paths read as they do under bubblewrap.
namespace ContainerLayout {

// Links spec.workspaceDir at /workspace and every extra mount at its sandbox path, and gives the
// sandbox's uid its passwd/group entry in the container's /etc (when the engine is root). A path
// that exists as anything but a symlink, or a parent the sandbox's uid could change, is an error.
Result<bool> apply(const SandboxSpec &spec);

// Links `target` at `linkPath` (replacing a symlink atomically). Every existing parent of
// linkPath must be a directory owned by root (or by the engine's uid) that nobody else can write;
// missing parents are made 0755.
Result<bool> link(const QString &target, const QString &linkPath);

// Replaces the entry named `name` (and any entry of `id`) in an /etc/passwd- or /etc/group-style
// file with `entry`, atomically (a new file renamed over the old one).
Result<bool> replaceEntry(const QString &file, const QByteArray &name, uint id,
                          const QByteArray &entry);

// Kills every process of `uid` (there is no PID namespace or cgroup to take them along): a child
// that becomes `uid` sends SIGKILL to every process it may signal. Returns at once when uid is 0
// or the engine's own uid.
void killAllOf(uid_t uid);

} // namespace ContainerLayout

} // namespace Sandbox::Engine
