#!/usr/bin/env bash
# Formats every tracked C++ file with the root .clang-format (clang-format 14, Debian 12).
#   scripts/format.sh           rewrite files in place
#   scripts/format.sh --check   list the files that differ and fail (the test suite runs this)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
if [ "${1:-}" = "--check" ]; then
  # One clang-format per 50 files, one per core: --dry-run names each file that differs.
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  rc=0
  printf '%s\0' "${files[@]}" |
    xargs -0 -P"$(nproc)" -n50 clang-format --style=file --dry-run 2>"$out" || rc=$?
  mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' "$out" | sort -u)
  if ((${#bad[@]})); then
    echo "format: ${#bad[@]} file(s) differ from .clang-format; run scripts/format.sh:" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  if ((rc != 0)); then
    echo "format: clang-format failed (exit $rc):" >&2
    grep -v 'code should be clang-formatted' "$out" | awk 'NR <= 20' >&2
    exit 1
  fi
  echo "format: ${#files[@]} files formatted"
else
  clang-format -i --style=file "${files[@]}"
fi
