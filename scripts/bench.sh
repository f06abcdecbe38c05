#!/usr/bin/env bash
# Runs the benchmarks (ctest label "bench"); each prints BENCH lines with a same-run baseline.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
build="${SANDBOX_BUILD_DIR:-$here/build}"
ctest --test-dir "$build" -L bench --output-on-failure -V "$@" | grep -E "BENCH|Passed|Failed|tests passed"
# bench_density's CSV as a plot: exec RTT and memory against the number of idle sandboxes.
if [ -f "$build/density.csv" ] && [ -x "$build/tests/bench/plot_density" ]; then
    "$build/tests/bench/plot_density" "$build/density.csv" "$build/density.png"
fi
