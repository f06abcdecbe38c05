#pragma once

#include <QStringList>

namespace Sandbox::Engine::Bubblewrap {

// The start of every bubblewrap command line the engine runs, shared by the sandboxes and the
// doctor's probe so that the probe asks the kernel for exactly what a sandbox needs: every
// namespace (a user namespace too, and none nested inside), gone with its parent, a session of
// its own, and the host's /usr read-only with the usual links to it (/bin, /sbin, /lib, /lib64).
QStringList isolationArguments();

} // namespace Sandbox::Engine::Bubblewrap
