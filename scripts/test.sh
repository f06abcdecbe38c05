#!/usr/bin/env bash
# Runs the whole test suite: sets the machine up (scripts/setup.sh), then the C++ tests (ctest),
# then the Worker's tests (worker/). Benchmarks are not part of it: see scripts/bench.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
build_dir="${SANDBOX_BUILD_DIR:-$here/build}"

status=0
echo "== Conventions"
"$here/scripts/format.sh" --check || status=1
"$here/scripts/tidy.sh" "$build_dir" || status=1

echo "== C++ tests (ctest)"
ctest --test-dir "$build_dir" --output-on-failure -j2 -LE bench || status=1

echo "== Fuzzing (libFuzzer, ${FUZZ_SECONDS:-30}s a target)"
"$here/scripts/fuzz.sh" || status=1

if [ -f "$here/worker/package.json" ]; then
  echo "== Worker tests (vitest in workerd)"
  (cd "$here/worker" && npm ci --no-audit --no-fund --loglevel=error && npm run typecheck && SANDBOXD_BIN="$build_dir/bin/sandboxd" ROUTES_JSON="$build_dir/conformance/routes.json" npm test && SANDBOXD_BIN="$build_dir/bin/sandboxd" SANDBOXCTL_BIN="$build_dir/bin/sandboxctl" npm run test:e2e && npm run build:dry-run -- --env="" >/dev/null 2>&1) || status=1
fi
exit $status
