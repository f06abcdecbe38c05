#!/usr/bin/env bash
# The container images install each agent CLI at the version engine/agents/agent-clis.txt pins
# (the list the engine and scripts/setup.sh install from), never at one of their own: no
# Dockerfile names a version of its CLI's package, each takes CLI_PACKAGE / CLI_VERSION, and
# scripts/build-images.sh passes the file's values.
#   check_image_pins.sh SOURCE_DIR
set -euo pipefail
src=${1:?SOURCE_DIR}
pins="$src/engine/agents/agent-clis.txt"
fail=0
types=0
while read -r type package version _; do
  case "$type" in '' | '#'*) continue ;; esac
  types=$((types + 1))
  file="$src/dockerfiles/Dockerfile.$type"
  if [ ! -f "$file" ]; then
    echo "FAIL $type: no $file"
    fail=1
    continue
  fi
  # A version of the package written into the Dockerfile (a pin of its own, stale one day).
  if grep -nE "$(printf '%s' "$package" | sed 's/[.[\*^$/]/\\&/g')@[0-9]" "$file"; then
    echo "FAIL $type: $file pins $package itself; it must take CLI_VERSION"
    fail=1
  fi
  for arg in CLI_PACKAGE CLI_VERSION; do
    if ! grep -qE "^ARG $arg\$" "$file" || ! grep -q "\${$arg}" "$file"; then
      echo "FAIL $type: $file does not install from ARG $arg"
      fail=1
    fi
  done
  # What scripts/build-images.sh would run for the type.
  cmd=$(DRY_RUN=1 CONTAINER_CLI=podman "$src/scripts/build-images.sh" "$type" | grep -F "Dockerfile.$type" || true)
  for want in "CLI_PACKAGE=$package" "CLI_VERSION=$version"; do
    if [[ " $cmd " != *" $want "* ]]; then
      echo "FAIL $type: scripts/build-images.sh does not pass $want: $cmd"
      fail=1
    fi
  done
  [ "$fail" = 0 ] && echo "ok   $type: $package@$version from agent-clis.txt"
done <"$pins"
if [ "$types" -lt 3 ]; then
  echo "FAIL: $pins names $types agent CLIs (3 expected)"
  fail=1
fi
exit "$fail"
