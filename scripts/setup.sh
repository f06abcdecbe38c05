#!/usr/bin/env bash
# One-time (and idempotent) machine set-up for Sandbox Desktop on Debian 12:
# apt packages, npm-provided files (DuckDB, agent CLIs, the Worker's toolchain), then the build.
# Every Quick start command calls this first; running it again only does what is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# What the build needs (the compiler, Qt, the libraries; xvfb-run, which the configure step looks
# for), then what only the tests and the checks need (servers, sandboxes, clang, the linters):
# the second list installs beside the build.
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  qt6-base-dev qt6-websockets-dev qt6-httpserver-dev libqt6sql6-sqlite libqt6sql6-psql
  libqscintilla2-qt6-dev qtkeychain-qt6-dev libsecret-1-dev
  nlohmann-json3-dev libsqlite3-dev libpq-dev libseccomp-dev libvterm-dev xvfb
)
TEST_PACKAGES=(
  clang-format clang-tidy clang-14 libclang-rt-14-dev
  bubblewrap util-linux procps iproute2
  postgresql postgresql-client sqlite3
  xauth imagemagick fonts-dejavu-core
  appstream desktop-file-utils
  apparmor systemd shellcheck
  vim htop dbus-daemon
)
# Node.js: keep whatever the machine has (our CI image ships Node 20 with its own npm);
# on a bare Debian 12 take Debian's (npm fetches DuckDB before the build).
command -v npm >/dev/null 2>&1 || BUILD_PACKAGES+=(nodejs npm)

missing() { # package...: those not installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing_build < <(missing "${BUILD_PACKAGES[@]}")
mapfile -t missing_test < <(missing "${TEST_PACKAGES[@]}")
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
if ((${#missing_build[@]} + ${#missing_test[@]})); then
  $sudo_cmd apt-get update -qq
fi
if ((${#missing_build[@]})); then
  echo "setup: installing ${missing_build[*]}"
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing_build[@]}" >/dev/null
fi

# Network-bound work beside the build (the test packages, the agent CLIs): each job's output
# goes to a log, shown when setup waits for it at the end.
side=$(mktemp -d)
trap 'rm -rf "$side"' EXIT
declare -A beside
run_beside() { # name command...
  local name=$1
  shift
  "$@" >"$side/$name.log" 2>&1 &
  beside[$name]=$!
}
# shellcheck disable=SC2317 # run through run_beside
install_test_packages() {
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing_test[@]}" >/dev/null
}
if ((${#missing_test[@]})); then
  echo "setup: installing ${missing_test[*]} (beside the build)"
  [ -z "$sudo_cmd" ] || sudo -v # asks for a password here, not in the background
  run_beside apt install_test_packages
fi

build_dir="${SANDBOX_BUILD_DIR:-$here/build}"
# The coding-agent CLIs, at pinned versions, from the npm registry into the build tree (never
# globally): sandboxd mounts BUILD/agents/<type> read-only at /opt/agent in each agent sandbox
# (--agents-dir). The pins are engine/agents/agent-clis.txt, the list the engine installs from on
# demand too (agents.installCli). Reinstalled only when a pin changes. SANDBOX_SKIP_AGENT_CLIS=1
# skips them. They install beside the build.
# shellcheck disable=SC2317 # run through run_beside
install_agent_clis() {
  local type pkg version dir
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
}
if [ "${SANDBOX_SKIP_AGENT_CLIS:-}" != "1" ]; then
  run_beside agent-clis install_agent_clis
fi

# DuckDB is not in Debian 12: its C library and header come from the npm registry as files
# (never `npm install duckdb`: its install step downloads from elsewhere). Unpacked into the build
# tree, where engine/databases/dbhost/CMakeLists.txt looks for them.
duckdb_dir="$build_dir/third_party/duckdb"
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
# Without a compiler cache it uses precompiled headers (cmake/SandboxPch.cmake).
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ "${CI:-}" = "true" ] && cmake_args+=(-DWARNINGS_AS_ERRORS=ON)
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$here" -B "$build_dir" "${cmake_args[@]}" >/dev/null
fi
echo "setup: building in $build_dir"
build_status=0
cmake --build "$build_dir" -j"$(nproc)" || build_status=$?

# The jobs beside the build: what they printed; setup fails if one failed.
for name in "${!beside[@]}"; do
  rc=0
  wait "${beside[$name]}" || rc=$?
  cat "$side/$name.log"
  ((rc == 0)) || { echo "setup: $name failed (exit $rc)" >&2; build_status=1; }
done
exit $build_status
