#!/usr/bin/env bash
# One-time (and idempotent) machine set-up for Sandbox Desktop on Debian 12:
# apt packages, npm-provided files (DuckDB, agent CLIs, the Worker's toolchain), then the build.
# Every Quick start command calls this first; running it again only does what is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl clang-format clang-tidy
  clang-14 libclang-rt-14-dev
  qt6-base-dev qt6-websockets-dev qt6-httpserver-dev libqt6sql6-sqlite libqt6sql6-psql
  libqscintilla2-qt6-dev qtkeychain-qt6-dev libsecret-1-dev
  nlohmann-json3-dev libsqlite3-dev libpq-dev libseccomp-dev
  bubblewrap util-linux procps iproute2
  postgresql postgresql-client sqlite3
  xvfb xauth imagemagick fonts-dejavu-core
  appstream desktop-file-utils
  apparmor systemd shellcheck
  libvterm-dev vim htop dbus-daemon
)
# Node.js: keep whatever the machine has (our CI image ships Node 20 with its own npm);
# on a bare Debian 12 take Debian's.
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(nodejs npm)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# DuckDB is not in Debian 12: its C library and header come from the npm registry as files
# (never `npm install duckdb`: its install step downloads from elsewhere). Unpacked into the build
# tree, where engine/databases/dbhost/CMakeLists.txt looks for them.
duckdb_dir="${SANDBOX_BUILD_DIR:-$here/build}/third_party/duckdb"
if [ ! -f "$duckdb_dir/libduckdb.so" ] || [ ! -f "$duckdb_dir/duckdb.h" ]; then
  echo "setup: fetching DuckDB 1.4.4 (libduckdb.so, duckdb.h) from the npm registry"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @duckdb/node-bindings-linux-x64@1.4.4-r.4 duckdb@1.4.4 >/dev/null)
  mkdir -p "$duckdb_dir"
  tar -xzf "$tmp"/duckdb-node-bindings-linux-x64-1.4.4-r.4.tgz -C "$tmp" package/libduckdb.so
  tar -xzf "$tmp"/duckdb-1.4.4.tgz -C "$tmp" package/src/duckdb/src/include/duckdb.h
  cp "$tmp/package/libduckdb.so" "$tmp/package/src/duckdb/src/include/duckdb.h" "$duckdb_dir/"
  rm -rf "$tmp"
  # A build tree configured before the fetch must look again.
  [ -f "$duckdb_dir/../../CMakeCache.txt" ] && cmake "$duckdb_dir/../.." >/dev/null
fi

# The build: Release with debug info, in build/ (safe to run again: only what changed rebuilds).
build_dir="${SANDBOX_BUILD_DIR:-$here/build}"
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ "${CI:-}" = "true" ] && cmake_args+=(-DWARNINGS_AS_ERRORS=ON)
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$here" -B "$build_dir" "${cmake_args[@]}" >/dev/null
fi
# The coding-agent CLIs, at pinned versions, from the npm registry into the build tree (never
# globally): sandboxd mounts BUILD/agents/<type> read-only at /opt/agent in each agent sandbox
# (--agents-dir). The pins are engine/agents/agent-clis.txt, the list the engine installs from on
# demand too (agents.installCli). Reinstalled only when a pin changes. SANDBOX_SKIP_AGENT_CLIS=1
# skips them.
if [ "${SANDBOX_SKIP_AGENT_CLIS:-}" != "1" ]; then
  while read -r type pkg version _; do
    case "$type" in '' | '#'*) continue ;; esac
    dir="$build_dir/agents/$type"
    if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$pkg@$version" ]; then
      echo "setup: installing $pkg@$version into $dir"
      rm -rf "$dir" && mkdir -p "$dir"
      echo '{"private": true}' >"$dir/package.json"
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "$pkg@$version" >/dev/null)
      chmod -R a+rX "$dir"
      echo "$pkg@$version" >"$dir/.installed"
    fi
  done <"$here/engine/agents/agent-clis.txt"
fi

echo "setup: building in $build_dir"
cmake --build "$build_dir" -j"$(nproc)"
