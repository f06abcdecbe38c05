#!/usr/bin/env bash
# The `docker` command wrangler runs (WRANGLER_DOCKER_BIN), mapped onto podman. wrangler's image
# build passes BuildKit-only flags (`--load`, `--provenance=false`) that podman's build does not
# take, and the Dockerfile on stdin (`-f -`), which podman opens as /dev/stdin — a socket when
# Node spawns it, so the open fails (ENXIO): it goes through a file instead. podman keeps the
# image where its Docker API (DOCKER_HOST) serves it to wrangler afterwards.
set -euo pipefail
# `pull` of an image podman already holds (the egress interceptor stand-in, see
# containers-wrangler-dev.sh) succeeds without asking a registry.
if [ "${1:-}" = pull ] && podman image exists "${2:-}"; then exit 0; fi
args=()
tmp=""
trap '[ -n "$tmp" ] && rm -f "$tmp"' EXIT
prev=""
for a in "$@"; do
  case "$a" in
    --load | --provenance=*) ;;
    -)
      if [ "$prev" = -f ] || [ "$prev" = --file ]; then
        tmp=$(mktemp)
        cat >"$tmp"
        args+=("$tmp")
      else
        args+=("$a")
      fi
      ;;
    *) args+=("$a") ;;
  esac
  prev="$a"
done
podman "${args[@]}"
