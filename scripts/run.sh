#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and runs Sandbox Desktop on the local engine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
bin="${SANDBOX_BUILD_DIR:-$here/build}/bin"
if [ -x "$bin/sandbox-desktop" ]; then
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    # Root on a user's X display (e.g. through sudo): borrow that user's X authority.
    if [ "$(id -u)" -eq 0 ] && [ -z "${XAUTHORITY:-}" ] && [ -n "${SUDO_USER:-}" ]; then
      xauth_file="$(getent passwd "$SUDO_USER" | cut -d: -f6)/.Xauthority"
      [ -r "$xauth_file" ] && export XAUTHORITY="$xauth_file"
    fi
    # The app finds the engine on 127.0.0.1:7465, or starts build/bin/sandboxd itself.
    exec "$bin/sandbox-desktop" "$@"
  fi
  echo "run: no graphical display (DISPLAY and WAYLAND_DISPLAY are unset), so not the desktop app:" >&2
  echo "run: starting the local engine alone. Run this from a desktop session (or ssh -X) for the app." >&2
fi
# Without a display (or without the app): the engine, with its command line beside it.
echo "Starting the local engine; in another terminal try: $bin/sandboxctl create claude-code"
exec "$bin/sandboxd" "$@"
