#!/usr/bin/env bash
# Rootful podman for building and running dockerfiles/ on a Debian 12 machine, with no registry
# but Debian's own mirror: scripts/test-containers.sh calls this first. Safe to run again.
#
# - podman and runc from Debian (crun refuses the hybrid cgroup layout of some hosts, runc not),
#   and slirp4netns, through which a test container reaches services on the host's loopback;
# - runc behind a small wrapper that drops the OCI spec's rlimits: on hosts without
#   CAP_SYS_RESOURCE (some CI VMs) setting them fails every container; elsewhere it changes
#   nothing that matters here (the images set no limits of their own);
# - the base image docker.io/library/debian:bookworm (and :bookworm-slim) made with mmdebstrap
#   from the apt mirror this machine uses, plus the machine's extra CA certificates (a build
#   behind a TLS-inspecting proxy needs them for npm), so that no image is pulled from a registry.
# For Docker-API clients (wrangler, the docker CLI): `podman system service` and DOCKER_HOST, see
# worker/README.md.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=PATH "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive

want=(podman runc uidmap slirp4netns mmdebstrap)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "podman-setup: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# runc without rlimits. The wrapper edits the bundle's config.json (and an exec's process.json)
# in place before handing over to Debian's runc.
wrapper=/usr/local/libexec/sandbox-desktop/runc
mkdir -p "$(dirname "$wrapper")" /etc/containers
cat >"$wrapper.new" <<'WRAPPER'
#!/bin/bash
# Installed by Sandbox Desktop's scripts/podman-setup.sh: runc with the OCI rlimits removed.
spec_files=()
prev=""
for a in "$@"; do
  case "$prev" in
    --bundle|-b) spec_files+=("$a/config.json") ;;
    --process|-p) spec_files+=("$a") ;;
  esac
  prev="$a"
done
for f in "${spec_files[@]}"; do
  [ -f "$f" ] || continue
  python3 - "$f" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as fh:
    spec = json.load(fh)
(spec.get("process") or spec).pop("rlimits", None)
with open(path, "w") as fh:
    json.dump(spec, fh)
PY
done
exec /usr/sbin/runc "$@"
WRAPPER
chmod 755 "$wrapper.new" && mv "$wrapper.new" "$wrapper"

conf=/etc/containers/containers.conf
if ! grep -q "$wrapper" "$conf" 2>/dev/null; then
  [ -f "$conf" ] && cp "$conf" "$conf.before-sandbox-desktop"
  cat >"$conf" <<CONF
# Written by Sandbox Desktop's scripts/podman-setup.sh (the previous file, if any, is
# $conf.before-sandbox-desktop).
[engine]
runtime = "runc"

[engine.runtimes]
runc = ["$wrapper"]
CONF
fi
# podman-docker's "emulate Docker CLI" notice, off.
touch /etc/containers/nodocker

# The Debian base images, rebuilt when the machine's extra CA certificates change: bookworm, and
# bookworm-slim as Docker's is (no documentation, manual pages or translations, no apt lists).
cas=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum | cut -c1-16)
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
make_image() { # TAG RAW [mmdebstrap options...]
  local tag=$1 raw=$2 current
  shift 2
  current=$(podman image inspect --format '{{ index .Labels "sandbox.image" }}' "$tag" 2>/dev/null || true)
  [ "$current" = "$tag $cas" ] && return 0
  if ! podman image exists "$raw"; then
    echo "podman-setup: making $tag from $mirror"
    local tarball
    tarball=$(mktemp --suffix=.tar)
    mmdebstrap --variant=minbase --include=ca-certificates "$@" bookworm "$tarball" \
      "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
      "deb ${mirror%/debian}/debian-security bookworm-security main" >/dev/null 2>&1
    podman import "$tarball" "$raw" >/dev/null
    rm -f "$tarball"
  fi
  local context
  context=$(mktemp -d)
  mkdir -p "$context/ca"
  cp /usr/local/share/ca-certificates/*.crt "$context/ca/" 2>/dev/null || true
  cat >"$context/Containerfile" <<EOF
FROM $raw
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null 2>&1 || true
LABEL sandbox.host-ca=$cas sandbox.image="$tag $cas"
CMD ["bash"]
EOF
  podman build --pull=never -q -t "$tag" "$context" >/dev/null
  rm -rf "$context"
}
make_image docker.io/library/debian:bookworm localhost/debian-bookworm-raw
# shellcheck disable=SC2016 # $1 is mmdebstrap's, in its hook
make_image docker.io/library/debian:bookworm-slim localhost/debian-bookworm-slim-raw \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log'
podman run --rm --pull=never docker.io/library/debian:bookworm-slim true
echo "podman-setup: ready ($(podman --version))"
