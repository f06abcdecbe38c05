#!/usr/bin/env bash
# Builds the six container images of dockerfiles/ with podman (or docker: CONTAINER_CLI=docker):
# first the shared builder (the engine compiled once) and the shared runtime base, then each
# type's image on top. Prints each step's time and each image's size.
#   scripts/build-images.sh [TYPE...]     (default: all six)
# TAG (default: the project's version) names the images sandbox/TYPE:TAG. The agent images get
# their CLI's package and pinned version from engine/agents/agent-clis.txt (the engine's list).
# DRY_RUN=1 prints the build commands instead of running them.
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
  if [ -n "${DRY_RUN:-}" ]; then
    echo "$cli build ${pull[*]} $* $here"
    return
  fi
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
pins="$here/engine/agents/agent-clis.txt"
for t in "${types[@]}"; do
  cli_args=()
  # TYPE PACKAGE VERSION ...: the agent types' pins (none for the database types).
  if read -r _ package version _ < <(awk -v t="$t" '$1 == t { print; exit }' "$pins"); then
    cli_args=(--build-arg "CLI_PACKAGE=$package" --build-arg "CLI_VERSION=$version")
  fi
  step "$t" -f "dockerfiles/Dockerfile.$t" --build-arg "TOOLS_IMAGE=sandbox/tools:$tag" \
    --build-arg "BUILD_IMAGE=sandbox/build:$tag" \
    --build-arg "BASE_IMAGE=sandbox/base:$tag" "${cli_args[@]}" -t "sandbox/$t:$tag"
done
[ -n "${DRY_RUN:-}" ] && exit 0
for t in base "${types[@]}"; do
  size=$("$cli" image inspect --format '{{.Size}}' "sandbox/$t:$tag")
  printf 'IMAGE sandbox/%-12s %5d MB\n' "$t:$tag" "$((size / 1000000))"
done
