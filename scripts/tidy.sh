#!/usr/bin/env bash
# Runs clang-tidy (the root .clang-tidy: a short list of checks that find bugs) over the engine
# and the core — the code that holds the sandbox boundary and the contract. The test suite runs
# it; run it yourself after changing either.
#   scripts/tidy.sh [build-dir]    (default: build/, configured by scripts/setup.sh)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="${1:-${SANDBOX_BUILD_DIR:-$here/build}}"
if [ ! -f "$build_dir/compile_commands.json" ]; then
  echo "tidy: $build_dir/compile_commands.json is missing: run scripts/setup.sh first" >&2
  exit 1
fi
cd "$here"
mapfile -t files < <(git ls-files -- 'core/*.cpp' 'engine/*.cpp')
log=$(mktemp)
db=$(mktemp -d)
trap 'rm -rf "$log" "$db"' EXIT
# The compile commands without GCC's precompiled headers (cmake/SandboxPch.cmake), which clang
# cannot read: clang-tidy parses the headers each source includes.
sed -e 's# -Winvalid-pch -include [^ ]*/cmake_pch\.hxx##g' "$build_dir/compile_commands.json" \
  >"$db/compile_commands.json"
if printf '%s\n' "${files[@]}" \
    | xargs -P"$(nproc)" -n4 clang-tidy -p "$db" --quiet --extra-arg=-Wno-error >"$log" 2>&1; then
  echo "tidy: ${#files[@]} files clean"
  exit 0
fi
grep -A3 -E "(error|warning): " "$log" | grep -v "warnings generated" >&2 || cat "$log" >&2
echo "tidy: findings above (checks in .clang-tidy)" >&2
exit 1
