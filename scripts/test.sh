#!/usr/bin/env bash
# Runs the whole test suite: sets the machine up (scripts/setup.sh), then the conventions, the C++
# tests (ctest), the fuzz targets and the Worker's tests (worker/). Benchmarks are not part of it:
# see scripts/bench.sh. Each phase prints how far into the run it starts.
#
# ctest's suites spend most of their time waiting on sandboxes, database servers and agent CLIs,
# so the CPU-bound work that does not depend on their timing runs beside them at the lowest
# priority (nice 19: the tests' processes always come first): clang-tidy, the fuzz targets'
# build, and the Worker's npm ci and typecheck. Their output is shown after ctest, in order.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$SECONDS
phase() { echo "== $1 ($((SECONDS - started)) s into the run)"; }

phase "Set-up (scripts/setup.sh)"
"$here/scripts/setup.sh"
build_dir="${SANDBOX_BUILD_DIR:-$here/build}"
has_worker=0
[ -f "$here/worker/package.json" ] && has_worker=1

status=0
phase "Conventions (clang-format)"
"$here/scripts/format.sh" --check || status=1

side=$(mktemp -d)
trap 'rm -rf "$side"' EXIT
declare -A beside
run_beside() { # name command...: runs at nice 19, its output kept for report_beside
  local name=$1
  shift
  nice -n 19 "$@" >"$side/$name.log" 2>&1 &
  beside[$name]=$!
}
report_beside() { # name: waits for a side job, shows what it printed, fails the run if it failed
  local rc=0
  wait "${beside[$1]}" || rc=$?
  cat "$side/$1.log"
  ((rc == 0)) || { echo "$1 failed (exit $rc)"; status=1; }
}
run_beside tidy "$here/scripts/tidy.sh" "$build_dir"
run_beside fuzz-build "$here/scripts/fuzz.sh" --build-only
if ((has_worker)); then
  run_beside worker-deps sh -c "cd '$here/worker' && npm ci --no-audit --no-fund --loglevel=error && npm run typecheck"
fi

phase "C++ tests (ctest; clang-tidy, the fuzz build and the Worker's npm ci beside it)"
ctest_failed=0
ctest --test-dir "$build_dir" --output-on-failure -j2 -LE bench || { status=1; ctest_failed=1; }
# The longest suites of this run (the cost data ctest keeps for its scheduling).
cost="$build_dir/Testing/Temporary/CTestCostData.txt"
if [ -f "$cost" ]; then
  echo "ctest: longest suites (seconds):"
  sed '/^---/,$d' "$cost" | sort -k3 -g -r | head -12 | awk '{printf "  %7.1f  %s\n", $3, $1}'
fi

phase "Conventions (clang-tidy, run beside ctest)"
report_beside tidy

phase "Fuzzing (libFuzzer, ${FUZZ_SECONDS:-30}s a target)"
report_beside fuzz-build
"$here/scripts/fuzz.sh" || status=1

if ((has_worker)); then
  phase "Worker tests (vitest in workerd)"
  report_beside worker-deps
  (cd "$here/worker" && SANDBOXD_BIN="$build_dir/bin/sandboxd" ROUTES_JSON="$build_dir/conformance/routes.json" npm test && SANDBOXD_BIN="$build_dir/bin/sandboxd" SANDBOXCTL_BIN="$build_dir/bin/sandboxctl" npm run test:e2e && npm run build:dry-run -- --env="" >/dev/null 2>&1) || status=1
fi
# CI keeps the start and the end of what a run printed: each failed suite's failures and last
# lines once more, here at the end, so that the function it failed or hung in is always seen.
failed_list="$build_dir/Testing/Temporary/LastTestsFailed.log"
if ((ctest_failed)) && [ -s "$failed_list" ]; then
  phase "Failed suites: their failures and last lines"
  while IFS=: read -r _ name; do
    echo "-- $name"
    # Its failures (QTest's FAIL!, Loc, QFATAL, a signal) wherever they are, then its last lines.
    awk -v name="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " name "$" { inside = 1; next }
      inside && /^Output:/ { out = 1; n = 0; next }
      out && /^<end of output>/ { exit }
      out && /^(FAIL!|   Loc:|QFATAL|Received signal)/ && failures < 20 { print; ++failures }
      out { lines[n++ % 25] = $0 }
      END {
        print "   [the last lines]"
        for (i = (n > 25 ? n - 25 : 0); i < n; ++i) print lines[i % 25]
      }
    ' "$build_dir/Testing/Temporary/LastTest.log" | cut -c1-300
  done <"$failed_list"
fi
phase "Done (exit $status)"
exit $status
