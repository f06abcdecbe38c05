#!/usr/bin/env bash
# Runs the benchmarks (ctest label "bench"); each prints BENCH lines with a same-run baseline.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
ctest --test-dir "${SANDBOX_BUILD_DIR:-$here/build}" -L bench --output-on-failure -V "$@" | grep -E "BENCH|Passed|Failed|tests passed"
