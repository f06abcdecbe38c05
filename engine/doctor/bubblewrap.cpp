#include "bubblewrap.h"

namespace Sandbox::Engine::Bubblewrap {

QStringList isolationArguments()
{
    return {
        QStringLiteral("--unshare-all"),
        QStringLiteral("--unshare-user"),
        QStringLiteral("--disable-userns"),
        QStringLiteral("--die-with-parent"),
        QStringLiteral("--new-session"),
        QStringLiteral("--ro-bind"),
        QStringLiteral("/usr"),
        QStringLiteral("/usr"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/bin"),
        QStringLiteral("/bin"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/sbin"),
        QStringLiteral("/sbin"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/lib"),
        QStringLiteral("/lib"),
        QStringLiteral("--symlink"),
        QStringLiteral("usr/lib64"),
        QStringLiteral("/lib64"),
    };
}

} // namespace Sandbox::Engine::Bubblewrap
