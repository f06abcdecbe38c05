#!/usr/bin/env bash
# tst_deb_install: the .deb's own install, remove and purge into a scratch root, maintainer scripts
# included: `dpkg --root=SCRATCH --force-script-chrootless` runs postinst/postrm outside a chroot
# with $DPKG_ROOT set, and the scripts keep every path under it (see packaging/debian/).
#   check_deb_install.sh BINARY_DIR SCRATCH
# Two targets:
#  A. a root without AppArmor, with this machine's real apparmor_parser: the profile is installed
#     only if that parser knows user namespace rules (AppArmor 4), and nothing is loaded;
#  B. a root whose kernel has AppArmor active (its /sys entries made in the scratch root) and an
#     AppArmor 4 parser (a recording apparmor_parser first on PATH: this kernel has no AppArmor to
#     load into): postinst installs and loads the profile, remove unloads it, purge deletes it.
# shellcheck disable=SC2030,SC2031 # PATH with the recording parser only inside those subshells
set -euo pipefail
binary_dir=$1
scratch=$2
fail() { echo "tst_deb_install: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "tst_deb_install: dpkg --root needs root here; skipped"; exit 77; }

rm -rf "$scratch"
mkdir -p "$scratch/out"
cpack -G DEB -B "$scratch/out" --config "$binary_dir/CPackConfig.cmake" >"$scratch/cpack.log" 2>&1 ||
  fail "cpack: $(tail -20 "$scratch/cpack.log")"
deb=$(ls "$scratch"/out/*.deb)
echo "tst_deb_install: $deb"

# The maintainer scripts are in the package, executable, and plain POSIX sh.
dpkg-deb -e "$deb" "$scratch/control"
for script in postinst postrm; do
  [ -x "$scratch/control/$script" ] || fail "the package has no executable $script"
done
if command -v shellcheck >/dev/null; then
  shellcheck -s sh "$scratch/control/postinst" "$scratch/control/postrm" || fail "shellcheck"
fi

new_root() {
  local root=$1
  rm -rf "$root"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
  touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
}
dpkg_root() {
  local root=$1
  shift
  dpkg --root="$root" --force-script-chrootless --force-depends --force-not-root \
    --log="$scratch/dpkg.log" "$@"
}
status_of() { dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${db:Status-Status}' sandbox-desktop 2>/dev/null || echo absent; }

# --- A: no AppArmor in the target, the real parser -------------------------------------------
root=$scratch/root-a
new_root "$root"
out=$(dpkg_root "$root" -i "$deb" 2>&1) || fail "dpkg -i: $out"
[ "$(status_of "$root")" = installed ] || fail "not installed: $(status_of "$root")"
for f in usr/bin/sandboxd usr/libexec/sandbox-desktop/sandbox-supervisor \
         usr/lib/systemd/user/sandboxd.service usr/share/sandbox-desktop/apparmor/sandboxd; do
  [ -e "$root/$f" ] || fail "A: $f was not installed"
done
if apparmor_parser --skip-kernel-load --skip-cache --quiet "$root/usr/share/sandbox-desktop/apparmor/sandboxd" >/dev/null 2>&1; then
  [ -f "$root/etc/apparmor.d/sandboxd" ] || fail "A: an AppArmor 4 parser, but no profile in etc/apparmor.d"
  echo "tst_deb_install: A: AppArmor 4 parser: profile installed, not loaded (no AppArmor in the target)"
else
  [ ! -e "$root/etc/apparmor.d/sandboxd" ] || fail "A: a profile installed that this AppArmor cannot parse"
  echo "$out" | grep -q "sandboxd needs no profile" || fail "A: postinst did not say why: $out"
  echo "tst_deb_install: A: $(apparmor_parser --version | head -1): no profile needed, none installed"
fi
out=$(dpkg_root "$root" -P sandbox-desktop 2>&1) || fail "A: dpkg -P: $out"
[ "$(status_of "$root")" != installed ] || fail "A: still installed after purge"
[ ! -e "$root/usr/bin/sandboxd" ] || fail "A: purge left usr/bin/sandboxd"
[ ! -e "$root/etc/apparmor.d/sandboxd" ] || fail "A: purge left the profile"

# --- B: AppArmor active in the target, an AppArmor 4 parser -----------------------------------
root=$scratch/root-b
new_root "$root"
mkdir -p "$root/sys/kernel/security/apparmor/features/namespaces" "$root/sys/module/apparmor/parameters"
echo yes >"$root/sys/kernel/security/apparmor/features/namespaces/userns_create"
echo Y >"$root/sys/module/apparmor/parameters/enabled"
mkdir -p "$scratch/shim" "$root/var/cache/apparmor/0123abcd.0"
echo "cached" >"$root/var/cache/apparmor/0123abcd.0/sandboxd"
calls=$scratch/apparmor_parser.calls
: >"$calls"
cat >"$scratch/shim/apparmor_parser" <<SHIM
#!/bin/sh
# Records each call, answers as AppArmor 4 does for a valid profile.
echo "\$*" >>"$calls"
exit 0
SHIM
chmod 755 "$scratch/shim/apparmor_parser"
out=$(export PATH="$scratch/shim:$PATH" && dpkg_root "$root" -i "$deb" 2>&1) ||
  fail "B: dpkg -i: $out"
cmp -s "$root/etc/apparmor.d/sandboxd" "$root/usr/share/sandbox-desktop/apparmor/sandboxd" ||
  fail "B: etc/apparmor.d/sandboxd is not the shipped profile"
[ "$(stat -c %a "$root/etc/apparmor.d/sandboxd")" = 644 ] || fail "B: the profile is not 0644"
grep -qx -- "--skip-kernel-load --skip-cache --quiet $root/usr/share/sandbox-desktop/apparmor/sandboxd" "$calls" ||
  fail "B: postinst did not check the profile with the parser: $(cat "$calls")"
grep -qx -- "--replace --subdomainfs $root/sys/kernel/security/apparmor $root/etc/apparmor.d/sandboxd" "$calls" ||
  fail "B: postinst did not load the profile: $(cat "$calls")"
echo "tst_deb_install: B: installed etc/apparmor.d/sandboxd and loaded it (apparmor_parser --replace)"

: >"$calls"
out=$(export PATH="$scratch/shim:$PATH" && dpkg_root "$root" -r sandbox-desktop 2>&1) || fail "B: dpkg -r: $out"
grep -qx -- "--remove --subdomainfs $root/sys/kernel/security/apparmor $root/etc/apparmor.d/sandboxd" "$calls" ||
  fail "B: postrm remove did not unload the profile: $(cat "$calls")"
[ -f "$root/etc/apparmor.d/sandboxd" ] || fail "B: remove (not purge) deleted the profile"
[ ! -e "$root/usr/bin/sandboxd" ] || fail "B: remove left usr/bin/sandboxd"
echo "tst_deb_install: B: remove unloaded the profile and kept the file"

out=$(export PATH="$scratch/shim:$PATH" && dpkg_root "$root" -P sandbox-desktop 2>&1) || fail "B: dpkg -P: $out"
[ ! -e "$root/etc/apparmor.d/sandboxd" ] || fail "B: purge left etc/apparmor.d/sandboxd"
[ ! -e "$root/var/cache/apparmor/0123abcd.0/sandboxd" ] || fail "B: purge left the profile's cache"
[ "$(status_of "$root")" = "not-installed" ] || [ "$(status_of "$root")" = absent ] ||
  fail "B: after purge: $(status_of "$root")"
echo "tst_deb_install: B: purge deleted the profile and its cache"
echo "tst_deb_install: passed"
