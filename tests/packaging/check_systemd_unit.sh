#!/usr/bin/env bash
# tst_systemd_unit: `systemd-analyze verify --user` finds nothing to say about the engine's user
# service (packaging/systemd/sandboxd.service). Its ExecStart, /usr/bin/sandboxd, is made visible
# from the build through an overlay in a private mount namespace (needs root), so the host is
# left untouched.
#   check_systemd_unit.sh UNIT SANDBOXD
set -euo pipefail
unit=$1
sandboxd=$2
fail() { echo "tst_systemd_unit: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "tst_systemd_unit: needs root (an overlay over /usr/bin); skipped"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/run" "$scratch/units"
chmod 700 "$scratch/run"
cp "$sandboxd" "$scratch/bin/sandboxd"
cp "$unit" "$scratch/units/sandboxd.service"
# A copy with a misspelt key: verify must complain about it (the check can fail).
sed 's/^Delegate=yes/Delegat=yes/' "$unit" >"$scratch/units/broken.service"

grep -qx 'Delegate=yes' "$unit" || fail "the unit must say Delegate=yes"
grep -qx 'ExecStart=/usr/bin/sandboxd --listen 127.0.0.1:7465' "$unit" ||
  fail "ExecStart must run /usr/bin/sandboxd on the app's default address"

# shellcheck disable=SC2016 # expanded by the inner sh
verify() {
  XDG_RUNTIME_DIR="$scratch/run" unshare --mount --propagation private sh -c \
    'mount -t overlay overlay -o lowerdir="$1":/usr/bin /usr/bin && exec systemd-analyze verify --user --man=no "$2"' \
    sh "$scratch/bin" "$1" 2>&1
}
out=$(verify "$scratch/units/sandboxd.service") || fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say: $out"
echo "tst_systemd_unit: systemd-analyze verify --user sandboxd.service: clean"
broken=$(verify "$scratch/units/broken.service" || true)
echo "$broken" | grep -q "Unknown key 'Delegat'" || fail "verify did not notice a misspelt key: $broken"
echo "tst_systemd_unit: passed"
