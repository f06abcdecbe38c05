#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs Sandbox Desktop on the local engine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
bin="${SANDBOX_BUILD_DIR:-$here/build}/bin"
if [ -x "$bin/sandbox-desktop" ]; then
  exec "$bin/sandbox-desktop" "$@"
fi
# Until the desktop app lands, the product is the engine and its command line.
echo "Starting the local engine; in another terminal try: $bin/sandboxctl create claude-code"
exec "$bin/sandboxd" "$@"
