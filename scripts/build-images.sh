#!/usr/bin/env bash
# Builds the six container images of dockerfiles/ with podman (or docker: CONTAINER_CLI=docker):
# first the shared builder (the engine compiled once) and the shared runtime base, then each
# type's image on top. Prints each step's time and each image's size.
#   scripts/build-images.sh [TYPE...]     (default: all six)
# TAG (default: the project's version) names the images sandbox/TYPE:TAG.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${CONTAINER_CLI:-podman}
tag=${TAG:-$(sed -n 's/^ *VERSION \([0-9.]*\)$/\1/p' "$here/CMakeLists.txt" | head -1)}
types=("$@")
((${#types[@]})) || types=(claude-code opencode codex postgres sqlite duckdb)
pull=()
[ "$cli" = podman ] && pull=(--pull=never)

step() { # NAME ARGS...: runs one build, prints "BUILD NAME SECONDS"
  local name=$1 start ms
  shift
  start=$(date +%s%N)
  if ! "$cli" build "${pull[@]}" "$@" "$here" >"${BUILD_LOG_DIR:-/tmp}/build-$name.log" 2>&1; then
    echo "build-images: $name failed; the end of its log:" >&2
    tail -30 "${BUILD_LOG_DIR:-/tmp}/build-$name.log" >&2
    exit 1
  fi
  ms=$((($(date +%s%N) - start) / 1000000))
  printf 'BUILD %-12s %4d.%d s\n' "$name" "$((ms / 1000))" "$((ms % 1000 / 100))"
}

cd "$here"
step tools -f dockerfiles/Dockerfile.base --target tools -t "sandbox/tools:$tag"
step build -f dockerfiles/Dockerfile.base --target build -t "sandbox/build:$tag"
step base -f dockerfiles/Dockerfile.base -t "sandbox/base:$tag"
for t in "${types[@]}"; do
  step "$t" -f "dockerfiles/Dockerfile.$t" --build-arg "TOOLS_IMAGE=sandbox/tools:$tag" \
    --build-arg "BUILD_IMAGE=sandbox/build:$tag" \
    --build-arg "BASE_IMAGE=sandbox/base:$tag" -t "sandbox/$t:$tag"
done
for t in base "${types[@]}"; do
  size=$("$cli" image inspect --format '{{.Size}}' "sandbox/$t:$tag")
  printf 'IMAGE sandbox/%-12s %5d MB\n' "$t:$tag" "$((size / 1000000))"
done
