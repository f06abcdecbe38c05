#!/usr/bin/env bash
# tst_apparmor_profile: the engine's AppArmor profile (packaging/apparmor/sandboxd) grants the
# user namespace permission and nothing broader, and apparmor_parser (Debian's `apparmor`)
# parses it without loading it (--skip-kernel-load).
#   check_apparmor_profile.sh PROFILE
set -euo pipefail
profile=$1
fail() { echo "tst_apparmor_profile: FAIL: $*" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# 1. Nothing broader: one profile, attached to the engine only, in unconfined mode, whose only
#    rule is `userns,` (plus the site-local include every packaged profile has).
profiles=$(grep -cE '^[[:space:]]*profile[[:space:]]' "$profile" || true)
[ "$profiles" = 1 ] || fail "expected one profile, found $profiles"
grep -qxE 'profile sandboxd /usr/bin/sandboxd flags=\(unconfined\) \{' "$profile" ||
  fail "the profile must be 'profile sandboxd /usr/bin/sandboxd flags=(unconfined) {'"
body=$(sed -n '/^profile /,/^}/p' "$profile" | sed '1d;$d' | sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$' | grep -v '^include if exists <local/sandboxd>$' || true)
[ "$body" = "userns," ] || fail "the profile's rules must be exactly 'userns,', found: $body"
echo "tst_apparmor_profile: one profile (sandboxd, /usr/bin/sandboxd, unconfined mode), one rule: userns,"

# 2. apparmor_parser parses it without loading it.
command -v apparmor_parser >/dev/null || fail "apparmor_parser missing (apt-get install apparmor)"
version=$(apparmor_parser --version | sed -n 's/^AppArmor parser version \([0-9][0-9.]*\).*/\1/p')
echo "tst_apparmor_profile: $(apparmor_parser --version | head -1)"
parse() { apparmor_parser --skip-kernel-load --skip-cache --quiet "$1" 2>&1; }
parsable=$profile
if [ "${version%%.*}" -ge 4 ]; then
  out=$(parse "$profile") || fail "apparmor_parser $version rejects the profile: $out"
  echo "tst_apparmor_profile: apparmor_parser $version parses the profile as shipped"
else
  # AppArmor 3 (Debian 12) has no user namespace rules: the shipped profile is refused...
  if out=$(parse "$profile"); then
    fail "apparmor_parser $version accepted a userns rule it cannot know"
  fi
  echo "tst_apparmor_profile: apparmor_parser $version refuses the 4.0 parts, as expected: $out"
  # ...and everything else in it parses: the same file with only the two AppArmor-4 lines
  # (the abi and the userns rule) changed.
  sed -e 's#^abi <abi/4.0>,#abi <abi/3.0>,#' -e '/^[[:space:]]*userns,[[:space:]]*$/d' "$profile" >"$scratch/sandboxd"
  changed=$(diff "$profile" "$scratch/sandboxd" | grep -cE '^[<>]' || true)
  [ "$changed" = 3 ] || fail "expected to change 2 lines for AppArmor 3, changed $changed"
  out=$(parse "$scratch/sandboxd") || fail "apparmor_parser $version rejects the rest of the profile: $out"
  echo "tst_apparmor_profile: apparmor_parser $version parses the rest of the profile (abi, include, attachment, flags)"
  parsable=$scratch/sandboxd
fi

# 3. The parser does reject a broken profile (this check can fail).
sed -e 's/^  include if exists/  no_such_rule_kind,\n  include if exists/' "$parsable" >"$scratch/broken"
grep -q no_such_rule_kind "$scratch/broken" || fail "could not make the broken copy"
if parse "$scratch/broken" >/dev/null; then
  fail "apparmor_parser accepted a profile with a bogus rule"
fi
echo "tst_apparmor_profile: passed"
