#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang into BUILD/fuzz and runs each for a
# bounded time over its corpus (tests/fuzz/corpus/<target>, copied: the run does not change the
# repo). A crash or a broken invariant fails the run and names the reproducer; add that input to
# the corpus with the fix.
#   scripts/fuzz.sh                   every target, FUZZ_SECONDS (default 30) each
#   scripts/fuzz.sh fuzz_jsonrpc      one target
#   scripts/fuzz.sh --merge [target]  run, then fold new coverage into the repo's corpus (minimised)
#   scripts/fuzz.sh --build-only      build the targets, run nothing (the test suite builds them
#                                     while ctest runs, and fuzzes after it)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="${SANDBOX_BUILD_DIR:-$here/build}/fuzz"
seconds="${FUZZ_SECONDS:-30}"
merge=0
build_only=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi

cxx=$(command -v clang++-14 || command -v clang++ || true)
[ -n "$cxx" ] || { echo "fuzz: clang++ is missing (scripts/setup.sh installs clang-14)" >&2; exit 1; }
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$here/tests/fuzz" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
cmake --build "$build_dir" -j"$(nproc)" >/dev/null
((build_only)) && exit 0

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(find "$here/tests/fuzz/corpus" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi
# One target per core at a time (each fuzzer is one process), each for the whole FUZZ_SECONDS;
# what each printed is shown in the targets' order once all have ended.
fuzz_one() { # target: runs it, prints what it found; exit status 1 on a failure
  local t=$1 corpus work artifacts rc=0
  corpus="$here/tests/fuzz/corpus/$t"
  work=$(mktemp -d)
  cp -r "$corpus/." "$work/"
  artifacts="$build_dir/artifacts/$t/"
  mkdir -p "$artifacts"
  echo "fuzz: $t for ${seconds}s over $(find "$corpus" -type f | wc -l) corpus inputs"
  if ! ASAN_OPTIONS=detect_leaks=1 "$build_dir/$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts" \
      "$work" >"$build_dir/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; reproducer(s) in $artifacts; log $build_dir/$t.log"
    grep -E "ERROR|SUMMARY|deadly|Test unit written" "$build_dir/$t.log" | head -20
    rc=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$build_dir/$t.log" | tail -2 | sed "s/^/fuzz: $t: /"
  fi
  if ((merge)); then
    "$build_dir/$t" -merge=1 "$corpus" "$work" >/dev/null 2>&1
  fi
  rm -rf "$work"
  return $rc
}
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  rm -f "$build_dir/$t.status"
  { rc=0; fuzz_one "$t" || rc=$?; echo $rc >"$build_dir/$t.status"; } >"$build_dir/$t.summary" 2>&1 &
done
wait
status=0
for t in "${targets[@]}"; do
  if [ "$(cat "$build_dir/$t.status" 2>/dev/null)" = 0 ]; then
    cat "$build_dir/$t.summary"
  else
    cat "$build_dir/$t.summary" >&2
    status=1
  fi
done
exit $status
